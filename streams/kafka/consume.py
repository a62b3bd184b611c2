"""Framework-free batch consumption: decode → handle → dead-letter, never crash.

A handler receives a batch of ``Record``s and returns the ones it could not
process and never will (``DeadLetter``). Anything it raises is treated as
transient: the batch is retried with backoff, then each record alone, and a
record that still fails is dead-lettered with its reason. Only after this
returns may the runner acknowledge the offsets (at-least-once).
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Callable, Sequence

from aiokafka import AIOKafkaProducer

from streams import metrics
from streams.errors import DependencyUnavailable
from streams.kafka.topics import dlq_topic

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Record:
    topic: str
    partition: int
    offset: int
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes], ...] = ()


@dataclass(frozen=True)
class DeadLetter:
    record: Record
    error_class: str
    error_message: str


Handler = Callable[[Sequence[Record]], Sequence[DeadLetter]]


class DeadLetterWriter:
    def __init__(self, producer: AIOKafkaProducer):
        self.producer = producer

    async def write(self, dead: Sequence[DeadLetter]) -> None:
        now = datetime.now(timezone.utc).isoformat()
        futs = []
        for d in dead:
            r = d.record
            headers = [h for h in r.headers if not h[0].startswith("dlq.")] + [
                ("dlq.error_class", d.error_class.encode()),
                ("dlq.error_message", d.error_message[:2000].encode("utf-8", "replace")),
                ("dlq.source_topic", r.topic.encode()),
                ("dlq.source_partition", str(r.partition).encode()),
                ("dlq.source_offset", str(r.offset).encode()),
                ("dlq.first_seen", now.encode()),
            ]
            futs.append(await self.producer.send(dlq_topic(r.topic), key=r.key, value=r.value,
                                                 headers=headers))
            metrics.EVENTS_DEAD_LETTERED.labels(r.topic, d.error_class).inc()
            log.warning("dead-lettered topic=%s partition=%d offset=%d error_class=%s error=%r",
                        r.topic, r.partition, r.offset, d.error_class, d.error_message[:300])
        await asyncio.gather(*futs)


async def process_batch(records: Sequence[Record], handler: Handler, dlq: DeadLetterWriter, *,
                        attempts: int = 3, base_delay: float = 0.5, max_delay: float = 30.0) -> None:
    """Run ``handler`` in a thread until every record is processed or dead-lettered.

    ``DependencyUnavailable`` (a dependency is down, the records are fine) is
    retried with backoff for as long as it lasts: it never counts as an
    attempt and never dead-letters.
    """
    if not records:
        return
    topic = records[0].topic

    async def run(batch: Sequence[Record]) -> Sequence[DeadLetter]:
        last: Exception | None = None
        i = 0
        waits = 0
        while i < attempts:
            try:
                return await asyncio.to_thread(handler, batch)
            except DependencyUnavailable as e:  # wait for it, same records
                waits += 1
                metrics.EVENTS_FAILED.labels(topic).inc()
                delay = min(max_delay, base_delay * (2 ** min(waits, 10)))
                log.warning("batch of %d from %s waits for a dependency (wait %d, %.1fs): %r",
                            len(batch), topic, waits, delay, e)
                await asyncio.sleep(delay)
                continue
            except Exception as e:  # transient by assumption: retry
                last = e
                metrics.EVENTS_FAILED.labels(topic).inc()
                log.warning("batch of %d from %s failed (attempt %d/%d): %r",
                            len(batch), topic, i + 1, attempts, e)
                await asyncio.sleep(base_delay * (2 ** i))
                i += 1
        raise last  # type: ignore[misc]

    try:
        dead = list(await run(records))
    except Exception:
        dead = []
        for r in records:  # isolate the record that keeps failing
            try:
                dead += await run([r])
            except Exception as e:
                dead.append(DeadLetter(r, type(e).__name__, f"failed after {attempts} attempts: {e}"))
    if dead:
        await dlq.write(dead)
    metrics.EVENTS_PROCESSED.labels(topic).inc(len(records) - len(dead))


