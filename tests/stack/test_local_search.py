"""Local-mode search over per-account matrices ranks exactly like Qdrant's own
filtered search, and follows every write (upsert, payload change, delete, drop)."""

import uuid

import numpy as np
from qdrant_client import models

from streams.vectors.store import QdrantStore


def _qdrant_ranking(store, collection, q, account, limit, min_score=None):
    flt = models.Filter(must=[models.FieldCondition(key="account_id", match=models.MatchValue(value=account))])
    res = store._c.query_points(collection, query=list(map(float, q)), query_filter=flt, limit=limit,
                                score_threshold=min_score)
    return [(str(uuid.UUID(str(p.id))), round(p.score, 4)) for p in res.points]


def _ours(store, collection, q, account, limit, min_score=None):
    return [(h.id, round(h.score, 4)) for h in store.search(collection, q, account_id=account, limit=limit,
                                                             min_score=min_score)]


def test_local_search_matches_qdrant_and_follows_writes(tmp_path):
    rnd = np.random.default_rng(7)
    store = QdrantStore(path=str(tmp_path / "q"))
    c = "t__text__chunks__m"
    store.create_collection(c, 16)
    ids = [str(uuid.uuid4()) for _ in range(300)]
    vecs = rnd.normal(size=(300, 16)).astype(np.float32)
    store.upsert(c, ids, vecs, [{"account_id": i % 3 + 1, "seq": i} for i in range(300)])
    queries = rnd.normal(size=(5, 16)).astype(np.float32)

    def same(limit=7, min_score=None):
        for q in queries:
            for account in (1, 2, 3, 4):
                assert _ours(store, c, q, account, limit, min_score) == \
                    _qdrant_ranking(store, c, q, account, limit, min_score)

    same()
    same(limit=500)
    same(min_score=0.3)
    # a new point for account 2 that matches the first query best
    new = str(uuid.uuid4())
    store.upsert(c, [new], [queries[0]], [{"account_id": 2, "seq": 999}])
    assert store.search(c, queries[0], account_id=2, limit=1)[0].id == new
    same()
    # the point moves to account 1 (payload change), then is deleted
    store.set_payloads(c, [(new, {"account_id": 1, "seq": 999})])
    assert store.search(c, queries[0], account_id=1, limit=1)[0].id == new
    assert new not in {h.id for h in store.search(c, queries[0], account_id=2, limit=500)}
    same()
    store.delete(c, [new] + ids[:50])
    assert new not in {h.id for h in store.search(c, queries[0], account_id=1, limit=500)}
    same(limit=500)
    store.drop_collection(c)
    store.create_collection(c, 16)
    assert store.search(c, queries[0], account_id=1, limit=5) == []
    store.close()
