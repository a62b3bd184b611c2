"""Postgres adapter of the acts step (rights, opt-out, tools). Every query is
scoped by ``account_id``."""

from __future__ import annotations

import json
import logging
import time
from typing import Any, Mapping

from psycopg.types.json import Jsonb
from psycopg_pool import ConnectionPool

from schemas.events import InboundMessage, OutboundReply
from streams.respond.adapters import REDUCE_WEIGHT_TYPES
from streams.respond.tools import ToolConfigError, ToolSpec, parse_tools
from streams.store.uow import PostgresUnitOfWork

log = logging.getLogger(__name__)

INBOX_TOOLS_TTL_S = 5.0


class PostgresActsStore:
    def __init__(self, pool: ConnectionPool, *, tools_ttl_s: float = INBOX_TOOLS_TTL_S):
        self.pool = pool
        self.tools_ttl_s = tools_ttl_s
        self._tools: dict[tuple[int, int], tuple[float, dict[str, ToolSpec]]] = {}

    # -- rights -----------------------------------------------------------------
    def live_fact_contents(self, account_id: int, contact_id: int) -> list[str]:
        """The contact's live facts in plain language (content only, never evidence)."""
        with self.pool.connection() as conn:
            rows = conn.execute(
                """SELECT DISTINCT ON (content) content, last_verified_at FROM contact_memories
                   WHERE account_id = %s AND contact_id = %s AND deleted_at IS NULL AND superseded_at IS NULL
                     AND (expires_at IS NULL OR expires_at >= now() OR memory_type = ANY(%s))
                   ORDER BY content, last_verified_at DESC""",
                (account_id, contact_id, list(REDUCE_WEIGHT_TYPES))).fetchall()
        return [r["content"] for r in sorted(rows, key=lambda r: r["last_verified_at"], reverse=True)]

    def _record(self, conn, msg: InboundMessage, kind: str, facts: int) -> None:
        conn.execute(
            """INSERT INTO privacy_requests (account_id, contact_id, conversation_id, message_id, kind, text, facts)
               VALUES (%s, %s, %s, %s, %s, %s, %s) ON CONFLICT (account_id, message_id) DO NOTHING""",
            (msg.account_id, msg.contact_id, msg.conversation_id, msg.message_id, kind, msg.text, facts))

    def record_access(self, msg: InboundMessage, facts: int) -> None:
        with self.pool.connection() as conn:
            self._record(conn, msg, "access", facts)

    def forget_on_request(self, msg: InboundMessage) -> int:
        """Forget every fact now (the forgetting service), record the request, and
        mark this contact's conversations not yet learnt from as discarded (learning
        them later would bring the facts back). One transaction."""
        from streams.maintain.forget import forget_contact

        with PostgresUnitOfWork(self.pool) as uow:
            conn = uow.conn
            done = conn.execute("SELECT facts FROM privacy_requests WHERE account_id = %s AND message_id = %s",
                                (msg.account_id, msg.message_id)).fetchone()
            if done is not None:  # redelivered: already forgotten
                return int(done["facts"])
            n = forget_contact(uow, msg.account_id, msg.contact_id, actor="customer-request")
            conn.execute(
                """INSERT INTO conversation_extractions (conversation_id, account_id, contact_id, status,
                                                         last_error, updated_at)
                   SELECT c.id, c.account_id, c.contact_id, 'discarded', 'customer asked to be forgotten', now()
                   FROM conversations c WHERE c.account_id = %s AND c.contact_id = %s
                   ON CONFLICT (conversation_id) DO UPDATE SET status = 'discarded', last_error = EXCLUDED.last_error,
                       updated_at = EXCLUDED.updated_at
                   WHERE conversation_extractions.status NOT IN ('done', 'discarded')""", (msg.account_id, msg.contact_id))
            self._record(conn, msg, "erasure", n)
            uow.commit()  # the facts forgotten, their events and the request's record together
        return n

    def record_opt_out(self, msg: InboundMessage) -> None:
        with self.pool.connection() as conn:
            conn.execute(
                """INSERT INTO marketing_optouts (account_id, contact_id, message_id, text)
                   VALUES (%s, %s, %s, %s) ON CONFLICT (account_id, contact_id) DO NOTHING""",
                (msg.account_id, msg.contact_id, msg.message_id, msg.text))

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
        with self.pool.connection() as conn:
            row = conn.execute("SELECT tools FROM inboxes WHERE id = %s AND account_id = %s",
                               (inbox_id, account_id)).fetchone()
        try:
            tools = parse_tools(row["tools"] if row else None)
        except ToolConfigError as e:
            log.error("inbox %d tools ignored: %s", inbox_id, e)
            tools = {}
        self._tools[(account_id, inbox_id)] = (now, tools)
        return tools

    def tool_call_of(self, msg: InboundMessage) -> dict | None:
        with self.pool.connection() as conn:
            return conn.execute("SELECT outcome, result FROM tool_calls WHERE account_id = %s AND message_id = %s",
                                (msg.account_id, msg.message_id)).fetchone()

    def record_tool_call(self, msg: InboundMessage, spec: ToolSpec, key: str, arguments: Mapping[str, str],
                         outcome: str, result: Mapping[str, Any] | None = None) -> None:
        finished = outcome not in ("running",)
        with self.pool.connection() as conn:
            conn.execute(
                """INSERT INTO tool_calls (account_id, contact_id, conversation_id, message_id, tool, flight_key,
                                           arguments, outcome, result, finished_at)
                   VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, CASE WHEN %s THEN now() END)
                   ON CONFLICT (account_id, message_id) DO UPDATE SET outcome = EXCLUDED.outcome,
                       result = EXCLUDED.result, finished_at = EXCLUDED.finished_at""",
                (msg.account_id, msg.contact_id, msg.conversation_id, msg.message_id, spec.name, key,
                 Jsonb(dict(arguments)), outcome, None if result is None else Jsonb(dict(result)), finished))

    def save_agent_message(self, reply: OutboundReply) -> None:
        """A reply that is not the answer to its inbound message (the tool's second
        reply): stored as an agent message, lead state untouched. Idempotent."""
        with self.pool.connection() as conn:
            conn.execute(
                """INSERT INTO messages (conversation_id, account_id, role, text, sent_at, channel_message_id, reply)
                   SELECT id, %s, 'agent', %s, %s, %s, %s FROM conversations
                   WHERE external_id = %s AND account_id = %s
                   ON CONFLICT (channel_message_id) DO NOTHING""",
                (reply.account_id, reply.text, reply.created_at, reply.reply_id,
                 Jsonb(json.loads(reply.model_dump_json())), reply.conversation_id, reply.account_id))

    def is_published(self, reply_id: str) -> bool:
        with self.pool.connection() as conn:
            return conn.execute("SELECT 1 FROM messages WHERE channel_message_id = %s AND published_at IS NOT NULL",
                                (reply_id,)).fetchone() is not None
