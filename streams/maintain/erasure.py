"""The erasure ledger: an erased contact never comes back.

``erase_contact`` writes one row per erased identity, keyed by an HMAC
(``MEMORIA_ERASURE_KEY``, which the composition root hands to every caller as
``key``: ``Container.erasure_key``) of the identity, never the identity itself:

* ``contact``: ``account_id:contact_id``, the identity every event carries
  (inbound messages, conversation and memory events);
* ``phone``: ``account_id:phone``, the channel identity (WhatsApp ``wa_id``)
  when the contact had one.

Every path that creates contacts, conversations, messages or facts consults
it under the contact's lock (``lock_contact``), the same lock the erasure
takes: the responder's ``store_inbound`` (live consumption, ``replay``, late
and redelivered records), learning (``apply`` of facts, so a late or
re-snapshotted conversation event cannot re-learn), and the channel resolver
(a late webhook of an erased phone creates no contact). A dropped record is
counted in ``memoria_erased_records_dropped_total{path}``, never dead-lettered
(a DLQ would keep the personal data the erasure removed).
"""

from __future__ import annotations

import hashlib
import hmac
import logging
from typing import TYPE_CHECKING, Protocol

import psycopg
from psycopg.types.json import Jsonb

from streams import metrics

if TYPE_CHECKING:
    from streams.store.uow import UnitOfWork

log = logging.getLogger(__name__)


def _key(key: str | None) -> bytes:
    """The HMAC key the composition root hands over (``Container.erasure_key``); never read here."""
    if not key:
        raise ValueError("the erasure ledger needs its key (MEMORIA_ERASURE_KEY, passed by streams/bootstrap.py)")
    return key.encode()


def identity_hash(kind: str, account_id: int, value: object, *, key: str) -> str:
    """``kind`` is ``contact`` (value: contact id) or ``phone`` (value: the channel address)."""
    msg = f"{kind}:{int(account_id)}:{str(value).strip()}".encode()
    return hmac.new(_key(key), msg, hashlib.sha256).hexdigest()


def record_erasure(conn: psycopg.Connection, account_id: int, contact_id: int, phone: str | None,
                   removed: dict[str, int], *, key: str) -> list[str]:
    """Add the ledger rows of an erased contact (in the erasure's transaction)."""
    rows = [("contact", identity_hash("contact", account_id, contact_id, key=key))]
    if phone:
        rows.append(("phone", identity_hash("phone", account_id, phone, key=key)))
    for kind, h in rows:
        conn.execute(
            # a second erasure of the same identity keeps the first one's record
            """INSERT INTO erased_identities (identity_hash, kind, account_id, removed) VALUES (%s, %s, %s, %s)
               ON CONFLICT (identity_hash) DO NOTHING""",
            (h, kind, account_id, Jsonb(removed)))
    return [h for _, h in rows]


def is_erased(conn: psycopg.Connection, account_id: int, *, contact_id: int | None = None,
              phone: str | None = None, key: str) -> bool:
    hashes = []
    if contact_id is not None:
        hashes.append(identity_hash("contact", account_id, contact_id, key=key))
    if phone:
        hashes.append(identity_hash("phone", account_id, phone, key=key))
    if not hashes:
        return False
    return conn.execute("SELECT 1 FROM erased_identities WHERE identity_hash = ANY(%s) LIMIT 1",
                        (hashes,)).fetchone() is not None


def ledger_entry(conn: psycopg.Connection, account_id: int, contact_id: int, *,
                 key: str) -> dict | None:
    row = conn.execute("SELECT identity_hash, erased_at, removed FROM erased_identities WHERE identity_hash = %s",
                       (identity_hash("contact", account_id, contact_id, key=key),)).fetchone()
    if row is None:
        return None
    return {"identity_hash": row["identity_hash"], "erased_at": row["erased_at"].isoformat(),
            "removed": dict(row["removed"] or {})}


class ErasureRepository(Protocol):
    """``uow.erasure``: the erasure's writes (``streams.store.fake_uow`` implements it in memory)."""

    def erase_contact(self, account_id: int, contact_id: int, *, key: str) -> dict[str, int]:
        """Under the contact's lock: delete every row of the contact (transcripts, facts with their
        embeddings, bookkeeping, its outbox events, the contact) and add it to the ledger; the rows
        deleted per table (``pgvector_embeddings``: the facts that had one)."""
    def ledger_entry(self, account_id: int, contact_id: int, *, key: str) -> dict | None:
        """The contact's ledger entry (identity hash, when, what was removed), or None."""


# the contact's rows in the tables keyed by (account_id, contact_id) that only issue 11's acts write
ACT_TABLES = ("privacy_requests", "marketing_optouts", "offers", "tool_calls")


class PostgresErasureRepository:
    def __init__(self, uow: "UnitOfWork"):
        self.uow, self.conn = uow, uow.conn

    def erase_contact(self, account_id, contact_id, *, key):
        conn, counts = self.conn, {}
        # the lock every path that creates a contact's data takes (store_inbound, learning)
        self.uow.learning.lock_contact(account_id, contact_id)
        phone_row = conn.execute("SELECT phone FROM contacts WHERE account_id = %s AND id = %s",
                                 (account_id, contact_id)).fetchone()
        embedded = conn.execute("SELECT count(*) AS n FROM contact_memories WHERE account_id = %s "
                                "AND contact_id = %s AND embedding IS NOT NULL",
                                (account_id, contact_id)).fetchone()["n"]
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
        for table in ACT_TABLES:
            delete(table, f"DELETE FROM {table} WHERE account_id = %s AND contact_id = %s", (account_id, contact_id))
        delete("contacts", "DELETE FROM contacts WHERE account_id = %s AND id = %s", (account_id, contact_id))
        counts["pgvector_embeddings"] = int(embedded)
        record_erasure(conn, account_id, contact_id, phone_row["phone"] if phone_row else None, counts, key=key)
        return counts

    def ledger_entry(self, account_id, contact_id, *, key):
        return ledger_entry(self.conn, account_id, contact_id, key=key)




def dropped(path: str, account_id: int, what: str) -> None:
    """Count (and log, without personal data) a record dropped because its contact was erased."""
    metrics.ERASED_DROPPED.labels(path).inc()
    log.info("erased contact: %s dropped path=%s account_id=%d", what, path, account_id)
