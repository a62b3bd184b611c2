"""The acts step (rights, opt-out, tools) through the real responder handler,
the real Postgres adapters, the real memory embedder, a local HTTP tool and
the real single-flight stores (Postgres and Redis)."""

from __future__ import annotations

import asyncio
import os
import time
import uuid

import pytest

from streams import metrics
from streams.respond.acts import Acts
from streams.respond.acts_store import PostgresActsStore
from streams.respond.adapters import PostgresConversationStore
from streams.respond.handler import respond
from streams.respond.tools import PostgresFlights, RedisFlights
from tests.respond.test_respond_e2e import add_fact
from tests.respond.test_respond_postgres import msg, responder
from tests.support.tool_server import ToolServer

pytestmark = pytest.mark.slow

REDIS_URL = os.environ.get("MEMORIA_TEST_REDIS_URL", "redis://127.0.0.1:6379/15")
PRICES = [(1, "precos", "Suíte Master (com piscina aquecida e sauna): pernoite R$ 450."),
          (1, "precos", "Suíte Luxo: período de 2 horas R$ 129; pernoite R$ 240.")]


def redis_or_skip():
    import redis

    try:
        redis.Redis.from_url(REDIS_URL, socket_connect_timeout=1).ping()
    except redis.exceptions.ConnectionError as e:
        if os.environ.get("MEMORIA_REQUIRE_REDIS") == "1":   # .ci/run: the Redis tests fail, never skip
            raise RuntimeError(f"no Redis at {REDIS_URL} and MEMORIA_REQUIRE_REDIS=1 ({e})") from e
        pytest.skip(f"no Redis at {REDIS_URL} ({e}); set MEMORIA_TEST_REDIS_URL")
    return RedisFlights(REDIS_URL, prefix=f"test-{uuid.uuid4().hex[:8]}.")  # parallel sessions never collide


@pytest.fixture
def pool(env):
    from streams.store.db import make_pool

    p = make_pool(env.settings, min_size=1, max_size=6)
    yield p
    p.close()


class Sent:
    """Collects what the acts step emits (the runner's producer in the worker)."""

    def __init__(self, store: PostgresConversationStore):
        self.store, self.replies = store, []

    async def __call__(self, reply):
        self.replies.append(reply)
        await asyncio.to_thread(self.store.mark_published, [reply])


def deps_with_acts(pool, flights=None, *, budget_ms=1500, knowledge=PRICES):
    deps = responder(pool, knowledge_docs=knowledge)
    deps.acts = Acts(store=PostgresActsStore(pool, tools_ttl_s=0), embedder=deps.memory_embedder,
                     flights=flights or PostgresFlights(pool), budget_ms=budget_ms, timeout_ms=10000,
                     flight_ttl_ms=20000)
    deps.acts.emit = Sent(deps.store)
    return deps


async def ask(deps, text, mid=None, **kw):
    """Respond, then publish like the runner does."""
    out = await respond(msg(text, mid or f"m-{uuid.uuid4().hex[:8]}", **kw), deps)
    if out is not None:
        await asyncio.to_thread(deps.store.mark_published, [out.reply])
    return out


def counter(c, *labels) -> float:
    return c.labels(*labels)._value.get()


def test_right_to_know_and_to_be_forgotten_with_recall_off(env, pool):
    # recall flag OFF (the default): rights still work
    mine = [add_fact(env, 1, 100, "Prefere a suíte Master com piscina"),
            add_fact(env, 1, 100, "Aniversário de casamento em 14/02", memory_type="data_comemorativa")]
    old = add_fact(env, 1, 100, "Prefere a suíte Luxo")
    env.q("UPDATE contact_memories SET superseded_at = now() WHERE id = %s", old)
    add_fact(env, 1, 101, "Alérgica a camarão (outra cliente)", memory_type="restricao")
    deps = deps_with_acts(pool)
    before = counter(metrics.CUSTOMER_REQUESTS, "access"), counter(metrics.CUSTOMER_REQUESTS, "erasure")

    out = asyncio.run(ask(deps, "oq vcs sabem d mim?", "m-know"))
    r = out.reply
    assert r.kind == "rights" and r.intent == "privacy_access" and r.memory_ids == []
    assert "• Prefere a suíte Master com piscina" in r.text and "• Aniversário de casamento em 14/02" in r.text
    assert "Prefere a suíte Luxo" not in r.text          # superseded: not live
    assert "camarão" not in r.text                        # never another contact's
    assert "apaga tudo que vocês sabem de mim" in r.text  # how to ask for deletion
    rows = env.q("SELECT kind, facts, contact_id, conversation_id FROM privacy_requests")
    assert [(x["kind"], x["facts"], x["contact_id"]) for x in rows] == [("access", 2, 100)]

    # a look-alike is answered as usual
    out = asyncio.run(ask(deps, "vocês sabem se tem vaga?"))
    assert out.reply.kind == "reply" and out.reply.intent != "privacy_access"

    # forget me: every fact of the contact forgotten at once, through the forgetting service
    out = asyncio.run(ask(deps, "apaga tudo q vcs sabem de mim", "m-forget"))
    assert out.reply.kind == "rights" and out.reply.intent == "privacy_erasure"
    assert "apagamos" in out.reply.text
    live = env.q("SELECT id FROM contact_memories WHERE account_id = 1 AND contact_id = 100 AND deleted_at IS NULL")
    assert live == []
    forgotten = env.q("SELECT id FROM contact_memories WHERE contact_id = 100 AND deleted_at IS NOT NULL")
    assert set(mine) <= {x["id"] for x in forgotten}
    assert env.q("SELECT count(*) AS n FROM contact_memories WHERE contact_id = 100 AND embedding IS NOT NULL"
                 )[0]["n"] == 0
    assert env.q("SELECT count(*) AS n FROM contact_memories WHERE contact_id = 101 AND deleted_at IS NULL"
                 )[0]["n"] == 1
    assert env.q("SELECT count(*) AS n FROM outbox WHERE type = 'contact.forgotten'")[0]["n"] == 1
    # the conversation will not be learnt again (it would bring the facts back)
    assert env.q("SELECT status FROM conversation_extractions")[0]["status"] == "discarded"
    # a redelivery does nothing twice
    assert asyncio.run(respond(msg("apaga tudo q vcs sabem de mim", "m-forget"), deps)) is None
    reqs = env.q("SELECT kind, facts FROM privacy_requests ORDER BY id")
    assert [(x["kind"], x["facts"]) for x in reqs] == [("access", 2), ("erasure", 3)]
    assert counter(metrics.CUSTOMER_REQUESTS, "access") == before[0] + 1
    assert counter(metrics.CUSTOMER_REQUESTS, "erasure") == before[1] + 1

    out = asyncio.run(ask(deps, "e agora, quais dados vcs tem meus?"))
    assert "Não guardamos nenhuma informação" in out.reply.text


def test_opt_out_is_recorded_once(env, pool):
    deps = deps_with_acts(pool)
    out = asyncio.run(ask(deps, "Parar", "m-stop", contact=300, conversation="c-stop"))
    assert out.reply.intent == "marketing_opt_out" and "não vai mais receber" in out.reply.text
    asyncio.run(ask(deps, "não quero receber promoções", contact=300, conversation="c-stop"))
    rows = env.q("SELECT contact_id, message_id FROM marketing_optouts")
    assert [(r["contact_id"], r["message_id"]) for r in rows] == [(300, "m-stop")]


def set_tools(env, tool_url, *, inbox=10, account=1, budget_ms=None):
    import json

    cfg = {"url": tool_url, "keywords": ["disponivel", "livre", "tem vaga"]}
    if budget_ms:
        cfg["budget_ms"] = budget_ms
    env.q("INSERT INTO accounts (id) VALUES (%s) ON CONFLICT DO NOTHING", account)
    env.q("INSERT INTO inboxes (id, account_id) VALUES (%s, %s) ON CONFLICT (id) DO NOTHING", inbox, account)
    env.q("UPDATE inboxes SET tools = %s::jsonb WHERE id = %s", json.dumps({"availability_check": cfg}), inbox)


def test_tool_within_budget_is_used_inline_and_never_contradicted(env, pool):
    with ToolServer(delay=0.0, unavailable=("luxo",)) as tool:
        set_tools(env, tool.url)
        deps = deps_with_acts(pool)
        out = asyncio.run(ask(deps, "Tem a suíte Master disponível dia 14/12 para pernoite?", "m-inline"))
        r = out.reply
        assert r.intent == "availability_check" and r.tools == ["availability_check"] and r.kind == "reply"
        assert r.degraded == []
        assert r.text.startswith("Sim! A suíte Master está disponível em 14/12 (pernoite).")
        assert tool.calls == 1
        assert tool.requests[0]["arguments"]["suite"] == "master" and tool.requests[0]["contact_id"] == 100
        row = env.q("SELECT outcome, result FROM tool_calls WHERE message_id = 'm-inline'")[0]
        assert row["outcome"] == "inline" and row["result"]["available"] is True

        out = asyncio.run(ask(deps, "a suíte luxo está livre 14/12 pernoite?"))
        assert "não está disponível" in out.reply.text and "Sim!" not in out.reply.text
        # no single-flight key left behind
        assert env.q("SELECT count(*) AS n FROM single_flight")[0]["n"] == 0


def test_broken_tool_degrades_the_reply(env, pool):
    with ToolServer(status=500) as tool:
        set_tools(env, tool.url)
        deps = deps_with_acts(pool)
        out = asyncio.run(ask(deps, "Tem a suíte Master disponível dia 14/12 para pernoite?"))
        assert "tool_error" in out.reply.degraded and out.reply.tools == []
        assert "disponível em 14/12" not in out.reply.text


@pytest.mark.parametrize("store", ["postgres", "redis"])
def test_slow_tool_acknowledges_then_answers_once(env, pool, store):
    flights = redis_or_skip() if store == "redis" else PostgresFlights(pool)
    with ToolServer(delay=1.5) as tool:
        set_tools(env, tool.url, budget_ms=200)
        deps = deps_with_acts(pool, flights)

        async def burst():
            first = await ask(deps, "Tem a suíte Master disponível dia 14/12 para pernoite?", "m-slow-1")
            ack_at = time.time()
            again = await ask(deps, "e aí?? a master ta livre 14/12? queria dormir aí", "m-slow-2")
            third = await ask(deps, "Tem a suíte Master disponível dia 14/12 para pernoite?", "m-slow-3")
            await deps.acts.drain()
            return first, ack_at, again, third

        first, ack_at, again, third = asyncio.run(burst())
        assert first.reply.kind == "acknowledgement" and first.reply.text == deps.acts.acknowledgement
        assert ack_at < tool.answered_at[0]  # answered before the tool did (not a timing bound)
        assert again is None and third is None  # joined the call in flight: no second call, no second ack
        assert tool.calls == 1
        sent = deps.acts.emit.replies
        assert [r.kind for r in sent] == ["tool_result"]
        assert sent[0].text == "Sim! A suíte Master está disponível em 14/12 (pernoite)."
        assert sent[0].in_reply_to == "m-slow-1" and sent[0].conversation_id == "c-1"
        outcomes = {r["message_id"]: r["outcome"] for r in env.q("SELECT message_id, outcome FROM tool_calls")}
        assert outcomes == {"m-slow-1": "background", "m-slow-2": "joined", "m-slow-3": "joined"}
        # the second reply is part of the conversation
        texts = [r["text"] for r in env.q("SELECT text FROM messages WHERE role = 'agent' ORDER BY id")]
        assert texts[-2:] == [deps.acts.acknowledgement, sent[0].text]
        # redeliveries change nothing; after the call, a new question is a new call
        assert asyncio.run(respond(msg("e aí?? a master ta livre 14/12?", "m-slow-2"), deps)) is None
        assert tool.calls == 1
        asyncio.run(ask(deps, "Tem a suíte Master disponível dia 14/12 para pernoite?", "m-slow-4"))
        asyncio.run(deps.acts.drain())
        assert tool.calls == 2


def test_single_flight_stores_share_keys_expire_and_release_by_owner(env, pool):
    stores = [PostgresFlights(pool), redis_or_skip()]
    for fl in stores:
        key = f"memoria:test:{fl.name}:{uuid.uuid4().hex}"
        assert fl.acquire(key, "a", 400)
        assert not fl.acquire(key, "b", 400)  # in flight: nobody else
        fl.release(key, "b")                   # not the owner: no effect
        assert not fl.acquire(key, "b", 400)
        time.sleep(0.6)                        # a stuck call cannot hold the key forever
        assert fl.acquire(key, "b", 400)
        fl.release(key, "b")
        assert fl.acquire(key, "c", 400)
        fl.release(key, "c")


def test_tool_answer_enters_the_prompt_and_the_model_cannot_contradict_it(env, pool):
    from streams.bootstrap import Container
    from streams.settings import Settings
    from tests.support.openai_server import FakeOpenAI, Reply

    with ToolServer(delay=0.0) as tool, FakeOpenAI([Reply.text("Temos sim! Quer que eu reserve a Master?"),
                                                    Reply.text("Infelizmente não temos vaga nesse dia.")]) as llm:
        set_tools(env, tool.url)
        deps = deps_with_acts(pool)
        deps.generator = Container(Settings(openai_base_url=llm.base_url, openai_api_key="test",
                                            llm_max_retries=0)).generator("openai")
        out = asyncio.run(ask(deps, "Tem a suíte Master disponível dia 14/12 para pernoite?"))
        system = "\n".join(m["content"] for m in llm.chat_requests[0]["messages"] if m["role"] == "system")
        knowledge = system[system.index("<conhecimento"):]
        assert "Sim! A suíte Master está disponível em 14/12 (pernoite)." in knowledge  # data, like the knowledge
        assert out.reply.text == "Temos sim! Quer que eu reserve a Master?"  # agrees: kept
        out = asyncio.run(ask(deps, "a suíte master está livre 14/12 pernoite?"))
        assert out.reply.text == "Sim! A suíte Master está disponível em 14/12 (pernoite)."  # contradicted: replaced
        from streams.respond.acts import Act
        from streams.respond.tools import ToolResult

        synthetic = Act(tool=ToolResult("Sim! A suíte Master está disponível em 14/12 (pernoite).", True),
                        tools=("availability_check",)).chunk().chunk_id
        assert out.reply.tools == ["availability_check"] and synthetic not in out.reply.chunk_ids


def test_single_flight_store_down_degrades_without_calling_the_tool(env, pool):
    # a Redis nobody listens on: the reply goes out without the tool (never two calls, never stuck)
    from tests.harness import free_port

    with ToolServer(delay=0.0) as tool:
        set_tools(env, tool.url)
        deps = deps_with_acts(pool, RedisFlights(f"redis://127.0.0.1:{free_port()}/0"))
        out = asyncio.run(ask(deps, "Tem a suíte Master disponível dia 14/12 para pernoite?"))
        assert out.reply.degraded == ["tool_store_unavailable"] and tool.calls == 0
        assert out.reply.intent == "availability_check" and out.reply.kind == "reply"
