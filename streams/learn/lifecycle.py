"""A conversation's lifecycle: resolved and reopened, from every entry point.

One service function, :func:`change_status`, used by the channel topic
``channel.conversation.events`` (fed by the Chatwoot-style webhook in
``connectors/chatwoot``), the admin API (``POST /v1/conversations/{id}/resolve``
and ``/reopen``) and the CLI (``memoria conversations resolve|reopen``).

Resolving sets the status, clears the lead state and writes the
``conversation.resolved`` event that starts the learning, in one transaction;
resolving a conversation that is not open changes nothing (so a redelivered or
repeated "resolved" learns once); a channel event older than the conversation's last
status change (a webhook retried late) is ignored. Reopening sets it open again; the next
resolution learns from the messages after the last one learnt, and
consolidation never inserts a fact the conversation already produced.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Literal, Protocol, Sequence

import psycopg
from psycopg_pool import ConnectionPool
from pydantic import ValidationError

from schemas.events import ConversationLifecycleEvent
from streams import metrics
from streams.kafka.consume import DeadLetter, Record
from streams.learn.triggers import reopen_conversation, resolve_conversation
from streams.store.uow import PostgresUnitOfWork, UnitOfWork, UnitOfWorkFactory, joined

log = logging.getLogger(__name__)

CONSUMER = "lifecycle"
Action = Literal["resolve", "reopen"]


class ConversationNotFound(LookupError):
    """No such conversation in this account (another account's answers the same)."""


@dataclass(frozen=True)
class StatusChange:
    conversation_id: int
    external_id: str | None
    account_id: int
    contact_id: int
    status: str          # after the change
    changed: bool        # False: it already had that status


class LifecycleRepository(Protocol):
    """``uow.lifecycle``: the conversation a status change applies to (``streams.store.fake_uow``
    implements it in memory; the transitions themselves are ``uow.learning``'s ``resolve``/``reopen``)."""

    def locked_conversation(self, account_id: int, *, conversation_id: int | None = None,
                            external_id: str | None = None) -> dict | None:
        """``id``, ``external_id``, ``contact_id``, ``status`` and ``last_change`` (the later of
        ``resolved_at`` and ``reopened_at``, None if neither) of the account's conversation with our id
        or the channel's, locked until the unit ends; None when the account has no such conversation."""

    def status(self, conversation_id: int) -> str:
        """The conversation's status now."""


class PostgresLifecycleRepository:
    def __init__(self, uow: "UnitOfWork"):
        self.conn = uow.conn

    def locked_conversation(self, account_id, *, conversation_id=None, external_id=None):
        by, ref = ("id", conversation_id) if conversation_id is not None else ("external_id", external_id)
        return self.conn.execute(
            "SELECT id, external_id, contact_id, status, GREATEST(resolved_at, reopened_at) AS last_change "
            f"FROM conversations WHERE {by} = %s AND account_id = %s FOR UPDATE", (ref, account_id)).fetchone()

    def status(self, conversation_id):
        return self.conn.execute("SELECT status FROM conversations WHERE id = %s",
                                 (conversation_id,)).fetchone()["status"]


def change_status(target: "UnitOfWork | psycopg.Connection", *, account_id: int, action: Action,
                  conversation_id: int | None = None, external_id: str | None = None,
                  source: str = "", now: datetime | None = None) -> StatusChange:
    """Resolve or reopen one conversation of ``account_id``, found by our id or
    by the channel's (``external_id``). Raises :class:`ConversationNotFound`."""
    if (conversation_id is None) == (external_id is None):
        raise ValueError("give exactly one of conversation_id and external_id")
    if action not in ("resolve", "reopen"):
        raise ValueError(f"unknown action {action!r}")
    with joined(target) as uow:
        row = uow.lifecycle.locked_conversation(account_id, conversation_id=conversation_id, external_id=external_id)
        if row is None:
            ref = conversation_id if conversation_id is not None else repr(external_id)
            raise ConversationNotFound(f"conversation {ref} not found in account {account_id}")
        if now is not None and row["last_change"] is not None and now < row["last_change"]:
            # a change older than the last one applied (a webhook retried late): stale, ignored
            log.info("conversation %s ignored as stale conversation_id=%d occurred_at=%s last_change=%s",
                     action, row["id"], now.isoformat(), row["last_change"].isoformat())
            return StatusChange(row["id"], row["external_id"], account_id, row["contact_id"], row["status"], False)
        transition = resolve_conversation if action == "resolve" else reopen_conversation
        changed = transition(uow, row["id"], now=now)
        status = uow.lifecycle.status(row["id"])
    log.info("conversation %s conversation_id=%d account_id=%d changed=%s source=%s", action, row["id"],
             account_id, changed, source or "-")
    return StatusChange(row["id"], row["external_id"], account_id, row["contact_id"], status, changed)


def list_conversations(conn: psycopg.Connection, account_id: int, *, contact_id: int | None = None,
                       status: str | None = None, limit: int = 100) -> list[dict]:
    return conn.execute(
        """SELECT c.id, c.external_id, c.account_id, c.inbox_id, c.contact_id, c.unit_id, c.status,
                  c.last_message_at, c.resolved_at, c.reopened_at, c.created_at,
                  (SELECT count(*) FROM messages m WHERE m.conversation_id = c.id) AS messages,
                  e.status AS learning
             FROM conversations c
             LEFT JOIN conversation_extractions e ON e.conversation_id = c.id
            WHERE c.account_id = %(acc)s AND (%(contact)s::bigint IS NULL OR c.contact_id = %(contact)s)
              AND (%(status)s::text IS NULL OR c.status = %(status)s)
            ORDER BY COALESCE(c.last_message_at, c.created_at) DESC, c.id DESC
            LIMIT %(limit)s""",
        dict(acc=account_id, contact=contact_id, status=status, limit=limit)).fetchall()


def decode(record: Record) -> ConversationLifecycleEvent | DeadLetter:
    try:
        data = json.loads(record.value or b"")
    except (ValueError, UnicodeDecodeError) as e:
        return DeadLetter(record, "InvalidJSON", f"value is not valid JSON: {e}")
    try:
        return ConversationLifecycleEvent.model_validate(data)
    except ValidationError as e:
        errs = "; ".join(f"{'.'.join(map(str, x['loc']))}: {x['msg']}" for x in e.errors()[:5])
        return DeadLetter(record, "SchemaValidation", f"not a conversation lifecycle event: {errs}")


class LifecycleEventHandler:
    """``handler(records) -> dead letters`` for ``channel.conversation.events``.

    De-duplicates on ``event_id``; applies events in partition order (the key
    is the conversation, so one conversation's events stay in order). An event
    for a conversation we do not have (or of another account) can never be
    applied: it is dead-lettered with the reason."""

    def __init__(self, pool: ConnectionPool | None, consumer: str = CONSUMER, *,
                 uow: UnitOfWorkFactory | None = None):
        self.unit: UnitOfWorkFactory = uow or (lambda: PostgresUnitOfWork(pool))
        self.consumer = consumer

    def __call__(self, records: Sequence[Record]) -> list[DeadLetter]:
        dead: list[DeadLetter] = []
        decoded: list[tuple[Record, ConversationLifecycleEvent]] = []
        for r in records:
            e = decode(r)
            if isinstance(e, DeadLetter):
                dead.append(e)
            else:
                decoded.append((r, e))
        ids = [f"{e.account_id}:{e.event_id}" for _, e in decoded]
        with self.unit() as uow:
            fresh = uow.processed.unprocessed(self.consumer, ids)
        for (r, e), event_key in zip(decoded, ids):
            if event_key not in fresh:
                metrics.EVENTS_DUPLICATE.labels(r.topic).inc()
                continue
            fresh.discard(event_key)
            with self.unit() as uow:  # the change, its events and the event marked handled: one unit
                try:
                    change_status(uow, account_id=e.account_id, external_id=e.conversation_id,
                                  action="resolve" if e.type == "resolved" else "reopen", source=e.source,
                                  now=e.occurred_at if e.occurred_at.tzinfo else
                                  e.occurred_at.replace(tzinfo=timezone.utc))
                except ConversationNotFound as exc:  # nothing was changed: the unit only marks the event
                    dead.append(DeadLetter(r, "UnknownConversation", str(exc)))
                uow.processed.mark(self.consumer, [event_key])
                uow.commit()
        return dead
