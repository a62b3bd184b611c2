"""One reconcile for every projection of Postgres (the source of truth).

A broker without replication that restarts loses the events it held but that
nobody had consumed yet (the relay had already marked them processed). Each
projection is compared with its source and the drift re-enqueued:

* **chunks → Qdrant points**: live chunks without a point (or with a stale
  one), points without a live chunk → ``chunk.*`` outbox events
  (``streams.ingest.knowledge.reconcile``);
* **finished conversations → extractions**: resolved (or announced silent)
  conversations with no extraction (or only the one a reopening set aside)
  → a new ``conversation.*`` event
  (learning is idempotent per conversation, so a duplicate is a no-op);
* **stored replies → the outbound topic**: replies stored but never
  acknowledged by Kafka (``published_at`` NULL), and, after a recorded broker
  loss (``broker_losses``), the replies published in the
  ``reconcile_reply_lookback`` before it (the sender's ledger delivers a
  ``reply_id`` at most once).

Changes younger than ``min_age`` seconds are left to the live pipeline. The
maintain role runs this with ``repair`` every ``reconcile_interval``; the CLI
``memoria reconcile [--repair]`` runs it by hand.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import TYPE_CHECKING, Any, Protocol

from psycopg_pool import ConnectionPool

from schemas.events import ConversationEvent, OutboundReply
from streams import metrics
from streams.store.uow import joined

if TYPE_CHECKING:
    from streams.store.uow import UnitOfWork

log = logging.getLogger(__name__)

PROJECTIONS = ("chunks", "extractions", "replies")


@dataclass
class ReconcileReport:
    chunks: list = field(default_factory=list)          # list[Drift]
    extractions: list[int] = field(default_factory=list)  # conversation ids without an extraction
    replies: list[str] = field(default_factory=list)      # reply ids (re)published or to be
    losses: list[int] = field(default_factory=list)       # broker_losses rows handled
    repaired: bool = False

    @property
    def drift(self) -> int:
        return sum(d.total for d in self.chunks) + len(self.extractions) + len(self.replies)

    def as_dict(self) -> dict[str, Any]:
        return {
            "repaired": self.repaired,
            "chunks": [{"account_id": d.account_id, "missing": len(d.missing), "stale": len(d.stale),
                        "extra": len(d.extra), "requeued": d.requeued} for d in self.chunks],
            "extractions": {"missing": len(self.extractions), "conversation_ids": self.extractions[:50]},
            "replies": {"unpublished_or_lost": len(self.replies), "broker_losses": self.losses},
        }


def _now(now: datetime | None) -> datetime:
    return now or datetime.now(timezone.utc)


class ReconcileRepository(Protocol):
    """``uow.reconcile``: the drift between Postgres and its projections, and settling it."""

    def unlearnt(self, cut: datetime, account_id: int | None, limit: int) -> list[dict]:
        """``id``, ``account_id``, ``contact_id`` and ``why`` (resolved | silent) of the conversations
        finished before ``cut`` with no extraction (but one a reopening set aside) and no pending event."""
    def settle_losses(self, loss_ids: list[int]) -> None:
        """These ``broker_losses`` are reconciled (their replies published again)."""
    def record_loss(self, topics: list[str]) -> None:
        """The broker lost these topics (found missing and created again): a ``broker_losses`` row."""


class PostgresReconcileRepository:
    def __init__(self, uow: "UnitOfWork"):
        self.conn = uow.conn

    def unlearnt(self, cut, account_id, limit):
        return self.conn.execute(
            """SELECT c.id, c.account_id, c.contact_id,
                      CASE WHEN c.status = 'resolved' THEN 'resolved' ELSE 'silent' END AS why
               FROM conversations c
               LEFT JOIN conversation_silences s ON s.conversation_id = c.id
               WHERE ((c.status = 'resolved' AND coalesce(c.resolved_at, c.created_at) < %(cut)s)
                      OR (c.status = 'open' AND s.announced_at < %(cut)s))
                 AND NOT EXISTS (SELECT 1 FROM conversation_extractions e WHERE e.conversation_id = c.id
                                 AND e.status <> 'reopened')
                 AND NOT EXISTS (SELECT 1 FROM outbox o WHERE o.aggregatetype = 'conversation'
                                 AND o.aggregateid = c.id::text AND o.status = 'pending')
                 AND (%(acc)s::bigint IS NULL OR c.account_id = %(acc)s::bigint)
               ORDER BY c.id LIMIT %(limit)s""",
            dict(cut=cut, acc=account_id, limit=limit)).fetchall()

    def settle_losses(self, loss_ids):
        self.conn.execute("UPDATE broker_losses SET reconciled_at = now() WHERE id = ANY(%s)", (loss_ids,))

    def record_loss(self, topics):
        self.conn.execute("INSERT INTO broker_losses (topics) VALUES (%s)", (list(topics),))


def missing_extractions(pool: ConnectionPool, *, account_id: int | None = None, min_age: float = 0.0,
                        now: datetime | None = None, repair: bool = False, limit: int = 5000) -> list[int]:
    """Finished conversations never learnt (no extraction row, no pending event)."""
    cut = _now(now) - timedelta(seconds=min_age)
    with joined(pool) as uow:  # one unit of work (committed at the end)
        rows = uow.reconcile.unlearnt(cut, account_id, limit)
        if repair and rows:
            for r in rows:
                uow.add_event(f"conversation.{r['why']}", ConversationEvent(
                    conversation_id=r["id"], account_id=r["account_id"], contact_id=r["contact_id"], reason=r["why"]))
            metrics.RECONCILE_REPAIRS.labels("extractions").inc(len(rows))
    return [r["id"] for r in rows]


def replies_to_publish(pool: ConnectionPool, *, account_id: int | None = None, min_age: float = 0.0,
                       lookback: float = 3600.0, now: datetime | None = None,
                       limit: int = 5000) -> tuple[list[OutboundReply], list[int]]:
    """Stored replies never acknowledged by Kafka, plus those possibly lost with the broker."""
    cut = _now(now) - timedelta(seconds=min_age)
    with pool.connection() as conn:
        losses = conn.execute("SELECT id, detected_at FROM broker_losses WHERE reconciled_at IS NULL "
                              "ORDER BY id").fetchall()
        windows = [(r["detected_at"] - timedelta(seconds=lookback), r["detected_at"]) for r in losses]
        cond = ["(m.published_at IS NULL AND m.sent_at < %s)"]
        args: list[Any] = [cut]
        for lo, hi in windows:
            cond.append("(m.published_at BETWEEN %s AND %s)")
            args += [lo, hi]
        acc = ""
        if account_id is not None:
            acc = " AND m.account_id = %s"
            args.append(account_id)
        rows = conn.execute(
            f"""SELECT m.reply FROM messages m
                WHERE m.role = 'agent' AND m.reply IS NOT NULL AND ({' OR '.join(cond)}){acc}
                ORDER BY m.sent_at, m.id LIMIT %s""", (*args, limit)).fetchall()
    return [OutboundReply.model_validate(r["reply"]) for r in rows], [r["id"] for r in losses]


async def publish_replies(producer, topic: str, pool: ConnectionPool, replies: list[OutboundReply],
                          losses: list[int]) -> None:
    """Publish to the outbound topic (key = conversation id), then mark them published."""
    import asyncio

    futs = [await producer.send(topic, key=r.conversation_id.encode(), value=r.model_dump_json().encode())
            for r in replies]
    if futs:
        await asyncio.gather(*futs)

    def mark() -> None:
        with joined(pool) as uow:  # one unit of work (committed at the end)
            if replies:
                uow.conversations.mark_published([r.reply_id for r in replies])
            if losses:
                uow.reconcile.settle_losses(losses)

    await asyncio.to_thread(mark)
    if replies:
        metrics.RECONCILE_REPAIRS.labels("replies").inc(len(replies))


def reconcile_chunks(pool: ConnectionPool, store, domain: str, *, account_id: int | None = None,
                     repair: bool = False, min_age: float = 0.0, now: datetime | None = None) -> list:
    from streams.ingest.knowledge import reconcile

    drifts = reconcile(pool=pool, store=store, domain=domain, account_id=account_id, repair=repair,
                       settled_before=_now(now) - timedelta(seconds=min_age) if min_age else None)
    if repair:
        metrics.RECONCILE_REPAIRS.labels("chunks").inc(sum(d.requeued for d in drifts))
    return drifts


async def reconcile_all(settings, pool: ConnectionPool, store, producer, *, account_id: int | None = None,
                        repair: bool = False, min_age: float | None = None,
                        projections: tuple[str, ...] = PROJECTIONS) -> ReconcileReport:
    """Every projection; ``producer`` (a started AIOKafkaProducer) is needed to repair replies."""
    import asyncio

    from streams.kafka.topics import OUTBOUND, qualified

    age = settings.reconcile_min_age if min_age is None else min_age
    rep = ReconcileReport(repaired=repair)
    if "chunks" in projections and store is not None:
        rep.chunks = await asyncio.to_thread(reconcile_chunks, pool, store, settings.vector_domain,
                                             account_id=account_id, repair=repair, min_age=age)
    if "extractions" in projections:
        rep.extractions = await asyncio.to_thread(missing_extractions, pool, account_id=account_id, min_age=age,
                                                  repair=repair)
    if "replies" in projections:
        replies, losses = await asyncio.to_thread(replies_to_publish, pool, account_id=account_id, min_age=age,
                                                  lookback=settings.reconcile_reply_lookback)
        if account_id is not None:
            losses = []  # a loss is settled only by a reconcile of every account
        rep.replies, rep.losses = [r.reply_id for r in replies], losses
        if repair and (replies or losses):
            await publish_replies(producer, qualified(settings, OUTBOUND), pool, replies, losses)
    if rep.drift:
        log.warning("reconcile drift=%d repaired=%s %s", rep.drift, repair, rep.as_dict())
    return rep
