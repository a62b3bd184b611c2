"""Manual edits of a customer fact (admin API)."""

from __future__ import annotations

from datetime import datetime, timezone

import psycopg

from streams.embedding import Embedder
from streams.embedding import tokens as embedding_tokens
from streams.learn.embed import embed_contents
from streams.learn.store import memory_event
from streams.pricing import PriceTable, count_metrics, model_call
from streams.store.uow import UnitOfWork, joined


def edit_memory(conn: UnitOfWork | psycopg.Connection, *, account_id: int, memory_id: int, content: str,
                edited_by: str, embedder: Embedder | None, now: datetime | None = None,
                prices: PriceTable | None = None) -> None:
    """Replace a live fact's content, re-embed it and record who and when in its metadata.

    Raises LookupError when the fact is not the account's, ValueError when it
    is deleted or superseded (history is not edited). If embedding fails the
    fact keeps the new content with a NULL embedding (invisible to recall until
    the re-embed timer succeeds), like any fact.
    """
    now = now or datetime.now(timezone.utc)
    paid = embedding_tokens.collect()
    [vec] = embed_contents(embedder, [content])
    call = model_call(account_id, "embedding", embedder.name if embedder else "", embedding_tokens.usage(paid),
                      table=prices)
    with joined(conn) as uow:  # one unit of work (the caller's, or committed at the end)
        repo = uow.learning
        row = repo.locked_memory(account_id, memory_id)
        if row is None:
            raise LookupError(memory_id)
        if row["deleted_at"] is not None:
            raise ValueError(f"memory {memory_id} is deleted")
        if row["superseded_at"] is not None:
            raise ValueError(f"memory {memory_id} is superseded; edit the current fact instead")
        edits = list((row["metadata"] or {}).get("edits", []))
        edits.append({"by": edited_by, "at": now.isoformat(), "previous_content": row["content"]})
        repo.edit_content(memory_id, content, vector=vec,
                          embedding_model=embedder.name if (vec is not None and embedder) else None, now=now,
                          edits=edits[-50:])
        uow.add_event(*memory_event("memory.updated", memory_id, account_id, row["contact_id"]))
        repo.record_calls([call])
    count_metrics(call)


# ------------------------------------------------------------------ reading
MEMORY_COLS = """m.id, m.contact_id, m.memory_type, m.memory_key, m.content, m.evidence, m.confidence, m.scope,
    m.weight, m.source_conversation_id, m.source_unit_id, m.supporting_conversation_ids, m.expires_at,
    m.last_verified_at, m.superseded_at, m.superseded_by_id, m.deleted_at, m.embedding IS NOT NULL AS embedded,
    m.metadata, m.created_at, m.updated_at, m.observed_at, u.name AS source_unit_name"""


def memory_status(r: dict, now: datetime) -> str:
    if r["deleted_at"] is not None:
        return "deleted"
    if r["superseded_at"] is not None:
        return "superseded"
    if r["expires_at"] is not None and r["expires_at"] <= now:
        return "expired"
    return "active"


def contact_memories(conn: psycopg.Connection, account_id: int, contact_id: int) -> list[dict] | None:
    """Every fact of the contact (active and history), newest first, each with ``status``; None when the
    account has no such contact."""
    if get_contact(conn, account_id, contact_id) is None:
        return None
    now = datetime.now(timezone.utc)
    rows = conn.execute(
        f"""SELECT {MEMORY_COLS} FROM contact_memories m
              LEFT JOIN units u ON u.id = m.source_unit_id AND u.account_id = m.account_id
             WHERE m.account_id = %s AND m.contact_id = %s
             ORDER BY m.last_verified_at DESC, m.id""", (account_id, contact_id)).fetchall()
    for r in rows:
        r["status"] = memory_status(r, now)
    return rows


def get_memory(conn: psycopg.Connection, account_id: int, memory_id: int) -> dict | None:
    now = datetime.now(timezone.utc)
    r = conn.execute(f"""SELECT {MEMORY_COLS} FROM contact_memories m
                           LEFT JOIN units u ON u.id = m.source_unit_id AND u.account_id = m.account_id
                          WHERE m.id = %s AND m.account_id = %s""", (memory_id, account_id)).fetchone()
    if r is not None:
        r["status"] = memory_status(r, now)
    return r


def get_contact(conn: psycopg.Connection, account_id: int, contact_id: int) -> dict | None:
    return conn.execute("SELECT id, name, phone, created_at FROM contacts WHERE account_id = %s AND id = %s",
                        (account_id, contact_id)).fetchone()


_ACCENTED = "áàâãäéèêëíìîïóòôõöúùûüçñÁÀÂÃÄÉÈÊËÍÌÎÏÓÒÔÕÖÚÙÛÜÇÑ"
_PLAIN = "aaaaaeeeeiiiiooooouuuucnAAAAAEEEEIIIIOOOOOUUUUCN"


def search_contacts(conn: psycopg.Connection, account_id: int, query: str, limit: int = 50) -> list[dict]:
    """Contacts whose name (accent- and case-insensitive substring) or phone (its digits) matches."""
    from streams.learn.text import fold

    q = (query or "").strip()[:100]
    digits = "".join(ch for ch in q if ch.isdigit())
    needle = "%" + fold(q).replace("\\", "").replace("%", "").replace("_", "\\_") + "%"
    return conn.execute(
        """SELECT c.id, c.name, c.phone,
                  (SELECT count(*) FROM contact_memories m WHERE m.account_id = c.account_id
                      AND m.contact_id = c.id AND m.deleted_at IS NULL AND m.superseded_at IS NULL) AS live_facts
             FROM contacts c
            WHERE c.account_id = %s
              AND (%s = '' OR lower(translate(c.name, %s, %s)) LIKE %s
                   OR (%s <> '' AND regexp_replace(coalesce(c.phone, ''), '\\D', '', 'g') LIKE %s))
            ORDER BY c.name, c.id LIMIT %s""",
        (account_id, q, _ACCENTED, _PLAIN, needle, digits, f"%{digits}%", limit)).fetchall()
