"""Write a document's chunks, tombstones and outbox rows in one transaction.

A document is identified per account by a stable key (``documents.source``):
its path relative to the folder given to ``memoria ingest``, or ``--key``;
so ingesting the same folder from another location changes nothing.

Chunks are matched to the document's live chunks by content_hash: an
unchanged chunk keeps its id (and its embedding), a moved one only changes
``seq``, a new text gets a new UUIDv7 id, a vanished one is tombstoned. One
outbox row announces every touched chunk.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import psycopg
from uuid6 import uuid7

from schemas.events import ChunkEvent
from streams.ingest.chunking import Chunk, chunk_text
from streams.outbox.write import add_events, outbox_row

SUPPORTED_SUFFIXES = {".md", ".markdown", ".txt", ".text"}


@dataclass
class IngestResult:
    document_id: str
    source: str
    inserted: int = 0
    moved: int = 0
    unchanged: int = 0
    tombstoned: int = 0
    events: int = 0
    touched_chunk_ids: list[str] = field(default_factory=list)


def ensure_account(conn: psycopg.Connection, account_id: int, name: str = "") -> None:
    conn.execute("INSERT INTO accounts (id, name) VALUES (%s, %s) ON CONFLICT (id) DO NOTHING",
                 (account_id, name))


def write_document(conn: psycopg.Connection, *, account_id: int, source: str, text: str,
                   title: str = "", chunk_size: int = 800, chunk_overlap: int = 120) -> IngestResult:
    """Upsert one document; the caller's connection must not be in a transaction."""
    chunks = chunk_text(text, chunk_size, chunk_overlap)
    with conn.transaction():
        ensure_account(conn, account_id)
        row = conn.execute(
            """INSERT INTO documents (id, account_id, source, title) VALUES (%s, %s, %s, %s)
               ON CONFLICT (account_id, source) DO UPDATE
                 SET title = EXCLUDED.title, updated_at = now(), deleted_at = NULL
               RETURNING id""",
            (str(uuid7()), account_id, source, title)).fetchone()
        doc_id = str(row["id"])
        # Serialise writers of the same document.
        conn.execute("SELECT id FROM documents WHERE id = %s FOR UPDATE", (doc_id,))
        live = conn.execute(
            "SELECT id, seq, content_hash FROM chunks WHERE document_id = %s AND deleted_at IS NULL",
            (doc_id,)).fetchall()
        result = IngestResult(document_id=doc_id, source=source)
        by_hash: dict[str, list[dict]] = {}
        for r in live:
            by_hash.setdefault(r["content_hash"], []).append(r)

        keep: list[tuple[str, int, Chunk]] = []       # (id, old seq, chunk)
        new: list[Chunk] = []
        for c in chunks:
            same = by_hash.get(c.content_hash)
            if same:
                r = same.pop(0)
                keep.append((str(r["id"]), r["seq"], c))
            else:
                new.append(c)
        vanished = [str(r["id"]) for rs in by_hash.values() for r in rs]

        events = []
        if vanished:
            conn.execute("UPDATE chunks SET deleted_at = now(), updated_at = now() WHERE id = ANY(%s)",
                         (vanished,))
            events += [outbox_row("chunk.deleted", ChunkEvent(chunk_id=cid, account_id=account_id, document_id=doc_id))
                       for cid in vanished]
            result.tombstoned = len(vanished)
        moved = [(cid, c.seq) for cid, old, c in keep if old != c.seq]
        if moved:
            # two steps so that the partial unique (document_id, seq) never collides
            ids = [cid for cid, _ in moved]
            conn.execute("UPDATE chunks SET seq = -seq - 1 WHERE id = ANY(%s)", (ids,))
            with conn.cursor() as cur:
                cur.executemany("UPDATE chunks SET seq = %s, updated_at = now() WHERE id = %s",
                                [(seq, cid) for cid, seq in moved])
            events += [outbox_row("chunk.upserted", ChunkEvent(chunk_id=cid, account_id=account_id, document_id=doc_id))
                       for cid in ids]
            result.moved = len(moved)
        result.unchanged = len(keep) - len(moved)
        if new:
            rows = [(str(uuid7()), account_id, doc_id, c.seq, c.content, c.content_hash) for c in new]
            with conn.cursor() as cur:
                cur.executemany(
                    "INSERT INTO chunks (id, account_id, document_id, seq, content, content_hash) "
                    "VALUES (%s, %s, %s, %s, %s, %s)", rows)
            events += [outbox_row("chunk.upserted", ChunkEvent(chunk_id=r[0], account_id=account_id, document_id=doc_id))
                       for r in rows]
            result.inserted = len(new)
        result.events = add_events(conn, events)
        result.touched_chunk_ids = [e[2] for e in events]
    return result


def adopt_legacy_source(conn: psycopg.Connection, account_id: int, key: str, legacy_source: str) -> bool:
    """A document ingested before stable keys is named by its absolute path:
    rename it to ``key`` (keeping its chunks and points) unless ``key`` exists."""
    if key == legacy_source:
        return False
    return bool(conn.execute(
        "UPDATE documents SET source = %s WHERE account_id = %s AND source = %s "
        "AND NOT EXISTS (SELECT 1 FROM documents WHERE account_id = %s AND source = %s)",
        (key, account_id, legacy_source, account_id, key)).rowcount)


def list_documents(conn: psycopg.Connection, account_id: int, *, include_deleted: bool = False) -> list[dict]:
    return conn.execute(
        """SELECT d.id, d.source AS key, d.title, d.created_at, d.updated_at, d.deleted_at,
                  (SELECT count(*) FROM chunks c WHERE c.document_id = d.id AND c.deleted_at IS NULL) AS chunks
             FROM documents d WHERE d.account_id = %s AND (%s OR d.deleted_at IS NULL)
            ORDER BY d.source""", (account_id, include_deleted)).fetchall()


def delete_document(conn: psycopg.Connection, account_id: int, *, document_id: str | None = None,
                    key: str | None = None) -> dict | None:
    """Tombstone a document and its live chunks, with one ``chunk.deleted`` event
    per chunk (the ingest agent deletes their points), in one transaction.
    None when the account has no such document; deleting twice is a no-op."""
    if (document_id is None) == (key is None):
        raise ValueError("give exactly one of document_id and key")
    with conn.transaction():
        where, arg = ("id = %s", document_id) if document_id is not None else ("source = %s", key)
        doc = conn.execute(f"SELECT id FROM documents WHERE account_id = %s AND {where} FOR UPDATE",
                           (account_id, arg)).fetchone()
        if doc is None:
            return None
        doc_id = str(doc["id"])
        gone = [str(r["id"]) for r in conn.execute(
            "UPDATE chunks SET deleted_at = now(), updated_at = now() WHERE document_id = %s AND deleted_at IS NULL "
            "RETURNING id", (doc_id,)).fetchall()]
        conn.execute("UPDATE documents SET deleted_at = COALESCE(deleted_at, now()), updated_at = now() "
                     "WHERE id = %s", (doc_id,))
        add_events(conn, [outbox_row("chunk.deleted", ChunkEvent(chunk_id=cid, account_id=account_id,
                                                                  document_id=doc_id)) for cid in gone])
    rows = [r for r in list_documents(conn, account_id, include_deleted=True) if str(r["id"]) == doc_id]
    return rows[0] if rows else None


def document_key(path: Path, root: Path | None) -> str:
    """The stable key of a file: its POSIX path relative to the folder it was
    found under (``root``), or its file name when given on its own."""
    if root is None:
        return path.name
    return path.resolve().relative_to(root.resolve()).as_posix()


def read_source(path: Path) -> tuple[str, str]:
    """(title, text) of a Markdown or plain-text file."""
    if path.suffix.lower() not in SUPPORTED_SUFFIXES:
        raise ValueError(f"{path}: unsupported file type {path.suffix!r} "
                         f"(supported: {', '.join(sorted(SUPPORTED_SUFFIXES))})")
    text = path.read_text(encoding="utf-8")
    title = path.stem
    for line in text.splitlines():
        if line.strip().startswith("#"):
            title = line.strip().lstrip("#").strip()
            break
    return title, text


def iter_sources(paths: list[Path]) -> list[Path]:
    return [f for f, _ in iter_keyed_sources(paths)]


def iter_keyed_sources(paths: list[Path]) -> list[tuple[Path, str]]:
    """(file, stable key) of every supported file: under a folder the key is the
    path relative to that folder; a file given alone is keyed by its name."""
    out: list[tuple[Path, str]] = []
    for p in paths:
        if p.is_dir():
            out += [(q, document_key(q, p)) for q in sorted(p.rglob("*"))
                    if q.is_file() and q.suffix.lower() in SUPPORTED_SUFFIXES]
        elif p.is_file():
            out.append((p, document_key(p, None)))
        else:
            raise FileNotFoundError(f"{p}: no such file or directory")
    return out
