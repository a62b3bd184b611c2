"""Customers' requests on the channel (issue 11): "what do you know about me?"
(``access``) and "forget me" (``erasure``), as recorded by the responder's acts
step (``streams.respond.acts_store``). Read-only here; scoped by account."""

from __future__ import annotations

import psycopg

KINDS = ("access", "erasure")
KIND_LABELS = {"access": "Acesso aos dados", "erasure": "Esquecimento"}


def privacy_requests(conn: psycopg.Connection, account_id: int, *, kind: str | None = None,
                     contact_id: int | None = None, limit: int = 100) -> list[dict]:
    """Newest first; each row: id, contact_id, conversation_id, message_id, kind, text, facts, created_at."""
    if kind is not None and kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}")
    return conn.execute(
        """SELECT id, contact_id, conversation_id, message_id, kind, text, facts, created_at
           FROM privacy_requests WHERE account_id = %s AND (%s::text IS NULL OR kind = %s)
             AND (%s::bigint IS NULL OR contact_id = %s) ORDER BY created_at DESC, id DESC LIMIT %s""",
        (account_id, kind, kind, contact_id, contact_id, limit)).fetchall()
