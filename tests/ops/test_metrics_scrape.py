"""A worker running every role serves the docs/architecture.md §6 metrics, and they move with real traffic."""

import json
import re
import uuid

import pytest

from streams.kafka.topics import outbox_topic, qualified
from streams.learn.triggers import resolve_conversation
from tests.harness import produce, wait_until
from tests.support.openai_server import FakeOpenAI, Reply

pytestmark = pytest.mark.slow

MOVING = [  # metric family → must be > 0 after the traffic below
    "memoria_outbox_published_total", "memoria_outbox_commit_to_kafka_seconds_count",
    "memoria_events_processed_total", "memoria_events_dead_lettered_total",
    "memoria_chunks_embedded_total", "memoria_embedding_seconds_count",
    "memoria_memory_extractions_total", "memoria_extraction_seconds_count", "memoria_facts_discarded_total",
    "memoria_memory_superseded_total", "memoria_active_facts",
    "memoria_recall_seconds_count", "memoria_recall_requests_total", "memoria_reply_seconds_count",
    "memoria_degraded_replies_total", "memoria_model_tokens_total", "memoria_model_cost_usd_total",
]
PRESENT = ["memoria_outbox_lag_seconds", "memoria_outbox_pending", "memoria_embedding_failures_total",
           "memoria_extraction_failures_total", "memoria_events_failed_total", "memoria_events_duplicate_total"]

MANY_FACTS = [  # seven durable facts: the extractor keeps five (over_limit discards)
    "Sou alérgico a camarão.", "Sou vegetariano.", "Minha esposa se chama Júlia.",
    "Meu aniversário é dia 12/03.", "Moro em Campinas com meus dois filhos.",
    "Trabalho na Construtora Horizonte.", "Tenho um cachorro chamado Thor.",
]


def _family_sum(metrics: dict, family: str) -> float:
    return sum(v for k, v in metrics.items() if re.match(rf"{family}(\{{|$)", k))


def _conversation(env, account, contact, texts, unit=11):
    conv = env.q("INSERT INTO conversations (account_id, inbox_id, contact_id, unit_id, last_message_at) "
                 "VALUES (%s, 10, %s, %s, now()) RETURNING id", account, contact, unit)[0]["id"]
    for t in texts:
        env.q("INSERT INTO messages (conversation_id, account_id, role, text) VALUES (%s, %s, 'contact', %s)",
              conv, account, t)
    with env.conn() as c:
        resolve_conversation(c, conv)
    return conv


def test_every_metric_moves_after_real_traffic(env, tmp_path):
    with FakeOpenAI([], default=Reply.text("Claro! O pernoite na Luxo custa R$ 240.", prompt_tokens=120,
                                           completion_tokens=12)) as llm:
        env.q("INSERT INTO accounts (id, settings) VALUES (1, %s::jsonb)",
              json.dumps({"memory_extraction_enabled": True, "memory_recall_enabled": True}))
        env.q("INSERT INTO contacts (id, account_id) VALUES (100, 1)")
        env.q("INSERT INTO inboxes (id, account_id) VALUES (10, 1)")
        env.start_worker("relay,ingest,learn,respond,maintain", extra_env={
            "MEMORIA_REPLY_PROVIDER": "openai", "OPENAI_BASE_URL": llm.base_url, "OPENAI_API_KEY": "test",
                # the hand rules propose all seven facts of MANY_FACTS, so validation discards two
                # (over_limit); the learnt extractor keeps its best five before validation
                "MEMORIA_EXTRACTION_PROVIDER": "patterns"})
        doc = tmp_path / "precos.md"
        doc.write_text("# Preços\n\nSuíte Luxo: pernoite R$ 240. Suíte Master: pernoite R$ 450.")
        env.memoria("ingest", str(doc), "--account", "1")
        _conversation(env, 1, 100, ["Boa noite!", "É sempre a suíte Hidro que eu peço, a gente gosta muito dela."])
        wait_until(lambda: env.q("SELECT count(*) AS n FROM conversation_extractions WHERE status = 'done'")[0]["n"]
                   == 1, 60, what="first extraction")
        _conversation(env, 1, 100, ["Oi, agora prefiro a suíte Master, não quero mais a Hidro."])
        wait_until(lambda: env.q("SELECT count(*) AS n FROM contact_memories WHERE superseded_at IS NOT NULL")[0]["n"]
                   >= 1, 60, what="a superseded fact")
        _conversation(env, 1, 100, MANY_FACTS)
        conv = f"c-{uuid.uuid4().hex[:6]}"
        for i in range(7):  # price questions: the 6th retrieval trips the loop protection (degraded)
            out = env.memoria("ask", "--json", "--account", "1", "--inbox", "10", "--contact", "100",
                              "--conversation", conv, "--unit", "11", "Quanto custa o pernoite na Luxo?")
            reply = json.loads(out.stdout)
        assert "retrieval_limit" in reply["degraded"]
        produce(env.settings, qualified(env.settings, outbox_topic("chunk")),
                [(b"k", b"{poison", [("id", str(uuid.uuid4()).encode()), ("type", b"chunk.upserted")])])

        def moved():
            m = env.metrics()
            return [f for f in MOVING if _family_sum(m, f) <= 0]

        try:
            wait_until(lambda: not moved(), 90, interval=1.0, what="every metric moving")
        except AssertionError as e:
            raise AssertionError(f"{e}; still at zero: {moved()}") from None
        m = env.metrics()
        for f in PRESENT:
            assert any(re.match(rf"{f}(\{{|$)", k) for k in m), f"{f} is not exported"
        assert llm.chat_count == 5  # the 6th and 7th questions hit the loop protection: no model call
