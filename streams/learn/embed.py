"""Embedding of facts into the pgvector column (docs/architecture.md §4B).

Only the fact's ``content`` is embedded: the responder embeds the customer's
message the same way with the same memory embedder, so both sides agree.
Three attempts with exponential backoff; on final failure every fact of the
batch gets ``None`` (stored as a NULL embedding: invisible to recall until the
re-embed pass succeeds).
"""

from __future__ import annotations

import logging
import time
from typing import Sequence

import numpy as np
from psycopg_pool import ConnectionPool
from tenacity import Retrying, stop_after_attempt, wait_exponential

from streams import metrics
from streams.embedding import Embedder
from streams.store.uow import PostgresUnitOfWork

log = logging.getLogger(__name__)

STAGE = "memory"


def embed_contents(embedder: Embedder | None, texts: Sequence[str], *, attempts: int = 3,
                   backoff: float = 0.2) -> list[np.ndarray | None]:
    if not texts:
        return []
    if embedder is None:
        return [None] * len(texts)
    t0 = time.perf_counter()
    try:
        vectors = Retrying(stop=stop_after_attempt(attempts), wait=wait_exponential(multiplier=backoff, max=5),
                           reraise=True,
                           before_sleep=lambda rs: log.warning(
                               'memory embedding retry attempt=%d error="%s"', rs.attempt_number,
                               rs.outcome.exception() if rs.outcome else ""))(embedder.embed_passages, list(texts))
    except Exception as e:  # noqa: BLE001 - any provider failure leaves the facts unembedded
        metrics.EMBEDDING_FAILURES.labels(STAGE).inc(len(texts))
        log.error('memory embedding failed facts=%d attempts=%d error="%s: %s"', len(texts), attempts,
                  type(e).__name__, e)
        return [None] * len(texts)
    metrics.EMBEDDING_LATENCY.labels(STAGE).observe(time.perf_counter() - t0)
    return [np.asarray(v, dtype=np.float32) for v in vectors]


def reembed_missing(pool: ConnectionPool, embedder: Embedder, *, limit: int = 256) -> int:
    """Embed live facts that have no embedding of the current memory model."""
    with PostgresUnitOfWork(pool) as uow:  # read only
        rows = uow.learning.unembedded(embedder.name, limit)
    if not rows:
        return 0
    vectors = embed_contents(embedder, [r["content"] for r in rows])
    done = 0
    with PostgresUnitOfWork(pool) as uow:
        for row, vec in zip(rows, vectors):
            if vec is not None and uow.learning.set_embedding(row["id"], row["content"], vec, embedder.name):
                done += 1
        uow.commit()
    if done:
        log.info("memory re-embedded facts=%d model=%s", done, embedder.name)
    return done
