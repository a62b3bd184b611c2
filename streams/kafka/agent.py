"""What every Faust agent does with a batch: wait for the worker's edges, turn Faust events into
``Record``s, and settle the batch before its offsets are acknowledged (docs/architecture.md §1).

Used by ``streams.app`` and by each flow's ``wiring.py``; it imports neither.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections import deque
from typing import AsyncIterator, Awaitable, Callable, Sequence

from streams.kafka.consume import Record

log = logging.getLogger(__name__)


def record_of(event) -> Record:
    """The ``Record`` of one Faust event (topic, partition, offset, key, value, headers)."""
    m = event.message
    headers = m.headers.items() if isinstance(m.headers, dict) else (m.headers or ())
    return Record(m.topic, m.partition, m.offset, m.key, m.value,
                  tuple((k, v if isinstance(v, bytes) else str(v).encode()) for k, v in headers))


async def edges_ready(state: dict) -> None:
    """Agents start before services: wait for the DLQ producer before the first batch."""
    while "dlq" not in state:
        await asyncio.sleep(0.05)


async def settle(work, name: str) -> None:
    """Run one batch to completion before Faust acknowledges its offsets.

    ``consume_in_order`` acknowledges a batch only after this returns, and a batch
    is never abandoned half-way: on shutdown it is finished first, and an
    unexpected error (a bug: handlers dead-letter what they cannot process) ends
    the process at once, before its acknowledgement and any commit, so the batch
    is redelivered after a restart instead of being lost.
    """
    task = asyncio.ensure_future(work)
    try:
        await asyncio.shield(task)
    except asyncio.CancelledError:
        await asyncio.wait_for(task, 60)
        raise
    except Exception:
        log.critical("agent %s: unexpected error; exiting without committing offsets", name, exc_info=True)
        logging.shutdown()
        os._exit(70)


async def _speculate(prepare: Callable[[list[Record]], None], records: list[Record],
                     before: asyncio.Future | None, name: str) -> None:
    """A handler's lookahead for one batch, after the lookahead of the batch before (never raises:
    it only reads and requests; the batch's own run meets any error with its kind)."""
    if before is not None:
        await before
    try:
        await asyncio.to_thread(prepare, records)
    except Exception as e:
        log.warning("agent %s: lookahead failed (the batch runs without it): %r", name, e)


async def _in_turn(records: list[Record], events: Sequence, before: asyncio.Future | None,
                   prep: asyncio.Future | None, work: Callable[[list[Record]], Awaitable[None]],
                   ack: Callable[[object], Awaitable[object]], name: str) -> None:
    """One batch: after the batch before it has finished (and been acknowledged), run it to
    completion (``settle``), then acknowledge its events."""
    if before is not None:
        await before   # cancelled (shutdown): this batch is neither run nor acknowledged
    if prep is not None:
        await prep

    async def run_then_ack() -> None:
        await work(records)
        for e in events:
            await ack(e)

    await settle(run_then_ack(), name)


async def consume_in_order(batches: AsyncIterator[Sequence], work: Callable[[list[Record]], Awaitable[None]],
                           ack: Callable[[object], Awaitable[object]], *, name: str,
                           prepare: Callable[[list[Record]], None] | None = None) -> None:
    """Every agent's loop: batches of Faust events (``Stream.noack_take``, which leaves acknowledging
    to us) run one after the other, each acknowledged only after it has run to completion, in
    batch order — Faust commits only contiguous acknowledged offsets
    (``Consumer._new_offset``), and no batch is acknowledged before the ones before it, so a
    committed offset never passes a batch that was not indexed.

    ``prepare`` (a handler's lookahead, in a thread): called for a batch as soon as it is taken,
    while the batch before it still runs; the next batch is then taken when the one before this
    has finished (one batch ahead, never more). Without it a batch is taken only when the one
    before has finished and been acknowledged, as ``take_events`` does. On shutdown the batches
    in flight are finished (in order) before this returns.
    """
    inflight: deque[asyncio.Future] = deque()
    ahead = 1 if prepare is not None else 0
    last: asyncio.Future | None = None
    last_prep: asyncio.Future | None = None
    try:
        async for events in batches:
            records = [record_of(e) for e in events]
            prep = None
            if prepare is not None:
                prep = last_prep = asyncio.ensure_future(_speculate(prepare, records, last_prep, name))
            last = asyncio.ensure_future(_in_turn(records, events, last, prep, work, ack, name))
            inflight.append(last)
            while inflight and (inflight[0].done() or len(inflight) > ahead):
                await asyncio.shield(inflight[0])   # cancelled (shutdown): the batches still finish
                inflight.popleft()
    finally:
        if inflight:   # shutdown or a stream that ended: the batches taken finish first, in order
            await asyncio.wait(list(inflight), timeout=120)
