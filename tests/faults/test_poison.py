"""Poison records on every input topic (inbound messages, conversation lifecycle
events, chunk and conversation outbox events), a 5 MB one included: each lands in its DLQ
(or in Postgres) with a reason, the worker stays alive, the next good record is processed."""

from __future__ import annotations

import asyncio
import json
from datetime import datetime, timezone

import pytest

from schemas.events import InboundMessage
from streams.kafka.topics import CONVERSATION_EVENTS, INBOUND, OUTBOUND, dlq_topic, outbox_topic, qualified
from tests.faults.conftest import record_counts
from tests.harness import consume_all, wait_until

pytestmark = [pytest.mark.slow, pytest.mark.faults]

BIG = 5 * 1024 * 1024


def produce_big(settings, topic, records):
    from aiokafka import AIOKafkaProducer

    async def run():
        p = AIOKafkaProducer(bootstrap_servers=settings.kafka_bootstrap_servers, enable_idempotence=False,
                             max_request_size=8 * 1024 * 1024)
        await p.start()
        try:
            for key, value, headers in records:
                await p.send_and_wait(topic, key=key, value=value, headers=headers)
        finally:
            await p.stop()

    asyncio.run(run())


def inbound(message_id, text, *, account=1, contact=100, conversation="c-poison"):
    return InboundMessage(message_id=message_id, account_id=account, inbox_id=10, conversation_id=conversation,
                          contact_id=contact, channel="whatsapp", text=text,
                          sent_at=datetime.now(timezone.utc)).model_dump_json().encode()


def outbox_headers(type_, event_id="0190f0f0-0000-7000-8000-000000000001"):
    return [("id", event_id.encode()), ("type", type_.encode())]


def test_poison_on_every_input_topic(env, tmp_path):
    from streams.learn.triggers import resolve_conversation

    worker = env.start_worker("relay,ingest,learn,respond")
    s = env.settings
    t_in, t_chunk, t_conv = (qualified(s, INBOUND), qualified(s, outbox_topic("chunk")),
                             qualified(s, outbox_topic("conversation")))
    t_life = qualified(s, CONVERSATION_EVENTS)
    env.q("INSERT INTO accounts (id, settings) VALUES (1, '{\"memory_extraction_enabled\": true}'), (2, '{}')")
    env.q("INSERT INTO contacts (id, account_id) VALUES (200, 2)")  # belongs to another account

    big = b'{"text": "' + b"a" * BIG + b'"}'
    produce_big(s, t_in, [
        (b"k1", big, []),                                                    # 5 MB
        (b"k1", b"{not json", []),                                          # undecodable
        (b"k1", json.dumps({"message_id": "x"}).encode(), []),              # invalid contract
        (b"k1", inbound("wamid.tenant", "Oi", contact=200, conversation="c-t"), []),  # wrong tenant
        (b"k1", inbound("wamid.nul", "Oi\x00 tudo bem?", conversation="c-nul"), []),  # cleaned, answered
        (b"k1", inbound("wamid.good", "Oi, boa noite"), []),                # the next good record
    ])
    produce_big(s, t_chunk, [
        (b"k2", big, outbox_headers("chunk.upserted")),
        (b"k2", b"[]", outbox_headers("chunk.upserted", "0190f0f0-0000-7000-8000-000000000002")),
        (b"k2", b"{}", [("type", b"chunk.upserted")]),
    ])
    produce_big(s, t_conv, [
        (b"k3", big, outbox_headers("conversation.resolved", "0190f0f0-0000-7000-8000-000000000003")),
        (b"k3", b"{nope", outbox_headers("conversation.resolved", "0190f0f0-0000-7000-8000-000000000004")),
    ])
    env.q("INSERT INTO conversations (external_id, account_id, inbox_id, contact_id) VALUES ('c-life', 1, 1, 100)")

    def life(event_id, account, conv):
        return json.dumps({"event_id": event_id, "type": "resolved", "account_id": account, "conversation_id": conv,
                           "occurred_at": datetime.now(timezone.utc).isoformat()}).encode()

    produce_big(s, t_life, [
        (b"k4", big, []),
        (b"k4", b"\xff\xfe not utf-8", []),
        (b"k4", life("e-tenant", 2, "c-life"), []),   # another account's conversation
        (b"k4", life("e-good", 1, "c-life"), []),     # the next good record
    ])
    # good records behind the poison on the outbox topics: a document, a resolved conversation
    doc = tmp_path / "d.md"
    doc.write_text("# Preços\n\nO pernoite na suíte Luxo custa R$ 240.")
    env.memoria("ingest", str(doc), "--account", "1")
    conv = env.q("INSERT INTO conversations (account_id, inbox_id, contact_id, last_message_at) "
                 "VALUES (1, 1, 100, now()) RETURNING id")[0]["id"]
    env.q("INSERT INTO contacts (id, account_id) VALUES (100, 1) ON CONFLICT DO NOTHING")
    env.q("INSERT INTO messages (conversation_id, account_id, role, text) VALUES (%s, 1, 'contact', "
          "'Sou alérgico a camarão.')", conv)
    with env.conn() as c:
        resolve_conversation(c, conv)

    # the good records are processed
    out = wait_until(lambda: [r for r in consume_all(s, qualified(s, OUTBOUND), 1, timeout=3)
                              if json.loads(r.value)["in_reply_to"] == "wamid.good"], 90, what="good reply")
    assert len(out) == 1
    wait_until(lambda: env.q("SELECT status FROM conversations WHERE external_id = 'c-life'")[0]["status"]
               == "resolved", 90, what="good lifecycle event applied")
    wait_until(lambda: env.q("SELECT count(*) AS n FROM conversation_extractions WHERE conversation_id = %s "
                             "AND status = 'done'", conv)[0]["n"] == 1, 90, what="good conversation learnt")
    store = env.vector_store()
    from streams.ingest.knowledge import chunk_alias
    wait_until(lambda: store.alias_target(chunk_alias(s.vector_domain)) and len(store.scroll(
        store.alias_target(chunk_alias(s.vector_domain)))) == 1, 90, what="good chunk indexed")

    # every poison record is in its DLQ with a reason
    dead_in = consume_all(s, dlq_topic(t_in), 4, timeout=30)
    dead_chunk = consume_all(s, dlq_topic(t_chunk), 3, timeout=30)
    dead_conv = consume_all(s, dlq_topic(t_conv), 2, timeout=30)
    dead_life = consume_all(s, dlq_topic(t_life), 3, timeout=30)
    classes = lambda rs: sorted(dict(r.headers)["dlq.error_class"].decode() for r in rs)  # noqa: E731
    assert classes(dead_in) == ["InvalidJSON", "RecordTooLarge", "SchemaValidation", "TenantMismatch"]
    # control characters are cleaned at the edge (the contract): that message is answered
    assert [r for r in consume_all(s, qualified(s, OUTBOUND), 2, timeout=3)
            if json.loads(r.value)["in_reply_to"] == "wamid.nul"]
    assert classes(dead_chunk) == ["InvalidPayload", "MissingHeader", "RecordTooLarge"]
    assert classes(dead_conv) == ["InvalidJSON", "RecordTooLarge"]
    assert classes(dead_life) == ["InvalidJSON", "RecordTooLarge", "UnknownConversation"]
    for rs, topic in ((dead_in, t_in), (dead_chunk, t_chunk), (dead_conv, t_conv), (dead_life, t_life)):
        ref = [r for r in rs if dict(r.headers)["dlq.error_class"] == b"RecordTooLarge"][0]
        h = dict(ref.headers)
        assert h["dlq.by_reference"] == b"true" and int(h["dlq.size"]) > BIG
        body = json.loads(ref.value)
        assert body["topic"] == topic and body["size"] > BIG and body["offset"] >= 0
        assert len(body["excerpt"]) <= 1024 and "exceeds the limit" in body["error_message"]
        assert len(ref.value) < 16 * 1024
        assert all(dict(r.headers)["dlq.error_message"] for r in rs)
    assert worker.poll() is None, "the worker died"
    m = env.metrics()
    assert m[f'memoria_events_dead_lettered_total{{reason="RecordTooLarge",topic="{t_in}"}}'] == 1
    record_counts("poison_every_input_topic", sent=17, poison=12,
                  dead_lettered=len(dead_in) + len(dead_chunk) + len(dead_conv) + len(dead_life),
                  good_processed=5, worker_alive=worker.poll() is None, lost=0, duplicated=0)


def test_dead_letter_refused_by_the_broker_is_recorded_in_postgres(env):
    """A dead letter the broker refuses even by reference is recorded in Postgres (never stops the consumer)."""
    from aiokafka import AIOKafkaProducer

    from streams.kafka.consume import DeadLetter, DeadLetterWriter, Record
    from streams.store.db import make_pool

    pool = make_pool(env.settings, min_size=1, max_size=2)
    topic = qualified(env.settings, INBOUND)

    async def run():
        p = AIOKafkaProducer(bootstrap_servers=env.settings.kafka_bootstrap_servers, enable_idempotence=False,
                             max_request_size=600)  # smaller than any by-reference dead letter
        await p.start()
        try:
            w = DeadLetterWriter(p, max_record_bytes=10_000, excerpt_bytes=1024, pool=lambda: pool)
            rec = Record(topic, 2, 77, b"key", b"\x00binary" + b"z" * 5000, ())
            await w.write([DeadLetter(rec, "RecordTooLarge", "too big"), DeadLetter(rec, "RecordTooLarge", "again")])
        finally:
            await p.stop()

    try:
        asyncio.run(run())
        rows = env.q("SELECT * FROM dead_letters")
    finally:
        pool.close()
    assert len(rows) == 1  # idempotent per (topic, partition, offset)
    r = rows[0]
    assert (r["source_topic"], r["source_partition"], r["source_offset"]) == (topic, 2, 77)
    assert r["size_bytes"] == 5010 and r["error_class"] == "RecordTooLarge"
    assert len(r["excerpt"]) <= 1024 and "\x00" not in r["excerpt"]
    assert "MessageSizeTooLarge" in r["publish_error"]
