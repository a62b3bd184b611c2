"""The responder's writes: the inbound message and the reply (``uow.conversations``).

``PostgresConversationRepository`` is the SQL of ``adapters.PostgresConversationStore``'s
write paths on a ``PostgresUnitOfWork``'s connection; ``streams.store.fake_uow``
implements the same port in memory. The reads (context, recall) stay in ``adapters.py``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Mapping, Protocol, Sequence

from psycopg.types.json import Jsonb

from schemas.events import InboundMessage, OutboundReply
from streams.kafka.errors import PoisonRecord
from streams.pricing import LEDGER_INSERT, ModelCall, ledger_args

if TYPE_CHECKING:
    from streams.store.uow import UnitOfWork


class TenantMismatch(PoisonRecord):
    """An inbound message names a row that belongs to another account (never retried)."""

    def __init__(self, message: str):
        super().__init__("TenantMismatch", message)


class ConversationRepository(Protocol):
    def erased(self, msg: InboundMessage, erasure_key: str | None) -> bool:
        """Takes the contact's lock (the erasure takes it too); is it in the erasure ledger?"""
    def store_inbound(self, msg: InboundMessage, reply_id: str) -> bool:
        """Record the message (tenant-checked; raises ``TenantMismatch``); True when it still needs a reply."""
    def save_reply(self, reply: OutboundReply, stored: dict, lead_state: Mapping[str, Any] | None,
                   calls: Sequence[ModelCall]) -> bool:
        """Record the reply once (by its id), its model calls and the lead state; True when it was new."""
    def mark_published(self, reply_ids: Sequence[str]) -> None:
        """Kafka acknowledged these replies (the first acknowledgement's time is kept)."""


class PostgresConversationRepository:
    def __init__(self, uow: "UnitOfWork"):
        self.conn = uow.conn

    def erased(self, msg, erasure_key):
        from streams.learn.store import lock_contact
        from streams.maintain.erasure import is_erased

        lock_contact(self.conn, msg.account_id, msg.contact_id)
        return is_erased(self.conn, msg.account_id, contact_id=msg.contact_id, key=erasure_key)

    def store_inbound(self, msg, reply_id):
        # Every statement is sent before any result is read: on a connection in pipeline mode
        # (PostgresConversationStore) they share one round trip. A tenant mismatch found in
        # the results raises before the commit, so the unit rolls all of them back.
        conn = self.conn
        conn.execute("INSERT INTO accounts (id) VALUES (%s) ON CONFLICT (id) DO NOTHING", (msg.account_id,))
        owners = [(table, row_id, conn.execute(
            f"INSERT INTO {table} (id, account_id) VALUES (%s, %s) ON CONFLICT (id) "
            f"DO UPDATE SET id = EXCLUDED.id RETURNING account_id", (row_id, msg.account_id)))
            for table, row_id in (("contacts", msg.contact_id), ("inboxes", msg.inbox_id))]
        conv_cur = conn.execute(
            """INSERT INTO conversations (external_id, account_id, inbox_id, contact_id, unit_id,
                                          last_message_at)
               VALUES (%s, %s, %s, %s, %s, %s)
               ON CONFLICT (external_id) DO UPDATE
                  SET last_message_at = GREATEST(conversations.last_message_at, EXCLUDED.last_message_at)
               RETURNING id, account_id, contact_id""",
            (msg.conversation_id, msg.account_id, msg.inbox_id, msg.contact_id, msg.unit_id,
             msg.sent_at))
        inserted = conn.execute(
            """INSERT INTO messages (conversation_id, account_id, role, text, sent_at, channel_message_id,
                                     message_type)
               SELECT id, %s, 'contact', %s, %s, %s, %s FROM conversations WHERE external_id = %s
               ON CONFLICT (channel_message_id) DO NOTHING RETURNING 1""",
            (msg.account_id, msg.text, msg.sent_at, msg.message_id, msg.message_type, msg.conversation_id))
        replied = conn.execute("SELECT 1 FROM messages WHERE channel_message_id = %s", (reply_id,))
        for table, row_id, cur in owners:
            if cur.fetchone()["account_id"] != msg.account_id:
                raise TenantMismatch(f"{table[:-1]} {row_id} belongs to another account")
        conv = conv_cur.fetchone()
        if conv["account_id"] != msg.account_id or conv["contact_id"] != msg.contact_id:
            raise TenantMismatch(f"conversation {msg.conversation_id} belongs to another account/contact")
        if inserted.fetchone() is not None:
            return True
        return replied.fetchone() is None

    def save_reply(self, reply, stored, lead_state, calls):
        conn = self.conn
        conv = conn.execute("SELECT id FROM conversations WHERE external_id = %s AND account_id = %s",
                            (reply.conversation_id, reply.account_id)).fetchone()
        # the rest sent before its result is read (one round trip in pipeline mode)
        new = conn.execute(
            """INSERT INTO messages (conversation_id, account_id, role, text, sent_at,
                                     channel_message_id, reply)
               VALUES (%s, %s, 'agent', %s, %s, %s, %s) ON CONFLICT (channel_message_id) DO NOTHING
               RETURNING 1""",
            (conv["id"], reply.account_id, reply.text, reply.created_at, reply.reply_id, Jsonb(stored)))
        for call in calls:   # an INSERT only for calls that used tokens
            if call is not None:
                conn.execute(LEDGER_INSERT, ledger_args(call))
        conn.execute("UPDATE conversations SET lead_state = %s WHERE id = %s",
                     (Jsonb(dict(lead_state or {})), conv["id"]))
        return new.fetchone() is not None

    def mark_published(self, reply_ids):
        self.conn.execute("UPDATE messages SET published_at = now() WHERE channel_message_id = ANY(%s) "
                          "AND published_at IS NULL", (list(reply_ids),))


