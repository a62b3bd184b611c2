"""Ingestion handler in-process: real Postgres, Qdrant (in-memory local mode) and MiniLM."""

import json
import uuid

import numpy as np
import pytest

from streams.ingest.documents import write_document
from streams.ingest.handler import ChunkEventHandler
from streams.ingest.knowledge import chunk_alias, reconcile, search_chunks
from streams.kafka.consume import Record
from streams.vectors.store import QdrantStore
from tests.support.embedders import shared_container

TEXT = "\n\n".join(f"Seção {i}. " + f"A suíte número {i} tem hidromassagem e custa R$ {100 + i}. " * 4
                   for i in range(8))


@pytest.fixture
def ctx(env):
    store = QdrantStore(path=":memory:")
    c = shared_container(env.settings, vector_store=store)
    h = ChunkEventHandler(pool=c.pool, store=store, domain="t", embedder=c.embedder, embedder_for=c.embedder_for)
    yield env, c, store, h
    c.close()


def _records(env, rows=None):
    rows = rows or env.q("SELECT id::text, aggregateid, type, payload FROM outbox ORDER BY created_at")
    return [Record("outbox.event.chunk", 0, i, r["aggregateid"].encode(), json.dumps(r["payload"]).encode(),
                   (("id", r["id"].encode()), ("type", r["type"].encode()))) for i, r in enumerate(rows)]


def _state(env, store):
    live = {r["id"]: r["content_hash"].strip() for r in env.q(
        "SELECT id::text, content_hash FROM chunks WHERE deleted_at IS NULL")}
    target = store.alias_target(chunk_alias("t"))
    points = {k: v["content_hash"] for k, v in store.scroll(target).items()} if target else {}
    return live, points


def test_edit_reembeds_only_changed_chunks_and_deletes_removed(ctx):
    env, c, store, h = ctx
    with env.conn() as conn:
        r1 = write_document(conn, account_id=1, source="doc.md", text=TEXT, chunk_size=300, chunk_overlap=0)
    assert r1.inserted >= 6
    assert h(_records(env)) == []
    assert h.last_stats.embedded == r1.inserted
    env.q("DELETE FROM outbox")
    paras = TEXT.split("\n\n")
    paras[2] = paras[2].replace("hidromassagem", "sauna seca")     # one changed paragraph
    del paras[5]                                                    # one removed paragraph
    with env.conn() as conn:
        r2 = write_document(conn, account_id=1, source="doc.md", text="\n\n".join(paras),
                            chunk_size=300, chunk_overlap=0)
    assert (r2.inserted, r2.tombstoned) == (1, 2)  # the edited chunk is new, old version + removed one go
    assert r2.moved == 2                             # later chunks shifted up by one
    assert h(_records(env)) == []
    assert h.last_stats.embedded == 1                # only the changed chunk is embedded
    assert h.last_stats.payload_updates == 2
    assert h.last_stats.deleted == 2
    live, points = _state(env, store)
    assert live == points


def test_duplicated_and_out_of_order_events_converge(ctx):
    env, c, store, h = ctx
    with env.conn() as conn:
        write_document(conn, account_id=1, source="a.md", text=TEXT, chunk_size=300, chunk_overlap=0)
        write_document(conn, account_id=1, source="a.md", text=TEXT.replace("Seção 1.", "Seção um."),
                       chunk_size=300, chunk_overlap=0)
        write_document(conn, account_id=1, source="a.md", text=TEXT.split("\n\n")[0], chunk_size=300,
                       chunk_overlap=0)
    recs = _records(env)
    shuffled = list(reversed(recs)) + recs[::2] + recs  # reversed, then duplicates
    # deliver in several small batches, newest first
    for i in range(0, len(shuffled), 3):
        assert h(shuffled[i:i + 3]) == []
    live, points = _state(env, store)
    assert live == points and len(live) == 1


def test_unknown_chunk_deletes_point_and_poison_is_reported(ctx):
    env, c, store, h = ctx
    with env.conn() as conn:
        write_document(conn, account_id=1, source="a.md", text=TEXT, chunk_size=300, chunk_overlap=0)
    h(_records(env))
    ghost = str(uuid.uuid4())
    target = store.alias_target(chunk_alias("t"))
    store.upsert(target, [ghost], [[0.1] * c.embedder.dim], [{"account_id": 1, "content_hash": "x"}])
    bad = Record("outbox.event.chunk", 0, 99, b"k", b"{oops", (("id", str(uuid.uuid4()).encode()),
                                                               ("type", b"chunk.upserted")))
    ghost_ev = Record("outbox.event.chunk", 0, 100, ghost.encode(), json.dumps(
        {"schema_version": 1, "chunk_id": ghost, "account_id": 1, "document_id": ghost}).encode(),
        (("id", str(uuid.uuid4()).encode()), ("type", b"chunk.deleted")))
    dead = h([bad, ghost_ev])
    assert [d.error_class for d in dead] == ["InvalidJSON"]
    live, points = _state(env, store)
    assert live == points


def test_search_is_scoped_to_the_account_and_reconcile_finds_drift(ctx):
    env, c, store, h = ctx
    with env.conn() as conn:
        write_document(conn, account_id=1, source="a.md", text="O café da manhã é servido das 7h às 10h.")
        write_document(conn, account_id=2, source="b.md", text="O café da manhã é servido das 6h às 9h.")
    h(_records(env))
    for acc, want in ((1, "7h"), (2, "6h")):
        hits = search_chunks("que horas é o café da manhã?", account_id=acc, pool=c.pool, store=store,
                             domain="t", embedder_for=c.embedder_for, limit=5)
        assert hits and all(want in x.content for x in hits)
    assert reconcile(pool=c.pool, store=store, domain="t") == []
    target = store.alias_target(chunk_alias("t"))
    victim = next(iter(store.scroll(target, 2)))
    store.delete(target, [victim])
    drift = reconcile(pool=c.pool, store=store, domain="t", account_id=2)
    assert [(d.account_id, d.missing) for d in drift] == [(2, [victim])]
    assert reconcile(pool=c.pool, store=store, domain="t", account_id=1) == []


def test_reindex_with_the_same_model_rebuilds_into_a_new_collection(ctx):
    from streams.ingest.knowledge import reindex

    env, c, store, h = ctx
    with env.conn() as conn:
        write_document(conn, account_id=1, source="a.md", text=TEXT, chunk_size=300, chunk_overlap=0)
    h(_records(env))
    old = store.alias_target(chunk_alias("t"))
    seen = []
    res = reindex(pool=c.pool, store=store, domain="t", embedder=c.embedder, batch=3,
                  progress=lambda done, total: seen.append((done, total)))
    new = store.alias_target(chunk_alias("t"))
    assert res.new_collection == new != old and new.endswith("__v2") and res.verified
    assert old not in store.list_collections()
    assert seen[-1][0] == seen[-1][1] == res.backfilled
    live, points = _state(env, store)
    assert live == points
    hits = search_chunks("hidromassagem", account_id=1, pool=c.pool, store=store, domain="t",
                         embedder_for=c.embedder_for, limit=2)
    assert len(hits) == 2


def test_paid_embeddings_of_an_indexing_batch_are_in_the_cost_ledger_per_account_once(env):
    """Two accounts' chunks indexed in one batch through an OpenAI-compatible endpoint (a local
    server speaking the protocol): each account pays its share of the batch's tokens, once."""
    from streams.embedding.providers import OpenAIEmbedder
    from tests.support.openai_server import FakeOpenAI

    with FakeOpenAI() as server:
        paid = OpenAIEmbedder("text-embedding-3-small", server.base_url, "test")
        store = QdrantStore(path=":memory:")
        c = shared_container(env.settings, vector_store=store)
        try:
            h = ChunkEventHandler(pool=c.pool, store=store, domain="t", embedder=paid,
                                  embedder_for=lambda model: paid)
            with env.conn() as conn:
                write_document(conn, account_id=1, source="a.md", text=TEXT, chunk_size=300, chunk_overlap=0)
                write_document(conn, account_id=2, source="b.md", text="A suíte Jade custa R$ 300.", chunk_size=300,
                               chunk_overlap=0)
            records = _records(env)
            assert h(records) == []
            env.q("DELETE FROM processed_events")   # a replay of the same batch
            h.store.delete(h.store.alias_target(chunk_alias("t")), [r["id"] for r in env.q(
                "SELECT id::text FROM chunks")])
            assert h(records) == []
        finally:
            c.close()
    rows = env.q("SELECT account_id, stage, model, prompt_tokens FROM model_usage ORDER BY account_id")
    words = {a: sum(len(r["content"].split()) for r in env.q("SELECT content FROM chunks WHERE account_id = %s", a))
             for a in (1, 2)}
    assert [(r["account_id"], r["stage"]) for r in rows] == [(1, "embedding"), (2, "embedding")]
    assert rows[0]["prompt_tokens"] + rows[1]["prompt_tokens"] == words[1] + words[2]   # the fake counts words
    assert rows[0]["prompt_tokens"] > rows[1]["prompt_tokens"] > 0


class _Remote:
    """The configured model behind an out-of-process adapter (as the embedding service's client is)."""

    out_of_process = True

    def __init__(self, inner):
        self.inner, self.name, self.dim = inner, inner.name, inner.dim
        self.calls: list[int] = []

    def embed_passages(self, texts):
        self.calls.append(len(texts))
        return self.inner.embed_passages(texts)

    embed_queries = embed_passages


class _CountingStore:
    def __init__(self, inner):
        self.inner, self.upserts = inner, []

    def upsert(self, collection, ids, vectors, payloads):
        self.upserts.append(len(ids))
        return self.inner.upsert(collection, ids, vectors, payloads)

    def __getattr__(self, name):
        return getattr(self.inner, name)


def test_through_the_service_a_batch_is_embedded_and_upserted_in_parts_with_the_same_vectors(ctx):
    env, c, store, _ = ctx
    remote, counting = _Remote(c.embedder), _CountingStore(store)
    h = ChunkEventHandler(pool=c.pool, store=counting, domain="t", embedder=remote,
                          embedder_for=lambda model: remote, embed_part=3)
    with env.conn() as conn:
        r = write_document(conn, account_id=1, source="doc.md", text=TEXT, chunk_size=300, chunk_overlap=0)
    assert r.inserted >= 7
    assert h(_records(env)) == []
    assert h.last_stats.embedded == r.inserted
    assert sorted(remote.calls, reverse=True) == [3] * (r.inserted // 3) + ([r.inserted % 3] if r.inserted % 3 else [])
    assert counting.upserts == [3] * (r.inserted // 3) + ([r.inserted % 3] if r.inserted % 3 else [])
    live, points = _state(env, store)
    assert live == points
    target = store.alias_target(chunk_alias("t"))
    rows = env.q("SELECT id::text, content FROM chunks WHERE deleted_at IS NULL ORDER BY id")
    got = store._c.retrieve(target, ids=[x["id"] for x in rows], with_vectors=True)  # noqa: SLF001
    by_id = {str(uuid.UUID(str(p.id))): p.vector for p in got}
    want = c.embedder.embed_passages([x["content"] for x in rows])
    np.testing.assert_allclose([by_id[x["id"]] for x in rows], want, atol=1e-5)


def _sentences(env):
    return {r["id"]: r for r in env.q("SELECT id::text, content, sentence_model, sentence_texts, sentence_vectors "
                                      "FROM chunks WHERE deleted_at IS NULL")}


def test_indexing_stores_each_chunks_sentence_vectors_for_the_composer_and_reindex_rederives_them(ctx):
    """The composer's sentences of a chunk (its quotable units) are embedded as passages when the chunk
    is indexed and stored with it, with the model's name, read back by account and model; a
    re-embed derives them again (here from nothing: chunks indexed before they existed)."""
    from streams.ingest.knowledge import reindex
    from streams.respond.adapters import ChunkKnowledgeSearch
    from streams.respond.compose import answer_units

    env, c, store, _ = ctx
    h = ChunkEventHandler(pool=c.pool, store=store, domain="t", embedder=c.embedder, embedder_for=c.embedder_for,
                          sentences=True)   # settings.chunk_sentence_vectors (off by default)
    with env.conn() as conn:
        write_document(conn, account_id=1, source="doc.md", text=TEXT, chunk_size=300, chunk_overlap=0)
    h(_records(env))
    rows = _sentences(env)
    assert rows and h.last_stats.sentences == sum(len(answer_units(r["content"])) for r in rows.values())
    for r in rows.values():
        texts = [u.text for u in answer_units(r["content"])]
        assert r["sentence_model"] == c.embedder.name and r["sentence_texts"] == texts
        got = np.frombuffer(bytes(r["sentence_vectors"]), dtype=np.float32).reshape(len(texts), -1)
        np.testing.assert_allclose(got, c.embedder.embed_passages(texts), atol=1e-5)
    search = ChunkKnowledgeSearch(c.pool, store, "t", c.embedder_for, query_model=lambda: c.embedder.name)
    some = list(rows)[:2]
    found = search.sentence_vectors(1, [uuid.UUID(i) for i in some], c.embedder.name)
    assert set(found) == {t for i in some for t in rows[i]["sentence_texts"]}
    assert search.sentence_vectors(2, [uuid.UUID(i) for i in some], c.embedder.name) == {}   # another account's
    assert search.sentence_vectors(1, [uuid.UUID(i) for i in some], "another-model") == {}
    env.q("UPDATE chunks SET sentence_model = NULL, sentence_texts = NULL, sentence_vectors = NULL")
    reindex(pool=c.pool, store=store, domain="t", embedder=c.embedder, batch=3, sentences=True)
    again = _sentences(env)
    assert {i: (r["sentence_model"], r["sentence_texts"]) for i, r in again.items()} == \
        {i: (r["sentence_model"], r["sentence_texts"]) for i, r in rows.items()}


def test_without_the_setting_no_sentence_vectors_are_stored(ctx):
    env, c, store, h = ctx   # the handler as the settings build it by default
    with env.conn() as conn:
        write_document(conn, account_id=1, source="doc.md", text=TEXT, chunk_size=300, chunk_overlap=0)
    h(_records(env))
    assert h.last_stats.embedded and h.last_stats.sentences == 0
    assert all(r["sentence_model"] is None for r in _sentences(env).values())
