"""Per-account API tokens. Only a SHA-256 of the secret is stored."""

from __future__ import annotations

import hashlib
import secrets

import psycopg

PREFIX = "mem_"


def _hash(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def create_token(conn: psycopg.Connection, account_id: int, name: str = "") -> tuple[int, str]:
    """Returns (token id, secret). The secret is shown once and never stored."""
    exists = conn.execute("SELECT 1 FROM accounts WHERE id = %s", (account_id,)).fetchone()
    if not exists:
        raise LookupError(f"account {account_id} does not exist")
    secret = PREFIX + secrets.token_urlsafe(32)
    row = conn.execute("INSERT INTO api_tokens (account_id, name, token_hash) VALUES (%s, %s, %s) RETURNING id",
                       (account_id, name, _hash(secret))).fetchone()
    conn.commit()
    return int(row["id"]), secret


def revoke_token(conn: psycopg.Connection, token_id: int) -> bool:
    n = conn.execute("UPDATE api_tokens SET revoked_at = now() WHERE id = %s AND revoked_at IS NULL",
                     (token_id,)).rowcount
    conn.commit()
    return n == 1


def account_for(conn: psycopg.Connection, token: str) -> int | None:
    if not token or len(token) > 200:
        return None
    row = conn.execute("UPDATE api_tokens SET last_used_at = now() WHERE token_hash = %s AND revoked_at IS NULL "
                       "RETURNING account_id", (_hash(token),)).fetchone()
    return int(row["account_id"]) if row else None


class Operator:
    """Who is signed in: the account and the token (its name names the operator)."""

    __slots__ = ("account_id", "token_id", "name")

    def __init__(self, account_id: int, token_id: int, name: str):
        self.account_id, self.token_id, self.name = account_id, token_id, name

    @property
    def label(self) -> str:
        """What audit trails record: the token's name and id (never free text from a form)."""
        return f"{self.name or 'token'} (token {self.token_id})"


def operator_for(conn: psycopg.Connection, token: str) -> Operator | None:
    """The operator of an active token (and marks it used), or None."""
    if not token or len(token) > 200:
        return None
    row = conn.execute("UPDATE api_tokens SET last_used_at = now() WHERE token_hash = %s AND revoked_at IS NULL "
                       "RETURNING id, account_id, name", (_hash(token),)).fetchone()
    return Operator(int(row["account_id"]), int(row["id"]), row["name"]) if row else None
