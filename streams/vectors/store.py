"""The vector-store port and its Qdrant adapter.

Collections hold one embedding model each; readers reach them through an
alias (docs/architecture.md §4A). Points carry a minimal payload (account_id, document_id,
seq, content_hash), never the text. Cosine similarity is Qdrant's score, so
cosine *distance* is ``1 - score``.

Local mode (``qdrant-client`` with a path) can be opened by one process at a
time: the worker opens it and serves the same operations over HTTP
(``streams.vectors.proxy``) so that the CLI keeps working beside it.
"""

from __future__ import annotations

import logging
import threading
import uuid
from dataclasses import dataclass
from typing import Any, Protocol, Sequence

from streams.settings import Settings

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Hit:
    id: str
    score: float            # cosine similarity
    payload: dict[str, Any]

    @property
    def distance(self) -> float:
        return 1.0 - self.score


class LocalStoreBusy(RuntimeError):
    """The local Qdrant store is opened by another process (the worker)."""


class VectorStore(Protocol):
    def alias_target(self, alias: str) -> str | None: ...
    def list_collections(self) -> list[str]: ...
    def create_collection(self, name: str, dim: int) -> None: ...
    def drop_collection(self, name: str) -> None: ...
    def point_alias(self, alias: str, collection: str) -> None: ...
    def upsert(self, collection: str, ids: Sequence[str], vectors: Sequence[Sequence[float]],
               payloads: Sequence[dict]) -> None: ...
    def set_payloads(self, collection: str, items: Sequence[tuple[str, dict]]) -> None: ...
    def delete(self, collection: str, ids: Sequence[str]) -> None: ...
    def retrieve(self, collection: str, ids: Sequence[str]) -> dict[str, dict]: ...
    def search(self, collection: str, vector: Sequence[float], *, account_id: int, limit: int,
               min_score: float | None = None) -> list[Hit]: ...
    def scroll(self, collection: str, account_id: int | None = None) -> dict[str, dict]: ...
    def count(self, collection: str) -> int: ...


class QdrantStore:
    """Qdrant through ``qdrant-client`` (server URL, local path or ``:memory:``).

    Calls are serialised with a lock: local mode is not thread-safe, and the
    worker reaches it from several threads.
    """

    def __init__(self, *, url: str | None = None, api_key: str | None = None, path: str | None = None):
        from qdrant_client import QdrantClient

        self.location = url or path or ":memory:"
        self._server = bool(url)
        try:
            if url:
                self._c = QdrantClient(url=url, api_key=api_key, timeout=10)
            elif path and path != ":memory:":
                self._c = QdrantClient(path=path)
            else:
                self._c = QdrantClient(location=":memory:")
        except RuntimeError as e:
            if "already accessed" in str(e):
                raise LocalStoreBusy(str(e)) from e
            raise
        self._lock = threading.RLock()
        self._local_disk = not url and bool(path) and path != ":memory:"
        if self._local_disk:
            for c in self._c.get_collections().collections:
                self._tune_local(c.name)

    def _tune_local(self, name: str) -> None:
        """Local mode on disk commits one SQLite transaction per point (docs/architecture.md §7:
        ~70–1,200 points/s here). WAL with synchronous=NORMAL keeps every commit
        atomic and safe across a process crash (SIGKILL), makes upserts ~8× faster,
        and can only lose the last commits on an OS crash — which
        ``memoria reconcile --repair`` restores from Postgres, like any drift.
        qdrant-client has no option for this, so we reach its SQLite connection;
        if its internals change, we keep the (slower) defaults."""
        try:
            con = self._c._client.collections[name].storage.storage  # noqa: SLF001
            con.execute("PRAGMA journal_mode=WAL")
            con.execute("PRAGMA synchronous=NORMAL")
        except Exception as e:  # pragma: no cover - depends on qdrant-client internals
            log.warning("could not tune the local Qdrant store of %s (%r); keeping the defaults", name, e)

    def close(self) -> None:
        with self._lock:
            self._c.close()

    # -- collections and aliases -------------------------------------------
    def alias_target(self, alias: str) -> str | None:
        with self._lock:
            for a in self._c.get_aliases().aliases:
                if a.alias_name == alias:
                    return a.collection_name
        return None

    def list_collections(self) -> list[str]:
        with self._lock:
            return sorted(c.name for c in self._c.get_collections().collections)

    def create_collection(self, name: str, dim: int) -> None:
        from qdrant_client import models

        with self._lock:
            if self._c.collection_exists(name):
                return
            self._c.create_collection(
                name, vectors_config=models.VectorParams(size=dim, distance=models.Distance.COSINE))
            if self._local_disk:
                self._tune_local(name)
            if self._server:  # local mode filters without payload indexes
                self._c.create_payload_index(name, "account_id", models.PayloadSchemaType.INTEGER)

    def drop_collection(self, name: str) -> None:
        with self._lock:
            if self._c.collection_exists(name):
                self._c.delete_collection(name)

    def point_alias(self, alias: str, collection: str) -> None:
        """Create or atomically move ``alias`` to ``collection``."""
        from qdrant_client import models

        ops: list[Any] = []
        with self._lock:
            if self.alias_target(alias) is not None:
                ops.append(models.DeleteAliasOperation(delete_alias=models.DeleteAlias(alias_name=alias)))
            ops.append(models.CreateAliasOperation(
                create_alias=models.CreateAlias(collection_name=collection, alias_name=alias)))
            self._c.update_collection_aliases(change_aliases_operations=ops)

    # -- points ----------------------------------------------------------
    def upsert(self, collection, ids, vectors, payloads) -> None:
        from qdrant_client import models

        if not ids:
            return
        with self._lock:
            self._c.upsert(collection, points=models.Batch(
                ids=[str(i) for i in ids], vectors=[list(map(float, v)) for v in vectors],
                payloads=list(payloads)), wait=True)

    def set_payloads(self, collection, items) -> None:
        with self._lock:
            for pid, payload in items:
                self._c.set_payload(collection, payload=payload, points=[str(pid)], wait=True)

    def delete(self, collection, ids) -> None:
        from qdrant_client import models

        if not ids:
            return
        with self._lock:
            self._c.delete(collection, points_selector=models.PointIdsList(points=[str(i) for i in ids]),
                           wait=True)

    def retrieve(self, collection, ids) -> dict[str, dict]:
        if not ids:
            return {}
        with self._lock:
            pts = self._c.retrieve(collection, ids=[str(i) for i in ids], with_payload=True,
                                   with_vectors=False)
        return {str(uuid.UUID(str(p.id))): dict(p.payload or {}) for p in pts}

    def search(self, collection, vector, *, account_id, limit, min_score=None) -> list[Hit]:
        from qdrant_client import models

        flt = models.Filter(must=[models.FieldCondition(key="account_id",
                                                        match=models.MatchValue(value=int(account_id)))])
        with self._lock:
            res = self._c.query_points(collection, query=list(map(float, vector)), query_filter=flt,
                                       limit=limit, score_threshold=min_score, with_payload=True)
        return [Hit(str(uuid.UUID(str(p.id))), float(p.score), dict(p.payload or {})) for p in res.points]

    def scroll(self, collection, account_id=None) -> dict[str, dict]:
        from qdrant_client import models

        flt = None
        if account_id is not None:
            flt = models.Filter(must=[models.FieldCondition(
                key="account_id", match=models.MatchValue(value=int(account_id)))])
        out: dict[str, dict] = {}
        offset = None
        while True:
            with self._lock:
                pts, offset = self._c.scroll(collection, scroll_filter=flt, limit=1000, offset=offset,
                                             with_payload=True, with_vectors=False)
            for p in pts:
                out[str(uuid.UUID(str(p.id)))] = dict(p.payload or {})
            if offset is None:
                return out

    def count(self, collection) -> int:
        with self._lock:
            return int(self._c.count(collection, exact=True).count)


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
        from streams.vectors.proxy import VectorStoreClient

        url = f"http://{settings.worker_web_host}:{settings.worker_web_port}"
        log.info("local Qdrant store is held by the worker; using its proxy at %s", url)
        return VectorStoreClient(url)
