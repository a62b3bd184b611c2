"""Passages embedded part by part, so that a caller stores each part while the next ones are encoded."""

from __future__ import annotations

import contextvars
from concurrent.futures import ThreadPoolExecutor
from typing import Iterator, Sequence

import numpy as np

from streams.embedding.port import Embedder, out_of_process


def passages_in_parts(embedder: Embedder, texts: Sequence[str], part: int,
                      in_flight: int = 4) -> Iterator[tuple[int, np.ndarray]]:
    """``(start, vectors)`` for ``texts``, in order, every text once.

    Out of process (the embedding service): ``part`` texts per request and up to ``in_flight``
    requests at once, so the service always has the next part queued and encodes it while the
    caller stores the one it has (the service micro-batches them; a text's vector does not depend
    on its neighbours). The requests run in copies of the caller's context, so paid tokens reach
    its ``tokens.collect()``. In process: one call for all the texts, yielded as one part — the
    model shares this process's GIL, so overlapping it with the caller's work only slows both
    (README, Performance). A part that fails raises here, after the parts before it were yielded.
    """
    texts = list(texts)
    if not texts:
        return
    if part <= 0 or len(texts) <= part or not out_of_process(embedder):
        yield 0, embedder.embed_passages(texts)
        return
    starts = list(range(0, len(texts), part))
    pool = ThreadPoolExecutor(max(1, min(in_flight, len(starts))), thread_name_prefix="embed-part")
    try:
        futures = [pool.submit(contextvars.copy_context().run, embedder.embed_passages, texts[s:s + part])
                   for s in starts]
        for s, f in zip(starts, futures):
            yield s, f.result()
    finally:  # the caller stopped (an error storing a part): drop the parts not started
        pool.shutdown(wait=False, cancel_futures=True)
