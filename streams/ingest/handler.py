"""The ingestion use-case for a batch of ``outbox.event.chunk`` records."""

from __future__ import annotations

import logging
from typing import Sequence

from psycopg_pool import ConnectionPool

from streams import metrics
from streams.embedding import Embedder
from streams.ingest.knowledge import EmbedderFor, IndexStats, ensure_chunk_collection, index_chunks, model_of
from streams.kafka.consume import DeadLetter, Record
from streams.kafka.envelope import DecodeError, decode_outbox
from streams.pricing import PriceTable
from streams.store.uow import joined
from streams.vectors.port import VectorStore

log = logging.getLogger(__name__)


class ChunkEventHandler:
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

    def __call__(self, records: Sequence[Record]) -> list[DeadLetter]:
        dead: list[DeadLetter] = []
        events = []
        for r in records:
            try:
                events.append(decode_outbox("chunk", r.key, r.value, r.headers))
            except DecodeError as e:
                dead.append(DeadLetter(r, e.error_class, str(e)))
        if not events:
            return dead
        with joined(self.pool) as uow:
            fresh = uow.processed.unprocessed(self.consumer, [e.event_id for e in events])
        if len(fresh) < len(events):
            metrics.EVENTS_DUPLICATE.labels(records[0].topic).inc(len(events) - len(fresh))
        todo = [e for e in events if e.event_id in fresh]
        if todo:
            collection = ensure_chunk_collection(self.store, self.domain, self.embedder)
            embedder = self.embedder_for(model_of(collection))
            with metrics.EMBEDDING_LATENCY.labels("chunks").time():
                stats = index_chunks([str(e.payload.chunk_id) for e in todo], pool=self.pool,
                                     store=self.store, collection=collection, embedder=embedder,
                                     prices=self.prices, embed_part=self.embed_part,
                                     sentences=self.sentences)
            self.last_stats = stats
            metrics.CHUNKS_EMBEDDED.inc(stats.embedded)
            metrics.CHUNK_POINTS_DELETED.inc(stats.deleted)
            log.info("indexed chunks events=%d embedded=%d payload_updates=%d unchanged=%d deleted=%d "
                     "seconds=%.3f embed=%.3f upsert=%.3f", len(todo), stats.embedded, stats.payload_updates,
                     stats.unchanged, stats.deleted, stats.seconds, stats.embed_seconds, stats.upsert_seconds)
            with joined(self.pool) as uow:  # after the index: a crash in between indexes again (idempotent)
                uow.processed.mark(self.consumer, [e.event_id for e in todo])
        return dead
