"""SIGKILL of the ingest worker while its lookahead runs (batch N+1 read and requested while batch N
is upserted and marked): no committed offset of the chunk topic passes an event that was not indexed
and marked, and after a restart the replay indexes the rest (idempotently: Postgres and the store agree)."""

from __future__ import annotations

import asyncio
import signal

import pytest

from streams.app import consumer_group_for
from streams.ingest.documents import write_document
from streams.ingest.knowledge import chunk_alias
from streams.kafka.topics import outbox_topic, qualified
from tests.faults.conftest import record_counts
from tests.harness import consume_all, wait_until

pytestmark = [pytest.mark.slow, pytest.mark.faults]

WORDS = ("suíte pernoite piscina sauna garagem café hidromassagem decoração frigobar cardápio promoção "
         "aniversário reserva checkout entrada toalha roupão climatização iluminação som").split()


def _committed(settings, group: str, topic: str, partitions) -> dict[int, int]:
    """The group's committed offset per partition (0: none)."""
    from aiokafka import AIOKafkaConsumer, TopicPartition

    async def run():
        c = AIOKafkaConsumer(bootstrap_servers=settings.kafka_bootstrap_servers, group_id=group,
                             enable_auto_commit=False)
        await c.start()
        try:
            out = {}
            for p in sorted(partitions):
                off = await c.committed(TopicPartition(topic, p))
                out[p] = off or 0
            return out
        finally:
            await c.stop()

    return asyncio.run(run())


def _processed(env) -> set[str]:
    return {r["event_id"] for r in env.q("SELECT event_id FROM processed_events WHERE consumer = 'ingest'")}


def test_sigkill_mid_lookahead_commits_no_offset_before_its_batch_is_indexed(env):
    with env.conn() as conn:
        for d in range(12):
            paras = [f"Documento {d}, parágrafo {p}: " + " ".join(WORDS[(d * 7 + p * 3 + k) % len(WORDS)]
                                                               for k in range(14)) + f". Código {d}-{p}."
                     for p in range(100)]
            write_document(conn, account_id=1, source=f"d{d}.md", text="\n\n".join(paras), chunk_size=200,
                           chunk_overlap=0)
    events = {r["id"] for r in env.q("SELECT id::text FROM outbox WHERE aggregatetype = 'chunk'")}
    assert len(events) >= 1000
    w = env.start_worker("relay,ingest", extra_env={"MEMORIA_INGEST_BATCH_MAX": "24"})
    topic = qualified(env.settings, outbox_topic("chunk"))
    group = consumer_group_for(env.settings, ["relay", "ingest"])
    partitions = range(env.settings.topic_partitions)
    at_kill = wait_until(lambda: sum(_committed(env.settings, group, topic, partitions).values()) >= 48
                         and len(_processed(env)), 180, interval=0.1, what="some offsets committed")
    env.stop_worker(w, signal.SIGKILL)
    done = _processed(env)
    assert len(done) < len(events), "the whole ingest finished before the kill: nothing was tested"
    assert "ahead=True" in env.worker_log(), "no batch ran from its lookahead before the kill"

    records = consume_all(env.settings, topic, expect=len(events))
    committed = _committed(env.settings, group, topic, partitions)
    behind = [(r.partition, r.offset) for r in records
              if r.offset < committed.get(r.partition, 0) and dict(r.headers)["id"].decode() not in done]
    assert behind == [], f"offsets committed past events never indexed: {behind[:5]}"
    assert sum(committed.values()) > 0, "nothing was committed before the kill: nothing was compared"

    env.start_worker("relay,ingest", extra_env={"MEMORIA_INGEST_BATCH_MAX": "24"})
    wait_until(lambda: _processed(env) >= events, 300, what="every event indexed after the restart")
    store = env.vector_store()
    live = {r["id"] for r in env.q("SELECT id::text FROM chunks WHERE deleted_at IS NULL")}
    target = store.alias_target(chunk_alias(env.settings.vector_domain))
    wait_until(lambda: set(store.scroll(target)) == live, 60, what="Postgres and the store agree")
    record_counts("sigkill_mid_lookahead", events=len(events), processed_at_kill=len(done),
                  committed=sum(committed.values()), behind=len(behind))
    assert at_kill
