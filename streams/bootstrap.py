"""The composition root: builds real dependencies from settings, once.

CLI commands, the worker and the tests all get their adapters from here.
"""

from __future__ import annotations

import logging
import threading
from functools import cached_property

from psycopg_pool import ConnectionPool

from streams.embedding import Embedder, build_embedder
from streams.embedding.providers import MODEL_PROVIDERS
from streams.settings import Settings, get_settings
from streams.vectors.port import LocalStoreBusy, VectorStore
from streams.vectors.proxy import VectorStoreClient
from streams.vectors.store import QdrantStore

log = logging.getLogger(__name__)


def open_vector_store(settings: Settings, *, prefer_proxy: bool = True) -> VectorStore:
    """The store a process should use.

    ``QDRANT_URL`` set → the server. Otherwise the local path; if the worker
    holds it, the worker's HTTP proxy (same operations).
    """
    if settings.qdrant_url:
        return QdrantStore(url=settings.qdrant_url, api_key=settings.qdrant_api_key)
    try:
        return QdrantStore(path=settings.qdrant_path)
    except LocalStoreBusy:
        if not prefer_proxy:
            raise
        url = f"http://{settings.worker_web_host}:{settings.worker_web_port}"
        log.info("local Qdrant store is held by the worker; using its proxy at %s", url)
        return VectorStoreClient(url)


class Container:
    def __init__(self, settings: Settings | None = None, *, vector_store: VectorStore | None = None):
        self.settings = settings or get_settings()
        self._store = vector_store
        self._owns_store = vector_store is None
        self._lock = threading.Lock()

    @cached_property
    def pool(self) -> ConnectionPool:
        from streams.store.db import make_pool

        return make_pool(self.settings)

    @property
    def vector_store(self) -> VectorStore:
        with self._lock:
            if self._store is None:
                self._store = open_vector_store(self.settings)
            return self._store

    @property
    def embedder(self) -> Embedder:
        """The configured embedder (new collections and fact embeddings use it)."""
        s = self.settings
        return build_embedder(s.embedding_provider, s.embedding_model, base_url=s.embedding_base_url,
                              api_key=s.embedding_api_key, batch_size=s.embedding_batch_size,
                              service_url=self._service_url(s.embedding_provider),
                              service_options=self._service_options(), threads=s.embedding_threads)

    @property
    def memory_embedder(self) -> Embedder:
        """The embedder of customer facts (pgvector column) and of recall queries."""
        s = self.settings
        return build_embedder(s.memory_embedding_provider, s.memory_embedding_model,
                              base_url=s.embedding_base_url, api_key=s.embedding_api_key,
                              batch_size=s.embedding_batch_size,
                              service_url=self._service_url(s.memory_embedding_provider),
                              service_options=self._service_options(), threads=s.embedding_threads)

    def _service_url(self, provider: str) -> str | None:
        """The embedding service runs the in-process models; a remote API is called directly."""
        return self.settings.embedding_service_url if provider != "openai" else None

    def _service_options(self) -> dict:
        s = self.settings
        return {"query_timeout_s": s.embedding_service_query_timeout,
                "passage_patience_s": s.embedding_service_passage_patience}

    def embedder_for(self, model: str) -> Embedder:
        """The embedder matching a collection's model (index and query must agree)."""
        configured = self.embedder
        if model == configured.name:
            return configured
        provider = MODEL_PROVIDERS.get(model)
        if provider is None:
            if self.settings.embedding_provider == "openai":
                return build_embedder("openai", model, base_url=self.settings.embedding_base_url,
                                      api_key=self.settings.embedding_api_key)
            raise ValueError(f"no embedding provider known for model {model!r}")
        return build_embedder(provider, model, service_url=self._service_url(provider),
                              service_options=self._service_options(), threads=self.settings.embedding_threads)

    def close(self) -> None:
        if "pool" in self.__dict__:
            self.pool.close()
        if self._owns_store and self._store is not None and hasattr(self._store, "close"):
            self._store.close()
