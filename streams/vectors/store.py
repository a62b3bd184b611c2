"""The Qdrant adapter of the vector-store port (``streams.vectors.port``).

Collections hold one embedding model each; readers reach them through an
alias (docs/architecture.md §4A). Points carry a minimal payload (account_id, document_id,
seq, content_hash), never the text. Cosine similarity is Qdrant's score, so
cosine *distance* is ``1 - score``.

Local mode (``qdrant-client`` with a path) can be opened by one process at a
time: the worker opens it and serves the same operations over HTTP
(``streams.vectors.proxy``) so that the CLI keeps working beside it
(``streams.bootstrap.open_vector_store`` picks the adapter).
"""

from __future__ import annotations

import logging
import threading
import uuid
from contextlib import contextmanager
from typing import Any

from streams.vectors.port import Hit, LocalStoreBusy

log = logging.getLogger(__name__)


def _float_lists(vectors) -> list[list[float]]:
    """Vectors as lists of Python floats (what qdrant-client validates): one ``tolist`` for a
    numpy matrix (256 × 512 in ~3 ms instead of ~13 ms element by element)."""
    if hasattr(vectors, "tolist"):
        return vectors.tolist()
    return [v.tolist() if hasattr(v, "tolist") else [float(x) for x in v] for v in vectors]


class _BatchCommit:
    """qdrant-client's local persistence wraps each point's write in ``with connection:`` (one
    SQLite commit per point). While ``batch`` is set those blocks do nothing, and the store
    commits the whole call once (``QdrantStore._one_commit``); everything else is the connection."""

    def __init__(self, con):
        self.con, self.batch = con, False

    def __getattr__(self, name):
        return getattr(self.con, name)

    def __enter__(self):
        return self if self.batch else self.con.__enter__()

    def __exit__(self, *exc):
        return False if self.batch else self.con.__exit__(*exc)


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
        # local mode only: per (collection, account) matrices for search (see _local_search)
        self._accounts: dict[str, dict[int, tuple]] = {}
        self._local_disk = not url and bool(path) and path != ":memory:"
        self._commits: dict[str, _BatchCommit] = {}  # local disk: one SQLite commit per call
        if self._local_disk:
            for c in self._c.get_collections().collections:
                self._tune_local(c.name)

    def _tune_local(self, name: str) -> None:
        """Local mode on disk commits one SQLite transaction per point (docs/architecture.md §7:
        ~70–1,200 points/s here). WAL with synchronous=NORMAL keeps every commit
        atomic and safe across a process crash (SIGKILL), makes upserts ~8× faster,
        and can only lose the last commits on an OS crash — which
        ``memoria reconcile --repair`` restores from Postgres, like any drift. On top of
        that, each upsert/delete/payload call is one commit instead of one per point
        (256 points: ~40 → ~25 ms here) and is all-or-nothing on disk.
        qdrant-client has no option for this, so we reach its SQLite connection;
        if its internals change, we keep the (slower) defaults."""
        try:
            persistence = self._c._client.collections[name].storage  # noqa: SLF001
            con = persistence.storage
            con.execute("PRAGMA journal_mode=WAL")
            con.execute("PRAGMA synchronous=NORMAL")
            if not isinstance(con, _BatchCommit):
                persistence.storage = _BatchCommit(con)
            self._commits[name] = persistence.storage
        except Exception as e:  # pragma: no cover - depends on qdrant-client internals
            log.warning("could not tune the local Qdrant store of %s (%r); keeping the defaults", name, e)

    @contextmanager
    def _one_commit(self, collection: str):
        """One SQLite commit for a whole call on a local collection (see ``_tune_local``). If
        the call fails half-way, nothing of it reaches the disk; this process's copy may hold
        part of it, so the error goes up (the ingest agent exits before committing its offsets
        and, restarted, reads the disk and retries the batch)."""
        commit = self._commits.get(collection)
        if commit is None or commit.batch:
            yield
            return
        commit.batch = True
        try:
            yield
        except BaseException:
            commit.batch = False
            commit.con.rollback()
            raise
        commit.batch = False
        commit.con.commit()

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
            self._accounts.pop(name, None)
            self._commits.pop(name, None)
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
        with self._lock, self._one_commit(collection):
            self._forget(collection, ids, payloads)
            self._c.upsert(collection, points=models.Batch(
                ids=[str(i) for i in ids], vectors=_float_lists(vectors),
                payloads=list(payloads)), wait=True)

    def set_payloads(self, collection, items) -> None:
        with self._lock, self._one_commit(collection):
            self._forget(collection, [pid for pid, _ in items], [payload for _, payload in items])
            for pid, payload in items:
                self._c.set_payload(collection, payload=payload, points=[str(pid)], wait=True)

    def delete(self, collection, ids) -> None:
        from qdrant_client import models

        if not ids:
            return
        with self._lock, self._one_commit(collection):
            self._forget(collection, ids)
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

        if not self._server:
            return self._local_search(collection, vector, int(account_id), limit, min_score)
        flt = models.Filter(must=[models.FieldCondition(key="account_id",
                                                        match=models.MatchValue(value=int(account_id)))])
        with self._lock:
            res = self._c.query_points(collection, query=list(map(float, vector)), query_filter=flt,
                                       limit=limit, score_threshold=min_score, with_payload=True)
        return [Hit(str(uuid.UUID(str(p.id))), float(p.score), dict(p.payload or {})) for p in res.points]

    # -- local mode: search over per-account matrices ----------------------
    # qdrant-client's local mode evaluates the account filter in Python point by
    # point and scores every point of the collection (profiled: ~30 ms of GIL per
    # search over 2,000 points, a quarter of the responder's CPU). Local mode is
    # opened by one process only and every write goes through this object, so a
    # per-account matrix, dropped on every write that may touch it, gives the
    # same exact cosine ranking in numpy. A Qdrant server searches itself.
    def _forget(self, collection: str, ids=None, payloads=()) -> None:
        """Drop the cached matrices a write may change: the accounts it names and the ones
        holding one of its points (``ids=None``: all of the collection)."""
        accounts = self._accounts.get(collection)
        if not accounts:
            return
        if ids is None:
            accounts.clear()
            return
        touched = {str(i) for i in ids}
        for p in payloads:
            if "account_id" not in (p or {}):
                accounts.clear()
                return
            accounts.pop(int(p["account_id"]), None)
        for acc in [a for a, (_, _, _, members) in accounts.items() if not members.isdisjoint(touched)]:
            accounts.pop(acc, None)

    def _account_matrix(self, collection: str, account_id: int):
        import numpy as np
        from qdrant_client import models

        accounts = self._accounts.setdefault(collection, {})
        got = accounts.get(account_id)
        if got is not None:
            return got
        flt = models.Filter(must=[models.FieldCondition(key="account_id",
                                                        match=models.MatchValue(value=account_id))])
        ids: list[str] = []
        vecs: list = []
        payloads: list[dict] = []
        offset = None
        while True:
            pts, offset = self._c.scroll(collection, scroll_filter=flt, limit=1000, offset=offset,
                                         with_payload=True, with_vectors=True)
            for p in pts:
                ids.append(str(uuid.UUID(str(p.id))))
                vecs.append(p.vector)
                payloads.append(dict(p.payload or {}))
            if offset is None:
                break
        m = np.asarray(vecs, dtype=np.float32) if vecs else np.zeros((0, 0), dtype=np.float32)
        if len(m):
            norms = np.linalg.norm(m, axis=1, keepdims=True)
            norms[norms == 0] = 1.0
            m = m / norms
        accounts[account_id] = got = (ids, m, payloads, frozenset(ids))
        return got

    def _local_search(self, collection, vector, account_id: int, limit: int, min_score) -> list[Hit]:
        import numpy as np

        with self._lock:
            ids, m, payloads, _ = self._account_matrix(collection, account_id)
        if not ids or limit <= 0:
            return []
        q = np.asarray(vector, dtype=np.float32).reshape(-1)
        qn = float(np.linalg.norm(q))
        if qn == 0.0 or q.shape[0] != m.shape[1]:
            raise ValueError(f"query vector of dimension {q.shape[0]} for a collection of {m.shape[1]}")
        scores = m @ (q / qn)
        k = min(limit, len(ids))
        top = np.argpartition(-scores, k - 1)[:k] if k < len(ids) else np.arange(len(ids))
        top = top[np.lexsort((top, -scores[top]))]
        return [Hit(ids[i], float(scores[i]), dict(payloads[i])) for i in top
                if min_score is None or scores[i] >= min_score]

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
