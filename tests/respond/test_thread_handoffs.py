"""The responder hands blocking port calls to worker threads in as few hand-offs as it can:
each hand-off to a thread and back costs the worker the GIL twice, and under load every
GIL hand-off waits its turn (README "Performance", issue 12)."""

import asyncio
import threading
import uuid

import pytest

from streams.respond.handler import _call_all, gather, plan, receive
from streams.respond.model import KnowledgeChunk
from tests.respond.fakes import FakeKnowledge, inbound
from tests.respond.test_pipeline_steps import DOCS, ctx_of, deps_for


class CountingThreads:
    """Counts ``asyncio.to_thread`` hand-offs (every blocking port call goes through it)."""

    def __init__(self, monkeypatch):
        self.calls = 0
        real = asyncio.to_thread

        async def counted(fn, *args, **kwargs):
            self.calls += 1
            return await real(fn, *args, **kwargs)

        monkeypatch.setattr(asyncio, "to_thread", counted)


class LexicalKnowledge(FakeKnowledge):
    """The fake vector search plus a word search; records the thread of every call."""

    def __init__(self, embedder, docs):
        super().__init__(embedder, docs)
        self.threads: list[int] = []
        self.vectors: list = []
        self.stems: list[list[str]] = []

    def search(self, query_vec, account_id, limit, max_distance):
        self.threads.append(threading.get_ident())
        self.vectors.append(query_vec)
        return super().search(query_vec, account_id, limit, max_distance)

    def lexical_search(self, account_id, stems, limit):
        self.threads.append(threading.get_ident())
        self.stems.append(list(stems))
        ns = uuid.UUID(int=7)
        return [KnowledgeChunk(uuid.uuid5(ns, text), uuid.uuid5(ns, doc), 1.0, text)
                for acc, doc, text in self.docs
                if acc == account_id and all(s in text.lower() for s in stems)][:limit]


def test_call_all_runs_blocking_calls_in_order_in_one_worker_thread(monkeypatch):
    threads = CountingThreads(monkeypatch)
    seen = []

    def port(x):
        seen.append((x, threading.get_ident()))
        return x * 10

    async def go():
        return await _call_all([(port, (1,)), (port, (2,)), (port, (3,))]), threading.get_ident()

    out, loop_thread = asyncio.run(go())
    assert out == [10, 20, 30] and [x for x, _ in seen] == [1, 2, 3]
    assert len({t for _, t in seen}) == 1 and seen[0][1] != loop_thread   # one thread, not the loop's
    assert threads.calls == 1
    assert asyncio.run(_call_all([])) == [] and threads.calls == 1


def test_call_all_raises_the_first_failure_and_awaits_async_ports_side_by_side(monkeypatch):
    def ok(x):
        return x

    def broken(x):
        raise ConnectionError(f"down {x}")

    with pytest.raises(ConnectionError, match="down 2"):
        asyncio.run(_call_all([(ok, (1,)), (broken, (2,)), (broken, (3,))]))

    async def slow(x):
        await asyncio.sleep(0.05)
        return x + 100

    assert asyncio.run(_call_all([(slow, (1,)), (ok, (2,)), (slow, (3,))])) == [101, 2, 103]


def _gather_counting(msg, deps, monkeypatch):
    """``gather`` for ``msg`` after its plan: the result, the event loop's thread and the
    counter of the hand-offs of gather alone."""
    threads = CountingThreads(monkeypatch)

    async def go():
        ctx = ctx_of()
        p = await plan(msg, ctx, deps)
        threads.calls = 0
        try:
            return await gather(msg, ctx, p, deps), threading.get_ident()
        finally:
            p.close()

    g, loop_thread = asyncio.run(go())
    return g, loop_thread, threads


def test_a_reply_gathers_memory_and_knowledge_in_three_thread_hand_offs(monkeypatch):
    """Message vector, recall (the facts and the vectors of the message's parts) and every
    knowledge search (the message's vector, the question part's, the word searches): one
    hand-off each, where each search and each extra embedding used to be one of its own."""
    text = "Quero ir hoje com minha esposa. Quanto custa o pernoite na suíte Luxo?"
    deps = deps_for(knowledge=None)
    knowledge = LexicalKnowledge(deps.memory_embedder, DOCS)
    deps.knowledge = knowledge
    msg = inbound(text)

    g, loop_thread, threads = _gather_counting(msg, deps, monkeypatch)
    assert [m.fact.id for m in g.memories] == [1]                       # recall still works
    assert g.chunks and all("999" not in c.text for c in g.chunks) and g.degraded == []
    # both vector searches (message, question part) and the word search ran, in one thread
    assert len(knowledge.vectors) == 2 and knowledge.stems and ["luxo", "perno", "suite"] in knowledge.stems
    assert len(set(knowledge.threads)) == 1 and knowledge.threads[0] != loop_thread
    q = deps.memory_embedder.embed_queries(["Quanto custa o pernoite na suíte Luxo?"])[0]
    assert float(knowledge.vectors[1] @ q) == pytest.approx(1.0, abs=1e-5)   # the question part's vector
    assert threads.calls == 3


def test_receive_is_one_hand_off(monkeypatch):
    threads = CountingThreads(monkeypatch)
    deps = deps_for()
    assert asyncio.run(receive(inbound("Oi"), deps)) is not None and threads.calls == 1


class AsyncPorts:
    """The same generator and store behind async methods (awaited, no worker thread)."""

    def __init__(self, port, method):
        self._port, self._method = port, method

    def __getattr__(self, name):
        attr = getattr(self._port, name)
        if name != self._method:
            return attr

        async def awaited(*args, **kwargs):
            return attr(*args, **kwargs)
        return awaited


class FailingGenerator:
    def generate(self, request):
        raise TimeoutError("model down")


def _reply(deps, text, message_id):
    from streams.respond.handler import respond

    out = asyncio.run(respond(inbound(text, message_id=message_id), deps))
    return out.reply.text, out.reply.degraded, out.reply.memory_ids, out.reply.chunk_ids, out.total_ms


def test_a_reply_is_composed_and_recorded_in_one_hand_off(monkeypatch):
    """With blocking ports: receive, the message's vector, recall, knowledge, then the
    generation and the reply's record together: five hand-offs per reply."""
    threads = CountingThreads(monkeypatch)
    deps = deps_for()
    text, degraded, memories, chunks, total_ms = _reply(deps, "Quanto custa o pernoite na suíte Luxo?", "m1")
    assert "R$ 240" in text and degraded == [] and memories == [1] and chunks and total_ms > 0
    assert threads.calls == 5
    assert [r.text for r in deps.store.replies] == [text]          # recorded once, in that hand-off


def test_composing_in_one_hand_off_answers_as_the_async_steps_do(monkeypatch):
    """The blocking path and the awaited one (async generator or store) give the same reply,
    the generator's failure included (a fallback, never an error)."""
    q = "Quanto custa o pernoite na suíte Luxo?"
    for generator in (None, FailingGenerator()):
        blocking = deps_for(generator=generator)
        awaited_gen = deps_for(generator=generator)
        awaited_gen.generator = AsyncPorts(awaited_gen.generator, "generate")
        awaited_store = deps_for(generator=generator)
        awaited_store.store = AsyncPorts(awaited_store.store, "save_reply")
        got = [_reply(d, q, "m1")[:4] for d in (blocking, awaited_gen, awaited_store)]
        assert got[0] == got[1] == got[2]
        assert (got[0][1] == ["generation_error"]) == (generator is not None)
        assert len(awaited_store.store._port.replies) == 1


class RecordingConn:
    """A pooled connection that records whether pipeline mode was entered."""

    def __init__(self):
        self.pipelines = 0

    def pipeline(self):
        conn = self

        class Pipe:
            def __enter__(self):
                conn.pipelines += 1

            def __exit__(self, *exc):
                return False
        return Pipe()

    def transaction(self):
        return Pipe0()

    def execute(self, sql, args=None, **kw):
        return self

    def fetchall(self):
        return []


class Pipe0:
    def __enter__(self):
        return None

    def __exit__(self, *exc):
        return False


class OnePool:
    def __init__(self, conn):
        self.conn = conn

    def connection(self):
        conn = self.conn

        class Checkout:
            def __enter__(self):
                return conn

            def __exit__(self, *exc):
                return False
        return Checkout()


def test_recall_uses_pipeline_mode_only_when_the_setting_says_so():
    from streams.respond.adapters import PostgresMemoryRecall
    from streams.settings import Settings

    assert Settings().db_pipeline is False            # plain mode unless MEMORIA_DB_PIPELINE=1
    for on in (False, True):
        conn = RecordingConn()
        assert PostgresMemoryRecall(OnePool(conn), "m", pipeline=on).live_facts(1, 2, timeout_s=0.1) == []
        assert conn.pipelines == int(on)



def test_recall_and_knowledge_score_in_their_worker_threads_not_on_the_loop(monkeypatch):
    """The scoring of the facts and the re-ranking of the chunks run in the hand-offs that fetch
    them: the event loop (which every message and the Kafka client share) does none of it."""
    import streams.respond.handler as handler

    where: dict[str, set[int]] = {"score": set(), "rerank": set()}
    score, rerank = handler.score_memories, handler.rerank

    def scored(*args, **kwargs):
        where["score"].add(threading.get_ident())
        return score(*args, **kwargs)

    def reranked(*args, **kwargs):
        where["rerank"].add(threading.get_ident())
        return rerank(*args, **kwargs)

    monkeypatch.setattr(handler, "score_memories", scored)
    monkeypatch.setattr(handler, "rerank", reranked)
    deps = deps_for(knowledge=None)
    deps.knowledge = LexicalKnowledge(deps.memory_embedder, DOCS)
    msg = inbound("Quanto custa o pernoite na suíte Luxo?")

    g, loop_thread, threads = _gather_counting(msg, deps, monkeypatch)
    assert [m.fact.id for m in g.memories] == [1] and g.chunks
    assert where["score"] and where["rerank"] and loop_thread not in where["score"] | where["rerank"]
    assert threads.calls == 3   # the message's vector, recall, knowledge: as before
