"""Console sessions: a signed-in operator is an API token; the browser holds only a random session secret.

Only a SHA-256 of the secret is stored (``console_sessions``), with the session's CSRF token and expiry.
A revoked token ends its sessions at once (checked on every request).
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from datetime import datetime, timedelta, timezone
from typing import TYPE_CHECKING, Protocol

import psycopg

from streams.admin.tokens import Operator
from streams.store.uow import joined

if TYPE_CHECKING:
    from streams.store.uow import UnitOfWork


def _hash(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


class ConsoleSessionRepository(Protocol):
    """``uow.console_sessions``: the console's sessions (``streams.store.fake_uow`` implements it in memory)."""

    def create(self, session_hash: str, op: Operator, csrf: str, expires_at: datetime) -> None:
        """A new session (the expired ones are purged with it)."""
    def delete(self, session_hash: str) -> None:
        """The session ends (nothing happens for an unknown one)."""


class PostgresConsoleSessionRepository:
    def __init__(self, uow: "UnitOfWork"):
        self.conn = uow.conn

    def create(self, session_hash, op, csrf, expires_at):
        self.conn.execute("DELETE FROM console_sessions WHERE expires_at < now()")
        self.conn.execute("INSERT INTO console_sessions (session_hash, account_id, token_id, csrf_token, expires_at) "
                          "VALUES (%s, %s, %s, %s, %s)", (session_hash, op.account_id, op.token_id, csrf, expires_at))

    def delete(self, session_hash):
        self.conn.execute("DELETE FROM console_sessions WHERE session_hash = %s", (session_hash,))


def create_session(target: "UnitOfWork | psycopg.Connection", op: Operator, *, hours: float) -> tuple[str, str]:
    """Returns (session secret for the cookie, CSRF token for the forms); one unit of work (the
    caller's, or one committed here)."""
    secret, csrf = secrets.token_urlsafe(32), secrets.token_urlsafe(24)
    with joined(target) as uow:
        uow.console_sessions.create(_hash(secret), op, csrf, datetime.now(timezone.utc) + timedelta(hours=hours))
    return secret, csrf


def session_for(conn: psycopg.Connection, secret: str | None) -> tuple[Operator, str] | None:
    """(operator, csrf token) of a live session whose token is still active, else None."""
    if not secret or len(secret) > 200:
        return None
    row = conn.execute(
        """SELECT s.account_id, s.token_id, s.csrf_token, t.name FROM console_sessions s
             JOIN api_tokens t ON t.id = s.token_id AND t.account_id = s.account_id AND t.revoked_at IS NULL
            WHERE s.session_hash = %s AND s.expires_at > now()""", (_hash(secret),)).fetchone()
    conn.rollback()
    if row is None:
        return None
    return Operator(int(row["account_id"]), int(row["token_id"]), row["name"]), row["csrf_token"]


def end_session(target: "UnitOfWork | psycopg.Connection", secret: str | None) -> None:
    if secret:
        with joined(target) as uow:
            uow.console_sessions.delete(_hash(secret))


def same(a: str | None, b: str | None) -> bool:
    return bool(a) and bool(b) and hmac.compare_digest(str(a), str(b))
