"""Manual edits of a customer fact (admin API)."""

from __future__ import annotations

from datetime import datetime, timezone

import psycopg
from psycopg.types.json import Jsonb

from streams.embedding import Embedder
from streams.learn.embed import embed_contents
from streams.learn.store import _memory_event
from streams.outbox.write import add_events


def edit_memory(conn: psycopg.Connection, *, account_id: int, memory_id: int, content: str, edited_by: str,
                embedder: Embedder | None, now: datetime | None = None) -> None:
    """Replace a live fact's content, re-embed it and record who and when in its metadata.

    Raises LookupError when the fact is not the account's, ValueError when it
    is deleted or superseded (history is not edited). If embedding fails the
    fact keeps the new content with a NULL embedding (invisible to recall until
    the re-embed timer succeeds), like any fact.
    """
    now = now or datetime.now(timezone.utc)
    [vec] = embed_contents(embedder, [content])
    with conn.transaction():
        row = conn.execute("SELECT contact_id, content, deleted_at, superseded_at, metadata FROM contact_memories "
                           "WHERE id = %s AND account_id = %s FOR UPDATE", (memory_id, account_id)).fetchone()
        if row is None:
            raise LookupError(memory_id)
        if row["deleted_at"] is not None:
            raise ValueError(f"memory {memory_id} is deleted")
        if row["superseded_at"] is not None:
            raise ValueError(f"memory {memory_id} is superseded; edit the current fact instead")
        edits = list((row["metadata"] or {}).get("edits", []))
        edits.append({"by": edited_by, "at": now.isoformat(), "previous_content": row["content"]})
        conn.execute(
            "UPDATE contact_memories SET content = %s, embedding = %s, embedding_model = %s, updated_at = %s, "
            "metadata = metadata || %s WHERE id = %s",
            (content, vec, embedder.name if (vec is not None and embedder) else None, now,
             Jsonb({"edits": edits[-50:]}), memory_id))
        add_events(conn, [_memory_event("memory.updated", memory_id, account_id, row["contact_id"])])
