"""The responder's Postgres adapters against the real database (no Kafka):
tenant isolation of recall, units, the recall budget with a slow database,
loop protection, lead state size, duplicates."""

from __future__ import annotations

import asyncio
import json
import random
import time
from datetime import datetime, timezone

import pytest

from schemas.events import InboundMessage
from streams.respond.adapters import PostgresConversationStore, PostgresMemoryRecall
from streams.respond.generate import FALLBACK_LOOP, OfflineComposer
from streams.respond.handler import Responder, respond
from streams.respond.recall import score_memories
from streams.settings import get_settings
from tests.respond.fakes import BagOfWordsEmbedder, FakeKnowledge
from tests.respond.test_respond_e2e import add_fact, enable_recall

pytestmark = pytest.mark.slow

KEY = get_settings().erasure_key  # what the container hands to the erasure ledger's users


@pytest.fixture
def pool(env):
    from streams.store.db import make_pool

    p = make_pool(env.settings, min_size=1, max_size=4)
    yield p
    p.close()


def msg(text, mid, *, account=1, contact=100, conversation="c-1", unit=None, inbox=10):
    return InboundMessage(message_id=mid, account_id=account, inbox_id=inbox, conversation_id=conversation,
                          contact_id=contact, unit_id=unit, channel="test", text=text,
                          sent_at=datetime.now(timezone.utc))


def responder(pool, *, delay=0.0, knowledge_docs=(), budget=0.5, pipeline=False, recall_pool=None):
    """``recall_pool``: recall on a pool of its own (``own_pool``: the timeout a session setting)."""
    from tests.support.embedders import shared_container

    mem = shared_container().memory_embedder
    kemb = BagOfWordsEmbedder()
    recall = (PostgresMemoryRecall(recall_pool, mem.name, inject_delay_s=delay, own_pool=True)
              if recall_pool is not None else
              PostgresMemoryRecall(pool, mem.name, inject_delay_s=delay, pipeline=pipeline))
    return Responder(store=PostgresConversationStore(pool, erasure_key=KEY, pipeline=pipeline),
                     memory=recall,
                     knowledge=FakeKnowledge(kemb, list(knowledge_docs)), memory_embedder=mem,
                     knowledge_embedder=kemb, generator=OfflineComposer(), recall_budget_s=budget)


def test_randomized_recall_never_leaks_across_accounts_or_contacts(env, pool):
    from tests.support.embedders import shared_container

    emb = shared_container().memory_embedder
    texts = ["Prefere suíte com hidromassagem", "Alérgico a camarão", "Aniversário de casamento em 12 de maio",
             "Costuma chegar depois das 22h", "Gosta de vinho tinto seco", "Viaja a trabalho pela empresa Alfa",
             "Reclamou do barulho do ar-condicionado", "Tem um cachorro chamado Thor"]
    vecs = emb.embed_passages(texts)
    rnd = random.Random(7)
    owners = {}
    for account in (1, 2, 3):
        enable_recall(env, account)
        for contact in range(account * 1000, account * 1000 + 12):
            for _ in range(rnd.randint(1, 6)):
                k = rnd.randrange(len(texts))
                scope = rnd.choice(["global", "unit"])
                unit = rnd.choice([None, 1, 2]) if scope == "global" else rnd.choice([1, 2])
                fid = add_fact(env, account, contact, texts[k], vec=vecs[k], scope=scope, unit=unit)
                owners[fid] = (account, contact, scope, unit)
    recall = PostgresMemoryRecall(pool, emb.name)
    queries = emb.embed_queries(["quero a suíte com hidro", "tenho alergia", "vou levar meu cachorro",
                                 "é aniversário", "chego tarde"])
    checked = 0
    for _ in range(200):
        account = rnd.choice([1, 2, 3])
        contact = rnd.choice(list(range(account * 1000, account * 1000 + 12)) + [account * 1000 + 500])
        unit = rnd.choice([None, 1, 2])
        facts = recall.live_facts(account, contact, timeout_s=2)
        for s in score_memories(queries[rnd.randrange(len(queries))], facts, unit):
            a, c, scope, u = owners[s.fact.id]
            assert (a, c) == (account, contact)
            assert scope == "global" or u == unit  # unit facts only at home
            checked += 1
    assert checked > 100


def test_other_embedding_model_deleted_superseded_invisible(env, pool):
    from tests.support.embedders import shared_container

    emb = shared_container().memory_embedder
    live = add_fact(env, 1, 100, "Prefere suíte com piscina")
    other = add_fact(env, 1, 100, "Prefere suíte com piscina", model="another-model")
    gone = add_fact(env, 1, 100, "Prefere suíte com piscina")
    old = add_fact(env, 1, 100, "Prefere suíte com piscina")
    env.q("UPDATE contact_memories SET deleted_at = now() WHERE id = %s", gone)
    env.q("UPDATE contact_memories SET superseded_at = now() WHERE id = %s", old)
    expired = add_fact(env, 1, 100, "Reclamou do barulho", memory_type="reclamacao")
    aged = add_fact(env, 1, 100, "Gosta de vinho", memory_type="preferencia")
    env.q("UPDATE contact_memories SET expires_at = now() - interval '1 day' WHERE id = ANY(%s)", [expired, aged])
    facts = {f.id: f for f in PostgresMemoryRecall(pool, emb.name).live_facts(1, 100, timeout_s=2)}
    assert set(facts) == {live, aged} and other not in facts
    assert facts[aged].weight == pytest.approx(0.7)


@pytest.fixture
def own_pool(env):
    from streams.store.db import make_pool

    p = make_pool(env.settings, min_size=1, max_size=2, name="memoria-recall")
    yield p
    p.close()


def test_recall_on_its_own_pool_is_one_statement_and_finds_the_same_facts(env, pool, own_pool, monkeypatch):
    """On a pool only recall uses, the statement timeout is set once per connection (a session
    setting) and each recall is its SELECT alone: no BEGIN, SET LOCAL, COMMIT."""
    import psycopg

    from tests.support.embedders import shared_container

    emb = shared_container().memory_embedder
    ids = {add_fact(env, 1, 100, t) for t in ("Prefere suíte com piscina", "Alérgico a camarão")}
    add_fact(env, 1, 101, "Gosta de vinho")
    shared = {f.id: f.weight for f in PostgresMemoryRecall(pool, emb.name).live_facts(1, 100, timeout_s=2)}
    sent: list[str] = []
    execute, exec_command = psycopg.Connection.execute, psycopg.Connection._exec_command

    def counted(self, query, *args, **kwargs):
        sent.extend(str(query).split()[:1])   # the pool's check sends an empty query
        return execute(self, query, *args, **kwargs)

    def command(self, command, *args, **kwargs):   # BEGIN and COMMIT of conn.transaction()
        sent.extend(w.decode() for w in bytes(command).split()[:1])
        return exec_command(self, command, *args, **kwargs)

    monkeypatch.setattr(psycopg.Connection, "execute", counted)
    monkeypatch.setattr(psycopg.Connection, "_exec_command", command)
    recall = PostgresMemoryRecall(own_pool, emb.name, own_pool=True)
    runs = [{f.id: f.weight for f in recall.live_facts(1, 100, timeout_s=2)} for _ in range(4)]
    assert all(r == shared for r in runs) and set(shared) == ids
    assert sent.count("SELECT") == 4 and "BEGIN" not in sent and "COMMIT" not in sent
    assert 1 <= sent.count("SET") <= 2          # once per connection of the pool (max 2), not per recall
    with own_pool.connection() as conn:        # the setting is the session's
        assert conn.execute("SHOW statement_timeout").fetchone()["statement_timeout"] == "2s"
    sent.clear()
    recall.live_facts(1, 100, timeout_s=0.25)   # another budget: set again
    assert sent[0] == "SET" and sent.count("SELECT") == 1


# Settings.db_pipeline: the same guarantees with and without libpq pipeline mode (and with recall
# on a pool of its own: its statement timeout a session setting)
PIPELINE = pytest.mark.parametrize("pipeline", [False, True], ids=["plain", "pipeline"])


@pytest.mark.parametrize("pipeline", [False, True, "own_pool"], ids=["plain", "pipeline", "own_pool"])
def test_slow_database_reply_goes_out_without_memory_within_budget(env, pool, own_pool, pipeline):
    enable_recall(env, 1)
    add_fact(env, 1, 100, "Prefere suíte com piscina")
    recall_pool = own_pool if pipeline == "own_pool" else None
    pipeline = pipeline is True
    deps = responder(pool, delay=3.0, pipeline=pipeline, recall_pool=recall_pool)
    t0 = time.perf_counter()
    out = asyncio.run(respond(msg("Oi, boa noite! Quero a suíte com piscina", "m-slow"), deps))
    elapsed = time.perf_counter() - t0
    assert out.reply.memory_ids == [] and "recall_timeout" in out.reply.degraded
    assert elapsed < 1.5, elapsed
    # the server cancelled the query too (statement_timeout): no pg_sleep left running
    time.sleep(0.3)
    running = env.q("SELECT count(*) AS n FROM pg_stat_activity WHERE query LIKE '%%pg_sleep%%' "
                    "AND state = 'active' AND pid <> pg_backend_pid()")
    assert running[0]["n"] == 0
    # and the same ports answer with memory once the database is fast again
    out = asyncio.run(respond(msg("Oi, boa noite! Quero a suíte com piscina", "m-fast"),
                              responder(pool, pipeline=pipeline, recall_pool=recall_pool)))
    assert out.reply.memory_ids and out.reply.degraded == []


@PIPELINE
def test_duplicate_message_stored_once_and_answered_once(env, pool, pipeline):
    deps = responder(pool, pipeline=pipeline)
    m = msg("Oi, tudo bem?", "wamid.dup")
    first = asyncio.run(respond(m, deps))
    assert first is not None
    assert asyncio.run(respond(m, deps)) is None
    rows = env.q("SELECT role, channel_message_id FROM messages ORDER BY id")
    assert [r["role"] for r in rows] == ["contact", "agent"]
    assert rows[1]["channel_message_id"] == first.reply.reply_id
    # stored but never acknowledged by Kafka → the stored reply is offered again, same id
    store = deps.store
    assert store.unpublished_reply(m).reply_id == first.reply.reply_id
    store.mark_published([first.reply])
    assert store.unpublished_reply(m) is None


def test_crash_between_inbound_and_reply_is_answered_on_redelivery(env, pool):
    store = PostgresConversationStore(pool, erasure_key=KEY)
    m = msg("Oi", "wamid.crash")
    assert store.store_inbound(m) is True      # the worker dies here
    out = asyncio.run(respond(m, responder(pool)))  # redelivery: still answered
    assert out is not None


@PIPELINE
def test_loop_protection_after_five_retrievals_and_lead_state_size(env, pool, pipeline):
    docs = [(1, "precos", "O pernoite na suíte Luxo custa R$ 240.")]
    deps = responder(pool, knowledge_docs=docs, pipeline=pipeline)
    env.q("INSERT INTO accounts (id) VALUES (1)")
    env.q("INSERT INTO inboxes (id, account_id, rag_distance_threshold) VALUES (10, 1, 0.9)")
    replies = []
    for k in range(7):
        out = asyncio.run(respond(msg("Quanto custa o pernoite na suíte Luxo?", f"m-{k}"), deps))
        replies.append(out.reply)
        if k == 0:  # someone else stuffs the lead state close to the limit
            big = json.dumps({"notes": "x" * 3900})
            env.q("UPDATE conversations SET lead_state = lead_state || %s::jsonb", big)
    assert all("R$ 240" in r.text for r in replies[:5])
    assert replies[5].text == FALLBACK_LOOP and replies[6].text == FALLBACK_LOOP
    assert replies[5].chunk_ids == [] and "retrieval_limit" in replies[5].degraded
    row = env.q("SELECT lead_state, octet_length(lead_state::text) AS n FROM conversations")[0]
    assert row["n"] <= 4096 and row["lead_state"]["retrieval_count"] == 5
    assert row["lead_state"]["stage"] == "cotacao"


@PIPELINE
def test_tenant_mismatch_is_refused(env, pool, pipeline):
    from streams.respond.adapters import TenantMismatch

    store = PostgresConversationStore(pool, erasure_key=KEY, pipeline=pipeline)
    store.store_inbound(msg("Oi", "a-1", account=1, contact=100, conversation="shared"))
    with pytest.raises(TenantMismatch):
        store.store_inbound(msg("Oi", "b-1", account=2, contact=100, conversation="other"))
    with pytest.raises(TenantMismatch):
        store.store_inbound(msg("Oi", "b-2", account=2, contact=200, inbox=20, conversation="shared"))


def test_every_message_type_is_stored_and_answered_sensibly(env, pool):
    from streams.respond.generate import CONTACTS_REPLY, FALLBACK_AUDIO, FALLBACK_MEDIA, LOCATION_REPLY

    deps = responder(pool)

    def typed(text, mid, kind, placeholder=False):
        return msg(text, mid).model_copy(update={"message_type": kind, "placeholder": placeholder})

    cases = [(typed("[áudio]", "w-a", "audio", True), FALLBACK_AUDIO),
             (typed("[imagem]", "w-i", "image", True), FALLBACK_MEDIA),
             (typed("Localização: Av. Paulista (-23.5, -46.6)", "w-l", "location"), LOCATION_REPLY),
             (typed("Contato compartilhado: João", "w-c", "contacts"), CONTACTS_REPLY)]
    for m, want in cases:
        out = asyncio.run(respond(m, deps))
        assert out.reply.text == want and out.reply.in_reply_to == m.message_id
    caption = asyncio.run(respond(typed("Oi, tudo bem?", "w-cap", "image"), deps))
    assert caption.reply.intent == "greeting"  # a caption is answered like a text
    button = asyncio.run(respond(typed("Confirmar reserva", "w-b", "button"), deps))
    assert button.reply.text  # a quick-reply title goes through the normal flow
    assert asyncio.run(respond(typed("👍", "w-r", "reaction"), deps)) is None  # stored, not answered
    # NUL and other control characters are gone before anything is stored
    clean = InboundMessage.model_validate({**json.loads(msg("x", "w-n").model_dump_json()),
                                           "text": "Oi\x00, tudo\x07 bem?"})
    assert clean.text == "Oi, tudo bem?" and asyncio.run(respond(clean, deps)) is not None
    rows = env.q("SELECT channel_message_id AS mid, message_type, text FROM messages WHERE role = 'contact' "
                 "ORDER BY id")
    assert [(r["mid"], r["message_type"]) for r in rows] == [
        ("w-a", "audio"), ("w-i", "image"), ("w-l", "location"), ("w-c", "contacts"), ("w-cap", "image"),
        ("w-b", "button"), ("w-r", "reaction"), ("w-n", "text")]
    assert len(env.q("SELECT 1 FROM messages WHERE role = 'agent'")) == 7


def test_paid_embeddings_of_a_reply_are_in_the_cost_ledger_once(env, pool):
    """With an OpenAI-compatible embedding endpoint (a local server speaking the protocol), the
    reply's query embeddings (recall and knowledge) are written with the reply, once per message."""
    from streams.embedding.providers import OpenAIEmbedder
    from tests.support.openai_server import FakeOpenAI

    with FakeOpenAI() as server:
        paid = OpenAIEmbedder("text-embedding-3-small", server.base_url, "test")
        docs = [(1, "precos", "O pernoite na suíte Luxo custa R$ 240.")]
        deps = responder(pool, knowledge_docs=docs)
        deps = Responder(store=deps.store, memory=PostgresMemoryRecall(pool, paid.name), knowledge=deps.knowledge,
                         memory_embedder=paid, knowledge_embedder=deps.knowledge_embedder,
                         generator=OfflineComposer(), recall_budget_s=5.0)
        enable_recall(env, 1)
        env.q("INSERT INTO inboxes (id, account_id, rag_distance_threshold) VALUES (10, 1, 0.9)")
        m = msg("Quanto custa o pernoite na suíte Luxo?", "wamid.paid")
        out = asyncio.run(respond(m, deps))
        assert out is not None and [c.stage for c in out.embedding_calls] == ["embedding"]
        assert asyncio.run(respond(m, deps)) is None   # redelivered: answered once, counted once
    rows = env.q("SELECT stage, model, prompt_tokens, cost_usd, ref FROM model_usage WHERE account_id = 1")
    assert [(r["stage"], r["model"]) for r in rows] == [("embedding", paid.name)]
    assert rows[0]["prompt_tokens"] == 7 and rows[0]["cost_usd"] > 0   # 7 words: the fake counts words
    assert rows[0]["ref"] == f"{out.reply.reply_id}:{paid.name}"


@PIPELINE
def test_receive_stores_once_and_reads_the_conversation_on_the_same_connection(env, pool, pipeline):
    store = PostgresConversationStore(pool, erasure_key=KEY, pipeline=pipeline)
    env.q("INSERT INTO accounts (id, settings) VALUES (1, '{\"memory_recall_enabled\": true}')")
    env.q("INSERT INTO inboxes (id, account_id, rag_max_results, temperature) VALUES (10, 1, 4, 0.2)")
    first = store.receive(msg("Oi", "r-1"), 10)
    assert first.recall_enabled and first.inbox.rag_max_results == 4 and first.history == ()
    second = store.receive(msg("Quanto custa?", "r-2"), 10)
    assert [h.text for h in second.history] == ["Oi"]           # earlier messages, never this one
    assert second == store.load_context(msg("Quanto custa?", "r-2"), 10)
    # redelivered before its reply was stored (a crash in between): still to be answered
    assert store.receive(msg("Quanto custa?", "r-2"), 10) == second
    from streams.respond.handler import reply_id_for

    env.q("INSERT INTO messages (conversation_id, account_id, role, text, sent_at, channel_message_id) "
          "SELECT id, 1, 'agent', 'R$ 240', now(), %s FROM conversations WHERE external_id = 'c-1'",
          reply_id_for(msg("x", "r-2")))
    assert store.receive(msg("Quanto custa?", "r-2"), 10) is None  # answered already: nothing to do
    env.q("INSERT INTO conversations (external_id, account_id, inbox_id, contact_id) VALUES ('c-9', 1, 10, 100)")
    assert store.receive(msg("Oi", "r-3", conversation="c-9"), 3).history == ()
    with pytest.raises(LookupError):  # another account's conversation id is never read
        store.load_context(msg("Oi", "r-4", account=2, conversation="c-9"), 3)


def test_lexical_search_finds_live_chunks_by_word_prefixes_whatever_the_accents(env, pool):
    """``ChunkKnowledgeSearch.lexical_search``: every stem must start a word of the chunk
    (case and accents ignored), only the account's live chunks, distance 1.0."""
    import uuid

    from streams.respond.adapters import ChunkKnowledgeSearch

    docs = {a: uuid.uuid4() for a in (1, 2)}
    for a, d in docs.items():
        env.q("INSERT INTO accounts (id) VALUES (%s) ON CONFLICT DO NOTHING", a)
        env.q("INSERT INTO documents (id, account_id, source) VALUES (%s, %s, 'bebidas.md')", d, a)
    rows = [(1, 0, "Chopp 300 ml: R$ 11,00. Parcelamento em até 3x sem juros.", None),
            (1, 1, "Castração de gata: R$ 520,00.", None),
            (1, 2, "Chopp de vinho: R$ 19,00.", "now()"),     # deleted
            (2, 0, "Chopp 500 ml: R$ 15,00.", None)]          # another account
    for a, seq, text, deleted in rows:
        env.q(f"INSERT INTO chunks (id, account_id, document_id, seq, content, content_hash, deleted_at) "
              f"VALUES (%s, %s, %s, %s, %s, %s, {deleted or 'NULL'})", uuid.uuid4(), a, docs[a], seq, text, "0" * 64)
    search = ChunkKnowledgeSearch(pool, store=None, domain="test", embedder_for=None, query_model=lambda: "x")
    texts = lambda stems: sorted(c.text for c in search.lexical_search(1, stems, 10))  # noqa: E731
    assert texts(["chopp"]) == ["Chopp 300 ml: R$ 11,00. Parcelamento em até 3x sem juros."]
    assert texts(["parce", "chopp"]) == texts(["chopp"])
    assert texts(["castr"]) == ["Castração de gata: R$ 520,00."]  # "castr" meets "Castração"
    assert texts(["gata", "chopp"]) == [] and texts(["opp"]) == []  # a word's start, every stem
    assert all(c.distance == 1.0 for c in search.lexical_search(1, ["chopp"], 10))


def test_the_cheapest_of_a_kind_is_found_by_the_real_word_search(env, pool):
    """``_extreme_of_kind`` over ``ChunkKnowledgeSearch.lexical_search``: the account's chunks naming
    the kind ("Suíte", accented, matched by "suite") are compared and the cheapest one's chunk comes first."""
    import uuid

    from streams.respond.adapters import ChunkKnowledgeSearch
    from streams.respond.handler import _extreme_of_kind

    doc = uuid.uuid4()
    env.q("INSERT INTO accounts (id) VALUES (3) ON CONFLICT DO NOTHING")
    env.q("INSERT INTO documents (id, account_id, source) VALUES (%s, 3, 'suites.md')", doc)
    texts = ["- **Suíte Mar**: ofurô. 2h: R$ 140,00 · Pernoite: R$ 300,00.",
             "- **Suíte Sol**: cama king. 2h: R$ 90,00 · Pernoite: R$ 210,00.",
             "Decoração na suíte: R$ 120,00."]
    for seq, text in enumerate(texts):
        env.q("INSERT INTO chunks (id, account_id, document_id, seq, content, content_hash) "
              "VALUES (%s, 3, %s, %s, %s, %s)", uuid.uuid4(), doc, seq, text, "0" * 64)
    search = ChunkKnowledgeSearch(pool, store=None, domain="test", embedder_for=None, query_model=lambda: "x")
    retrieved = [c for c in search.lexical_search(3, ["decor"], 3)]
    m = msg("qual a suite mais barata?", "m-cheap", account=3)
    got = asyncio.run(_extreme_of_kind(m, m.text, retrieved, search.lexical_search, 3))
    # the cheapest one's chunk holds no other suite to compare it with: the next compared item's chunk comes second
    assert [c.text for c in got] == [texts[1], texts[0], texts[2]]


@PIPELINE
def test_the_container_builds_the_responder_with_the_pipeline_setting(env, pipeline):
    from tests.support.embedders import shared_container

    c = shared_container(env.settings.model_copy(update={"db_pipeline": pipeline}))
    try:
        deps = c.responder()
        assert deps.store.pipeline is pipeline and deps.memory.pipeline is pipeline
    finally:
        c.close()
