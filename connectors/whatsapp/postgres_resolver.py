"""The production resolver: routing read from (and new customers written to) Postgres."""

from __future__ import annotations

import asyncio

from psycopg_pool import ConnectionPool
from uuid6 import uuid7

from connectors.whatsapp.resolver import Destination, Route


class PostgresResolver:
    """``inboxes.channel_address`` = the business ``phone_number_id``; customers are
    ``contacts`` matched by ``(account_id, phone = wa_id)`` and created on first
    contact. A customer's open conversation in that inbox is continued; otherwise
    a new one is opened (``wa-<inbox>-<uuid7>``), so messages after a conversation
    was resolved start a new one (and a new extraction)."""

    def __init__(self, pool: ConnectionPool, *, erasure_key: str):
        self.pool = pool
        self.erasure_key = erasure_key  # the erasure ledger's HMAC key (settings.erasure_key)

    def _route(self, phone_number_id: str, wa_id: str) -> Route | None:
        with self.pool.connection() as conn, conn.transaction():
            inbox = conn.execute("SELECT id, account_id, unit_id FROM inboxes WHERE channel_address = %s",
                                 (phone_number_id,)).fetchone()
            if inbox is None:
                return None
            acc = inbox["account_id"]
            # serialise first contact of the same customer (two webhooks at once)
            conn.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", (f"contact:{acc}:{wa_id}",))
            found = conn.execute("SELECT id FROM contacts WHERE account_id = %s AND phone = %s ORDER BY id LIMIT 1",
                                 (acc, wa_id)).fetchone()
            if found is None and _erased_phone(conn, acc, wa_id, self.erasure_key):
                return None  # an erased channel identity is never re-created (late webhooks, retries)
            contact = found["id"] if found else conn.execute(
                "INSERT INTO contacts (id, account_id, phone) VALUES (nextval('channel_contact_ids'), %s, %s) "
                "RETURNING id", (acc, wa_id)).fetchone()["id"]
            # one open conversation per customer and inbox (serialised on the contact row)
            conn.execute("SELECT id FROM contacts WHERE id = %s FOR UPDATE", (contact,))
            conv = conn.execute(
                "SELECT external_id FROM conversations WHERE account_id = %s AND inbox_id = %s AND contact_id = %s "
                "AND status = 'open' AND external_id IS NOT NULL ORDER BY id DESC LIMIT 1",
                (acc, inbox["id"], contact)).fetchone()
            if conv is None:
                ext = f"wa-{inbox['id']}-{uuid7()}"
                conn.execute("INSERT INTO conversations (external_id, account_id, inbox_id, contact_id, unit_id) "
                             "VALUES (%s, %s, %s, %s, %s)", (ext, acc, inbox["id"], contact, inbox["unit_id"]))
            else:
                ext = conv["external_id"]
        return Route(account_id=acc, inbox_id=inbox["id"], contact_id=contact, conversation_id=ext,
                     unit_id=inbox["unit_id"])

    def _destination(self, account_id: int, contact_id: int, conversation_id: str) -> Destination | None:
        with self.pool.connection() as conn:
            row = conn.execute(
                "SELECT ct.phone, i.channel_address FROM conversations c "
                "JOIN contacts ct ON ct.id = c.contact_id AND ct.account_id = c.account_id "
                "JOIN inboxes i ON i.id = c.inbox_id AND i.account_id = c.account_id "
                "WHERE c.external_id = %s AND c.account_id = %s AND c.contact_id = %s",
                (conversation_id, account_id, contact_id)).fetchone()
        if row is None or not row["phone"] or not row["channel_address"]:
            return None
        return Destination(phone_number_id=row["channel_address"], wa_id=row["phone"])

    async def route(self, phone_number_id: str, wa_id: str) -> Route | None:
        return await asyncio.to_thread(self._route, phone_number_id, wa_id)

    async def destination(self, account_id: int, contact_id: int, conversation_id: str) -> Destination | None:
        return await asyncio.to_thread(self._destination, account_id, contact_id, conversation_id)


def _erased_phone(conn, account_id: int, wa_id: str, key: str) -> bool:
    from streams.maintain.erasure import dropped, is_erased

    if is_erased(conn, account_id, phone=wa_id, key=key):
        dropped("channel", account_id, "channel message of an erased phone")
        return True
    return False
