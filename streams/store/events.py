"""Consumer idempotency bookkeeping: which event ids a consumer has handled."""

from __future__ import annotations

from typing import Sequence

from psycopg_pool import ConnectionPool


def unprocessed(pool: ConnectionPool, consumer: str, event_ids: Sequence[str]) -> set[str]:
    ids = list(dict.fromkeys(event_ids))
    if not ids:
        return set()
    with pool.connection() as conn:
        seen = {r["event_id"] for r in conn.execute(
            "SELECT event_id FROM processed_events WHERE consumer = %s AND event_id = ANY(%s)",
            (consumer, ids)).fetchall()}
    return set(ids) - seen


def mark_processed(pool: ConnectionPool, consumer: str, event_ids: Sequence[str]) -> None:
    if not event_ids:
        return
    with pool.connection() as conn, conn.cursor() as cur:
        cur.executemany(
            "INSERT INTO processed_events (consumer, event_id) VALUES (%s, %s) ON CONFLICT DO NOTHING",
            [(consumer, e) for e in dict.fromkeys(event_ids)])


def purge_processed(pool: ConnectionPool, older_than_days: float = 14) -> int:
    with pool.connection() as conn:
        return conn.execute("DELETE FROM processed_events WHERE processed_at < now() - "
                            "make_interval(secs => %s)", (older_than_days * 86400,)).rowcount
