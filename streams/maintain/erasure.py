"""The erasure ledger: an erased contact never comes back.

``erase_contact`` writes one row per erased identity, keyed by an HMAC
(``MEMORIA_ERASURE_KEY``) of the identity, never the identity itself:

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

import psycopg
from psycopg.types.json import Jsonb

from streams import metrics

log = logging.getLogger(__name__)


def _key(key: str | None) -> bytes:
    if key is None:
        from streams.settings import get_settings

        key = get_settings().erasure_key
    return key.encode()


def identity_hash(kind: str, account_id: int, value: object, *, key: str | None = None) -> str:
    """``kind`` is ``contact`` (value: contact id) or ``phone`` (value: the channel address)."""
    msg = f"{kind}:{int(account_id)}:{str(value).strip()}".encode()
    return hmac.new(_key(key), msg, hashlib.sha256).hexdigest()


def record_erasure(conn: psycopg.Connection, account_id: int, contact_id: int, phone: str | None,
                   removed: dict[str, int], *, key: str | None = None) -> list[str]:
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
              phone: str | None = None, key: str | None = None) -> bool:
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
                 key: str | None = None) -> dict | None:
    row = conn.execute("SELECT identity_hash, erased_at, removed FROM erased_identities WHERE identity_hash = %s",
                       (identity_hash("contact", account_id, contact_id, key=key),)).fetchone()
    if row is None:
        return None
    return {"identity_hash": row["identity_hash"], "erased_at": row["erased_at"].isoformat(),
            "removed": dict(row["removed"] or {})}


def dropped(path: str, account_id: int, what: str) -> None:
    """Count (and log, without personal data) a record dropped because its contact was erased."""
    metrics.ERASED_DROPPED.labels(path).inc()
    log.info("erased contact: %s dropped path=%s account_id=%d", what, path, account_id)
