"""Framework-free batch consumption: decode → handle → route errors by kind.

A handler receives a batch of ``Record``s and returns the ones it could not
process and never will (``DeadLetter``). Errors are routed by kind
(``streams.kafka.errors``):

* a record larger than ``kafka_max_record_bytes`` never reaches the handler:
  it is dead-lettered by reference;
* a dependency that is down (the handler raised, ``dependency_of`` names it):
  the same batch is retried with backoff until it recovers; nothing is
  acknowledged meanwhile (the stall is a metric and a health status);
* anything else is a bug: it propagates, and the agent exits before
  committing (``streams.kafka.agent.settle``).

Dead letters go to ``<topic>.dlq``; one that the broker refuses (too large,
invalid) is re-sent by reference (``dlq.by_reference``: topic, partition,
offset, size, a bounded excerpt and the reason), and if even that is refused
it is recorded in Postgres (``dead_letters``). So no record can stop a
consumer. Only after this returns may the runner acknowledge the offsets.
"""

from __future__ import annotations

import asyncio
import json
import logging
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any, Callable, Sequence

from aiokafka import AIOKafkaProducer

from streams import metrics
from streams.kafka import errors
from streams.kafka.topics import dlq_topic

log = logging.getLogger(__name__)

#: room left for headers and framing in a by-reference dead letter
_REF_OVERHEAD = 8 * 1024


@dataclass(frozen=True)
class Record:
    topic: str
    partition: int
    offset: int
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes], ...] = ()

    @property
    def size(self) -> int:
        return (len(self.key or b"") + len(self.value or b"")
                + sum(len(k) + len(v or b"") for k, v in self.headers))


@dataclass(frozen=True)
class DeadLetter:
    record: Record
    error_class: str
    error_message: str


Handler = Callable[[Sequence[Record]], Sequence[DeadLetter]]


def _excerpt(data: bytes | None, limit: int) -> str:
    return (data or b"")[:limit].decode("utf-8", "replace")


def reference(d: DeadLetter, excerpt_bytes: int = 1024) -> dict[str, Any]:
    """A dead letter by reference: always small, whatever the record's size."""
    r = d.record
    return {"by_reference": True, "topic": r.topic, "partition": r.partition, "offset": r.offset,
            "size": r.size, "key": _excerpt(r.key, 256), "excerpt": _excerpt(r.value, excerpt_bytes),
            "error_class": d.error_class, "error_message": d.error_message[:2000]}


class DeadLetterWriter:
    """Writes dead letters to ``<topic>.dlq``; never lets one record stop the consumer.

    ``pool`` (a callable returning a psycopg pool) receives the dead letters the
    broker refuses even by reference. A broker that is down is a dependency
    error (raised: the caller retries), not a refusal.
    """

    def __init__(self, producer: AIOKafkaProducer, *, max_record_bytes: int = 1_000_000,
                 excerpt_bytes: int = 1024, pool: Callable[[], Any] | None = None):
        self.producer = producer
        self.max_record_bytes = max_record_bytes
        self.excerpt_bytes = excerpt_bytes
        self.pool = pool

    def _headers(self, d: DeadLetter, now: str, by_reference: bool) -> list[tuple[str, bytes]]:
        r = d.record
        keep = [] if by_reference else [h for h in r.headers if not h[0].startswith("dlq.")]
        return keep + [
            ("dlq.error_class", d.error_class.encode()),
            ("dlq.error_message", d.error_message[:2000].encode("utf-8", "replace")),
            ("dlq.source_topic", r.topic.encode()),
            ("dlq.source_partition", str(r.partition).encode()),
            ("dlq.source_offset", str(r.offset).encode()),
            ("dlq.first_seen", now.encode()),
        ] + ([("dlq.by_reference", b"true"), ("dlq.size", str(r.size).encode())] if by_reference else [])

    async def _send_one(self, d: DeadLetter, now: str) -> None:
        r = d.record
        by_ref = r.size + _REF_OVERHEAD > self.max_record_bytes
        try:
            if by_ref:
                value = json.dumps(reference(d, self.excerpt_bytes), ensure_ascii=False).encode()
                await self.producer.send_and_wait(dlq_topic(r.topic), key=(r.key or b"")[:256] or None,
                                                  value=value, headers=self._headers(d, now, True))
            else:
                await self.producer.send_and_wait(dlq_topic(r.topic), key=r.key, value=r.value,
                                                  headers=self._headers(d, now, False))
        except Exception as e:
            if errors.dependency_of(e) is not None:
                raise  # the broker is down: the caller retries the whole batch
            if not by_ref:  # refused as is (too large for the broker, invalid...): by reference
                log.warning("dead letter refused (%r); sending it by reference", e)
                try:
                    value = json.dumps(reference(d, self.excerpt_bytes), ensure_ascii=False).encode()
                    await self.producer.send_and_wait(dlq_topic(r.topic), key=None, value=value,
                                                      headers=self._headers(d, now, True))
                    return
                except Exception as e2:
                    if errors.dependency_of(e2) is not None:
                        raise
                    e = e2
            await asyncio.to_thread(self._record_in_postgres, d, f"{type(e).__name__}: {e}")

    def _record_in_postgres(self, d: DeadLetter, publish_error: str) -> None:
        if self.pool is None:
            raise RuntimeError(f"dead letter of {d.record.topic}@{d.record.offset} refused by the broker "
                               f"({publish_error}) and no Postgres pool to record it")
        r = d.record
        ref = reference(d, self.excerpt_bytes)
        with self.pool().connection() as conn:
            conn.execute(
                """INSERT INTO dead_letters (source_topic, source_partition, source_offset, size_bytes,
                                             key_excerpt, excerpt, error_class, error_message, publish_error)
                   VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s)
                   ON CONFLICT (source_topic, source_partition, source_offset) DO NOTHING""",
                (r.topic, r.partition, r.offset, r.size, ref["key"].replace("\x00", ""),
                 ref["excerpt"].replace("\x00", ""), d.error_class, d.error_message[:2000].replace("\x00", ""),
                 publish_error[:2000]))
        metrics.DEAD_LETTERS_RECORDED.labels(r.topic).inc()
        log.warning("dead letter recorded in Postgres topic=%s partition=%d offset=%d", r.topic, r.partition,
                    r.offset)

    async def write(self, dead: Sequence[DeadLetter]) -> None:
        now = datetime.now(timezone.utc).isoformat()
        await asyncio.gather(*(self._send_one(d, now) for d in dead))
        for d in dead:
            r = d.record
            metrics.EVENTS_DEAD_LETTERED.labels(r.topic, d.error_class).inc()
            log.warning("dead-lettered topic=%s partition=%d offset=%d size=%d error_class=%s error=%r",
                        r.topic, r.partition, r.offset, r.size, d.error_class, d.error_message[:300])


def oversized(records: Sequence[Record], max_bytes: int) -> tuple[list[Record], list[DeadLetter]]:
    """Split off the records larger than the agreed limit (never handed to a handler)."""
    ok, dead = [], []
    for r in records:
        if r.size > max_bytes:
            dead.append(DeadLetter(r, "RecordTooLarge", f"record of {r.size} bytes exceeds the limit of "
                                                        f"{max_bytes} bytes (MEMORIA_KAFKA_MAX_RECORD_BYTES)"))
        else:
            ok.append(r)
    return ok, dead


async def process_batch(records: Sequence[Record], handler: Handler, dlq: DeadLetterWriter, *,
                        max_record_bytes: int = 1_000_000, base_delay: float = 0.5,
                        max_delay: float = 10.0) -> None:
    """Run ``handler`` in a thread until the batch is processed or dead-lettered.

    A dependency error retries the same batch (forever, with backoff); any other
    exception propagates (a bug)."""
    if not records:
        return
    topic = records[0].topic
    todo, dead = oversized(records, max_record_bytes)

    async def run(batch: Sequence[Record]) -> list[DeadLetter]:
        async def once() -> list[DeadLetter]:
            try:
                return list(await asyncio.to_thread(handler, batch)) if batch else []
            except Exception:
                metrics.EVENTS_FAILED.labels(topic).inc()
                raise

        return await errors.until_available(topic, once, base=base_delay, cap=max_delay)

    try:
        dead += await run(todo)
    except Exception as e:
        if errors.poison_class(e) is None:
            raise  # a bug: the agent exits before committing
        for r in todo:  # a record's data was refused: find which, dead-letter it, keep the others
            try:
                dead += await run([r])
            except Exception as e1:
                cls = errors.poison_class(e1)
                if cls is None:
                    raise
                dead.append(DeadLetter(r, cls, str(e1)[:2000]))
    if dead:
        await errors.until_available(topic, lambda: dlq.write(dead), base=base_delay, cap=max_delay)
    metrics.EVENTS_PROCESSED.labels(topic).inc(len(records) - len(dead))
