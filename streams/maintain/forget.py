"""Forgetting and erasure (LGPD/GDPR, docs/architecture.md §4E).

- ``forget_memory``: one fact soft-deleted now (recall filters
  ``deleted_at IS NULL``, so it is invisible at once); its embedding is
  cleared immediately and the row goes with the daily hard delete after 30
  days.
- ``forget_contact``: the same for every fact of a contact, history
  (superseded facts) included; a ``contact.forgotten`` event.
- ``restore_memory``: undoes a forget within ``RESTORE_WINDOW_DAYS`` (before the
  daily hard delete): the fact is re-embedded and contradiction-checked again
  against the contact's live facts (a newer contradicting live fact keeps it in
  history; an older one is superseded by it).
- ``erase_contact``: removes, now and for good, the contact's transcripts
  (messages, conversations), facts (with their pgvector embeddings), the
  extraction and silence bookkeeping, its outbox events and the contact
  row; a ``contact.erased`` event (ids only). Qdrant holds knowledge chunks
  only (no contact data), so there is nothing of a contact to remove there.
- ``verify_erasure``: counts what is left of a contact in every table that
  has a ``contact_id`` column (found in the catalog, so a table added later
  is checked too) plus messages and the contact row.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone

import psycopg

from schemas.events import ContactEvent
from streams.learn import store
from streams.maintain.erasure import ledger_entry  # and ``uow.erasure``, which that module registers
from streams.store.uow import joined

log = logging.getLogger(__name__)


def _now(now: datetime | None) -> datetime:
    return now or datetime.now(timezone.utc)


def _contact_event(type_: str, account_id: int, contact_id: int) -> tuple[str, ContactEvent]:
    return type_, ContactEvent(account_id=account_id, contact_id=contact_id)


# Every function below takes ``target``: an open unit of work (the caller commits
# it with its own changes) or a connection (one unit over it, committed here).
Target = "UnitOfWork | psycopg.Connection"


def forget_memory(target: Target, account_id: int, memory_id: int, *, actor: str = "cli",
                  now: datetime | None = None) -> bool:
    """Soft-delete one fact of ``account_id``. False when no such live fact."""
    now = _now(now)
    with joined(target) as uow:
        contact_id = uow.learning.contact_of_memory(account_id, memory_id)
        if contact_id is None:
            return False
        done = uow.learning.soft_delete([memory_id], account_id, contact_id, now=now, reason="forget",
                                        actor=actor, drop_embedding=True)
    log.info('memory forgotten account_id=%d memory_id=%d actor="%s"', account_id, memory_id, actor)
    return bool(done)


RESTORE_WINDOW_DAYS = 30


@dataclass
class Restored:
    memory_id: int
    contact_id: int
    status: str                                  # "active" or "superseded"
    superseded: list[int] = field(default_factory=list)   # live facts it replaced
    superseded_by: int | None = None             # the newer live fact that keeps it in history
    embedded: bool = False


def restore_memory(target: Target, account_id: int, memory_id: int, *, actor: str, embedder,
                   checker, llm_model: str = "", now: datetime | None = None, prices=None) -> Restored:
    """Undo the soft delete of one fact of ``account_id`` (one function for the API, the CLI and the console).

    Raises LookupError when the account has no such fact (or it was hard-deleted) and ValueError when it
    is not deleted or was deleted more than ``RESTORE_WINDOW_DAYS`` ago. The restored fact is re-embedded
    (a failed embedding leaves it NULL, like any fact: the re-embed timer retries) and checked for
    contradictions with the contact's live facts of its type, settled by when each was stated. ``prices``:
    the cost table (``Container.prices``; None: the built-in one)."""
    from streams.embedding import tokens as embedding_tokens
    from streams.learn.consolidate import CANDIDATE_DISTANCE, MAX_CANDIDATES
    from streams.learn.contradiction import MemoryView, select_candidates
    from streams.learn.embed import embed_contents
    from streams.learn.model import TokenUsage
    from streams.pricing import count_metrics, model_call

    now = _now(now)
    with joined(target) as uow:  # read only
        content = uow.learning.memory_content(account_id, memory_id)
    if content is None:
        raise LookupError(memory_id)
    paid = embedding_tokens.collect()
    [vec] = embed_contents(embedder, [content])   # slow part, outside the transaction
    embedding_call = model_call(account_id, "embedding", embedder.name if embedder else "",
                                embedding_tokens.usage(paid), table=prices)
    usage = TokenUsage()
    with joined(target) as uow:
        repo = uow.learning
        r = repo.locked_memory(account_id, memory_id)
        if r is None:
            raise LookupError(memory_id)
        if r["deleted_at"] is None:
            raise ValueError(f"memory {memory_id} is not forgotten")
        if r["deleted_at"] < now - timedelta(days=RESTORE_WINDOW_DAYS):
            raise ValueError(f"memory {memory_id} was forgotten more than {RESTORE_WINDOW_DAYS} days ago")
        contact_id = r["contact_id"]
        repo.lock_contact(account_id, contact_id)
        out = Restored(memory_id, contact_id, "superseded" if r["superseded_at"] else "active",
                       embedded=vec is not None)
        restored_view = MemoryView(memory_type=r["memory_type"], content=r["content"], memory_key=r["memory_key"],
                                   normalized_value=r["normalized_value"] or None)
        stated = r["observed_at"]
        if r["superseded_at"] is None:
            live = repo.live_facts(account_id, contact_id)
            if vec is not None:
                candidates = select_candidates(vec, live, r["memory_type"], max_distance=CANDIDATE_DISTANCE,
                                               limit=MAX_CANDIDATES)
            else:
                candidates = [f for f in live if f.memory_type == r["memory_type"]
                              and f.memory_key == r["memory_key"]][:MAX_CANDIDATES]
            for old in candidates:
                verdict = checker.check(MemoryView(memory_type=old.memory_type, content=old.content,
                                                   memory_key=old.memory_key,
                                                   normalized_value=old.normalized_value or None), restored_view)
                usage = usage + verdict.usage
                if not verdict.contradicts:
                    continue
                if old.observed_at is not None and stated is not None and stated < old.observed_at:
                    out.status, out.superseded_by = "superseded", old.id   # the newer statement stays current
                    break
                out.superseded.append(old.id)
        repo.restore(memory_id, vector=vec,
                     embedding_model=embedder.name if (vec is not None and embedder is not None) else None,
                     now=now, superseded_by=out.superseded_by,
                     audit={"restored": {"by": actor, "at": now.isoformat()}})
        events = [store.memory_event("memory.updated", memory_id, account_id, contact_id)]
        if out.superseded:
            repo.supersede(out.superseded, memory_id, now=now)
            events += [store.memory_event("memory.superseded", i, account_id, contact_id) for i in out.superseded]
        if out.superseded_by:
            events.append(store.memory_event("memory.superseded", memory_id, account_id, contact_id))
        for event in events:
            uow.add_event(*event)
        call = model_call(account_id, "contradiction", llm_model, usage, table=prices)
        repo.record_calls([call, embedding_call])
    count_metrics(call)
    count_metrics(embedding_call)
    log.info('memory restored account_id=%d memory_id=%d status=%s superseded=%s actor="%s"', account_id,
             memory_id, out.status, out.superseded, actor)
    return out


def forget_contact(target: Target, account_id: int, contact_id: int, *, actor: str = "cli",
                   now: datetime | None = None) -> int:
    """Soft-delete every fact of a contact (history included); returns how many."""
    now = _now(now)
    with joined(target) as uow:
        ids = uow.learning.memory_ids(account_id, contact_id)
        done = uow.learning.soft_delete(ids, account_id, contact_id, now=now, reason="forget_contact",
                                        actor=actor, drop_embedding=True)
        uow.add_event(*_contact_event("contact.forgotten", account_id, contact_id))
    log.info('contact forgotten account_id=%d contact_id=%d facts=%d actor="%s"', account_id, contact_id,
             len(done), actor)
    return len(done)


def erase_contact(target: Target, account_id: int, contact_id: int, *, key: str) -> dict[str, int]:
    """Remove everything of a contact now and add it to the erasure ledger (so
    that no replayed or late record brings it back); returns the rows deleted
    per table."""
    with joined(target) as uow:
        counts = uow.erasure.erase_contact(account_id, contact_id, key=key)
        uow.add_event(*_contact_event("contact.erased", account_id, contact_id))
    log.info("contact erased account_id=%d contact_id=%d %s", account_id, contact_id,
             " ".join(f"{k}={v}" for k, v in counts.items()))
    return counts


def vacuum_after_erasure(database_url: str) -> None:
    """Reclaim the deleted tuples now (their pgvector/HNSW entries included)."""
    with psycopg.connect(database_url, autocommit=True) as c:
        c.execute("VACUUM contact_memories, messages, conversations")


def _contact_tables(conn: psycopg.Connection) -> list[tuple[str, bool]]:
    rows = conn.execute(
        """SELECT c.table_name,
                  bool_or(a.column_name IS NOT NULL) AS has_account
           FROM information_schema.columns c
           LEFT JOIN information_schema.columns a
             ON a.table_schema = c.table_schema AND a.table_name = c.table_name AND a.column_name = 'account_id'
           JOIN information_schema.tables t
             ON t.table_schema = c.table_schema AND t.table_name = c.table_name AND t.table_type = 'BASE TABLE'
           WHERE c.table_schema = current_schema() AND c.column_name = 'contact_id'
           GROUP BY c.table_name ORDER BY c.table_name""").fetchall()
    return [(r["table_name"], r["has_account"]) for r in rows]


def proof_of_erasure(conn: psycopg.Connection, account_id: int, contact_id: int, *, key: str,
                     vector_store=None) -> dict:
    """What an operator files: the ledger entry (when, counts removed), what is left
    in Postgres (every table with a contact_id, messages, outbox), in pgvector and
    in Qdrant (every collection scanned for points of the contact), and a timestamp.
    ``erased`` is true only when the ledger holds the contact and nothing is left."""
    left = verify_erasure(conn, account_id, contact_id)
    pgvector_left = int(conn.execute(
        "SELECT count(*) AS n FROM contact_memories WHERE account_id = %s AND contact_id = %s "
        "AND embedding IS NOT NULL", (account_id, contact_id)).fetchone()["n"])
    ledger = ledger_entry(conn, account_id, contact_id, key=key)
    qdrant: dict = {"checked": False}
    if vector_store is not None:
        collections = sorted(vector_store.list_collections())
        scanned = found = 0
        for name in collections:
            points = vector_store.scroll(name, account_id)
            scanned += len(points)
            found += sum(1 for p in points.values() if str(p.get("contact_id", "")) == str(contact_id))
        qdrant = {"checked": True, "collections": collections, "points_scanned": scanned,
                  "points_of_contact": found}
    remaining = {k: v for k, v in left.items() if v}
    erased = (ledger is not None and not remaining and pgvector_left == 0
              and not qdrant.get("points_of_contact"))
    return {"account_id": account_id, "contact_id": contact_id, "erased": erased,
            "ledger": ledger, "removed": (ledger or {}).get("removed", {}),
            "postgres": {"remaining": remaining, "tables_checked": sorted(left)},
            "pgvector": {"embeddings_remaining": pgvector_left},
            "qdrant": qdrant,
            "verified_at": datetime.now(timezone.utc).isoformat()}


def verify_erasure(conn: psycopg.Connection, account_id: int, contact_id: int) -> dict[str, int]:
    """Rows left of a contact, per table (all zero when the erasure is complete)."""
    left: dict[str, int] = {}
    for table, has_account in _contact_tables(conn):
        where = "contact_id = %s" + (" AND account_id = %s" if has_account else "")
        args = (contact_id, account_id) if has_account else (contact_id,)
        left[table] = int(conn.execute(f'SELECT count(*) AS n FROM "{table}" WHERE {where}', args).fetchone()["n"])
    left["contacts"] = int(conn.execute("SELECT count(*) AS n FROM contacts WHERE account_id = %s AND id = %s",
                                        (account_id, contact_id)).fetchone()["n"])
    left["messages"] = int(conn.execute(
        "SELECT count(*) AS n FROM messages m JOIN conversations c ON c.id = m.conversation_id "
        "WHERE c.account_id = %s AND c.contact_id = %s", (account_id, contact_id)).fetchone()["n"])
    left["outbox"] = int(conn.execute(
        "SELECT count(*) AS n FROM outbox WHERE aggregatetype IN ('conversation', 'memory', 'contact') "
        "AND type <> 'contact.erased' AND payload->>'account_id' = %s AND payload->>'contact_id' = %s",
        (str(account_id), str(contact_id))).fetchone()["n"])
    return left
