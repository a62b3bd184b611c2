"""Consumer idempotency bookkeeping: which event ids a consumer has handled (``processed_events``).

Written through a unit of work (``uow.processed``), so a consumer can mark an event in the same
unit as the change it made for it (the lifecycle handler does); ``purge_processed`` is the
maintenance schedule's job.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol, Sequence

from streams.store.uow import joined

if TYPE_CHECKING:
    import psycopg
    from psycopg_pool import ConnectionPool

    from streams.store.uow import UnitOfWork


class ProcessedEventsRepository(Protocol):
    """``uow.processed`` (``streams.store.fake_uow`` implements it in memory)."""

    def unprocessed(self, consumer: str, event_ids: Sequence[str]) -> set[str]:
        """The ids among ``event_ids`` this consumer has not marked."""
    def mark(self, consumer: str, event_ids: Sequence[str]) -> None:
        """Mark ``event_ids`` handled by this consumer (again: no effect)."""
    def purge(self, older_than_days: float) -> int:
        """Forget marks older than that (a redelivery is never that late); how many."""


class PostgresProcessedEventsRepository:
    def __init__(self, uow: "UnitOfWork"):
        self.conn = uow.conn

    def unprocessed(self, consumer, event_ids):
        ids = list(dict.fromkeys(event_ids))
        if not ids:
            return set()
        seen = {r["event_id"] for r in self.conn.execute(
            "SELECT event_id FROM processed_events WHERE consumer = %s AND event_id = ANY(%s)",
            (consumer, ids)).fetchall()}
        return set(ids) - seen

    def mark(self, consumer, event_ids):
        ids = list(dict.fromkeys(event_ids))
        if ids:
            with self.conn.cursor() as cur:
                cur.executemany("INSERT INTO processed_events (consumer, event_id) VALUES (%s, %s) "
                                "ON CONFLICT DO NOTHING", [(consumer, e) for e in ids])

    def purge(self, older_than_days):
        return self.conn.execute("DELETE FROM processed_events WHERE processed_at < now() - "
                                 "make_interval(secs => %s)", (older_than_days * 86400,)).rowcount


def purge_processed(target: "UnitOfWork | psycopg.Connection | ConnectionPool", older_than_days: float = 14) -> int:
    with joined(target) as uow:
        return uow.processed.purge(older_than_days)
