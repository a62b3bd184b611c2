"""The broker restarts without its data (Tansu in memory: every topic gone).

What can be lost: events the relay had published (and marked processed) but no
consumer had read — chunk events, conversation events, replies in the
outbound topic. The worker re-creates the topics (at start and on its topic
check), notes the loss in Postgres, and the maintain role's periodic
``reconcile`` re-enqueues chunks without points and finished conversations
without an extraction, and republishes the replies published shortly before
the loss. A running worker rejoins and keeps answering.
"""

from __future__ import annotations

import json
import time
from datetime import datetime, timezone

import pytest

from schemas.events import InboundMessage
from streams.ingest.knowledge import chunk_alias
from streams.kafka.topics import INBOUND, OUTBOUND, qualified
from tests.faults.conftest import record_counts, stack
from tests.harness import consume_all, produce, wait_until
from tests.learn import seed as S

pytestmark = [pytest.mark.slow, pytest.mark.faults]

FAST = {"MEMORIA_RECONCILE_INTERVAL": "4", "MEMORIA_RECONCILE_MIN_AGE": "1", "MEMORIA_TOPIC_CHECK_INTERVAL": "2",
        "MEMORIA_DEPENDENCY_BACKOFF_MAX": "2"}


def _msg(mid, conv, contact=100):
    return (conv.encode(), InboundMessage(
        message_id=mid, account_id=1, inbox_id=10, conversation_id=conv, contact_id=contact, channel="whatsapp",
        text="Oi, tudo bem?", sent_at=datetime.now(timezone.utc)).model_dump_json().encode(), [])


def _replied(env, ids):
    out = consume_all(env.settings, qualified(env.settings, OUTBOUND), len(ids), timeout=3)
    got = [json.loads(r.value)["in_reply_to"] for r in out]
    return got


def test_broker_restart_loses_nothing_for_good(env, tmp_path, kafka_restored):
    s = env.settings
    env.q("INSERT INTO accounts (id, settings) VALUES (1, '{\"memory_extraction_enabled\": true}')")
    inbound = qualified(s, INBOUND)

    # 1. replies published to the outbound topic, never consumed by a sender
    w = env.start_worker("relay,ingest,learn,respond", extra_env=FAST)
    first = [f"wamid.b{i}" for i in range(5)]
    produce(s, inbound, [_msg(m, f"c-b{i}") for i, m in enumerate(first)])
    wait_until(lambda: sorted(_replied(env, first)) == sorted(first), 90, what="first replies")
    env.stop_worker(w)

    # 2. chunk and conversation events published by a relay, never consumed
    kb = tmp_path / "kb"
    kb.mkdir()
    for i in range(4):
        (kb / f"d{i}.md").write_text(f"# Doc {i}\n\n" + "\n\n".join(
            f"Parágrafo {p} do documento {i}: a suíte {p} tem piscina e sauna." for p in range(15)))
    env.memoria("ingest", str(kb), "--account", "1")
    convs = []
    for i in range(30):
        env.q("INSERT INTO contacts (id, account_id) VALUES (%s, 1) ON CONFLICT DO NOTHING", 5000 + i)
        convs.append(S.conversation(env, 1, 5000 + i, S.HIDRO))
    from streams.learn.triggers import resolve_conversation
    with env.conn() as c:
        for cv in convs:
            resolve_conversation(c, cv)
    relay = env.start_worker("relay", log_name="relay")
    wait_until(lambda: env.q("SELECT count(*) AS n FROM outbox WHERE status <> 'processed'")[0]["n"] == 0, 60,
               what="relay published everything")
    env.stop_worker(relay)
    chunks = {r["id"] for r in env.q("SELECT id::text FROM chunks WHERE deleted_at IS NULL")}
    lost_in_broker = {"chunk_events": len(chunks), "conversation_events": len(convs), "replies": len(first)}

    # 3. the broker restarts empty
    stack("stop-kafka")
    stack("start-kafka")

    # 4. the worker re-creates the topics, notes the loss, and reconcile repairs every projection
    w = env.start_worker("relay,ingest,learn,respond,maintain", extra_env=FAST)
    store = env.vector_store()
    target = lambda: store.alias_target(chunk_alias(s.vector_domain))  # noqa: E731
    wait_until(lambda: target() and set(store.scroll(target())) == chunks, 180, what="chunks re-indexed")
    wait_until(lambda: env.q("SELECT count(*) AS n FROM conversation_extractions WHERE status = 'done' "
                             "AND conversation_id = ANY(%s)", convs)[0]["n"] == len(convs), 180,
               what="resolved conversations learnt")
    wait_until(lambda: set(first) <= set(_replied(env, first)), 120, what="replies republished")
    assert env.q("SELECT count(*) AS n FROM broker_losses WHERE reconciled_at IS NOT NULL")[0]["n"] >= 1

    # 5. a running worker survives a second restart and keeps answering
    stack("stop-kafka")
    time.sleep(3)
    stack("start-kafka")
    wait_until(lambda: {t.split(".", 1)[1] for t in _topics(s)} >= {INBOUND, OUTBOUND}, 60,
               what="topics re-created by the running worker")
    after = "wamid.after-restart"
    deadline = time.time() + 180
    while time.time() < deadline and after not in _replied(env, [after]):
        produce(s, inbound, [_msg(after, "c-after")])  # idempotent: one reply however often it is sent
        time.sleep(5)
    got = _replied(env, [after])
    assert got.count(after) == 1, got
    assert w.poll() is None
    facts_dupes = env.q("SELECT count(*) AS n FROM (SELECT contact_id, memory_key, content FROM contact_memories "
                        "GROUP BY 1, 2, 3 HAVING count(*) > 1) d")[0]["n"]
    record_counts("broker_restart", lost_in_broker=lost_in_broker, recovered={
        "chunks_indexed": len(chunks), "conversations_learnt": len(convs), "replies_republished": len(first)},
        lost=0, duplicated=facts_dupes, reply_after_second_restart=got.count(after))
    assert facts_dupes == 0


def _topics(settings):
    import asyncio

    from aiokafka.admin import AIOKafkaAdminClient

    async def run():
        a = AIOKafkaAdminClient(bootstrap_servers=settings.kafka_bootstrap_servers)
        await a.start()
        try:
            return [t for t in await a.list_topics() if t.startswith(settings.topic_prefix)]
        finally:
            await a.close()

    return asyncio.run(run())
