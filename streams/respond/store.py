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


# The inbound message in one statement (data-modifying CTEs; the foreign keys are checked at
# its end, once every row is in). ``DO UPDATE SET id = EXCLUDED.id`` makes an existing contact,
# inbox or conversation return its owner for the tenant check.
STORE_INBOUND = """
WITH account AS (
    INSERT INTO accounts (id) VALUES (%(account)s) ON CONFLICT (id) DO NOTHING
), contact AS (
    INSERT INTO contacts (id, account_id) VALUES (%(contact)s, %(account)s)
    ON CONFLICT (id) DO UPDATE SET id = EXCLUDED.id RETURNING account_id
), inbox AS (
    INSERT INTO inboxes (id, account_id) VALUES (%(inbox)s, %(account)s)
    ON CONFLICT (id) DO UPDATE SET id = EXCLUDED.id RETURNING account_id
), conversation AS (
    INSERT INTO conversations (external_id, account_id, inbox_id, contact_id, unit_id, last_message_at)
    VALUES (%(conversation)s, %(account)s, %(inbox)s, %(contact)s, %(unit)s, %(sent_at)s)
    ON CONFLICT (external_id) DO UPDATE
       SET last_message_at = GREATEST(conversations.last_message_at, EXCLUDED.last_message_at)
    RETURNING id, account_id, contact_id
), message AS (
    INSERT INTO messages (conversation_id, account_id, role, text, sent_at, channel_message_id, message_type)
    SELECT id, %(account)s, 'contact', %(text)s, %(sent_at)s, %(message_id)s, %(message_type)s FROM conversation
    ON CONFLICT (channel_message_id) DO NOTHING RETURNING 1
)
SELECT (SELECT account_id FROM contact) AS contact_account,
       (SELECT account_id FROM inbox) AS inbox_account,
       c.account_id AS conversation_account, c.contact_id AS conversation_contact,
       EXISTS (SELECT 1 FROM message) AS inserted,
       EXISTS (SELECT 1 FROM messages WHERE channel_message_id = %(reply_id)s) AS replied
FROM conversation c
"""


# The reply once (by its id) and the conversation's lead state, in one statement.
SAVE_REPLY = """
WITH conversation AS (
    SELECT id FROM conversations WHERE external_id = %(conversation)s AND account_id = %(account)s
), message AS (
    INSERT INTO messages (conversation_id, account_id, role, text, sent_at, channel_message_id, reply)
    SELECT id, %(account)s, 'agent', %(text)s, %(created_at)s, %(reply_id)s, %(reply)s FROM conversation
    ON CONFLICT (channel_message_id) DO NOTHING RETURNING 1
), lead AS (
    UPDATE conversations SET lead_state = %(lead_state)s WHERE id = (SELECT id FROM conversation)
)
SELECT EXISTS (SELECT 1 FROM message) AS new FROM conversation
"""


class PostgresConversationRepository:
    def __init__(self, uow: "UnitOfWork"):
        self.conn = uow.conn

    def erased(self, msg, erasure_key):
        from streams.learn.store import lock_contact
        from streams.maintain.erasure import is_erased

        lock_contact(self.conn, msg.account_id, msg.contact_id)
        return is_erased(self.conn, msg.account_id, contact_id=msg.contact_id, key=erasure_key)

    def store_inbound(self, msg, reply_id):
        # One statement (one round trip, pipeline mode or not): the account, contact and inbox
        # rows upserted, the conversation upserted, the message inserted once, and whether the
        # reply is already stored. A tenant mismatch found in its result raises before the
        # commit, so the unit rolls all of it back.
        row = self.conn.execute(STORE_INBOUND, {
            "account": msg.account_id, "contact": msg.contact_id, "inbox": msg.inbox_id,
            "conversation": msg.conversation_id, "unit": msg.unit_id, "sent_at": msg.sent_at,
            "text": msg.text, "message_id": msg.message_id, "message_type": msg.message_type,
            "reply_id": reply_id}).fetchone()
        for table, row_id, owner in (("contacts", msg.contact_id, row["contact_account"]),
                                     ("inboxes", msg.inbox_id, row["inbox_account"])):
            if owner != msg.account_id:
                raise TenantMismatch(f"{table[:-1]} {row_id} belongs to another account")
        if row["conversation_account"] != msg.account_id or row["conversation_contact"] != msg.contact_id:
            raise TenantMismatch(f"conversation {msg.conversation_id} belongs to another account/contact")
        return row["inserted"] or not row["replied"]

    def save_reply(self, reply, stored, lead_state, calls):
        # the reply and the lead state in one statement; the ledger's rows (only for calls that
        # used tokens) in the same transaction
        row = self.conn.execute(SAVE_REPLY, {
            "conversation": reply.conversation_id, "account": reply.account_id, "text": reply.text,
            "created_at": reply.created_at, "reply_id": reply.reply_id, "reply": Jsonb(stored),
            "lead_state": Jsonb(dict(lead_state or {}))}).fetchone()
        if row is None:
            raise LookupError(f"conversation {reply.conversation_id} of account {reply.account_id} is not stored")
        for call in calls:
            if call is not None:
                self.conn.execute(LEDGER_INSERT, ledger_args(call))
        return row["new"]

    def mark_published(self, reply_ids):
        self.conn.execute("UPDATE messages SET published_at = now() WHERE channel_message_id = ANY(%s) "
                          "AND published_at IS NULL", (list(reply_ids),))


