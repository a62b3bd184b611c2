"""The embedder port: what flows need from an embedding model (see ``streams/embedding/__init__.py``).

Adapters: the in-process providers (``providers.py``) and the embedding service's client
(``client.py``); ``providers.build_embedder`` picks one.
"""

from __future__ import annotations

from typing import Protocol, Sequence

import numpy as np


class EmbeddingError(RuntimeError):
    """The embedding backend failed (after its own retries, if any)."""


class Embedder(Protocol):
    """``name``, ``dim`` and the two encoders. An adapter whose model runs in another process
    (the embedding service's client) also sets ``out_of_process = True`` (see ``out_of_process``)."""

    name: str
    dim: int

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray: ...

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray: ...


def out_of_process(embedder: Embedder) -> bool:
    """Whether the model runs in another process, so that concurrent calls encode while this
    process does other work. In-process models share this process's GIL (USE's tokenizer is
    pure Python): overlapping their calls with other Python work slows both (README, Performance)."""
    return bool(getattr(embedder, "out_of_process", False))


def normalise(v: np.ndarray) -> np.ndarray:
    """Rows scaled to unit length (float32), so cosine similarity is a dot product."""
    v = np.asarray(v, dtype=np.float32)
    if v.ndim == 1:
        v = v[None, :]
    n = np.linalg.norm(v, axis=1, keepdims=True)
    n[n == 0] = 1.0
    return v / n
