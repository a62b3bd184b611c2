"""Aging of facts (docs/architecture.md §4B TTL table, §4D): run weekly, or by hand.

- a fact whose TTL elapsed (``expires_at <= now``) is soft-deleted when its
  type's action is ``delete``, or gets ``weight = 0.7`` (×0.7 once, never
  compounded) when it is ``reduce_weight``;
- contacts above 50 live facts lose the least recently verified ones;
- hard delete removes rows soft-deleted more than 30 days ago (their
  pgvector embedding goes with the row), counts per account logged.

Every function takes ``now`` (the injectable clock) and ``dry_run``.
"""

from __future__ import annotations

import json
import logging
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime, timedelta

import psycopg

from schemas.events import MemoryEvent
from streams.learn import store
from streams.learn.consolidate import MAX_LIVE_FACTS
from streams.learn.taxonomy import REDUCED_WEIGHT_FACTOR, ttl_policy
from streams.outbox.write import add_events, outbox_row

log = logging.getLogger(__name__)

HARD_DELETE_AFTER = timedelta(days=30)


@dataclass
class AgingReport:
    dry_run: bool
    weight_reduced: Counter = field(default_factory=Counter)  # per account
    deleted: Counter = field(default_factory=Counter)
    capped: Counter = field(default_factory=Counter)

    def as_dict(self) -> dict:
        return {"dry_run": self.dry_run, "weight_reduced": sum(self.weight_reduced.values()),
                "deleted": sum(self.deleted.values()), "capped": sum(self.capped.values()),
                "per_account": {str(a): {"weight_reduced": self.weight_reduced[a], "deleted": self.deleted[a],
                                         "capped": self.capped[a]}
                                for a in sorted(set(self.weight_reduced) | set(self.deleted) | set(self.capped))}}


def _event(type_: str, r: dict) -> tuple:
    return outbox_row(type_, MemoryEvent(memory_id=r["id"], account_id=r["account_id"], contact_id=r["contact_id"]))


def age_memories(conn: psycopg.Connection, *, now: datetime, dry_run: bool = False,
                 cap: int = MAX_LIVE_FACTS) -> AgingReport:
    report = AgingReport(dry_run=dry_run)
    with conn.transaction():
        expired = conn.execute(
            "SELECT id, account_id, contact_id, memory_type, weight, superseded_at FROM contact_memories "
            "WHERE deleted_at IS NULL AND expires_at IS NOT NULL AND expires_at <= %s ORDER BY id FOR UPDATE",
            (now,)).fetchall()
        to_delete, to_reduce = [], []
        for r in expired:
            action = ttl_policy(r["memory_type"]).action
            if action == "delete":
                to_delete.append(r)
            elif action == "reduce_weight" and r["superseded_at"] is None and r["weight"] > REDUCED_WEIGHT_FACTOR:
                to_reduce.append(r)
        for r in to_delete:
            report.deleted[r["account_id"]] += 1
        for r in to_reduce:
            report.weight_reduced[r["account_id"]] += 1
        if not dry_run:
            audit = json.dumps({"deleted": {"by": "aging", "at": now.isoformat(), "reason": "ttl"}})
            conn.execute("UPDATE contact_memories SET deleted_at = %s, updated_at = %s, metadata = metadata || %s::jsonb "
                         "WHERE id = ANY(%s)", (now, now, audit, [r["id"] for r in to_delete]))
            conn.execute("UPDATE contact_memories SET weight = LEAST(weight, %s), updated_at = %s WHERE id = ANY(%s)",
                         (REDUCED_WEIGHT_FACTOR, now, [r["id"] for r in to_reduce]))
            add_events(conn, [_event("memory.deleted", r) for r in to_delete]
                       + [_event("memory.updated", r) for r in to_reduce])
        crowded = conn.execute(
            "SELECT account_id, contact_id FROM contact_memories WHERE deleted_at IS NULL AND superseded_at IS NULL "
            "GROUP BY account_id, contact_id HAVING count(*) > %s", (cap,)).fetchall()
        for c in crowded:
            victims = store.enforce_cap(conn, c["account_id"], c["contact_id"], now=now, cap=cap, dry_run=dry_run)
            report.capped[c["account_id"]] += len(victims)
    log.info("aging %s weight_reduced=%d deleted=%d capped=%d", "dry-run" if dry_run else "done",
             sum(report.weight_reduced.values()), sum(report.deleted.values()), sum(report.capped.values()))
    return report


def hard_delete(conn: psycopg.Connection, *, now: datetime, dry_run: bool = False,
                after: timedelta = HARD_DELETE_AFTER) -> dict[int, int]:
    """Delete rows soft-deleted before ``now - after``; returns counts per account."""
    cut = now - after
    with conn.transaction():
        if dry_run:
            rows = conn.execute("SELECT account_id, count(*) AS n FROM contact_memories WHERE deleted_at < %s "
                                "GROUP BY account_id", (cut,)).fetchall()
            counts = {r["account_id"]: int(r["n"]) for r in rows}
        else:
            rows = conn.execute("DELETE FROM contact_memories WHERE deleted_at < %s RETURNING account_id",
                                (cut,)).fetchall()
            counts = dict(Counter(r["account_id"] for r in rows))
    for account_id, n in sorted(counts.items()):
        log.info("hard delete %s account_id=%d facts=%d", "dry-run" if dry_run else "done", account_id, n)
    if not counts:
        log.info("hard delete %s facts=0", "dry-run" if dry_run else "done")
    return counts
