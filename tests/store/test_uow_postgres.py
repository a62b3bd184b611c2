"""The Postgres unit of work: the change and its outbox rows commit together, or neither does."""

from __future__ import annotations

import psycopg
import pytest

from schemas.events import ContactEvent, MemoryEvent
from streams.store.uow import PostgresUnitOfWork, joined

A = 9101


def _outbox(db, contact: int) -> list[tuple[str, dict]]:
    return [(r["type"], r["payload"]) for r in db.q(
        "SELECT type, payload FROM outbox WHERE aggregatetype = 'contact' AND payload->>'contact_id' = %s "
        "ORDER BY created_at, id", str(contact))]


def _account(db) -> list[dict]:
    return db.q("SELECT name FROM accounts WHERE id = %s", A)


def test_commit_writes_the_change_and_its_events_in_one_transaction(db):
    with PostgresUnitOfWork(db.pool) as uow:
        uow.conn.execute("INSERT INTO accounts (id, name) VALUES (%s, 'uow') ON CONFLICT (id) DO NOTHING", (A,))
        uow.add_event("contact.forgotten", ContactEvent(account_id=A, contact_id=1))
        assert _outbox(db, 1) == []  # not visible to others before the commit
        uow.commit()
        with pytest.raises(RuntimeError):  # a committed unit takes nothing more
            uow.add_event("contact.erased", ContactEvent(account_id=A, contact_id=1))
    assert _account(db) == [{"name": "uow"}]
    assert _outbox(db, 1) == [("contact.forgotten", {"schema_version": 1, "account_id": A, "contact_id": 1})]


def test_an_exception_or_a_missing_commit_leaves_neither_change_nor_event(db):
    db.q("INSERT INTO accounts (id, name) VALUES (%s, 'kept') ON CONFLICT (id) DO UPDATE SET name = 'kept'", A)
    with pytest.raises(ZeroDivisionError), PostgresUnitOfWork(db.pool) as uow:
        uow.conn.execute("UPDATE accounts SET name = 'changed' WHERE id = %s", (A,))
        uow.add_event("contact.erased", ContactEvent(account_id=A, contact_id=2))
        1 / 0
    with PostgresUnitOfWork(db.pool) as uow:  # no commit: rolled back
        uow.conn.execute("UPDATE accounts SET name = 'changed' WHERE id = %s", (A,))
        uow.add_event("contact.erased", ContactEvent(account_id=A, contact_id=2))
    assert _account(db) == [{"name": "kept"}] and _outbox(db, 2) == []


def test_an_invalid_event_fails_the_commit_and_nothing_is_written(db):
    with PostgresUnitOfWork(db.pool) as uow:
        uow.add_event("contact.erased", ContactEvent(account_id=A, contact_id=3))
        uow._pending.append(("contact.erased", ContactEvent.model_construct(account_id="x", contact_id=3)))
        with pytest.raises(ValueError):
            uow.commit()
    with pytest.raises(ValueError), PostgresUnitOfWork(db.pool) as uow:
        uow.add_event("contact.erased", MemoryEvent(memory_id=1, account_id=A, contact_id=3))
    assert _outbox(db, 3) == []


def test_on_a_callers_transaction_the_unit_is_a_savepoint_and_the_caller_decides(db):
    with db.conn() as conn:
        with conn.transaction():
            with joined(conn) as uow:
                uow.add_event("contact.forgotten", ContactEvent(account_id=A, contact_id=4))
            assert len(_outbox(db, 4)) == 0  # released savepoint: still the caller's transaction
            raise psycopg.Rollback()
    assert _outbox(db, 4) == []
    with db.conn() as conn:
        with joined(conn) as uow:  # no transaction open: one of its own, committed
            uow.add_event("contact.forgotten", ContactEvent(account_id=A, contact_id=4))
    assert len(_outbox(db, 4)) == 1
