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
from streams.store.uow import PostgresUnitOfWork, UnitOfWork, joined

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


def _chunk_event(type_: str, chunk_id: str, account_id: int, doc_id: str) -> tuple[str, ChunkEvent]:
    return type_, ChunkEvent(chunk_id=chunk_id, account_id=account_id, document_id=doc_id)


def document_body(title: str, text: str) -> str:
    """The text a titled document is chunked as: its own text when it opens with a Markdown
    heading, else its title as one (so the first chunk says what the document is about; a
    title repeated above the text's own heading would be a chunk of its own, holding nothing)."""
    if not title or text.lstrip().startswith("#"):
        return text
    return f"# {title}\n\n{text}"


def write_document(target: "UnitOfWork | psycopg.Connection", *, account_id: int, source: str, text: str,
                   title: str = "", chunk_size: int = 800, chunk_overlap: int = 120) -> IngestResult:
    """Upsert one document: its chunks and their events in one unit of work (``target``:
    an open unit the caller commits, or a connection: one unit over it, committed here)."""
    chunks = chunk_text(text, chunk_size, chunk_overlap)
    with joined(target) as uow:
        repo = uow.knowledge
        repo.ensure_account(account_id)
        doc_id = repo.upsert_document(account_id, source, title)
        result = IngestResult(document_id=doc_id, source=source)
        by_hash: dict[str, list[dict]] = {}
        for r in repo.live_chunks(doc_id):
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
            repo.tombstone_chunks(vanished)
            events += [_chunk_event("chunk.deleted", cid, account_id, doc_id) for cid in vanished]
            result.tombstoned = len(vanished)
        moved = [(cid, c.seq) for cid, old, c in keep if old != c.seq]
        if moved:
            repo.move_chunks(moved)
            events += [_chunk_event("chunk.upserted", cid, account_id, doc_id) for cid, _ in moved]
            result.moved = len(moved)
        result.unchanged = len(keep) - len(moved)
        if new:
            rows = [(str(uuid7()), account_id, doc_id, c.seq, c.content, c.content_hash) for c in new]
            repo.insert_chunks(rows)
            events += [_chunk_event("chunk.upserted", r[0], account_id, doc_id) for r in rows]
            result.inserted = len(new)
        for event in events:
            uow.add_event(*event)
        result.events = len(events)
        result.touched_chunk_ids = [str(e.chunk_id) for _, e in events]
    return result


def adopt_legacy_source(target: "UnitOfWork | psycopg.Connection", account_id: int, key: str,
                        legacy_source: str) -> bool:
    """A document ingested before stable keys is named by its absolute path:
    rename it to ``key`` (keeping its chunks and points) unless ``key`` exists."""
    with joined(target) as uow:
        return uow.knowledge.adopt_legacy_source(account_id, key, legacy_source)


def list_documents(conn: psycopg.Connection, account_id: int, *, include_deleted: bool = False) -> list[dict]:
    return conn.execute(
        """SELECT d.id, d.source AS key, d.title, d.created_at, d.updated_at, d.deleted_at,
                  (SELECT count(*) FROM chunks c WHERE c.document_id = d.id AND c.deleted_at IS NULL) AS chunks
             FROM documents d WHERE d.account_id = %s AND (%s OR d.deleted_at IS NULL)
            ORDER BY d.source""", (account_id, include_deleted)).fetchall()


def tombstone_document(uow: UnitOfWork, account_id: int, *, document_id: str | None = None,
                       key: str | None = None) -> str | None:
    """In an open unit: tombstone a document and its live chunks, one ``chunk.deleted``
    event per chunk (the ingest agent deletes their points). Returns the document's
    id, None when the account has no such document; deleting twice is a no-op."""
    if (document_id is None) == (key is None):
        raise ValueError("give exactly one of document_id and key")
    doc_id = uow.knowledge.find_document(account_id, document_id=document_id, key=key)
    if doc_id is None:
        return None
    for cid in uow.knowledge.tombstone_document(doc_id):
        uow.add_event(*_chunk_event("chunk.deleted", cid, account_id, doc_id))
    return doc_id


def delete_document(conn: psycopg.Connection, account_id: int, *, document_id: str | None = None,
                    key: str | None = None) -> dict | None:
    """``tombstone_document`` in one unit over ``conn``, committed; the document's listing row, or None."""
    with PostgresUnitOfWork(conn=conn) as uow:
        doc_id = tombstone_document(uow, account_id, document_id=document_id, key=key)
        uow.commit()
    if doc_id is None:
        return None
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
