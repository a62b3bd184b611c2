"""Forgetting and erasure (LGPD/GDPR, docs/architecture.md §4E).

- ``forget_memory``: one fact soft-deleted now (recall filters
  ``deleted_at IS NULL``, so it is invisible at once); its embedding is
  cleared immediately and the row goes with the daily hard delete after 30
  days.
- ``forget_contact``: the same for every fact of a contact, history
  (superseded facts) included; a ``contact.forgotten`` event.
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
from datetime import datetime, timezone

import psycopg

from streams.learn import store
from streams.outbox.write import add_events, outbox_row

log = logging.getLogger(__name__)


def _now(now: datetime | None) -> datetime:
    return now or datetime.now(timezone.utc)


def _contact_event(type_: str, account_id: int, contact_id: int) -> tuple:
    return outbox_row("contact", f"{account_id}:{contact_id}", type_,
                      {"schema_version": 1, "account_id": account_id, "contact_id": contact_id})


def forget_memory(conn: psycopg.Connection, account_id: int, memory_id: int, *, actor: str = "cli",
                  now: datetime | None = None) -> bool:
    """Soft-delete one fact of ``account_id``. False when no such live fact."""
    now = _now(now)
    with conn.transaction():
        row = conn.execute("SELECT contact_id FROM contact_memories WHERE id = %s AND account_id = %s "
                           "AND deleted_at IS NULL", (memory_id, account_id)).fetchone()
        if row is None:
            return False
        done = store.soft_delete(conn, [memory_id], account_id, row["contact_id"], now=now, reason="forget",
                                 actor=actor, drop_embedding=True)
    log.info('memory forgotten account_id=%d memory_id=%d actor="%s"', account_id, memory_id, actor)
    return bool(done)


def forget_contact(conn: psycopg.Connection, account_id: int, contact_id: int, *, actor: str = "cli",
                   now: datetime | None = None) -> int:
    """Soft-delete every fact of a contact (history included); returns how many."""
    now = _now(now)
    with conn.transaction():
        ids = [r["id"] for r in conn.execute(
            "SELECT id FROM contact_memories WHERE account_id = %s AND contact_id = %s AND deleted_at IS NULL",
            (account_id, contact_id)).fetchall()]
        done = store.soft_delete(conn, ids, account_id, contact_id, now=now, reason="forget_contact", actor=actor,
                                 drop_embedding=True)
        add_events(conn, [_contact_event("contact.forgotten", account_id, contact_id)])
    log.info('contact forgotten account_id=%d contact_id=%d facts=%d actor="%s"', account_id, contact_id,
             len(done), actor)
    return len(done)


def erase_contact(conn: psycopg.Connection, account_id: int, contact_id: int) -> dict[str, int]:
    """Remove everything of a contact now; returns the rows deleted per table."""
    counts: dict[str, int] = {}
    with conn.transaction():
        conv_ids = [r["id"] for r in conn.execute(
            "SELECT id FROM conversations WHERE account_id = %s AND contact_id = %s FOR UPDATE",
            (account_id, contact_id)).fetchall()]

        def delete(name: str, sql: str, args: tuple) -> None:
            counts[name] = counts.get(name, 0) + conn.execute(sql, args).rowcount

        delete("messages", "DELETE FROM messages WHERE conversation_id = ANY(%s)", (conv_ids,))
        delete("conversation_extractions", "DELETE FROM conversation_extractions WHERE conversation_id = ANY(%s) "
               "OR (account_id = %s AND contact_id = %s)", (conv_ids, account_id, contact_id))
        delete("conversation_silences", "DELETE FROM conversation_silences WHERE conversation_id = ANY(%s) "
               "OR (account_id = %s AND contact_id = %s)", (conv_ids, account_id, contact_id))
        delete("conversations", "DELETE FROM conversations WHERE id = ANY(%s)", (conv_ids,))
        delete("contact_memories", "DELETE FROM contact_memories WHERE account_id = %s AND contact_id = %s",
               (account_id, contact_id))
        delete("outbox", "DELETE FROM outbox WHERE aggregatetype IN ('conversation', 'memory', 'contact') "
               "AND payload->>'account_id' = %s AND payload->>'contact_id' = %s",
               (str(account_id), str(contact_id)))
        for table in ("privacy_requests", "marketing_optouts", "offers", "tool_calls"):  # issue 11's records
            delete(table, f"DELETE FROM {table} WHERE account_id = %s AND contact_id = %s", (account_id, contact_id))
        delete("contacts", "DELETE FROM contacts WHERE account_id = %s AND id = %s", (account_id, contact_id))
        add_events(conn, [_contact_event("contact.erased", account_id, contact_id)])
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
