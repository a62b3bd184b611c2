"""Exactly one delivery per reply: the sent ledger around the channel API call.

    delivery = ReplyDelivery(sender, PostgresSentLedger(pool), stop=stop)
    dead = await delivery.handle(record)      # None: settled (sent, or already sent)

For each ``OutboundReply`` (by ``reply_id``):

1. claim it in the ledger (``sending``) before calling the API; a reply whose
   row says ``sent`` is a redelivery and is skipped; ``sending`` means a
   process died during the call (the outcome is unknown): it becomes
   ``unknown`` and is dead-lettered (``DeliveryUnknown``), never sent again;
2. call the API; ``sent`` is written after it answers;
3. the API unavailable (429, 5xx, no connection): the claim is released
   (``retrying``) and the *same* record is retried, waiting Retry-After or a
   capped backoff, for as long as it takes; nothing after it is committed and
   the stall is exported the same way as the worker's consumers
   (``streams.kafka.errors.stalled``: ``memoria_consumer_stalled``, and
   ``status: stalled`` on the sender's ``/health``, 503 on its ``/ready``);
4. refused for good (4xx, no destination): ``rejected`` and dead-lettered with
   the API's error;
5. Postgres unavailable: wait and retry the same step (never dead-letter).

So a reply reaches the customer at most once, across redelivery and restarts,
and exactly once unless the process dies during the API call itself.
"""

from __future__ import annotations

import asyncio
import json
import logging
import random
from typing import TYPE_CHECKING, Protocol

import psycopg
from psycopg_pool import ConnectionPool, PoolTimeout
from pydantic import ValidationError

from connectors.whatsapp.sender import SendResult
from schemas.events import OutboundReply
from streams import metrics
from streams.kafka import errors
from streams.kafka.consume import DeadLetter, Record
from streams.store.uow import PostgresUnitOfWork, UnitOfWorkFactory

if TYPE_CHECKING:
    from streams.store.uow import UnitOfWork

log = logging.getLogger(__name__)

CONSUMER = "whatsapp-sender"


class Stopped(Exception):
    """The process is stopping while a record waits for a dependency: do not commit it."""


class SentLedger(Protocol):
    def claim(self, reply: OutboundReply, channel: str) -> str:
        """'claimed', or the status that prevents sending ('sent', 'sending', 'rejected', 'unknown')."""

    def finish(self, reply_id: str, status: str, *, channel_message_id: str | None = None,
               error: str | None = None) -> None: ...


class SentReplyRepository(Protocol):
    """``uow.sent_replies``: the sent ledger's rows (``streams.store.fake_uow`` implements it in memory)."""

    def insert_claim(self, reply_id: str, account_id: int, channel: str) -> bool:
        """A new row ``sending`` (attempt 1); False when the reply already has one."""
    def locked_status(self, reply_id: str) -> str:
        """The reply's status, its row locked until the unit ends."""
    def reclaim(self, reply_id: str) -> None:
        """The row becomes ``sending`` again, one attempt more."""
    def finish(self, reply_id: str, status: str, *, channel_message_id: str | None, error: str | None) -> None:
        """Set the outcome (``sent_at`` when ``sent``; the channel's message id kept when not given)."""


class PostgresSentReplyRepository:
    def __init__(self, uow: "UnitOfWork"):
        self.conn = uow.conn

    def insert_claim(self, reply_id, account_id, channel):
        return self.conn.execute(
            """INSERT INTO sent_replies (reply_id, account_id, channel, status, attempts)
               VALUES (%s, %s, %s, 'sending', 1) ON CONFLICT (reply_id) DO NOTHING RETURNING reply_id""",
            (reply_id, account_id, channel)).fetchone() is not None

    def locked_status(self, reply_id):
        return self.conn.execute("SELECT status FROM sent_replies WHERE reply_id = %s FOR UPDATE",
                                 (reply_id,)).fetchone()["status"]

    def reclaim(self, reply_id):
        self.conn.execute("UPDATE sent_replies SET status = 'sending', attempts = attempts + 1, claimed_at = now() "
                          "WHERE reply_id = %s", (reply_id,))

    def finish(self, reply_id, status, *, channel_message_id, error):
        self.conn.execute(
            "UPDATE sent_replies SET status = %s, channel_message_id = COALESCE(%s, channel_message_id), "
            "last_error = %s, sent_at = CASE WHEN %s = 'sent' THEN now() ELSE sent_at END "
            "WHERE reply_id = %s", (status, channel_message_id, (error or None) and error[:2000], status, reply_id))


def claim_reply(uow: "UnitOfWork", reply: OutboundReply, channel: str) -> str:
    """The once-only rule, in ``uow`` (the caller commits): a reply never seen, or released for a
    retry (``retrying``), is claimed (``sending``); any other status is returned and prevents
    sending (``sent``: a redelivery; ``sending``: a process died during the API call)."""
    ledger = uow.sent_replies
    if ledger.insert_claim(reply.reply_id, reply.account_id, channel):
        return "claimed"
    status = ledger.locked_status(reply.reply_id)
    if status == "retrying":
        ledger.reclaim(reply.reply_id)
        return "claimed"
    return status


class PostgresSentLedger:
    """The ``SentLedger`` over Postgres: each step is one unit of work over ``uow.sent_replies``
    (``PostgresSentLedger(None, uow=db.unit_of_work)`` runs it on the in-memory fake)."""

    def __init__(self, pool: ConnectionPool | None, *, uow: UnitOfWorkFactory | None = None):
        self.unit: UnitOfWorkFactory = uow or (lambda: PostgresUnitOfWork(pool))

    def claim(self, reply: OutboundReply, channel: str) -> str:
        with self.unit() as uow:
            status = claim_reply(uow, reply, channel)
            uow.commit()
        return status

    def finish(self, reply_id: str, status: str, *, channel_message_id: str | None = None,
               error: str | None = None) -> None:
        with self.unit() as uow:
            uow.sent_replies.finish(reply_id, status, channel_message_id=channel_message_id, error=error)
            uow.commit()


#: Errors that mean "Postgres is unavailable right now", not "this record is bad".
DB_UNAVAILABLE = (psycopg.OperationalError, PoolTimeout)


def decode(record: Record) -> OutboundReply | DeadLetter:
    try:
        return OutboundReply.model_validate(json.loads(record.value or b""))
    except (ValueError, UnicodeDecodeError, ValidationError) as e:
        return DeadLetter(record, "InvalidReply", str(e)[:1000])


class ReplyDelivery:
    def __init__(self, sender, ledger: SentLedger, *, stop: asyncio.Event | None = None, channel: str = "whatsapp",
                 backoff_base: float = 0.5, backoff_max: float = 60.0, consumer: str = CONSUMER):
        self.sender = sender
        self.ledger = ledger
        self.stop = stop or asyncio.Event()
        self.channel = channel
        self.backoff_base = backoff_base
        self.backoff_max = backoff_max
        self.consumer = consumer
        metrics.CONSUMER_STALLED.labels(consumer, "postgres").set(0)
        metrics.CONSUMER_STALLED.labels(consumer, "channel_api").set(0)

    async def _wait(self, dependency: str, attempt: int, hint: float | None = None,
                    error: BaseException | str | None = None) -> None:
        """Back off while ``dependency`` is unavailable; raises Stopped on shutdown."""
        if not isinstance(error, BaseException):
            error = errors.DependencyUnavailable(dependency, error or "")
        errors.stalled(self.consumer, dependency, error, attempt)  # metric + /health, like every consumer
        delay = hint if hint is not None else self.backoff_base * (2 ** min(attempt, 10))
        delay = min(self.backoff_max, delay) * (1.0 if hint is not None else 0.75 + random.random() / 4)
        try:
            await asyncio.wait_for(self.stop.wait(), timeout=delay)
        except asyncio.TimeoutError:
            return
        raise Stopped()

    def _recovered(self, dependency: str) -> None:
        stall = errors.STALLS.get(self.consumer)
        if stall is not None and stall.dependency == dependency:
            errors.recovered(self.consumer)
        metrics.CONSUMER_STALLED.labels(self.consumer, dependency).set(0)

    async def _db(self, fn, *args, **kwargs):
        attempt = 0
        while True:
            try:
                result = await asyncio.to_thread(fn, *args, **kwargs)
                self._recovered("postgres")
                return result
            except DB_UNAVAILABLE as e:
                log.warning("%s: Postgres unavailable (%r); retrying the same reply", self.consumer, e)
                await self._wait("postgres", attempt, error=e)
                attempt += 1

    async def handle(self, record: Record) -> DeadLetter | None:
        """Settle one record: None when sent (now or before), a DeadLetter when it
        can never be sent. Raises Stopped when shutting down during a stall."""
        reply = decode(record)
        if isinstance(reply, DeadLetter):
            return reply
        attempt = 0
        while True:
            claim = await self._db(self.ledger.claim, reply, self.channel)
            if claim == "sent":
                metrics.REPLIES_DELIVERED.labels("duplicate").inc()
                log.info("whatsapp reply already sent reply_id=%s: skipped", reply.reply_id)
                return None
            if claim in ("rejected", "unknown"):  # dead-lettered when it got that status
                return None
            if claim == "sending":  # a process died during the API call: never risk a second copy
                await self._db(self.ledger.finish, reply.reply_id, "unknown",
                               error="the sender stopped during the API call")
                metrics.REPLIES_DELIVERED.labels("unknown").inc()
                return DeadLetter(record, "DeliveryUnknown",
                                  "a previous attempt stopped during the API call; not sent again")
            result: SendResult = await self.sender.send(reply)
            if result.ok:
                await self._db(self.ledger.finish, reply.reply_id, "sent", channel_message_id=result.wa_message_id)
                self._recovered("channel_api")
                metrics.REPLIES_DELIVERED.labels("sent").inc()
                log.info("whatsapp sent reply_id=%s wa_message_id=%s", reply.reply_id, result.wa_message_id)
                return None
            if result.ambiguous:
                await self._db(self.ledger.finish, reply.reply_id, "unknown", error=result.error)
                metrics.REPLIES_DELIVERED.labels("unknown").inc()
                return DeadLetter(record, "DeliveryUnknown", f"no answer from the API: {result.error}")
            if result.retryable:
                await self._db(self.ledger.finish, reply.reply_id, "retrying", error=result.error)
                log.warning("whatsapp API unavailable reply_id=%s (%s); retrying the same reply",
                            reply.reply_id, result.error)
                await self._wait("channel_api", attempt, result.retry_after, error=result.error)
                attempt += 1
                continue
            await self._db(self.ledger.finish, reply.reply_id, "rejected", error=result.error)
            metrics.REPLIES_DELIVERED.labels("rejected").inc()
            return DeadLetter(record, "SendFailed", result.error or f"status={result.status}")
