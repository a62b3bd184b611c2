"""Adapters of the respond ports: Postgres (conversations, memories), the
chunk collection (knowledge) and the system clock.

Every query is scoped by ``account_id`` (docs/architecture.md §1.5). The store is
stateless: any number of responders may share the database.
"""

from __future__ import annotations

import json
import logging
import re
import threading
import time
import weakref
from contextlib import contextmanager, nullcontext
from typing import Any, Callable, Iterator, Mapping, Sequence
from uuid import UUID

import numpy as np
from psycopg_pool import ConnectionPool

from schemas.events import InboundMessage, OutboundReply
from streams.embedding import Embedder
from streams.ingest.knowledge import chunk_alias, model_of, search_chunks
from streams.pricing import ModelCall
from streams.respond.handler import SystemClock, reply_id_for  # noqa: F401  (Clock adapter)
from streams.respond.model import ConversationContext, HistoryMessage, InboxConfig, KnowledgeChunk
from streams.respond.recall import MemoryFact
from streams.respond.store import TenantMismatch  # noqa: F401  (raised by the writes; importers use this name)
from streams.store.db import autocommit
from streams.store.uow import PostgresUnitOfWork, UnitOfWorkFactory

log = logging.getLogger(__name__)

# TTL policy of a fact type once ``expires_at`` passed (docs/architecture.md §4B): these
# types keep being recalled at weight × 0.7; the others are invisible (the
# weekly aging job deletes them; recall does not wait for it).
REDUCE_WEIGHT_TYPES = ("preferencia", "padrao_comportamental", "vinculo_comercial", "contexto_pessoal")
REDUCED_WEIGHT = 0.7


class PostgresConversationStore:
    def __init__(self, pool: ConnectionPool | None, *, erasure_key: str | None = None,
                 uow: UnitOfWorkFactory | None = None, pipeline: bool = False):
        self.pool = pool
        self.erasure_key = erasure_key
        self.pipeline = pipeline   # libpq pipeline mode (Settings.db_pipeline)
        # the writes go through a unit of work (the in-memory fake in unit tests)
        self.unit: UnitOfWorkFactory = uow or (lambda: PostgresUnitOfWork(pool))

    def receive(self, msg: InboundMessage, history: int) -> ConversationContext | None:
        """``store_inbound`` then ``load_context`` on one pooled connection (one checkout; in
        pipeline mode BEGIN, the contact's lock and erasure check in one round trip, the
        inbound writes in one, COMMIT, the context's two reads in one); None when there is
        nothing to answer."""
        if self.pool is None:  # the in-memory unit of work (unit tests): nothing to share
            return self.load_context(msg, history) if self.store_inbound(msg) else None
        with self.pool.connection() as conn, pipelined(conn, self.pipeline):
            if not self._store_inbound(PostgresUnitOfWork(conn=conn), msg):
                return None
            return self._context(conn, msg, history)

    @contextmanager
    def _unit_pipelined(self) -> Iterator[Any]:
        """A unit of work (not yet entered) on a pooled connection; in pipeline mode the
        statements whose results nobody reads before the commit share its round trip."""
        if self.pool is None:
            yield self.unit()
            return
        with self.pool.connection() as conn, pipelined(conn, self.pipeline):
            yield PostgresUnitOfWork(conn=conn)

    def store_inbound(self, msg: InboundMessage) -> bool:
        return self._store_inbound(self.unit(), msg)

    def _store_inbound(self, unit, msg: InboundMessage) -> bool:
        reply_id = reply_id_for(msg)
        with unit as uow:
            repo = uow.conversations
            if repo.erased(msg, self.erasure_key):
                from streams.maintain.erasure import dropped

                dropped("respond", msg.account_id, "inbound message")
                return False  # an erased contact never comes back (no row, no reply)
            needs_reply = repo.store_inbound(msg, reply_id)
            uow.commit()
        return needs_reply

    def unpublished_reply(self, msg: InboundMessage) -> OutboundReply | None:
        """The stored reply to ``msg`` if Kafka never acknowledged it (crash in between)."""
        with self.pool.connection() as conn:
            row = conn.execute(
                "SELECT reply FROM messages WHERE channel_message_id = %s AND account_id = %s "
                "AND published_at IS NULL AND reply IS NOT NULL",
                (reply_id_for(msg), msg.account_id)).fetchone()
        return OutboundReply.model_validate(row["reply"]) if row else None

    def mark_published(self, replies: Sequence[OutboundReply]) -> None:
        if not replies:
            return
        with self._unit_pipelined() as unit, unit as uow:
            uow.conversations.mark_published([r.reply_id for r in replies])
            uow.commit()

    def load_context(self, msg: InboundMessage, history: int) -> ConversationContext:
        with self.pool.connection() as conn:
            return self._context(conn, msg, history)

    def _context(self, conn, msg: InboundMessage, history: int) -> ConversationContext:
        # reads only: no transaction (no BEGIN/COMMIT round trips); in pipeline mode both in one
        with autocommit(conn), pipelined(conn, self.pipeline):
            head = conn.execute(
                """SELECT a.settings, i.system_prompt, i.playbook_prompt, i.rag_distance_threshold,
                          i.rag_max_results, i.model, i.temperature, i.intent_keywords,
                          c.id AS conversation_pk, c.lead_state, c.status
                   FROM conversations c
                   JOIN accounts a ON a.id = c.account_id
                   LEFT JOIN inboxes i ON i.id = %s AND i.account_id = c.account_id
                   WHERE c.external_id = %s AND c.account_id = %s""",
                (msg.inbox_id, msg.conversation_id, msg.account_id))
            last = conn.execute(
                """SELECT role, text, sent_at FROM messages
                   WHERE conversation_id = (SELECT id FROM conversations
                                            WHERE external_id = %s AND account_id = %s)
                     AND account_id = %s AND channel_message_id IS DISTINCT FROM %s
                   ORDER BY sent_at DESC, id DESC LIMIT %s""",
                (msg.conversation_id, msg.account_id, msg.account_id, msg.message_id, history))
            row = head.fetchone()
            hist = last.fetchall()
        if row is None:
            raise LookupError(f"conversation {msg.conversation_id} not stored")
        settings = row["settings"] or {}
        inbox = InboxConfig(
            inbox_id=msg.inbox_id,
            system_prompt=row["system_prompt"] or None,
            playbook_prompt=row["playbook_prompt"] or None,
            rag_distance_threshold=(None if row["rag_distance_threshold"] is None
                                    else float(row["rag_distance_threshold"])),
            **({} if row["rag_max_results"] is None else {
                "rag_max_results": int(row["rag_max_results"]),
                "temperature": float(row["temperature"])}),
            model=row["model"] or None,
            intent_keywords=row["intent_keywords"] or None)
        lead = row["lead_state"] or None
        return ConversationContext(
            recall_enabled=bool(settings.get("memory_recall_enabled", False)), inbox=inbox,
            history=tuple(HistoryMessage(r["role"], r["text"], r["sent_at"]) for r in reversed(hist)),
            lead_state=lead, retrieval_count=int((lead or {}).get("retrieval_count", 0) or 0),
            status=row["status"])

    def save_reply(self, reply: OutboundReply, lead_state: Mapping[str, Any] | None, *,
                   model_call: ModelCall | None = None, recall_ms: float | None = None,
                   embedding_calls: Sequence[ModelCall] = ()) -> None:
        stored = json.loads(reply.model_dump_json())
        if recall_ms is not None:
            stored["recall_ms"] = round(recall_ms, 3)   # the unit reports' recall P99
        with self._unit_pipelined() as unit, unit as uow:
            uow.conversations.save_reply(reply, stored, lead_state, (model_call, *embedding_calls))
            uow.commit()

class PostgresMemoryRecall:
    """The contact's live facts embedded with ``embedding_model`` (others are
    invisible: their vectors live in another space).

    The query is bounded by ``statement_timeout`` = the remaining budget, so an abandoned
    thread's query is cancelled by the server too. On a shared pool it is ``SET LOCAL`` in a
    transaction (BEGIN, SET, SELECT, COMMIT: four round trips). On a pool only recall uses
    (``own_pool``, the composition root's ``recall_pool``) it is the connection's session setting,
    set once per connection (again only when the budget changes), and the SELECT runs alone
    without a transaction: one round trip.
    ``inject_delay_s`` (tests and drills only) adds ``pg_sleep`` to the query.
    """

    def __init__(self, pool: ConnectionPool, embedding_model: str, *, inject_delay_s: float = 0.0,
                 pipeline: bool = False, own_pool: bool = False):
        self.pool = pool
        self.embedding_model = embedding_model
        self.inject_delay_s = inject_delay_s
        self.pipeline = pipeline   # libpq pipeline mode (Settings.db_pipeline)
        self.own_pool = own_pool   # nobody else uses the pool's connections: session timeouts are safe
        self._timeouts: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()   # connection → its timeout (ms)
        self._lock = threading.Lock()

    def live_facts(self, account_id: int, contact_id: int, *, timeout_s: float) -> Sequence[MemoryFact]:
        ms = max(1, int(timeout_s * 1000))
        delay = "pg_sleep(%s)," if self.inject_delay_s else ""
        sql = f"""
            SELECT {delay} id, memory_type, content, confidence, scope, source_unit_id, embedding,
                   CASE WHEN expires_at IS NOT NULL AND expires_at < now()
                        THEN LEAST(weight, %s) ELSE weight END AS weight
            FROM contact_memories
            WHERE account_id = %s AND contact_id = %s
              AND deleted_at IS NULL AND superseded_at IS NULL
              AND embedding IS NOT NULL AND embedding_model = %s
              AND (expires_at IS NULL OR expires_at >= now() OR memory_type = ANY(%s))"""
        args: tuple = (REDUCED_WEIGHT, account_id, contact_id, self.embedding_model, list(REDUCE_WEIGHT_TYPES))
        if self.inject_delay_s:
            args = (self.inject_delay_s,) + args
        # vectors in binary
        if self.own_pool:
            rows = self._select_alone(ms, sql, args)
        else:   # in pipeline mode BEGIN, SET LOCAL, SELECT, COMMIT in one round trip
            with self.pool.connection() as conn, pipelined(conn, self.pipeline), conn.transaction():
                conn.execute(f"SET LOCAL statement_timeout = {ms}")
                rows = conn.execute(sql, args, binary=True).fetchall()
        return [MemoryFact(id=r["id"], memory_type=r["memory_type"], content=r["content"],
                           confidence=float(r["confidence"]), scope=r["scope"],
                           source_unit_id=r["source_unit_id"], weight=float(r["weight"]),
                           embedding=_vec(r["embedding"]))
                for r in rows]

    def _select_alone(self, ms: int, sql: str, args: tuple) -> list:
        """The query on a connection of recall's own pool: no transaction, the timeout a session
        setting of the connection (set when it is new to this recall or the budget changed)."""
        with self.pool.connection() as conn, autocommit(conn):
            with self._lock:
                current = self._timeouts.get(conn)
            if current != ms:
                conn.execute(f"SET statement_timeout = {ms}")
                with self._lock:
                    self._timeouts[conn] = ms
            return conn.execute(sql, args, binary=True).fetchall()


def pipelined(conn, on: bool):
    """``conn.pipeline()`` when ``on``, else nothing: the same statements, one round trip each.
    Pipeline mode saves round trips; in a worker whose threads share the GIL it costs more:
    every statement polls the socket (one more GIL hand-off), and a transaction of a few
    statements took ~1.5 × the CPU of plain mode next to a busy thread (README "Performance")."""
    return conn.pipeline() if on else nullcontext()


def _vec(v) -> np.ndarray:
    return np.asarray(v.to_numpy() if hasattr(v, "to_numpy") else v, dtype=np.float32)


class CollectionEmbedder:
    """The embedder of the model the chunk collection is bound to *now*
    (follows the alias across a blue-green re-embed; re-resolved every few seconds)."""

    def __init__(self, store, domain: str, embedder_for: Callable[[str], Embedder], default: Embedder,
                 ttl_s: float = 5.0):
        self.store, self.domain, self.embedder_for, self.default = store, domain, embedder_for, default
        self.ttl_s = ttl_s
        self._at = 0.0
        self._current = default

    def _resolve(self) -> Embedder:
        now = time.monotonic()
        if now - self._at > self.ttl_s:
            target = self.store.alias_target(chunk_alias(self.domain))
            model = model_of(target) if target else self.default.name
            self._current = self.default if model == self.default.name else self.embedder_for(model)
            self._at = now
        return self._current

    @property
    def name(self) -> str:
        return self._resolve().name

    @property
    def dim(self) -> int:
        return self._resolve().dim

    def embed_queries(self, texts):
        return self._resolve().embed_queries(texts)

    def embed_passages(self, texts):
        return self._resolve().embed_passages(texts)


class ChunkKnowledgeSearch:
    """The account's live chunks through the chunk collection (texts from Postgres)."""

    def __init__(self, pool: ConnectionPool, store, domain: str, embedder_for: Callable[[str], Embedder],
                 query_model: Callable[[], str]):
        self.pool, self.store, self.domain, self.embedder_for = pool, store, domain, embedder_for
        self.query_model = query_model

    def search(self, query_vec: np.ndarray, account_id: int, limit: int,
               max_distance: float) -> list[KnowledgeChunk]:
        hits = search_chunks(None, account_id=account_id, pool=self.pool, store=self.store,
                             domain=self.domain, embedder_for=self.embedder_for, limit=limit,
                             max_distance=max_distance, query_vector=np.asarray(query_vec).tolist(),
                             query_model=self.query_model())
        return [KnowledgeChunk(UUID(h.chunk_id), UUID(h.document_id), float(h.distance), h.content)
                for h in hits]

    def lexical_search(self, account_id: int, stems: Sequence[str], limit: int) -> list[KnowledgeChunk]:
        """Live chunks of the account with a word starting with each stem (accent- and
        case-insensitive regular expressions; a knowledge base is small: no index needed)."""
        if not stems:
            return []
        where = " AND ".join(["content ~* %s"] * len(stems))
        with self.pool.connection() as conn, autocommit(conn):
            rows = conn.execute(
                f"SELECT id, document_id, content FROM chunks WHERE account_id = %s AND deleted_at IS NULL "
                f"AND {where} ORDER BY document_id, seq LIMIT %s",
                (account_id, *[word_prefix_pattern(s) for s in stems], limit)).fetchall()
        return [KnowledgeChunk(UUID(str(r["id"])), UUID(str(r["document_id"])), 1.0, r["content"]) for r in rows]

    def sentence_vectors(self, account_id: int, chunk_ids: Sequence[UUID], model: str) -> dict[str, np.ndarray]:
        """The sentence vectors stored with these live chunks of the account by ``model``'s
        indexer (``streams.ingest.knowledge.store_sentences``): {sentence: float32 vector}."""
        if not chunk_ids:
            return {}
        with self.pool.connection() as conn, autocommit(conn):
            rows = conn.execute(
                "SELECT sentence_texts, sentence_vectors FROM chunks WHERE account_id = %s AND id = ANY(%s) "
                "AND deleted_at IS NULL AND sentence_model = %s AND sentence_vectors IS NOT NULL",
                (account_id, list(chunk_ids), model), binary=True).fetchall()
        out: dict[str, np.ndarray] = {}
        for r in rows:
            texts = r["sentence_texts"] or []
            if texts:
                vecs = np.frombuffer(bytes(r["sentence_vectors"]), dtype=np.float32).reshape(len(texts), -1)
                out.update(zip(texts, vecs))
        return out


_ACCENTED = {"a": "aáàâãä", "e": "eéèêë", "i": "iíìîï", "o": "oóòôõö", "u": "uúùûü", "c": "cç", "n": "nñ"}


def word_prefix_pattern(stem: str) -> str:
    """A PostgreSQL regular expression for a word starting with ``stem`` (folded: no
    accents), whatever the accents of the text: "parce" → ``\\m[p][aáàâãä][r]...``."""
    return r"\m" + "".join(f"[{_ACCENTED.get(ch, re.escape(ch))}]" for ch in stem)

