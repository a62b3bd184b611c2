"""The local Qdrant store on disk: a call is one SQLite commit, every write of it reaches the disk
(read back by a new process' view of the same path), and a call that fails half-way leaves none of
its points on disk."""

import sqlite3
import uuid

import numpy as np
import pytest

from streams.vectors.store import QdrantStore

DIM = 8


def _points(n, seed=0):
    rnd = np.random.default_rng(seed)
    ids = [str(uuid.uuid4()) for _ in range(n)]
    return ids, rnd.normal(size=(n, DIM)).astype(np.float32), [{"account_id": 1, "seq": i} for i in range(n)]


def _on_disk(path, collection) -> int:
    con = sqlite3.connect(path / "collection" / collection / "storage.sqlite")
    try:
        assert con.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        return con.execute("SELECT count(*) FROM points").fetchone()[0]
    finally:
        con.close()


def test_writes_reach_the_disk_one_commit_per_call(tmp_path):
    c = "t__text__chunks__m"
    store = QdrantStore(path=str(tmp_path))
    store.create_collection(c, DIM)
    ids, vecs, payloads = _points(300)
    commits = []
    store._commits[c].con.set_trace_callback(lambda sql: commits.append(sql) if sql.upper() == "COMMIT" else None)
    store.upsert(c, ids, vecs, payloads)
    assert len(commits) == 1, commits           # qdrant-client alone: one per point
    store.delete(c, ids[:10])
    store.set_payloads(c, [(ids[10], {"account_id": 2, "seq": 10})])
    assert _on_disk(tmp_path, c) == 290         # read by another connection while the store is open
    store.close()

    again = QdrantStore(path=str(tmp_path))
    assert again.count(c) == 290
    assert again.retrieve(c, [ids[10]])[ids[10]]["account_id"] == 2
    again.close()


def test_a_call_that_fails_half_way_leaves_nothing_on_disk(tmp_path, monkeypatch):
    c = "t__text__chunks__m"
    store = QdrantStore(path=str(tmp_path))
    store.create_collection(c, DIM)
    ids, vecs, payloads = _points(20)
    store.upsert(c, ids[:5], vecs[:5], payloads[:5])
    # the disk fails part-way through the next call (qdrant-client pickles each point's key and
    # value just before its INSERT: the 11th pickle is the 6th point's key)
    import pickle

    from qdrant_client.local import persistence

    written = []

    class FailingPickle:
        @staticmethod
        def dumps(obj, *a, **kw):
            written.append(1)
            if len(written) == 11:
                raise OSError("disk failed")
            return pickle.dumps(obj, *a, **kw)

        def __getattr__(self, name):
            return getattr(pickle, name)

    monkeypatch.setattr(persistence, "pickle", FailingPickle())
    with pytest.raises(OSError, match="disk failed"):
        store.upsert(c, ids[5:], vecs[5:], payloads[5:])
    monkeypatch.undo()
    assert _on_disk(tmp_path, c) == 5           # none of the failed call's first five points
    store.close()
