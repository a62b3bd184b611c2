"""What every Faust agent does with a batch: wait for the worker's edges, turn Faust events into
``Record``s, and settle the batch before its offsets are acknowledged (docs/architecture.md §1).

Used by ``streams.app`` and by each flow's ``wiring.py``; it imports neither.
"""

from __future__ import annotations

import asyncio
import logging
import os

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

    Faust's ``take_events`` acknowledges a batch when its loop body exits, even
    by an exception; so a batch is never abandoned half-way: on shutdown it is
    finished first, and an unexpected error (a bug: handlers dead-letter what
    they cannot process) ends the process at once, before any commit, so the
    batch is redelivered after a restart instead of being lost.
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
