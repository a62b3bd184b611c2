"""Passages embedded part by part, so that a caller stores each part while the next ones are encoded."""

from __future__ import annotations

import contextvars
from concurrent.futures import ThreadPoolExecutor
from typing import Iterator, Sequence

import numpy as np

from streams.embedding.port import Embedder, out_of_process


class PassageParts:
    """The vectors of ``texts`` as ``(start, vectors)`` parts, in order, every text once.

    Out of process (the embedding service): every part (``part`` texts per request, up to
    ``in_flight`` requests at once) is requested when this is built, so the service always has the
    next part queued and encodes it while the caller stores the one it has (the service
    micro-batches them; a text's vector does not depend on its neighbours). The requests run in
    copies of the builder's context, so paid tokens reach its ``tokens.collect()``. Being requested
    at construction, the parts of a batch can be queued in the service before its caller needs
    them (the ingest handler's lookahead, ``ChunkEventHandler.prepare``). In process: one call for
    all the texts when first iterated, yielded as one part — the model shares this process's GIL,
    so overlapping it with the caller's work only slows both (README, Performance). A part that
    failed raises when it is reached, after the parts before it were yielded. ``close()`` drops the
    requests not started (a caller that stopped: an error storing a part, a lookahead discarded).
    """

    def __init__(self, embedder: Embedder, texts: Sequence[str], part: int, in_flight: int = 4):
        self.embedder, self.texts = embedder, list(texts)
        self._pool: ThreadPoolExecutor | None = None
        self._futures: list = []
        self.starts: list[int] = []
        if not self.texts or part <= 0 or len(self.texts) <= part or not out_of_process(embedder):
            return
        self.starts = list(range(0, len(self.texts), part))
        self._pool = ThreadPoolExecutor(max(1, min(in_flight, len(self.starts))), thread_name_prefix="embed-part")
        self._futures = [self._pool.submit(contextvars.copy_context().run, embedder.embed_passages,
                                           self.texts[s:s + part]) for s in self.starts]

    def __iter__(self) -> Iterator[tuple[int, np.ndarray]]:
        try:
            if self._pool is None:
                if self.texts:
                    yield 0, self.embedder.embed_passages(self.texts)
                return
            for s, f in zip(self.starts, self._futures):
                yield s, f.result()
        finally:
            self.close()

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=False, cancel_futures=True)


def passages_in_parts(embedder: Embedder, texts: Sequence[str], part: int,
                      in_flight: int = 4) -> Iterator[tuple[int, np.ndarray]]:
    """``(start, vectors)`` for ``texts`` (``PassageParts``), requested when first advanced."""
    yield from PassageParts(embedder, texts, part, in_flight)
