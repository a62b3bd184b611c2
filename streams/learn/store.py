"""Postgres repository of the learning flow (the only SQL of ``streams.learn``).

Every function takes an open psycopg connection (dict rows, pgvector
registered) and runs inside the caller's transaction; writes that announce
themselves add their outbox rows on the same connection (docs/architecture.md §2, §3).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Callable, Iterable, Protocol

import numpy as np
import psycopg
from psycopg.types.json import Jsonb

from schemas.events import MemoryEvent
from streams.learn.consolidate import MAX_LIVE_FACTS, Plan, StoredFact, over_cap
from streams.learn.model import Message, Transcript
from streams.outbox.write import OutboxEvent

if TYPE_CHECKING:
    from streams.store.uow import UnitOfWork

#: ``uow.add_event``: how a write announces itself (committed with it).
Emit = Callable[[str, OutboxEvent], None]


# ---------------------------------------------------------------- conversations
@dataclass(frozen=True)
class Conversation:
    id: int
    account_id: int
    contact_id: int
    inbox_id: int | None
    unit_id: int | None
    status: str
    last_message_at: datetime | None = None


def load_conversation(conn: psycopg.Connection, conversation_id: int) -> Conversation | None:
    row = conn.execute(
        "SELECT id, account_id, contact_id, inbox_id, unit_id, status, "
        "COALESCE(last_message_at, (SELECT max(sent_at) FROM messages m WHERE m.conversation_id = c.id), "
        "resolved_at) AS last_message_at FROM conversations c WHERE id = %s",
        (conversation_id,)).fetchone()
    return Conversation(**row) if row else None


def load_transcript(conn: psycopg.Connection, conv: Conversation, *, after_message_id: int | None = None,
                    through_message_id: int | None = None) -> Transcript:
    """The conversation's messages (only those after ``after_message_id``: a
    reopened conversation learns from its new messages only). Reactions are
    left out: they state nothing."""
    rows = conn.execute(
        "SELECT id, role, text, sent_at FROM messages WHERE conversation_id = %s AND id > %s AND id <= %s "
        "AND message_type <> 'reaction' ORDER BY sent_at, id",
        (conv.id, after_message_id or 0, through_message_id if through_message_id is not None else 2**63 - 1)
    ).fetchall()
    return Transcript(conversation_id=conv.id, account_id=conv.account_id, contact_id=conv.contact_id,
                      unit_id=conv.unit_id, inbox_id=conv.inbox_id,
                      messages=[Message(role=r["role"], text=r["text"], sent_at=r["sent_at"]) for r in rows])


def last_message_id(conn: psycopg.Connection, conversation_id: int) -> int | None:
    row = conn.execute("SELECT max(id) AS m FROM messages WHERE conversation_id = %s", (conversation_id,)).fetchone()
    return row["m"] if row else None


def extraction_enabled(conn: psycopg.Connection, account_id: int) -> bool:
    row = conn.execute("SELECT settings FROM accounts WHERE id = %s", (account_id,)).fetchone()
    return bool(row and (row["settings"] or {}).get("memory_extraction_enabled") is True)


# ------------------------------------------------------- extraction bookkeeping
def extraction_state(conn: psycopg.Connection, conversation_id: int, *, for_update: bool = False) -> dict | None:
    sql = "SELECT status, attempts, through_message_id FROM conversation_extractions WHERE conversation_id = %s"
    return conn.execute(sql + (" FOR UPDATE" if for_update else ""), (conversation_id,)).fetchone()


def record_extraction(conn: psycopg.Connection, conv: Conversation, status: str, *, now: datetime,
                      facts: int = 0, error: str | None = None, extractor: str | None = None,
                      next_attempt_at: datetime | None = None, count_attempt: bool = True,
                      through_message_id: int | None = None) -> int:
    """Upsert the conversation's extraction row; returns its attempt count.
    ``through_message_id``: the last message this learning covered (kept when None)."""
    row = conn.execute(
        """INSERT INTO conversation_extractions AS e
               (conversation_id, account_id, contact_id, status, attempts, facts_extracted, last_error,
                extractor, next_attempt_at, updated_at, through_message_id)
           VALUES (%(id)s, %(account)s, %(contact)s, %(status)s, %(inc)s, %(facts)s, %(error)s,
                   %(extractor)s, %(next)s, %(now)s, %(through)s)
           ON CONFLICT (conversation_id) DO UPDATE SET
               status = EXCLUDED.status, attempts = e.attempts + %(inc)s,
               facts_extracted = EXCLUDED.facts_extracted, last_error = EXCLUDED.last_error,
               extractor = COALESCE(EXCLUDED.extractor, e.extractor),
               next_attempt_at = EXCLUDED.next_attempt_at, updated_at = EXCLUDED.updated_at,
               through_message_id = COALESCE(EXCLUDED.through_message_id, e.through_message_id)
           RETURNING attempts""",
        dict(id=conv.id, account=conv.account_id, contact=conv.contact_id, status=status,
             inc=1 if count_attempt else 0, facts=facts, error=(error or None) and error[:2000],
             extractor=extractor, next=next_attempt_at, now=now, through=through_message_id)).fetchone()
    return int(row["attempts"])


def due_retries(conn: psycopg.Connection, now: datetime, limit: int = 20) -> list[int]:
    return [r["conversation_id"] for r in conn.execute(
        "SELECT conversation_id FROM conversation_extractions WHERE status = 'failed' "
        "AND next_attempt_at <= %s ORDER BY next_attempt_at LIMIT %s", (now, limit)).fetchall()]


# ------------------------------------------------------------------- memories
def contact_lock_key(account_id: int, contact_id: int) -> int:
    """The advisory-lock key of one contact's memory."""
    return int.from_bytes(hashlib.blake2b(f"memoria.contact:{account_id}:{contact_id}".encode(),
                                          digest_size=8).digest(), "big", signed=True)


def lock_contact(conn: psycopg.Connection, account_id: int, contact_id: int) -> None:
    """Serialise consolidations of one contact (transaction-scoped). Held only for
    the short apply step: no model is called under it (``learn.py``)."""
    conn.execute("SELECT pg_advisory_xact_lock(%s)", (contact_lock_key(account_id, contact_id),))


def as_array(value) -> np.ndarray | None:
    """A pgvector value (``Vector``, list or array) as float32, or None."""
    if value is None:
        return None
    if hasattr(value, "to_numpy"):
        value = value.to_numpy()
    return np.asarray(value, dtype=np.float32)


_FACT_COLUMNS = """id, memory_type, memory_key, content, normalized_value, confidence, embedding,
                  last_verified_at, source_conversation_id, supporting_conversation_ids, observed_at"""


def live_facts(conn: psycopg.Connection, account_id: int, contact_id: int) -> list[StoredFact]:
    rows = conn.execute(
        f"""SELECT {_FACT_COLUMNS} FROM contact_memories
           WHERE account_id = %s AND contact_id = %s AND deleted_at IS NULL AND superseded_at IS NULL
           ORDER BY last_verified_at DESC, id DESC""", (account_id, contact_id)).fetchall()
    return _stored(rows)


def facts_learnt_from(conn: psycopg.Connection, account_id: int, contact_id: int, conversation_id: int
                      ) -> list[StoredFact]:
    """Every fact a conversation produced or supported, live or not."""
    rows = conn.execute(
        f"""SELECT {_FACT_COLUMNS} FROM contact_memories
           WHERE account_id = %s AND contact_id = %s
             AND (source_conversation_id = %s OR %s = ANY(supporting_conversation_ids))""",
        (account_id, contact_id, conversation_id, conversation_id)).fetchall()
    return _stored(rows)


def _stored(rows: list[dict]) -> list[StoredFact]:
    return [StoredFact(id=r["id"], memory_type=r["memory_type"], memory_key=r["memory_key"], content=r["content"],
                       normalized_value=r["normalized_value"] or "", confidence=float(r["confidence"]),
                       embedding=as_array(r["embedding"]),
                       last_verified_at=r["last_verified_at"], source_conversation_id=r["source_conversation_id"],
                       supporting_conversation_ids=list(r["supporting_conversation_ids"] or []),
                       observed_at=r.get("observed_at"))
            for r in rows]


def memory_event(type_: str, memory_id: int, account_id: int, contact_id: int) -> tuple[str, MemoryEvent]:
    return type_, MemoryEvent(memory_id=memory_id, account_id=account_id, contact_id=contact_id)


@dataclass
class Applied:
    created: list[int] = field(default_factory=list)
    reinforced: list[int] = field(default_factory=list)
    superseded: list[tuple[int, int, str, str]] = field(default_factory=list)  # (old, new, type, reason)


def apply_plan(conn: psycopg.Connection, plan: Plan, conv: Conversation, *, now: datetime, emit: Emit,
               metadata: dict, embedding_model: str | None, observed_at: datetime | None = None) -> Applied:
    out = Applied()
    events = []
    for r in plan.reinforce:
        conn.execute(
            """UPDATE contact_memories SET
                   last_verified_at = %(now)s, confidence = GREATEST(confidence, %(conf)s),
                   supporting_conversation_ids = array_append(supporting_conversation_ids, %(conv)s::bigint),
                   expires_at = %(exp)s, weight = 1.0, updated_at = %(now)s,
                   embedding = COALESCE(embedding, %(emb)s),
                   embedding_model = CASE WHEN embedding IS NULL AND %(emb)s::vector IS NOT NULL
                                          THEN %(model)s ELSE embedding_model END
               WHERE id = %(id)s""",
            dict(now=now, conf=r.confidence, conv=conv.id, exp=r.expires_at, id=r.memory_id,
                 emb=r.fill_embedding, model=embedding_model))
        out.reinforced.append(r.memory_id)
        events.append(memory_event("memory.reinforced", r.memory_id, conv.account_id, conv.contact_id))
    new_ids: list[int] = []
    for ins in plan.inserts:
        f = ins.fact
        row = conn.execute(
            """INSERT INTO contact_memories
                   (account_id, contact_id, memory_type, memory_key, content, normalized_value, evidence,
                    confidence, scope, embedding, embedding_model, source_conversation_id, source_unit_id,
                    source_inbox_id, supporting_conversation_ids, expires_at, last_verified_at, metadata,
                    created_at, updated_at, observed_at, superseded_at, superseded_by_id)
               VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, ARRAY[%s]::bigint[], %s, %s,
                       %s::jsonb, %s, %s, %s, %s, %s)
               RETURNING id""",
            (conv.account_id, conv.contact_id, f.memory_type, f.memory_key, f.content, f.normalized_value or "",
             f.evidence, f.confidence, ins.scope, ins.embedding,
             embedding_model if ins.embedding is not None else None, conv.id, conv.unit_id, conv.inbox_id,
             conv.id, ins.expires_at, now, json.dumps(metadata), now, now, observed_at or now,
             now if ins.superseded_by else None, ins.superseded_by)).fetchone()
        new_ids.append(row["id"])
        events.append(memory_event("memory.created", row["id"], conv.account_id, conv.contact_id))
        if ins.superseded_by:
            out.superseded.append((row["id"], ins.superseded_by, f.memory_type, "stated before the live fact"))
            events.append(memory_event("memory.superseded", row["id"], conv.account_id, conv.contact_id))
    out.created = new_ids
    for s in plan.supersede:
        new_id = new_ids[s.new_index]
        n = conn.execute(
            "UPDATE contact_memories SET superseded_at = %s, superseded_by_id = %s, updated_at = %s "
            "WHERE id = %s AND superseded_at IS NULL", (now, new_id, now, s.old_id)).rowcount
        if n:
            out.superseded.append((s.old_id, new_id, s.memory_type, s.reason))
            events.append(memory_event("memory.superseded", s.old_id, conv.account_id, conv.contact_id))
    for type_, event in events:
        emit(type_, event)
    return out


def soft_delete(conn: psycopg.Connection, ids: Iterable[int], account_id: int, contact_id: int, *,
                now: datetime, emit: Emit, reason: str, actor: str = "system",
                drop_embedding: bool = False) -> list[int]:
    """Soft-delete facts (invisible to recall at once) and announce it."""
    ids = list(ids)
    if not ids:
        return []
    audit = json.dumps({"deleted": {"by": actor, "at": now.isoformat(), "reason": reason}})
    rows = conn.execute(
        f"""UPDATE contact_memories SET deleted_at = %s, updated_at = %s, metadata = metadata || %s::jsonb
                {', embedding = NULL, embedding_model = NULL' if drop_embedding else ''}
            WHERE account_id = %s AND contact_id = %s AND id = ANY(%s) AND deleted_at IS NULL
            RETURNING id""", (now, now, audit, account_id, contact_id, ids)).fetchall()
    done = [r["id"] for r in rows]
    for i in done:
        emit(*memory_event("memory.deleted", i, account_id, contact_id))
    return done


def enforce_cap(conn: psycopg.Connection, account_id: int, contact_id: int, *, now: datetime, emit: Emit,
                cap: int = MAX_LIVE_FACTS, dry_run: bool = False) -> list[int]:
    """Soft-delete the least recently verified live facts beyond ``cap``."""
    rows = conn.execute(
        "SELECT id, last_verified_at FROM contact_memories WHERE account_id = %s AND contact_id = %s "
        "AND deleted_at IS NULL AND superseded_at IS NULL", (account_id, contact_id)).fetchall()
    victims = over_cap([(r["id"], r["last_verified_at"]) for r in rows], cap)
    if dry_run:
        return victims
    return soft_delete(conn, victims, account_id, contact_id, now=now, emit=emit, reason="cap")


# ----------------------------------------------------------------- embeddings
def unembedded(conn: psycopg.Connection, model: str, limit: int) -> list[dict]:
    """Live facts without an embedding of ``model`` (final failure, or a new model)."""
    return conn.execute(
        "SELECT id, content FROM contact_memories WHERE deleted_at IS NULL AND superseded_at IS NULL "
        "AND (embedding IS NULL OR embedding_model IS DISTINCT FROM %s) ORDER BY id LIMIT %s",
        (model, limit)).fetchall()


def set_embedding(conn: psycopg.Connection, memory_id: int, content: str, vector: np.ndarray, model: str) -> bool:
    return bool(conn.execute(
        "UPDATE contact_memories SET embedding = %s, embedding_model = %s, updated_at = now() "
        "WHERE id = %s AND content = %s AND deleted_at IS NULL", (vector, model, memory_id, content)).rowcount)


def count_live(conn: psycopg.Connection) -> int:
    return int(conn.execute("SELECT count(*) AS n FROM contact_memories "
                            "WHERE deleted_at IS NULL AND superseded_at IS NULL").fetchone()["n"])


# --------------------------------------------------- the learning repository
class LearningRepository(Protocol):
    """What the learning flow reads and writes, inside a unit of work (``uow.learning``).

    ``PostgresLearningRepository`` is the SQL above on the unit's connection;
    ``streams.store.fake_uow`` implements it in memory for unit tests.
    """

    def conversation(self, conversation_id: int) -> Conversation | None: ...
    def extraction_state(self, conversation_id: int, *, for_update: bool = False) -> dict | None: ...
    def extraction_enabled(self, account_id: int) -> bool: ...
    def record_extraction(self, conv: Conversation, status: str, *, now: datetime, **kw) -> int: ...
    def due_retries(self, now: datetime, limit: int = 20) -> list[int]: ...
    def last_message_id(self, conversation_id: int) -> int | None: ...
    def transcript(self, conv: Conversation, *, after_message_id: int | None = None,
                   through_message_id: int | None = None) -> Transcript: ...
    def lock_contact(self, account_id: int, contact_id: int) -> None: ...
    def erased_or_gone(self, conv: Conversation, erasure_key: str | None) -> bool: ...
    def live_facts(self, account_id: int, contact_id: int) -> list[StoredFact]: ...
    def facts_learnt_from(self, account_id: int, contact_id: int, conversation_id: int) -> list[StoredFact]: ...
    def apply_plan(self, plan: Plan, conv: Conversation, *, now: datetime, metadata: dict,
                   embedding_model: str | None, observed_at: datetime | None = None) -> Applied: ...
    def enforce_cap(self, account_id: int, contact_id: int, *, now: datetime, cap: int = MAX_LIVE_FACTS,
                    dry_run: bool = False) -> list[int]: ...
    def soft_delete(self, ids: Iterable[int], account_id: int, contact_id: int, *, now: datetime, reason: str,
                    actor: str = "system", drop_embedding: bool = False) -> list[int]: ...
    def record_calls(self, calls: list) -> int: ...
    def unembedded(self, model: str, limit: int) -> list[dict]: ...
    def set_embedding(self, memory_id: int, content: str, vector: np.ndarray, model: str) -> bool: ...
    # forgetting and aging
    def contact_of_memory(self, account_id: int, memory_id: int) -> int | None: ...
    def memory_ids(self, account_id: int, contact_id: int) -> list[int]: ...
    def expired(self, now: datetime) -> list[dict]: ...
    def age(self, delete_ids: list[int], reduce_ids: list[int], *, now: datetime, weight: float) -> None: ...
    def crowded(self, cap: int) -> list[tuple[int, int]]: ...
    def hard_delete(self, before: datetime, *, dry_run: bool) -> dict[int, int]: ...
    # restoring a forgotten fact (streams/maintain/forget.py restore_memory)
    def memory_content(self, account_id: int, memory_id: int) -> str | None:
        """The content of a fact of the account (deleted or not), None when there is none."""
    def locked_memory(self, account_id: int, memory_id: int) -> dict | None:
        """The fact's row, locked (id, contact_id, memory_type, memory_key, content, normalized_value,
        deleted_at, superseded_at, observed_at, metadata), None when the account has no such fact."""
    def restore(self, memory_id: int, *, vector, embedding_model: str | None, now: datetime,
                superseded_by: int | None, audit: dict) -> None:
        """Undelete the fact with its new embedding and ``audit`` merged into its metadata; superseded
        by ``superseded_by`` at ``now`` when given."""
    def supersede(self, ids: list[int], by_id: int, *, now: datetime) -> None:
        """The live facts among ``ids`` superseded by ``by_id`` at ``now``."""
    def edit_content(self, memory_id: int, content: str, *, vector, embedding_model: str | None, now: datetime,
                     edits: list[dict]) -> None:
        """An operator's edit (streams/admin/memories.py): the new content and embedding, ``edits`` (the
        audit trail, newest last) in its metadata."""
    # what starts a learning (streams/learn/triggers.py): (account_id, contact_id) of the changed conversation
    def resolve(self, conversation_id: int, *, now: datetime) -> tuple[int, int] | None:
        """An open conversation: ``resolved`` at ``now``, lead state cleared; None when it was not open."""
    def reopen(self, conversation_id: int, *, now: datetime) -> tuple[int, int] | None:
        """A resolved conversation: ``open``, ``reopened_at``, its finished extraction ``reopened`` (the next
        trigger learns again from what follows), its silence forgotten; None when it was not resolved."""
    def mark_silent(self, *, now: datetime, cut: datetime, limit: int) -> list[dict]:
        """Track (once) the open conversations silent since ``cut`` that were neither extracted nor
        announced; their ``conversation_id``, ``account_id``, ``contact_id``."""


class PostgresLearningRepository:
    """``LearningRepository`` over a ``PostgresUnitOfWork``'s connection; events go to ``uow.add_event``."""

    def __init__(self, uow: "UnitOfWork"):
        self.uow, self.conn = uow, uow.conn

    def conversation(self, conversation_id):
        return load_conversation(self.conn, conversation_id)

    def extraction_state(self, conversation_id, *, for_update=False):
        return extraction_state(self.conn, conversation_id, for_update=for_update)

    def extraction_enabled(self, account_id):
        return extraction_enabled(self.conn, account_id)

    def record_extraction(self, conv, status, *, now, **kw):
        return record_extraction(self.conn, conv, status, now=now, **kw)

    def due_retries(self, now, limit=20):
        return due_retries(self.conn, now, limit)

    def last_message_id(self, conversation_id):
        return last_message_id(self.conn, conversation_id)

    def transcript(self, conv, *, after_message_id=None, through_message_id=None):
        return load_transcript(self.conn, conv, after_message_id=after_message_id,
                               through_message_id=through_message_id)

    def lock_contact(self, account_id, contact_id):
        lock_contact(self.conn, account_id, contact_id)

    def erased_or_gone(self, conv, erasure_key):
        from streams.maintain.erasure import is_erased

        return is_erased(self.conn, conv.account_id, contact_id=conv.contact_id, key=erasure_key) or self.conn.execute(
            "SELECT 1 FROM conversations WHERE id = %s", (conv.id,)).fetchone() is None

    def live_facts(self, account_id, contact_id):
        return live_facts(self.conn, account_id, contact_id)

    def facts_learnt_from(self, account_id, contact_id, conversation_id):
        return facts_learnt_from(self.conn, account_id, contact_id, conversation_id)

    def apply_plan(self, plan, conv, *, now, metadata, embedding_model, observed_at=None):
        return apply_plan(self.conn, plan, conv, now=now, emit=self.uow.add_event, metadata=metadata,
                          embedding_model=embedding_model, observed_at=observed_at)

    def enforce_cap(self, account_id, contact_id, *, now, cap=MAX_LIVE_FACTS, dry_run=False):
        return enforce_cap(self.conn, account_id, contact_id, now=now, emit=self.uow.add_event, cap=cap,
                           dry_run=dry_run)

    def soft_delete(self, ids, account_id, contact_id, *, now, reason, actor="system", drop_embedding=False):
        return soft_delete(self.conn, ids, account_id, contact_id, now=now, emit=self.uow.add_event, reason=reason,
                           actor=actor, drop_embedding=drop_embedding)

    def record_calls(self, calls):
        from streams.pricing import write_ledger

        return write_ledger(self.conn, calls)

    def unembedded(self, model: str, limit: int) -> list[dict]:
        return unembedded(self.conn, model, limit)

    def set_embedding(self, memory_id: int, content: str, vector: np.ndarray, model: str) -> bool:
        return set_embedding(self.conn, memory_id, content, vector, model)

    def contact_of_memory(self, account_id, memory_id):
        row = self.conn.execute("SELECT contact_id FROM contact_memories WHERE id = %s AND account_id = %s "
                                "AND deleted_at IS NULL", (memory_id, account_id)).fetchone()
        return row["contact_id"] if row else None

    def memory_ids(self, account_id, contact_id):
        return [r["id"] for r in self.conn.execute(
            "SELECT id FROM contact_memories WHERE account_id = %s AND contact_id = %s AND deleted_at IS NULL",
            (account_id, contact_id)).fetchall()]

    def expired(self, now):
        return self.conn.execute(
            "SELECT id, account_id, contact_id, memory_type, weight, superseded_at FROM contact_memories "
            "WHERE deleted_at IS NULL AND expires_at IS NOT NULL AND expires_at <= %s ORDER BY id FOR UPDATE",
            (now,)).fetchall()

    def age(self, delete_ids, reduce_ids, *, now, weight):
        audit = json.dumps({"deleted": {"by": "aging", "at": now.isoformat(), "reason": "ttl"}})
        self.conn.execute("UPDATE contact_memories SET deleted_at = %s, updated_at = %s, "
                          "metadata = metadata || %s::jsonb WHERE id = ANY(%s)", (now, now, audit, delete_ids))
        self.conn.execute("UPDATE contact_memories SET weight = LEAST(weight, %s), updated_at = %s "
                          "WHERE id = ANY(%s)", (weight, now, reduce_ids))

    def crowded(self, cap):
        return [(r["account_id"], r["contact_id"]) for r in self.conn.execute(
            "SELECT account_id, contact_id FROM contact_memories WHERE deleted_at IS NULL AND superseded_at IS NULL "
            "GROUP BY account_id, contact_id HAVING count(*) > %s", (cap,)).fetchall()]

    def hard_delete(self, before, *, dry_run):
        from collections import Counter

        if dry_run:
            rows = self.conn.execute("SELECT account_id, count(*) AS n FROM contact_memories WHERE deleted_at < %s "
                                     "GROUP BY account_id", (before,)).fetchall()
            return {r["account_id"]: int(r["n"]) for r in rows}
        rows = self.conn.execute("DELETE FROM contact_memories WHERE deleted_at < %s RETURNING account_id",
                                 (before,)).fetchall()
        return dict(Counter(r["account_id"] for r in rows))

    # -- restore -------------------------------------------------------------
    def memory_content(self, account_id, memory_id):
        row = self.conn.execute("SELECT content FROM contact_memories WHERE id = %s AND account_id = %s",
                                (memory_id, account_id)).fetchone()
        return None if row is None else row["content"]

    def locked_memory(self, account_id, memory_id):
        return self.conn.execute(
            "SELECT id, contact_id, memory_type, memory_key, content, normalized_value, deleted_at, "
            "superseded_at, observed_at, metadata FROM contact_memories "
            "WHERE id = %s AND account_id = %s FOR UPDATE", (memory_id, account_id)).fetchone()

    def restore(self, memory_id, *, vector, embedding_model, now, superseded_by, audit):
        self.conn.execute(
            "UPDATE contact_memories SET deleted_at = NULL, embedding = %s, embedding_model = %s, updated_at = %s, "
            "superseded_at = CASE WHEN %s::bigint IS NULL THEN superseded_at ELSE %s END, "
            "superseded_by_id = COALESCE(%s::bigint, superseded_by_id), metadata = metadata || %s WHERE id = %s",
            (vector, embedding_model, now, superseded_by, now, superseded_by, Jsonb(audit), memory_id))

    def edit_content(self, memory_id, content, *, vector, embedding_model, now, edits):
        self.conn.execute(
            "UPDATE contact_memories SET content = %s, embedding = %s, embedding_model = %s, updated_at = %s, "
            "metadata = metadata || %s WHERE id = %s",
            (content, vector, embedding_model, now, Jsonb({"edits": edits}), memory_id))

    def supersede(self, ids, by_id, *, now):
        self.conn.execute("UPDATE contact_memories SET superseded_at = %s, superseded_by_id = %s, updated_at = %s "
                          "WHERE id = ANY(%s) AND superseded_at IS NULL", (now, by_id, now, list(ids)))

    # -- triggers ------------------------------------------------------------
    def resolve(self, conversation_id, *, now):
        return _pair(self.conn.execute(
            "UPDATE conversations SET status = 'resolved', resolved_at = %s, lead_state = '{}'::jsonb "
            "WHERE id = %s AND status = 'open' RETURNING account_id, contact_id",
            (now, conversation_id)).fetchone())

    def reopen(self, conversation_id, *, now):
        who = _pair(self.conn.execute(
            "UPDATE conversations SET status = 'open', resolved_at = NULL, reopened_at = %s "
            "WHERE id = %s AND status = 'resolved' RETURNING account_id, contact_id",
            (now, conversation_id)).fetchone())
        if who is not None:
            self.conn.execute("UPDATE conversation_extractions SET status = 'reopened', next_attempt_at = NULL, "
                              "updated_at = %s WHERE conversation_id = %s "
                              "AND status IN ('done', 'discarded', 'skipped')", (now, conversation_id))
            self.conn.execute("DELETE FROM conversation_silences WHERE conversation_id = %s", (conversation_id,))
        return who

    def mark_silent(self, *, now, cut, limit):
        rows = self.conn.execute(
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
            dict(now=now, cut=cut, limit=limit)).fetchall()
        return [r if isinstance(r, dict) else dict(zip(("conversation_id", "account_id", "contact_id"), r))
                for r in rows]


def _pair(row) -> tuple[int, int] | None:
    """(account_id, contact_id) of a RETURNING row (a dict row or a tuple row), or None."""
    if row is None:
        return None
    return (row["account_id"], row["contact_id"]) if isinstance(row, dict) else (row[0], row[1])


