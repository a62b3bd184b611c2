"""Embedding providers behind one small port.

Every provider returns L2-normalised float32 vectors, so cosine similarity is
a dot product and cosine distance is ``1 - dot``. A provider has a stable
``name`` (used in collection names, docs/architecture.md §1.6) and a fixed ``dim``.
``embed_queries`` and ``embed_passages`` differ only for models trained with
asymmetric prefixes (e5); symmetric models use the same encoder for both.
"""

from streams.embedding.port import Embedder, EmbeddingError  # noqa: F401
from streams.embedding.providers import build_embedder  # noqa: F401
