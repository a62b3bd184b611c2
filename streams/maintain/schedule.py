"""Due-ness of periodic jobs, kept in Postgres (survives restarts and leader changes)."""

from __future__ import annotations

from datetime import datetime, timedelta

import psycopg

from streams.store.uow import joined


def claim_if_due(conn: psycopg.Connection, job: str, every: timedelta, now: datetime) -> bool:
    """True (and the run recorded) when ``job`` last ran more than ``every`` ago, or never."""
    with joined(conn):  # one unit of work (committed at the end)
        row = conn.execute(
            """INSERT INTO maintenance_runs (job, last_run_at) VALUES (%s, %s)
               ON CONFLICT (job) DO UPDATE SET last_run_at = EXCLUDED.last_run_at
                   WHERE maintenance_runs.last_run_at <= %s
               RETURNING job""", (job, now, now - every)).fetchone()
    return row is not None


def purge_outbox(conn: psycopg.Connection, *, older_than: timedelta, now: datetime, any_status: bool) -> int:
    """Delete old outbox rows. With the built-in relay only processed rows go
    (the relay does this itself too); with Debezium nothing ever marks a row
    processed — Debezium reads the WAL, not the table — so every row older than
    the retention goes."""
    where = "created_at < %s" if any_status else "status = 'processed' AND processed_at < %s"
    with joined(conn):  # one unit of work (committed at the end)
        return conn.execute(f"DELETE FROM outbox WHERE {where}", (now - older_than,)).rowcount
