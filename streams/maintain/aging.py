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

import logging
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime, timedelta

import psycopg

from schemas.events import MemoryEvent
from streams.learn.consolidate import MAX_LIVE_FACTS
from streams.learn.taxonomy import REDUCED_WEIGHT_FACTOR, ttl_policy
from streams.store.uow import UnitOfWork, joined

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


def _event(type_: str, r: dict) -> tuple[str, MemoryEvent]:
    return type_, MemoryEvent(memory_id=r["id"], account_id=r["account_id"], contact_id=r["contact_id"])


def age_memories(target: "UnitOfWork | psycopg.Connection", *, now: datetime, dry_run: bool = False,
                 cap: int = MAX_LIVE_FACTS) -> AgingReport:
    """``target``: an open unit of work (the caller commits) or a connection (one unit, committed here)."""
    report = AgingReport(dry_run=dry_run)
    with joined(target) as uow:
        repo = uow.learning
        to_delete, to_reduce = [], []
        for r in repo.expired(now):
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
            repo.age([r["id"] for r in to_delete], [r["id"] for r in to_reduce], now=now,
                     weight=REDUCED_WEIGHT_FACTOR)
            for r in to_delete:
                uow.add_event(*_event("memory.deleted", r))
            for r in to_reduce:
                uow.add_event(*_event("memory.updated", r))
        for account_id, contact_id in repo.crowded(cap):
            victims = repo.enforce_cap(account_id, contact_id, now=now, cap=cap, dry_run=dry_run)
            report.capped[account_id] += len(victims)
    log.info("aging %s weight_reduced=%d deleted=%d capped=%d", "dry-run" if dry_run else "done",
             sum(report.weight_reduced.values()), sum(report.deleted.values()), sum(report.capped.values()))
    return report


def hard_delete(target: "UnitOfWork | psycopg.Connection", *, now: datetime, dry_run: bool = False,
                after: timedelta = HARD_DELETE_AFTER) -> dict[int, int]:
    """Delete rows soft-deleted before ``now - after``; returns counts per account."""
    with joined(target) as uow:
        counts = uow.learning.hard_delete(now - after, dry_run=dry_run)
    for account_id, n in sorted(counts.items()):
        log.info("hard delete %s account_id=%d facts=%d", "dry-run" if dry_run else "done", account_id, n)
    if not counts:
        log.info("hard delete %s facts=0", "dry-run" if dry_run else "done")
    return counts
