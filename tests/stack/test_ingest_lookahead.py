"""The ingest handler's lookahead (``ChunkEventHandler.prepare``) against the real Postgres: the next
batch is read and its embeddings requested while the batch before it runs, and yet the effects are
those of running the batches one after the other — two versions of one chunk across batches end as
Postgres has them, a dependency down during the lookahead is retried with the same records, and a
lookahead that no longer holds is dropped."""

from __future__ import annotations

import asyncio
import json
import threading
import uuid

import numpy as np
import pytest

from streams.ingest.chunking import content_hash
from streams.ingest.documents import write_document
from streams.ingest.handler import ChunkEventHandler
from streams.ingest.knowledge import chunk_alias
from streams.kafka.consume import Record, process_batch
from streams.kafka.errors import DependencyUnavailable
from streams.vectors.store import QdrantStore
from tests.support.embedders import shared_container

TEXT = "\n\n".join(f"Seção {i}. " + f"A suíte número {i} tem hidromassagem e custa R$ {100 + i}. " * 4
                   for i in range(6))


class Remote:
    """A deterministic embedder that runs "out of process" (its parts are requested at once, like the
    embedding service's); a request with a text of ``down`` fails once, as when the service is down."""

    name, dim, out_of_process = "fake-remote", 4, True

    def __init__(self):
        self.down: set[str] = set()
        self.calls: list[list[str]] = []
        self._mu = threading.Lock()

    def embed_passages(self, texts):
        with self._mu:
            self.calls.append(list(texts))
            failed = self.down & set(texts)
            self.down -= failed
        if failed:
            raise DependencyUnavailable("embedding", "embedding service down")
        return np.array([[len(t), t.count("a"), t.count("e"), 1.0] for t in texts], dtype=np.float32)

    def embed_queries(self, texts):
        return self.embed_passages(texts)


@pytest.fixture
def ctx(env):
    store = QdrantStore(path=":memory:")
    c = shared_container(env.settings, vector_store=store)
    emb = Remote()
    h = ChunkEventHandler(pool=c.pool, store=store, domain="t", embedder=emb, embedder_for=lambda model: emb,
                          embed_part=2)
    yield env, store, h, emb
    c.close()


def _record(row, offset: int, event_id: str | None = None) -> Record:
    """The record of an outbox row (a fresh event id: another event about the same chunk)."""
    return Record("outbox.event.chunk", 0, offset, row["aggregateid"].encode(), json.dumps(row["payload"]).encode(),
                  (("id", (event_id or row["id"]).encode()), ("type", row["type"].encode())))


def _rows(env):
    return env.q("SELECT id::text, aggregateid, type, payload FROM outbox ORDER BY created_at")


def _points(store):
    target = store.alias_target(chunk_alias("t"))
    return {k: v["content_hash"] for k, v in store.scroll(target).items()} if target else {}


def _live(env):
    return {r["id"]: r["content_hash"].strip() for r in env.q(
        "SELECT id::text, content_hash FROM chunks WHERE deleted_at IS NULL")}


def _set_content(env, chunk_id: str, text: str) -> str:
    env.q("UPDATE chunks SET content = %s, content_hash = %s WHERE id = %s::uuid", text, content_hash(text), chunk_id)
    return content_hash(text)


def test_two_versions_of_one_chunk_across_prepared_batches_end_as_postgres_has_them(ctx):
    """Batch 1 is read when the chunk says B, batch 2 (read ahead, before batch 1 wrote anything) when it
    says A again — what the store already holds. Decided against the store as it was, batch 2 would find
    its point unchanged and leave batch 1's B there; decided against the store as batch 1 will leave it,
    it writes A back after batch 1."""
    env, store, h, emb = ctx
    with env.conn() as conn:
        write_document(conn, account_id=1, source="a.md", text=TEXT, chunk_size=300, chunk_overlap=0)
    rows = _rows(env)
    assert h([_record(r, i) for i, r in enumerate(rows)]) == []
    chunk, a_text = env.q("SELECT id::text, content FROM chunks ORDER BY seq LIMIT 1")[0].values()
    a_hash = content_hash(a_text)
    assert _points(store)[chunk] == a_hash
    row = next(r for r in rows if r["aggregateid"] == chunk)
    first, second = [_record(row, 100, str(uuid.uuid4()))], [_record(row, 101, str(uuid.uuid4()))]

    b_hash = _set_content(env, chunk, "Versão B: a suíte foi reformada.")
    h.prepare(first)                                   # batch 1 read: B, its embedding requested
    _set_content(env, chunk, a_text)                   # the chunk back to A
    h.prepare(second)                                  # batch 2 read ahead while batch 1 has not run
    assert [b_hash != a_hash, h(first), _points(store)[chunk]] == [True, [], b_hash]
    assert h(second) == []
    assert _points(store)[chunk] == a_hash == _live(env)[chunk]
    assert h.lookahead_used == 2                       # both ran from their lookahead
    assert ["Versão B: a suíte foi reformada."] in emb.calls and [a_text] in emb.calls


def test_a_moved_then_deleted_chunk_across_prepared_batches_is_deleted(ctx):
    env, store, h, emb = ctx
    with env.conn() as conn:
        write_document(conn, account_id=1, source="a.md", text=TEXT, chunk_size=300, chunk_overlap=0)
    rows = _rows(env)
    first = [_record(r, i) for i, r in enumerate(rows)]
    h.prepare(first)
    env.q("UPDATE chunks SET deleted_at = now() WHERE seq = 0")   # version 2: tombstoned
    row0 = next(r for r in rows if r["aggregateid"] == env.q("SELECT id::text FROM chunks WHERE seq = 0")[0]["id"])
    second = [_record(row0, 100, str(uuid.uuid4()))]
    h.prepare(second)
    assert h(first) == [] and h(second) == []
    assert _points(store) == _live(env) and len(_live(env)) == len(rows) - 1
    assert h.lookahead_used == 2


def test_a_dependency_down_during_the_lookahead_retries_the_same_records(ctx):
    """The next batch's embeddings were requested while the service was down: its turn meets the
    failure as a dependency error, the same batch is retried (read again, not dead-lettered), and
    the batch after it does not build on the lookahead that failed."""
    env, store, h, emb = ctx
    with env.conn() as conn:
        write_document(conn, account_id=1, source="a.md", text=TEXT, chunk_size=300, chunk_overlap=0)
        write_document(conn, account_id=2, source="b.md", text=TEXT.replace("suíte", "suite"), chunk_size=300,
                       chunk_overlap=0)
    records = [_record(r, i) for i, r in enumerate(_rows(env))]
    third = len(records) // 3
    b1, b2, b3 = records[:third], records[third:2 * third], records[2 * third:]

    class NoDeadLetters:
        async def write(self, dead):
            raise AssertionError(f"dead-lettered: {dead}")

    async def run(batch):
        await process_batch(batch, h, NoDeadLetters(), base_delay=0.01, max_delay=0.05)

    emb.down = {r["content"] for r in env.q("SELECT content FROM chunks WHERE id = ANY(%s::uuid[])",
                                            [r.key.decode() for r in b2])}
    h.prepare(b1)
    h.prepare(b2)                     # its parts fail: the service is down
    h.prepare(b3)                     # built on batch 2's lookahead
    asyncio.run(run(b1))
    asyncio.run(run(b2))              # meets the failure, retried: read and embedded again
    asyncio.run(run(b3))
    assert _points(store) == _live(env) and len(_live(env)) == len(records)
    done = {r["event_id"] for r in env.q("SELECT event_id FROM processed_events WHERE consumer = 'ingest'")}
    assert done == {dict(r.headers)["id"].decode() for r in records}
    assert h.lookahead_used == 1      # batch 1 only: 2 failed, 3 was decided after a batch 2 that changed
    assert emb.down == set()          # batch 2's requests failed once each, then succeeded


def test_postgres_down_during_the_lookahead_leaves_the_batch_to_be_read_in_its_turn(ctx, monkeypatch):
    import psycopg

    env, store, h, emb = ctx
    with env.conn() as conn:
        write_document(conn, account_id=1, source="a.md", text=TEXT, chunk_size=300, chunk_overlap=0)
    records = [_record(r, i) for i, r in enumerate(_rows(env))]

    class Down:
        def connection(self, *a, **k):
            raise psycopg.OperationalError("connection refused")

    monkeypatch.setattr(h, "pool", Down())
    h.prepare(records)                # dropped: nothing prepared
    monkeypatch.undo()
    assert h(records) == []
    assert _points(store) == _live(env) and h.lookahead_used == 0
