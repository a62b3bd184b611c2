"""Write outbox rows inside the caller's transaction (docs/architecture.md §2, §3)."""

from __future__ import annotations

import json
from typing import Any, Iterable

import psycopg
from uuid6 import uuid7


def outbox_row(aggregatetype: str, aggregateid: Any, type_: str, payload: dict) -> tuple:
    return (str(uuid7()), aggregatetype, str(aggregateid), type_,
            json.dumps(payload, default=str, ensure_ascii=False))


def add_events(conn: psycopg.Connection, rows: Iterable[tuple]) -> int:
    rows = list(rows)
    if not rows:
        return 0
    with conn.cursor() as cur:
        cur.executemany(
            "INSERT INTO outbox (id, aggregatetype, aggregateid, type, payload) "
            "VALUES (%s, %s, %s, %s, %s::jsonb)", rows)
    return len(rows)
