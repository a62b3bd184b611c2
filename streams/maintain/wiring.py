"""Faust wiring of the ``maintain`` role: leader-only timers (docs/architecture.md §4D).

silence detector every 10 min; aging weekly; hard delete (and purge of old
processed-event ids) daily; anniversary offers daily (accounts whose flag is
on; recorded offers are published on every tick); outbox retention hourly. A leader-only tick every
minute runs each job that is due (``maintenance_runs`` in Postgres), as a
plain function in a thread.
"""

from __future__ import annotations

import asyncio
import logging
from datetime import datetime, timezone

from streams.kafka.agent import edges_ready

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

    from datetime import timedelta

    from streams.kafka.topics import OUTBOUND, qualified
    from streams.maintain.offers import publish_offers, run_offers
    from streams.maintain.schedule import claim_if_due, purge_outbox

    jobs = [
        ("silence", timedelta(seconds=SILENCE_EVERY), lambda conn: announce_silent(conn, now=now())),
        ("aging", timedelta(seconds=AGING_EVERY), lambda conn: age_memories(conn, now=now())),
        ("hard_delete", timedelta(seconds=HARD_DELETE_EVERY), lambda conn: hard_delete(conn, now=now())),
        ("purge_processed_events", timedelta(seconds=HARD_DELETE_EVERY),
         lambda conn: purge_processed(conn)),
        ("anniversary_offers", timedelta(seconds=settings.offers_every_s),
         lambda conn: run_offers(conn, settings, now())),
        ("outbox_retention", timedelta(hours=1), lambda conn: purge_outbox(
            conn, older_than=timedelta(hours=settings.outbox_retention_hours), now=now(),
            any_status=settings.outbox_publisher == "debezium")),
    ]

    # Every projection against Postgres (chunks, extractions, replies), repaired.
    @app.timer(settings.reconcile_interval, on_leader=True)
    async def reconcile_projections() -> None:
        from streams.maintain.reconcile import reconcile_all

        await edges_ready(state)
        store = None
        if "ingest" in roles or settings.qdrant_url:
            store = await asyncio.to_thread(lambda: container.vector_store)
        try:
            await reconcile_all(settings, container.pool, store, state["producer"], repair=True)
        except Exception:  # a timer must never kill the worker; the next tick retries
            log.exception("maintenance reconcile failed")

    # One frequent leader-only tick; each job runs when it is due according to
    # Postgres, so restarts and leader changes neither skip nor repeat a job.
    @app.timer(settings.maintenance_tick_s, on_leader=True)
    async def maintenance_tick() -> None:
        for name, every, fn in jobs:
            def run(name=name, every=every, fn=fn):
                with container.pool.connection() as conn:
                    if claim_if_due(conn, name, every, now()):
                        log.info("maintenance job=%s starting", name)
                        fn(conn)
            await guarded(name, run)
        # offers recorded (now or by an earlier run whose publish failed) leave here
        await edges_ready(state)
        try:
            await publish_offers(container.pool, state["producer"], qualified(settings, OUTBOUND))
        except Exception:  # Kafka down: the offers stay recorded and unpublished; the next tick retries
            log.exception("maintenance publish_offers failed")
