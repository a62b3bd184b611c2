"""Replay a range of a topic back through the agents.

Records are re-produced with their key, value and headers, so every consumer's
idempotency applies (outbox event ids in ``processed_events``, channel message
ids in ``messages``): a replayed record that was already handled is a no-op, one
that was not (e.g. dead-lettered before a fix) is processed. Replaying a
``.dlq`` topic sends each record back to its source topic (header
``dlq.source_topic``) without the ``dlq.*`` headers.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from datetime import datetime
from typing import Callable

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition

from streams.settings import Settings


@dataclass
class ReplayResult:
    topic: str
    read: int = 0
    replayed: int = 0
    by_target: dict[str, int] = field(default_factory=dict)
    dry_run: bool = False


def parse_position(value: str | None) -> int | datetime | None:
    """An offset (``1200``) or an ISO-8601 timestamp (``2026-11-29T10:00:00Z``)."""
    if value is None or value == "":
        return None
    if value.lstrip("-").isdigit():
        n = int(value)
        if n < 0:
            raise ValueError("offsets must be >= 0")
        return n
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise ValueError(f"{value!r} is neither an offset nor an ISO-8601 timestamp") from None


async def _positions(consumer: AIOKafkaConsumer, tps: list[TopicPartition], pos, default: str) -> dict:
    if pos is None:
        if default == "beginning":
            return dict.fromkeys(tps, 0)
        return dict.fromkeys(tps, None)  # open end
    if isinstance(pos, int):
        return dict.fromkeys(tps, pos)
    ts = int(pos.timestamp() * 1000)
    found = await consumer.offsets_for_times({tp: ts for tp in tps})
    return {tp: (found[tp].offset if found.get(tp) else None) for tp in tps}


async def _partitions(consumer: AIOKafkaConsumer, topic: str) -> list[TopicPartition]:
    parts = consumer.partitions_for_topic(topic)
    if not parts:
        await consumer._client.force_metadata_update()  # noqa: SLF001
        parts = consumer.partitions_for_topic(topic)
    if not parts:
        raise LookupError(f"topic {topic!r} does not exist")
    return [TopicPartition(topic, p) for p in sorted(parts)]


async def _read_range(consumer: AIOKafkaConsumer, starts: dict, ends: dict, idle_timeout: float) -> list:
    """Every record of ``[start, end)`` per partition (an open end: until idle for ``idle_timeout``)."""
    active = set()
    for tp, start in starts.items():
        if start is None:  # a timestamp after the last record
            continue
        consumer.seek(tp, start)
        active.add(tp)
    picked = []
    last_seen = asyncio.get_running_loop().time()
    while active:
        batch = await consumer.getmany(*active, timeout_ms=500)
        now = asyncio.get_running_loop().time()
        if not any(batch.values()):
            if now - last_seen > idle_timeout:
                break
            continue
        last_seen = now
        for tp, recs in batch.items():
            for r in recs:
                if ends[tp] is not None and r.offset >= ends[tp]:
                    active.discard(tp)
                    break
                picked.append(r)
    return picked


def _destination(topic: str, record) -> tuple[str, list]:
    """Where a record goes back to, with which headers: a ``.dlq`` record returns to its source
    topic without the ``dlq.*`` headers; any other record to its own topic."""
    headers = list(record.headers or ())
    if not topic.endswith(".dlq"):
        return topic, headers
    src = dict(headers).get("dlq.source_topic")
    return (src.decode() if src else topic[: -len(".dlq")]), [(k, v) for k, v in headers if not k.startswith("dlq.")]


async def replay_topic(settings: Settings, topic: str, start=None, end=None, *, dry_run: bool = False,
                       idle_timeout: float = 3.0,
                       progress: Callable[[int], None] | None = None) -> ReplayResult:
    """Replay ``[start, end)`` of every partition of ``topic``; an open end stops when the
    partition has been idle for ``idle_timeout`` seconds (the embedded broker's end offsets
    are not reliable, docs/architecture.md §7)."""
    res = ReplayResult(topic=topic, dry_run=dry_run)
    from streams.bootstrap import consumer_config, producer_config

    consumer = AIOKafkaConsumer(**consumer_config(settings, None, "memoria-replay"))   # assigned, commits nothing
    producer = None if dry_run else AIOKafkaProducer(**producer_config(settings, "memoria-replay"))
    await consumer.start()
    if producer:
        await producer.start()
    try:
        tps = await _partitions(consumer, topic)
        consumer.assign(tps)
        starts = await _positions(consumer, tps, start, "beginning")
        ends = await _positions(consumer, tps, end, "open")
        # Phase 1: read the whole range first, so that replaying a topic into
        # itself never reads its own replayed records.
        picked = await _read_range(consumer, starts, ends, idle_timeout)
        res.read = len(picked)
        # Phase 2: produce, in the original order per partition.
        futs = []
        for r in picked:
            target, headers = _destination(topic, r)
            res.by_target[target] = res.by_target.get(target, 0) + 1
            if producer:
                futs.append(await producer.send(target, key=r.key, value=r.value, headers=headers))
                res.replayed += 1
            if progress:
                progress(res.read if not producer else res.replayed)
        if futs:
            await asyncio.gather(*futs)
        return res
    finally:
        await consumer.stop()
        if producer:
            await producer.stop()
