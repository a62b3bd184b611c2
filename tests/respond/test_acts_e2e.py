"""Memory that acts on the real stack: Kafka → two responder workers (Redis
single-flight) → Kafka with a local 5 s HTTP tool; the right to know through
the worker; anniversary offers from the maintenance worker."""

from __future__ import annotations

import json
import signal
import time
import uuid
from datetime import datetime, timedelta, timezone

import pytest

from schemas.events import InboundMessage, OutboundReply
from streams.kafka.topics import INBOUND, OUTBOUND, qualified
from tests.harness import consume_all, free_port, produce, wait_until
from tests.respond.test_acts_postgres import REDIS_URL, redis_or_skip, set_tools
from tests.respond.test_respond_e2e import add_fact, ask
from tests.support.tool_server import ToolServer

pytestmark = pytest.mark.slow

# conversation ids whose keys fall on the 4 partitions (murmur2): both workers get some
CONVERSATIONS = ("c-0", "c-1", "c-4", "c-5")


def _inbound(mid: str, text: str, conversation: str) -> bytes:
    return InboundMessage(message_id=mid, account_id=1, inbox_id=10, conversation_id=conversation, contact_id=100,
                          channel="whatsapp", text=text, sent_at=datetime.now(timezone.utc)
                          ).model_dump_json().encode()


def _replies(env, expect: int, timeout: float) -> list[OutboundReply]:
    recs = consume_all(env.settings, qualified(env.settings, OUTBOUND), expect, timeout=timeout)
    return [OutboundReply.model_validate(json.loads(r.value)) for r in recs]


def test_slow_tool_two_workers_one_call_one_ack_one_result_per_burst(env, tmp_path):
    redis_or_skip()
    with ToolServer(delay=5.0) as tool:
        set_tools(env, tool.url)  # default budget 1.5 s: a 5 s tool runs in the background
        common = {"REDIS_URL": REDIS_URL}
        env.start_worker("respond", extra_env=common)
        env.start_worker("respond", log_name="worker2", extra_env={
            **common, "MEMORIA_WORKER_WEB_PORT": str(free_port()), "MEMORIA_METRICS_PORT": str(free_port()),
            "MEMORIA_QDRANT_PATH": str(tmp_path / "qdrant2")})
        # both workers in the group before the burst (a Tansu join takes ~session_timeout/2)
        wait_until(lambda: "newly assigned partitions" in env.worker_log() and "newly assigned partitions" in env.worker_log("worker2"),
                   60, what="both workers assigned")
        time.sleep(4)

        topic = qualified(env.settings, INBOUND)
        wordings = ("Tem a suíte Master disponível dia 14/12 para pernoite?",
                    "e aí?? a master ta livre 14/12? queria dormir aí")
        burst = [(c.encode(), _inbound(f"b1-{c}-{i}", wordings[i], c), []) for i in range(2) for c in CONVERSATIONS]
        produce(env.settings, topic, burst)
        replies = _replies(env, 2, timeout=40)
        time.sleep(3)  # nothing else may arrive
        replies = _replies(env, 99, timeout=3)
        kinds = sorted(r.kind for r in replies)
        assert kinds == ["acknowledgement", "tool_result"], (kinds, [r.text for r in replies])
        assert tool.calls == 1, tool.requests
        ack = next(r for r in replies if r.kind == "acknowledgement")
        result = next(r for r in replies if r.kind == "tool_result")
        assert result.text == "Sim! A suíte Master está disponível em 14/12 (pernoite)."
        assert result.in_reply_to == ack.in_reply_to and result.conversation_id == ack.conversation_id
        # not blocked by the tool: the acknowledgement was in Kafka before the tool had answered
        recs = consume_all(env.settings, qualified(env.settings, OUTBOUND), 99, timeout=3)
        ack_at = next(r.timestamp for r in recs if json.loads(r.value)["kind"] == "acknowledgement") / 1000
        assert ack_at < tool.answered_at[0], (ack_at, tool.answered_at)
        # the in-flight key was seen by both workers (one called, the other joined)
        key = tool.requests[0]["request_id"]
        logs = env.worker_log(), env.worker_log("worker2")
        assert all(key in log for log in logs), "both workers should have handled messages of the burst"
        joined = env.q("SELECT count(*) AS n FROM tool_calls WHERE outcome = 'joined'")[0]["n"]
        assert joined == len(burst) - 1
        assert env.q("SELECT outcome FROM tool_calls WHERE message_id = %s", ack.in_reply_to)[0]["outcome"] == \
            "background"

        # a new burst once the answer is out: one more call, one more acknowledgement, one more result
        produce(env.settings, topic, [(c.encode(), _inbound(f"b2-{c}", wordings[0], c), [])
                                      for c in CONVERSATIONS[:2]])
        wait_until(lambda: len(_replies(env, 4, timeout=2)) >= 4, 40, what="second burst answered")
        time.sleep(2)
        replies = _replies(env, 99, timeout=3)
        assert sorted(r.kind for r in replies) == ["acknowledgement"] * 2 + ["tool_result"] * 2
        assert tool.calls == 2


def test_right_to_know_and_forget_through_the_worker(env):
    fid = add_fact(env, 1, 100, "Prefere a suíte Master com piscina")
    add_fact(env, 1, 101, "Alérgica a camarão", memory_type="restricao")
    env.start_worker("respond")  # memory recall is off (the default)
    r = ask(env, "oq vcs sabem d mim??", conversation="c-know")
    assert r["kind"] == "rights" and "• Prefere a suíte Master com piscina" in r["text"]
    assert "camarão" not in r["text"] and "apaga tudo" in r["text"]
    r = ask(env, "apaga tudo q vcs sabem de mim", conversation="c-know")
    assert r["kind"] == "rights" and "apagamos" in r["text"]
    assert env.q("SELECT deleted_at IS NOT NULL AS gone FROM contact_memories WHERE id = %s", fid)[0]["gone"]
    kinds = [x["kind"] for x in env.q("SELECT kind FROM privacy_requests ORDER BY id")]
    assert kinds == ["access", "erasure"]
    m = env.metrics()
    assert m['memoria_customer_requests_total{kind="access"}'] == 1
    assert m['memoria_customer_requests_total{kind="erasure"}'] == 1


def test_anniversary_offer_from_the_maintenance_worker_once_across_restarts(env):
    soon = datetime.now(timezone.utc).date() + timedelta(days=3)
    env.q("INSERT INTO accounts (id, settings) VALUES (1, '{\"anniversary_offers_enabled\": true}')")
    env.q("INSERT INTO contacts (id, account_id, name) VALUES (100, 1, 'Ana')")
    env.q("INSERT INTO conversations (external_id, account_id, inbox_id, contact_id, last_message_at) "
          "VALUES ('c-ana', 1, 10, 100, now())")
    doc = uuid.uuid4()
    env.q("INSERT INTO documents (id, account_id, source) VALUES (%s, 1, 'precos.md')", doc)
    env.q("INSERT INTO chunks (id, account_id, document_id, seq, content, content_hash) VALUES (%s,1,%s,0,%s,%s)",
          uuid.uuid4(), doc, "Suíte Master (com piscina aquecida e sauna): pernoite R$ 450.", "0" * 64)
    content = f"Aniversário de casamento em {soon.day:02d}/{soon.month:02d}"
    env.q("""INSERT INTO contact_memories (account_id, contact_id, memory_type, memory_key, normalized_value, content,
             evidence, confidence, scope) VALUES (1, 100, 'data_comemorativa', 'wedding_anniversary', '', %s, %s, 0.9,
             'global'), (1, 100, 'preferencia', 'suite', 'master', 'Prefere a suíte Master com piscina', 'x', 0.9,
             'global')""", content, content)
    fast = {"MEMORIA_MAINTENANCE_TICK_S": "1"}
    w = env.start_worker("maintain", extra_env=fast)
    offers = wait_until(lambda: [r for r in _replies(env, 1, timeout=2) if r.kind == "offer"], 60, what="offer")
    o = offers[0]
    assert o.conversation_id == "c-ana" and o.template is not None and o.template.parameters[0] == "Ana"
    assert "R$ 450" in o.text and o.in_reply_to == ""
    # the job runs again after a restart (due again): still one offer for this occasion this year
    env.stop_worker(w, signal.SIGKILL)
    env.q("DELETE FROM maintenance_runs WHERE job = 'anniversary_offers'")
    env.start_worker("maintain", log_name="worker2", extra_env=fast)
    wait_until(lambda: env.q("SELECT count(*) AS n FROM maintenance_runs WHERE job = 'anniversary_offers'")[0]["n"],
               60, what="job ran again")
    time.sleep(3)
    assert [r.kind for r in _replies(env, 99, timeout=3)] == ["offer"]
    assert env.q("SELECT count(*) AS n FROM offers")[0]["n"] == 1
