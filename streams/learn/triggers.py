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


def resolve_conversation(target: Target, conversation_id: int, *, now: datetime | None = None) -> bool:
    """Close an open conversation: status ``resolved``, ``resolved_at``, lead
    state cleared, and a ``conversation.resolved`` event, in one unit of work
    (the caller's when it gives one). Returns False when it
    was not open (already resolved or unknown): no event then."""
    now = now or datetime.now(timezone.utc)
    with joined(target) as uow:
        conn = uow.conn
        row = conn.execute(
            "UPDATE conversations SET status = 'resolved', resolved_at = %s, lead_state = '{}'::jsonb "
            "WHERE id = %s AND status = 'open' RETURNING account_id, contact_id",
            (now, conversation_id)).fetchone()
        if row is None:
            return False
        account_id, contact_id = (row["account_id"], row["contact_id"]) if isinstance(row, dict) else row
        uow.add_event(*_event("conversation.resolved", conversation_id, account_id, contact_id, "resolved"))
    log.info("conversation resolved conversation_id=%d account_id=%d", conversation_id, account_id)
    return True


def reopen_conversation(target: Target, conversation_id: int, *, now: datetime | None = None) -> bool:
    """Reopen a resolved conversation: status ``open``, ``reopened_at``, its
    extraction row (if any) set to ``reopened`` so that the next resolution (or
    silence) learns again, from the messages after the last one learnt, and a
    ``conversation.reopened`` event; one transaction. False when it was not
    resolved (already open or unknown): nothing changes."""
    now = now or datetime.now(timezone.utc)
    with joined(target) as uow:
        conn = uow.conn
        row = conn.execute(
            "UPDATE conversations SET status = 'open', resolved_at = NULL, reopened_at = %s "
            "WHERE id = %s AND status = 'resolved' RETURNING account_id, contact_id",
            (now, conversation_id)).fetchone()
        if row is None:
            return False
        account_id, contact_id = (row["account_id"], row["contact_id"]) if isinstance(row, dict) else row
        conn.execute("UPDATE conversation_extractions SET status = 'reopened', next_attempt_at = NULL, "
                     "updated_at = %s WHERE conversation_id = %s AND status IN ('done', 'discarded', 'skipped')",
                     (now, conversation_id))
        conn.execute("DELETE FROM conversation_silences WHERE conversation_id = %s", (conversation_id,))
        uow.add_event(*_event("conversation.reopened", conversation_id, account_id, contact_id, "reopened"))
    log.info("conversation reopened conversation_id=%d account_id=%d", conversation_id, account_id)
    return True


def announce_silent(target: Target, *, now: datetime | None = None, silence: timedelta = SILENCE,
                    limit: int = 500) -> list[int]:
    """Emit ``conversation.silent`` once per open conversation without a
    message for ``silence`` that was neither extracted nor announced yet."""
    now = now or datetime.now(timezone.utc)
    with joined(target) as uow:
        conn = uow.conn
        rows = conn.execute(
            """INSERT INTO conversation_silences (conversation_id, account_id, contact_id, last_message_at,
                                                  announced_at)
               SELECT c.id, c.account_id, c.contact_id, c.last_message_at, %(now)s
               FROM conversations c
               WHERE c.status = 'open' AND c.last_message_at < %(cut)s
                 AND NOT EXISTS (SELECT 1 FROM conversation_extractions e
                                 WHERE e.conversation_id = c.id AND e.status IN ('done', 'discarded'))
                 AND NOT EXISTS (SELECT 1 FROM conversation_silences s WHERE s.conversation_id = c.id)
               ORDER BY c.last_message_at
               LIMIT %(limit)s
               ON CONFLICT (conversation_id) DO NOTHING
               RETURNING conversation_id, account_id, contact_id""",
            dict(now=now, cut=now - silence, limit=limit)).fetchall()
        rows = [r if isinstance(r, dict) else dict(zip(("conversation_id", "account_id", "contact_id"), r))
                for r in rows]
        for r in rows:
            uow.add_event(*_event("conversation.silent", r["conversation_id"], r["account_id"], r["contact_id"],
                                  "silent"))
    if rows:
        log.info("silent conversations announced count=%d", len(rows))
    return [r["conversation_id"] for r in rows]
