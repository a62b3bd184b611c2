"""The acts step's records (rights, opt-out, tools): ``ActsRepository`` (``uow.acts``, its SQL here)
and ``PostgresActsStore``, the step's store, which works through units of work. Every query is
scoped by ``account_id``."""

from __future__ import annotations

import json
import logging
import time
from typing import TYPE_CHECKING, Any, Mapping, Protocol

from psycopg.types.json import Jsonb
from psycopg_pool import ConnectionPool

from schemas.events import InboundMessage, OutboundReply
from streams.respond.adapters import REDUCE_WEIGHT_TYPES
from streams.respond.tools import ToolConfigError, ToolSpec, parse_tools
from streams.store.uow import PostgresUnitOfWork, UnitOfWorkFactory

if TYPE_CHECKING:
    from streams.store.uow import UnitOfWork

log = logging.getLogger(__name__)

INBOX_TOOLS_TTL_S = 5.0
FORGOTTEN_ON_REQUEST = "customer asked to be forgotten"


class ActsRepository(Protocol):
    """``uow.acts`` (``streams.store.fake_uow`` implements it in memory)."""

    def live_fact_contents(self, account_id: int, contact_id: int) -> list[str]:
        """The contact's live facts (unexpired, or of a type that only loses weight), distinct contents,
        most recently verified first."""
    def request_facts(self, account_id: int, message_id: str) -> int | None:
        """The facts count of the privacy request already recorded for this message, or None."""
    def record_request(self, msg: InboundMessage, kind: str, facts: int) -> None:
        """A privacy request (once per message)."""
    def discard_unlearnt(self, account_id: int, contact_id: int, reason: str) -> None:
        """The contact's conversations not yet learnt from (no extraction ``done``/``discarded``) become
        ``discarded``: learning them later would bring forgotten facts back."""
    def record_opt_out(self, msg: InboundMessage) -> None:
        """The contact's marketing opt-out (once per contact)."""
    def inbox_tools(self, account_id: int, inbox_id: int) -> Any:
        """The inbox's ``tools`` JSON as stored (None when the inbox is not the account's)."""
    def tool_call(self, account_id: int, message_id: str) -> dict | None:
        """``outcome`` and ``result`` of the tool call recorded for this message, or None."""
    def record_tool_call(self, msg: InboundMessage, tool: str, key: str, arguments: Mapping[str, str],
                         outcome: str, result: Mapping[str, Any] | None) -> None:
        """Insert or update the message's tool call; finished unless ``running``."""
    def save_agent_message(self, reply: OutboundReply) -> None:
        """The reply as an agent message of its conversation, once (lead state untouched)."""
    def is_published(self, reply_id: str) -> bool:
        """Whether the reply stored under ``reply_id`` was acknowledged by Kafka."""


class PostgresActsRepository:
    def __init__(self, uow: "UnitOfWork"):
        self.conn = uow.conn

    def live_fact_contents(self, account_id, contact_id):
        rows = self.conn.execute(
            """SELECT DISTINCT ON (content) content, last_verified_at FROM contact_memories
               WHERE account_id = %s AND contact_id = %s AND deleted_at IS NULL AND superseded_at IS NULL
                 AND (expires_at IS NULL OR expires_at >= now() OR memory_type = ANY(%s))
               ORDER BY content, last_verified_at DESC""",
            (account_id, contact_id, list(REDUCE_WEIGHT_TYPES))).fetchall()
        return [r["content"] for r in sorted(rows, key=lambda r: r["last_verified_at"], reverse=True)]

    def request_facts(self, account_id, message_id):
        row = self.conn.execute("SELECT facts FROM privacy_requests WHERE account_id = %s AND message_id = %s",
                                (account_id, message_id)).fetchone()
        return None if row is None else int(row["facts"])

    def record_request(self, msg, kind, facts):
        self.conn.execute(
            """INSERT INTO privacy_requests (account_id, contact_id, conversation_id, message_id, kind, text, facts)
               VALUES (%s, %s, %s, %s, %s, %s, %s) ON CONFLICT (account_id, message_id) DO NOTHING""",
            (msg.account_id, msg.contact_id, msg.conversation_id, msg.message_id, kind, msg.text, facts))

    def discard_unlearnt(self, account_id, contact_id, reason):
        self.conn.execute(
            """INSERT INTO conversation_extractions (conversation_id, account_id, contact_id, status,
                                                     last_error, updated_at)
               SELECT c.id, c.account_id, c.contact_id, 'discarded', %s, now()
               FROM conversations c WHERE c.account_id = %s AND c.contact_id = %s
               ON CONFLICT (conversation_id) DO UPDATE SET status = 'discarded', last_error = EXCLUDED.last_error,
                   updated_at = EXCLUDED.updated_at
               WHERE conversation_extractions.status NOT IN ('done', 'discarded')""",
            (reason, account_id, contact_id))

    def record_opt_out(self, msg):
        self.conn.execute(
            """INSERT INTO marketing_optouts (account_id, contact_id, message_id, text)
               VALUES (%s, %s, %s, %s) ON CONFLICT (account_id, contact_id) DO NOTHING""",
            (msg.account_id, msg.contact_id, msg.message_id, msg.text))

    def inbox_tools(self, account_id, inbox_id):
        row = self.conn.execute("SELECT tools FROM inboxes WHERE id = %s AND account_id = %s",
                                (inbox_id, account_id)).fetchone()
        return row["tools"] if row else None

    def tool_call(self, account_id, message_id):
        return self.conn.execute("SELECT outcome, result FROM tool_calls WHERE account_id = %s AND message_id = %s",
                                 (account_id, message_id)).fetchone()

    def record_tool_call(self, msg, tool, key, arguments, outcome, result):
        self.conn.execute(
            """INSERT INTO tool_calls (account_id, contact_id, conversation_id, message_id, tool, flight_key,
                                       arguments, outcome, result, finished_at)
               VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, CASE WHEN %s THEN now() END)
               ON CONFLICT (account_id, message_id) DO UPDATE SET outcome = EXCLUDED.outcome,
                   result = EXCLUDED.result, finished_at = EXCLUDED.finished_at""",
            (msg.account_id, msg.contact_id, msg.conversation_id, msg.message_id, tool, key,
             Jsonb(dict(arguments)), outcome, None if result is None else Jsonb(dict(result)), outcome != "running"))

    def save_agent_message(self, reply):
        self.conn.execute(
            """INSERT INTO messages (conversation_id, account_id, role, text, sent_at, channel_message_id, reply)
               SELECT id, %s, 'agent', %s, %s, %s, %s FROM conversations
               WHERE external_id = %s AND account_id = %s
               ON CONFLICT (channel_message_id) DO NOTHING""",
            (reply.account_id, reply.text, reply.created_at, reply.reply_id,
             Jsonb(json.loads(reply.model_dump_json())), reply.conversation_id, reply.account_id))

    def is_published(self, reply_id):
        return self.conn.execute("SELECT 1 FROM messages WHERE channel_message_id = %s AND published_at IS NOT NULL",
                                 (reply_id,)).fetchone() is not None


class PostgresActsStore:
    """The acts step's store (``streams.respond.acts.ActsStore``): each operation is one unit of work
    over ``uow.acts`` (the in-memory fake in unit tests: ``PostgresActsStore(None, uow=db.unit_of_work)``)."""

    def __init__(self, pool: ConnectionPool | None, *, uow: UnitOfWorkFactory | None = None,
                 tools_ttl_s: float = INBOX_TOOLS_TTL_S):
        self.unit: UnitOfWorkFactory = uow or (lambda: PostgresUnitOfWork(pool))
        self.tools_ttl_s = tools_ttl_s
        self._tools: dict[tuple[int, int], tuple[float, dict[str, ToolSpec]]] = {}

    def _do(self, op: str, *args) -> Any:
        """``uow.acts.<op>(*args)`` in a unit of its own, committed."""
        with self.unit() as uow:
            out = getattr(uow.acts, op)(*args)
            uow.commit()
        return out

    # -- rights -----------------------------------------------------------------
    def live_fact_contents(self, account_id: int, contact_id: int) -> list[str]:
        """The contact's live facts in plain language (content only, never evidence)."""
        return self._do("live_fact_contents", account_id, contact_id)

    def record_access(self, msg: InboundMessage, facts: int) -> None:
        self._do("record_request", msg, "access", facts)

    def forget_on_request(self, msg: InboundMessage) -> int:
        """Forget every fact now (the forgetting service), record the request, and
        mark this contact's conversations not yet learnt from as discarded (learning
        them later would bring the facts back). One unit of work; a redelivered request
        forgets nothing more and answers with the count first recorded."""
        from streams.maintain.forget import forget_contact

        with self.unit() as uow:
            done = uow.acts.request_facts(msg.account_id, msg.message_id)
            if done is not None:  # redelivered: already forgotten
                return done
            n = forget_contact(uow, msg.account_id, msg.contact_id, actor="customer-request")
            uow.acts.discard_unlearnt(msg.account_id, msg.contact_id, FORGOTTEN_ON_REQUEST)
            uow.acts.record_request(msg, "erasure", n)
            uow.commit()  # the facts forgotten, their events and the request's record together
        return n

    def record_opt_out(self, msg: InboundMessage) -> None:
        self._do("record_opt_out", msg)

    # -- tools ------------------------------------------------------------------
    def cached_inbox_tools(self, account_id: int, inbox_id: int) -> dict[str, ToolSpec] | None:
        """The inbox's tools if read less than ``tools_ttl_s`` ago (no I/O: the hot path
        asks this first and reads the database only on a miss)."""
        hit = self._tools.get((account_id, inbox_id))
        if hit and time.monotonic() - hit[0] < self.tools_ttl_s:
            return hit[1]
        return None

    def inbox_tools(self, account_id: int, inbox_id: int) -> dict[str, ToolSpec]:
        """The inbox's intent → tool map (cached a few seconds; a bad config is logged and ignored)."""
        now = time.monotonic()
        hit = self._tools.get((account_id, inbox_id))
        if hit and now - hit[0] < self.tools_ttl_s:
            return hit[1]
        try:
            tools = parse_tools(self._do("inbox_tools", account_id, inbox_id))
        except ToolConfigError as e:
            log.error("inbox %d tools ignored: %s", inbox_id, e)
            tools = {}
        self._tools[(account_id, inbox_id)] = (now, tools)
        return tools

    def tool_call_of(self, msg: InboundMessage) -> dict | None:
        return self._do("tool_call", msg.account_id, msg.message_id)

    def record_tool_call(self, msg: InboundMessage, spec: ToolSpec, key: str, arguments: Mapping[str, str],
                         outcome: str, result: Mapping[str, Any] | None = None) -> None:
        self._do("record_tool_call", msg, spec.name, key, arguments, outcome, result)

    def save_agent_message(self, reply: OutboundReply) -> None:
        """A reply that is not the answer to its inbound message (the tool's second
        reply): stored as an agent message, lead state untouched. Idempotent."""
        self._do("save_agent_message", reply)

    def is_published(self, reply_id: str) -> bool:
        return self._do("is_published", reply_id)
