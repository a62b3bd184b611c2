"""What starts a learning: a conversation resolved, or silent for too long (docs/architecture.md §4B).

Both write a ``conversation`` outbox event in the same transaction as the
change that causes it, so the event exists if and only if the change does.
"""

from __future__ import annotations

import logging
from datetime import datetime, timedelta, timezone

from schemas.events import ConversationEvent
from streams.store.uow import joined

log = logging.getLogger(__name__)

SILENCE = timedelta(minutes=30)


def _event(type_: str, conversation_id: int, account_id: int, contact_id: int,
           reason: str) -> tuple[str, ConversationEvent]:
    return type_, ConversationEvent(conversation_id=conversation_id, account_id=account_id, contact_id=contact_id,
                                    reason=reason)


# Each function takes ``target``: an open unit of work (the caller commits it with
# its own changes) or a connection (one unit over it, committed here).
Target = "UnitOfWork | psycopg.Connection"


def _transition(target: Target, conversation_id: int, now: datetime | None, change: str, type_: str,
                reason: str) -> bool:
    """One conversation's status change (``uow.learning.<change>``) and its event, in one unit of work."""
    now = now or datetime.now(timezone.utc)
    with joined(target) as uow:
        who = getattr(uow.learning, change)(conversation_id, now=now)
        if who is None:
            return False
        uow.add_event(*_event(type_, conversation_id, *who, reason))
    log.info("conversation %s conversation_id=%d account_id=%d", reason, conversation_id, who[0])
    return True


def resolve_conversation(target: Target, conversation_id: int, *, now: datetime | None = None) -> bool:
    """Close an open conversation: status ``resolved``, ``resolved_at``, lead
    state cleared, and a ``conversation.resolved`` event, in one unit of work
    (the caller's when it gives one). Returns False when it
    was not open (already resolved or unknown): no event then."""
    return _transition(target, conversation_id, now, "resolve", "conversation.resolved", "resolved")


def reopen_conversation(target: Target, conversation_id: int, *, now: datetime | None = None) -> bool:
    """Reopen a resolved conversation: status ``open``, ``reopened_at``, its
    extraction row (if any) set to ``reopened`` so that the next resolution (or
    silence) learns again, from the messages after the last one learnt, and a
    ``conversation.reopened`` event; one transaction. False when it was not
    resolved (already open or unknown): nothing changes."""
    return _transition(target, conversation_id, now, "reopen", "conversation.reopened", "reopened")


def announce_silent(target: Target, *, now: datetime | None = None, silence: timedelta = SILENCE,
                    limit: int = 500) -> list[int]:
    """Emit ``conversation.silent`` once per open conversation without a
    message for ``silence`` that was neither extracted nor announced yet."""
    now = now or datetime.now(timezone.utc)
    with joined(target) as uow:
        rows = uow.learning.mark_silent(now=now, cut=now - silence, limit=limit)
        for r in rows:
            uow.add_event(*_event("conversation.silent", r["conversation_id"], r["account_id"], r["contact_id"],
                                  "silent"))
    if rows:
        log.info("silent conversations announced count=%d", len(rows))
    return [r["conversation_id"] for r in rows]
