"""The outbox relay: Postgres outbox → Kafka, in the Debezium outbox event router shape.

Woken by LISTEN/NOTIFY (a trigger notifies ``outbox`` on insert), with a
polling fallback. Each round claims a batch of due pending rows with
``FOR UPDATE SKIP LOCKED`` (so several relays share the work), publishes
them (topic ``outbox.event.<aggregatetype>``, key = aggregateid, value = the
payload JSON, headers ``id`` and ``type``), waits for the broker's acks and
marks them processed in the same transaction that holds the claim. A row
whose publish fails stays pending with exponential backoff and its error;
after ``max_retries`` it becomes ``failed``. Processed rows older than the
retention period are deleted.
"""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass

import psycopg
from aiokafka import AIOKafkaProducer
from psycopg.rows import dict_row

from streams import metrics
from streams.kafka.topics import outbox_topic, qualified
from streams.settings import Settings

log = logging.getLogger(__name__)


@dataclass
class RelayStats:
    published: int = 0
    failed_attempts: int = 0
    rounds: int = 0


def make_producer(settings: Settings) -> AIOKafkaProducer:
    # Tansu and at-least-once: no idempotent producer, no transactions (docs/architecture.md §7).
    from streams.bootstrap import producer_config

    return AIOKafkaProducer(**producer_config(settings, "memoria-relay", linger_ms=2, request_timeout_ms=15000,
                                              max_batch_size=1 << 20))


class OutboxRelay:
    def __init__(self, settings: Settings, producer: AIOKafkaProducer, *, name: str = "relay"):
        self.s = settings
        self.producer = producer
        self.name = name
        self.stats = RelayStats()
        self._wake = asyncio.Event()
        self._last_cleanup = 0.0
        self._last_lag = float("-inf")   # when the lag gauge was last observed (time.monotonic)

    # ------------------------------------------------------------ one round
    async def drain_once(self, conn: psycopg.AsyncConnection) -> int:
        """Claim, publish and settle one batch; returns the number of rows claimed."""
        # Not a unit of work (streams/store/uow.py): the relay changes no domain state and
        # announces nothing; it is the outbox's own bookkeeping (rows locked while their
        # records are published, then settled), on an async connection of its own.
        async with conn.transaction():
            cur = await conn.execute(
                """SELECT id::text, aggregatetype, aggregateid, type, payload::text AS payload,
                          retry_count, created_at
                     FROM outbox
                    WHERE status = 'pending' AND next_attempt_at <= now()
                    ORDER BY created_at
                    LIMIT %s
                    FOR UPDATE SKIP LOCKED""", (self.s.relay_batch_size,))
            rows = await cur.fetchall()
            if not rows:
                return 0
            futures = []
            for r in rows:
                topic = qualified(self.s, outbox_topic(r["aggregatetype"]))
                try:
                    fut = await self.producer.send(
                        topic, value=r["payload"].encode("utf-8"),
                        key=r["aggregateid"].encode("utf-8"),
                        headers=[("id", r["id"].encode()), ("type", r["type"].encode())])
                except Exception as e:  # e.g. buffer full, unknown topic
                    fut = asyncio.get_running_loop().create_future()
                    fut.set_exception(e)
                futures.append(fut)
            results = await asyncio.gather(*futures, return_exceptions=True)
            ok = [r["id"] for r, res in zip(rows, results) if not isinstance(res, BaseException)]
            bad = [(r, res) for r, res in zip(rows, results) if isinstance(res, BaseException)]
            if ok:
                await conn.execute(
                    "UPDATE outbox SET status = 'processed', processed_at = clock_timestamp(), last_error = NULL "
                    "WHERE id = ANY(%s::uuid[])", (ok,))
            for r, exc in bad:
                retries = r["retry_count"] + 1
                delay = min(self.s.relay_max_backoff, 0.2 * (2 ** min(retries, 16)))
                status = "failed" if retries >= self.s.relay_max_retries else "pending"
                await conn.execute(
                    "UPDATE outbox SET retry_count = %s, last_error = %s, status = %s, "
                    "next_attempt_at = now() + make_interval(secs => %s) WHERE id = %s::uuid",
                    (retries, f"{type(exc).__name__}: {exc}"[:1000], status, delay, r["id"]))
                log.warning("outbox publish failed id=%s type=%s retry=%d status=%s error=%r",
                            r["id"], r["type"], retries, status, exc)
        now = time.time()
        for r, res in zip(rows, results):
            if not isinstance(res, BaseException):
                metrics.OUTBOX_PUBLISHED.labels(r["aggregatetype"]).inc()
                metrics.OUTBOX_COMMIT_TO_KAFKA.observe(max(0.0, now - r["created_at"].timestamp()))
        if bad:
            metrics.OUTBOX_PUBLISH_FAILURES.inc(len(bad))
        self.stats.published += len(ok)
        self.stats.failed_attempts += len(bad)
        self.stats.rounds += 1
        return len(rows)

    async def cleanup(self, conn: psycopg.AsyncConnection) -> int:
        cur = await conn.execute(
            "DELETE FROM outbox WHERE status = 'processed' "
            "AND processed_at < now() - make_interval(secs => %s)",
            (self.s.outbox_retention_hours * 3600,))
        await conn.commit()
        return cur.rowcount

    async def observe_lag(self, conn: psycopg.AsyncConnection) -> None:
        cur = await conn.execute(
            "SELECT EXTRACT(EPOCH FROM now() - min(created_at)) AS lag, count(*) AS n "
            "FROM outbox WHERE status = 'pending'")
        row = await cur.fetchone()
        await conn.commit()
        metrics.OUTBOX_LAG.set(float(row["lag"] or 0.0))
        metrics.OUTBOX_PENDING.set(int(row["n"]))

    # ------------------------------------------------------------ main loop
    async def _listen(self, stop: asyncio.Event) -> None:
        while not stop.is_set():
            try:
                async with await psycopg.AsyncConnection.connect(
                        self.s.database_url, autocommit=True) as lconn:
                    await lconn.execute("LISTEN outbox")
                    self._wake.set()  # catch up on anything committed before LISTEN
                    async for _ in lconn.notifies():
                        self._wake.set()
                        if stop.is_set():
                            return
            except asyncio.CancelledError:
                raise
            except Exception as e:
                log.warning("outbox LISTEN connection lost (%r); polling until it is back", e)
                await asyncio.sleep(1.0)

    async def run(self, stop: asyncio.Event) -> None:
        listener = asyncio.create_task(self._listen(stop))
        backoff = 0.5
        try:
            while not stop.is_set():
                try:
                    async with await psycopg.AsyncConnection.connect(
                            self.s.database_url, row_factory=dict_row) as conn:
                        backoff = 0.5
                        while not stop.is_set():
                            self._wake.clear()
                            n = await self.drain_once(conn)
                            if n >= self.s.relay_batch_size:
                                continue  # more is waiting
                            if time.time() - self._last_cleanup > 60:
                                self._last_cleanup = time.time()
                                await self.cleanup(conn)
                            if time.monotonic() - self._last_lag >= self.s.relay_poll_interval:
                                # a gauge: once per poll interval, not once per wake-up (a busy
                                # responder wakes the relay for every reply)
                                self._last_lag = time.monotonic()
                                await self.observe_lag(conn)
                            try:
                                await asyncio.wait_for(self._wake.wait(), self.s.relay_poll_interval)
                            except asyncio.TimeoutError:
                                pass
                except asyncio.CancelledError:
                    raise
                except Exception as e:
                    log.warning("relay %s error: %r; retrying in %.1fs", self.name, e, backoff)
                    await asyncio.sleep(backoff)
                    backoff = min(backoff * 2, self.s.relay_max_backoff)
        finally:
            listener.cancel()
            try:
                await listener
            except (asyncio.CancelledError, Exception):
                pass


async def run_relay(settings: Settings, stop: asyncio.Event, name: str = "relay") -> RelayStats:
    producer = make_producer(settings)
    await producer.start()
    try:
        relay = OutboxRelay(settings, producer, name=name)
        await relay.run(stop)
        return relay.stats
    finally:
        await producer.stop()
