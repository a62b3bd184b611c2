"""Outbox relay against the real broker and Postgres."""

import asyncio
import json
import uuid

from schemas.events import MemoryEvent
from streams.kafka.topics import outbox_topic, qualified
from streams.outbox.relay import OutboxRelay, make_producer
from streams.outbox.write import add_events, outbox_row
from streams.store.db import migrate
from tests.harness import consume_all


def _insert(env, n, start=0):
    with env.conn() as c:
        with c.transaction():
            add_events(c, [outbox_row("memory.created", MemoryEvent(memory_id=i, account_id=1, contact_id=i % 37))
                           for i in range(start, start + n)])


def test_migrations_are_idempotent(env):
    assert migrate(env.settings.database_url) == []
    assert env.q("SELECT count(*) AS n FROM schema_migrations")[0]["n"] >= 1


def test_two_relays_in_parallel_publish_every_event_once(env):
    n = 3000
    _insert(env, n)

    async def run():
        stop = asyncio.Event()
        producers = [make_producer(env.settings), make_producer(env.settings)]
        for p in producers:
            await p.start()
        relays = [OutboxRelay(env.settings, p, name=f"r{i}") for i, p in enumerate(producers)]
        tasks = [asyncio.create_task(r.run(stop)) for r in relays]
        # keep writing while both relays run
        await asyncio.to_thread(_insert, env, 500, n)
        for _ in range(300):
            left = (await asyncio.to_thread(env.q, "SELECT count(*) AS n FROM outbox WHERE status <> 'processed'"))[0]["n"]
            if left == 0:
                break
            await asyncio.sleep(0.1)
        stop.set()
        await asyncio.gather(*tasks)
        for p in producers:
            await p.stop()
        return relays

    relays = asyncio.run(run())
    total = n + 500
    assert env.q("SELECT count(*) AS n FROM outbox WHERE status = 'processed'")[0]["n"] == total
    assert all(r.stats.published > 0 for r in relays), [r.stats for r in relays]
    assert sum(r.stats.published for r in relays) == total  # SKIP LOCKED: nobody published twice
    recs = consume_all(env.settings, qualified(env.settings, outbox_topic("memory")), total)
    ids = [dict(r.headers)["id"].decode() for r in recs]
    assert len(ids) == total and len(set(ids)) == total
    db_ids = {str(r["id"]) for r in env.q("SELECT id FROM outbox")}
    assert set(ids) == db_ids
    # Debezium outbox event router shape
    r0 = recs[0]
    h = dict(r0.headers)
    assert h["type"] == b"memory.created"
    row = env.q("SELECT aggregateid, payload FROM outbox WHERE id = %s::uuid", h["id"].decode())[0]
    assert r0.key.decode() == row["aggregateid"]
    assert json.loads(r0.value) == row["payload"]


def test_publish_failure_leaves_row_pending_with_backoff(env):
    """A record the broker refuses (too large for the producer) stays pending with its error."""
    with env.conn() as c:
        with c.transaction():
            # a row no contract allows (written by hand: outbox_row only takes typed events), too large
            # for the producer
            c.execute("INSERT INTO outbox (id, aggregatetype, aggregateid, type, payload) "
                      "VALUES (%s, 'memory', '1', 'memory.created', %s::jsonb)",
                      (str(uuid.uuid4()), json.dumps({"schema_version": 1, "memory_id": 1, "account_id": 1,
                                                      "contact_id": 1, "blob": "x" * 300_000})))
            add_events(c, [outbox_row("memory.created", MemoryEvent(memory_id=2, account_id=1, contact_id=2))])

    async def run():
        from aiokafka import AIOKafkaProducer

        p = AIOKafkaProducer(bootstrap_servers=env.settings.kafka_bootstrap_servers, enable_idempotence=False,
                             max_request_size=100_000)
        await p.start()
        try:
            async with await __import__("psycopg").AsyncConnection.connect(
                    env.settings.database_url, row_factory=__import__("psycopg").rows.dict_row) as conn:
                relay = OutboxRelay(env.settings, p)
                await relay.drain_once(conn)
                return relay.stats
        finally:
            await p.stop()

    stats = asyncio.run(run())
    assert stats.published == 1 and stats.failed_attempts == 1
    bad = env.q("SELECT status, retry_count, last_error, next_attempt_at > now() AS later "
                "FROM outbox WHERE aggregateid = '1'")[0]
    assert bad["status"] == "pending" and bad["retry_count"] == 1 and bad["later"]
    assert "MessageSizeTooLarge" in bad["last_error"]
    assert env.q("SELECT status FROM outbox WHERE aggregateid = '2'")[0]["status"] == "processed"


def test_retention_deletes_old_processed_rows(env):
    _insert(env, 3)
    env.q("UPDATE outbox SET status = 'processed', processed_at = now() - interval '3 days'")
    _insert(env, 2, start=10)

    async def run():
        import psycopg
        from psycopg.rows import dict_row

        async with await psycopg.AsyncConnection.connect(env.settings.database_url, row_factory=dict_row) as c:
            return await OutboxRelay(env.settings, None).cleanup(c)

    assert asyncio.run(run()) == 3
    assert env.q("SELECT count(*) AS n FROM outbox")[0]["n"] == 2
