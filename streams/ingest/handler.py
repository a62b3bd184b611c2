"""The ingestion use-case for a batch of ``outbox.event.chunk`` records."""

from __future__ import annotations

import itertools
import logging
import threading
from dataclasses import dataclass
from typing import Sequence

from psycopg_pool import ConnectionPool

from streams import metrics
from streams.embedding import Embedder
from streams.ingest.knowledge import (
    EmbedderFor,
    IndexPlan,
    IndexStats,
    apply_index,
    chunk_alias,
    ensure_chunk_collection,
    model_of,
    plan_index,
)
from streams.kafka.consume import DeadLetter, Record
from streams.kafka.envelope import DecodeError, decode_outbox
from streams.pricing import PriceTable
from streams.store.uow import joined
from streams.vectors.port import VectorStore

log = logging.getLogger(__name__)


def batch_key(records: Sequence[Record]) -> tuple:
    return tuple((r.topic, r.partition, r.offset) for r in records)


@dataclass
class _Prepared:
    """A batch read and its embeddings requested ahead of its turn (``ChunkEventHandler.prepare``)."""

    seq: int
    dead: list[DeadLetter]
    events: list
    todo: list
    plan: IndexPlan | None
    basis: object   # what must have been applied just before this batch for ``plan`` to hold


class ChunkEventHandler:
    """Indexes a batch of chunk events (``__call__``), with an optional lookahead (``prepare``).

    ``prepare(records)`` is speculative and is called for the next batch while the one before it
    runs (``streams.app`` ``batch_agent``, in batch order): it decodes, checks what is new, reads
    the chunks and their points and requests their embeddings (``plan_index``), deciding against
    the store as the batch before will leave it (that batch's plan, ``IndexPlan.effects``). So the
    embedding service has this batch's parts queued while the worker upserts and marks the batch
    before. Nothing is written: the effects are the call's, in batch order. The call uses the
    prepared plan only if it still holds — the batch just applied is the one it was decided after
    (that batch applied its own prepared plan, once, without a retry), and the chunk alias still
    names its collection; otherwise it is dropped and the batch is read again, as without a
    lookahead. A prepare that fails is forgotten (the call meets the error, with its kind).
    """

    consumer = "ingest"

    def __init__(self, *, pool: ConnectionPool, store: VectorStore, domain: str,
                 embedder: Embedder, embedder_for: EmbedderFor, prices: PriceTable | None = None,
                 embed_part: int = 0, sentences: bool = False):
        self.pool, self.store, self.domain = pool, store, domain
        self.sentences = sentences    # the composer's sentence vectors too (settings.chunk_sentence_vectors)
        self.embed_part = embed_part  # texts per embedding-service request (settings.ingest_embed_part)
        self.prices = prices  # the cost table (Container.prices)
        self.embedder, self.embedder_for = embedder, embedder_for
        self.last_stats = IndexStats()
        self._lock = threading.Lock()
        self._seq = itertools.count()
        self._prepared: dict[tuple, _Prepared] = {}
        self._latest: object = None    # the last batch prepared (what the next one is decided after)
        self._applied: object = None   # what the last call applied (its _Prepared, or a token of its own)
        self.lookahead_used = 0        # calls that applied a prepared plan (tests, logs)

    def _decode(self, records: Sequence[Record]) -> tuple[list[DeadLetter], list]:
        dead: list[DeadLetter] = []
        events = []
        for r in records:
            try:
                events.append(decode_outbox("chunk", r.key, r.value, r.headers))
            except DecodeError as e:
                dead.append(DeadLetter(r, e.error_class, str(e)))
        return dead, events

    def _fresh(self, events: list) -> list:
        with joined(self.pool) as uow:
            fresh = uow.processed.unprocessed(self.consumer, [e.event_id for e in events])
        return [e for e in events if e.event_id in fresh]

    def _plan(self, todo: list, ahead_of: dict | None = None) -> IndexPlan:
        collection = ensure_chunk_collection(self.store, self.domain, self.embedder)
        return plan_index([str(e.payload.chunk_id) for e in todo], pool=self.pool, store=self.store,
                          collection=collection, embedder=self.embedder_for(model_of(collection)),
                          embed_part=self.embed_part, ahead_of=ahead_of)

    def prepare(self, records: Sequence[Record]) -> None:
        """Read the next batch and request its embeddings while the batch before it runs (speculative)."""
        with self._lock:
            basis = self._latest
            mine = self._latest = object()   # until this succeeds, the next batch has nothing to build on
        try:
            dead, events = self._decode(records)
            todo = self._fresh(events) if events else []
            ahead = basis.plan.effects() if isinstance(basis, _Prepared) and basis.plan is not None else None
            plan = self._plan(todo, ahead) if todo else None
        except Exception as e:
            log.debug("ingest lookahead dropped: %r", e)   # the call reads the batch again and meets it
            return
        p = _Prepared(next(self._seq), dead, events, todo, plan, basis)
        with self._lock:
            if self._latest is mine:
                self._latest = p
            self._prepared[batch_key(records)] = p

    def _take_prepared(self, records: Sequence[Record]) -> _Prepared | None:
        with self._lock:
            p = self._prepared.pop(batch_key(records), None)
            stale = [k for k, q in self._prepared.items() if p is None or q.seq < p.seq]
            dropped = [self._prepared.pop(k) for k in stale]
            previous, self._applied = self._applied, object()   # nothing applied yet by this call
        for q in dropped:
            if q.plan is not None:
                q.plan.close()
        if p is None:
            return None
        holds = p.basis is previous and (p.plan is None or self.store.alias_target(chunk_alias(self.domain))
                                          == p.plan.collection)
        if not holds:
            if p.plan is not None:
                p.plan.close()
            return None
        return p

    def __call__(self, records: Sequence[Record]) -> list[DeadLetter]:
        p = self._take_prepared(records)
        if p is not None:
            dead, events, todo, plan = p.dead, p.events, p.todo, p.plan
        else:
            dead, events = self._decode(records)
            todo = self._fresh(events) if events else []
            plan = None
        if not events:
            self._done(p)
            return dead
        if len(todo) < len(events):
            metrics.EVENTS_DUPLICATE.labels(records[0].topic).inc(len(events) - len(todo))
        if todo:
            if plan is None:
                plan = self._plan(todo)
            with metrics.EMBEDDING_LATENCY.labels("chunks").time():
                stats = apply_index(plan, pool=self.pool, store=self.store, prices=self.prices,
                                    sentences=self.sentences)
            self.last_stats = stats
            metrics.CHUNKS_EMBEDDED.inc(stats.embedded)
            metrics.CHUNK_POINTS_DELETED.inc(stats.deleted)
            log.info("indexed chunks events=%d embedded=%d payload_updates=%d unchanged=%d deleted=%d "
                     "seconds=%.3f embed=%.3f upsert=%.3f ahead=%s", len(todo), stats.embedded,
                     stats.payload_updates, stats.unchanged, stats.deleted, stats.seconds, stats.embed_seconds,
                     stats.upsert_seconds, p is not None)
            with joined(self.pool) as uow:  # after the index: a crash in between indexes again (idempotent)
                uow.processed.mark(self.consumer, [e.event_id for e in todo])
        self._done(p)
        return dead

    def _done(self, p: _Prepared | None) -> None:
        """A call succeeded: what it applied is the basis a lookahead must have been decided after."""
        with self._lock:
            if p is not None:
                self._applied = p
                self.lookahead_used += 1
            else:   # read in its turn: a lookahead prepared from now on builds on the store as it is
                self._latest = self._applied
