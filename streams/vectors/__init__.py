"""Vector stores: Qdrant (local mode or server) and a proxy to the worker that
owns a local store. All three expose the same ``VectorStore`` operations."""

from streams.vectors.store import (  # noqa: F401
    Hit,
    LocalStoreBusy,
    QdrantStore,
    VectorStore,
    open_vector_store,
)
