"""Per-account API tokens. Only a SHA-256 of the secret is stored.

Every change is a unit of work over ``uow.tokens`` (``TokenRepository``, the SQL here); the
functions take ``target`` (an open unit, a connection or a pool, see ``streams.store.uow.joined``).
"""

from __future__ import annotations

import hashlib
import secrets
from typing import TYPE_CHECKING, Protocol

from streams.store.uow import joined

if TYPE_CHECKING:
    import psycopg
    from psycopg_pool import ConnectionPool

    from streams.store.uow import UnitOfWork

    Target = UnitOfWork | psycopg.Connection | ConnectionPool

PREFIX = "mem_"
MAX_TOKEN_CHARS = 200


def _hash(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


class TokenRepository(Protocol):
    """``uow.tokens``: the ``api_tokens`` rows (``streams.store.fake_uow`` implements it in memory)."""

    def account_exists(self, account_id: int) -> bool: ...
    def insert(self, account_id: int, name: str, token_hash: str) -> int:
        """A new active token; its id."""
    def revoke(self, token_id: int) -> bool:
        """Revoke an active token; False when there is no active token with this id."""
    def use(self, token_hash: str) -> dict | None:
        """``id``, ``account_id``, ``name`` of the active token with this hash, marked used now; or None."""


class PostgresTokenRepository:
    def __init__(self, uow: "UnitOfWork"):
        self.conn = uow.conn

    def account_exists(self, account_id):
        return self.conn.execute("SELECT 1 FROM accounts WHERE id = %s", (account_id,)).fetchone() is not None

    def insert(self, account_id, name, token_hash):
        return int(self.conn.execute("INSERT INTO api_tokens (account_id, name, token_hash) VALUES (%s, %s, %s) "
                                     "RETURNING id", (account_id, name, token_hash)).fetchone()["id"])

    def revoke(self, token_id):
        return self.conn.execute("UPDATE api_tokens SET revoked_at = now() WHERE id = %s AND revoked_at IS NULL",
                                 (token_id,)).rowcount == 1

    def use(self, token_hash):
        return self.conn.execute("UPDATE api_tokens SET last_used_at = now() WHERE token_hash = %s "
                                 "AND revoked_at IS NULL RETURNING id, account_id, name", (token_hash,)).fetchone()


def create_token(target: "Target", account_id: int, name: str = "") -> tuple[int, str]:
    """Returns (token id, secret). The secret is shown once and never stored. LookupError: no such account."""
    secret = PREFIX + secrets.token_urlsafe(32)
    with joined(target) as uow:
        if not uow.tokens.account_exists(account_id):
            raise LookupError(f"account {account_id} does not exist")
        token_id = uow.tokens.insert(account_id, name, _hash(secret))
    return token_id, secret


def revoke_token(target: "Target", token_id: int) -> bool:
    with joined(target) as uow:
        return uow.tokens.revoke(token_id)


class Operator:
    """Who is signed in: the account and the token (its name names the operator)."""

    __slots__ = ("account_id", "token_id", "name")

    def __init__(self, account_id: int, token_id: int, name: str):
        self.account_id, self.token_id, self.name = account_id, token_id, name

    @property
    def label(self) -> str:
        """What audit trails record: the token's name and id (never free text from a form)."""
        return f"{self.name or 'token'} (token {self.token_id})"


def operator_for(target: "Target", token: str) -> Operator | None:
    """The operator of an active token (and marks it used), or None."""
    if not token or len(token) > MAX_TOKEN_CHARS:
        return None
    with joined(target) as uow:
        row = uow.tokens.use(_hash(token))
    return Operator(int(row["account_id"]), int(row["id"]), row["name"]) if row else None
