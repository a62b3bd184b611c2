"""The knowledge repository: documents and chunks (``uow.knowledge``).

``PostgresKnowledgeRepository`` is the SQL on a ``PostgresUnitOfWork``'s
connection; ``streams.store.fake_uow`` implements the same port in memory. The
matching of chunks by content hash (``documents.write_document``) is domain
logic over this port; events are announced by the caller through ``uow.add_event``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from uuid6 import uuid7

if TYPE_CHECKING:
    from streams.store.uow import UnitOfWork


class KnowledgeRepository(Protocol):
    def ensure_account(self, account_id: int, name: str = "") -> None: ...
    def upsert_document(self, account_id: int, source: str, title: str) -> str:
        """The document's id (created, or revived and renamed), locked for this unit."""
    def find_document(self, account_id: int, *, document_id: str | None = None,
                      key: str | None = None) -> str | None:
        """The account's document id (locked for this unit), or None."""
    def adopt_legacy_source(self, account_id: int, key: str, legacy_source: str) -> bool: ...
    def live_chunks(self, document_id: str) -> list[dict]:
        """id, seq, content_hash of the document's live chunks."""
    def tombstone_chunks(self, chunk_ids: list[str]) -> None: ...
    def tombstone_document(self, document_id: str) -> list[str]:
        """Tombstone the document and its live chunks; returns the chunks' ids."""
    def move_chunks(self, moves: list[tuple[str, int]]) -> None: ...
    def insert_chunks(self, rows: list[tuple]) -> None:
        """rows: (id, account_id, document_id, seq, content, content_hash)."""
    def record_calls(self, calls: list) -> int:
        """The embedding calls' cost ledger rows (``streams.pricing.ModelCall``; None skipped): a call
        with a ref already in the ledger counts once. Returns how many were given."""


class PostgresKnowledgeRepository:
    def __init__(self, uow: "UnitOfWork"):
        self.conn = uow.conn

    def ensure_account(self, account_id, name=""):
        self.conn.execute("INSERT INTO accounts (id, name) VALUES (%s, %s) ON CONFLICT (id) DO NOTHING",
                          (account_id, name))

    def upsert_document(self, account_id, source, title):
        row = self.conn.execute(
            """INSERT INTO documents (id, account_id, source, title) VALUES (%s, %s, %s, %s)
               ON CONFLICT (account_id, source) DO UPDATE
                 SET title = EXCLUDED.title, updated_at = now(), deleted_at = NULL
               RETURNING id""",
            (str(uuid7()), account_id, source, title)).fetchone()
        doc_id = str(row["id"])
        # Serialise writers of the same document.
        self.conn.execute("SELECT id FROM documents WHERE id = %s FOR UPDATE", (doc_id,))
        return doc_id

    def find_document(self, account_id, *, document_id=None, key=None):
        where, arg = ("id = %s", document_id) if document_id is not None else ("source = %s", key)
        doc = self.conn.execute(f"SELECT id FROM documents WHERE account_id = %s AND {where} FOR UPDATE",
                                (account_id, arg)).fetchone()
        return str(doc["id"]) if doc else None

    def adopt_legacy_source(self, account_id, key, legacy_source):
        if key == legacy_source:
            return False
        return bool(self.conn.execute(
            "UPDATE documents SET source = %s WHERE account_id = %s AND source = %s "
            "AND NOT EXISTS (SELECT 1 FROM documents WHERE account_id = %s AND source = %s)",
            (key, account_id, legacy_source, account_id, key)).rowcount)

    def live_chunks(self, document_id):
        return self.conn.execute(
            "SELECT id, seq, content_hash FROM chunks WHERE document_id = %s AND deleted_at IS NULL",
            (document_id,)).fetchall()

    def tombstone_chunks(self, chunk_ids):
        self.conn.execute("UPDATE chunks SET deleted_at = now(), updated_at = now() WHERE id = ANY(%s)",
                          (chunk_ids,))

    def tombstone_document(self, document_id):
        gone = [str(r["id"]) for r in self.conn.execute(
            "UPDATE chunks SET deleted_at = now(), updated_at = now() WHERE document_id = %s AND deleted_at IS NULL "
            "RETURNING id", (document_id,)).fetchall()]
        self.conn.execute("UPDATE documents SET deleted_at = COALESCE(deleted_at, now()), updated_at = now() "
                          "WHERE id = %s", (document_id,))
        return gone

    def move_chunks(self, moves):
        # two steps so that the partial unique (document_id, seq) never collides
        self.conn.execute("UPDATE chunks SET seq = -seq - 1 WHERE id = ANY(%s)", ([cid for cid, _ in moves],))
        with self.conn.cursor() as cur:
            cur.executemany("UPDATE chunks SET seq = %s, updated_at = now() WHERE id = %s",
                            [(seq, cid) for cid, seq in moves])

    def insert_chunks(self, rows):
        with self.conn.cursor() as cur:
            cur.executemany("INSERT INTO chunks (id, account_id, document_id, seq, content, content_hash) "
                            "VALUES (%s, %s, %s, %s, %s, %s)", rows)

    def record_calls(self, calls):
        from streams.pricing import write_ledger

        return write_ledger(self.conn, calls)


