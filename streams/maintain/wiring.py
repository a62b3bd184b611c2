"""Faust wiring of the ``maintain`` role: leader-only timers (design §4D).

silence detector every 10 min; aging weekly; hard delete (and purge of old
processed-event ids) daily. Each tick runs a plain function in a thread.
"""

from __future__ import annotations

import asyncio
import logging
from datetime import datetime, timezone

log = logging.getLogger(__name__)

SILENCE_EVERY = 600.0
AGING_EVERY = 7 * 24 * 3600.0
HARD_DELETE_EVERY = 24 * 3600.0


def register(app, settings, container, roles, *, batch_agent, state) -> None:
    if "maintain" not in roles:
        return
    from streams.learn.triggers import announce_silent
    from streams.maintain.aging import age_memories, hard_delete
    from streams.store.events import purge_processed

    def now() -> datetime:
        return datetime.now(timezone.utc)

    async def guarded(name, fn):
        try:
            await asyncio.to_thread(fn)
        except Exception:  # a timer must never kill the worker; the next tick retries
            log.exception("maintenance %s failed", name)

    def with_conn(fn):
        def run():
            with container.pool.connection() as conn:
                fn(conn)
        return run

    @app.timer(SILENCE_EVERY, on_leader=True)
    async def silence_detector() -> None:
        await guarded("silence", with_conn(lambda conn: announce_silent(conn, now=now())))

    @app.timer(AGING_EVERY, on_leader=True)
    async def aging() -> None:
        await guarded("aging", with_conn(lambda conn: age_memories(conn, now=now())))

    @app.timer(HARD_DELETE_EVERY, on_leader=True)
    async def daily_hard_delete() -> None:
        await guarded("hard_delete", with_conn(lambda conn: hard_delete(conn, now=now())))
        await guarded("purge_processed_events", lambda: purge_processed(container.pool))
