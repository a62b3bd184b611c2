"""Erasure over the in-memory unit of work (unit tier: no service); the SQL of
``uow.erasure`` is tested against Postgres in tests/maintain/test_maintenance.py
and tests/faults/test_erasure_replay.py."""

from __future__ import annotations

import pytest

from schemas.events import ContactEvent
from streams.maintain.erasure import identity_hash
from streams.maintain.forget import erase_contact, forget_contact
from streams.respond.adapters import PostgresConversationStore
from streams.store.fake_uow import FakeDatabase
from tests.maintain.test_forget_aging_unit import _fact
from tests.respond.fakes import inbound

A, C, OTHER = 101, 5001, 5002   # the account and contacts of tests.respond.fakes.inbound
KEY = "unit-test-erasure-key"


def _db_with_two_contacts() -> tuple[FakeDatabase, PostgresConversationStore]:
    db = FakeDatabase()
    store = PostgresConversationStore(None, uow=db.unit_of_work)
    assert store.store_inbound(inbound("meu cpf é 123", "wamid.1"))
    assert store.store_inbound(inbound("e o pernoite?", "wamid.2"))
    assert store.store_inbound(inbound("oi", "wamid.3", contact_id=OTHER, conversation_id="c-2"))
    for contact in (C, C, OTHER):
        mid = _fact(db, contact, "preferencia")
        db.state.memories[mid]["account_id"] = A  # the helper's facts belong to its own account
    return db, store


def test_erasure_removes_the_contact_records_it_in_the_ledger_and_announces_it():
    db, _ = _db_with_two_contacts()
    with db.unit_of_work() as uow:  # a forget first: its events are the contact's too
        assert forget_contact(uow, A, C, actor="test") == 2
        uow.commit()
    assert [t for t, _ in db.outbox] == ["memory.deleted", "memory.deleted", "contact.forgotten"]
    other_fact = next(m["id"] for m in db.state.memories.values() if m["contact_id"] == OTHER)

    with db.unit_of_work() as uow:
        counts = erase_contact(uow, A, C, key=KEY)
        uow.commit()
    assert counts["messages"] == 2 and counts["conversations"] == 1 and counts["contact_memories"] == 2
    assert counts["pgvector_embeddings"] == 0  # forgetting had already cleared them
    assert counts["outbox"] == 3 and counts["contacts"] == 1
    # the contact's unpublished events are gone with it; the erasure itself is announced (ids only)
    assert db.outbox == [("contact.erased", ContactEvent(account_id=A, contact_id=C))]
    s = db.state
    assert not [c for c in s.conversations.values() if c.contact_id == C]
    assert not [m for m in s.memories.values() if m["contact_id"] == C]
    assert len(s.messages) == 1 and s.memories[other_fact]["deleted_at"] is None  # the other contact untouched
    with db.unit_of_work() as uow:
        entry = uow.erasure.ledger_entry(A, C, key=KEY)
        assert entry is not None and entry["removed"] == counts
        assert uow.erasure.ledger_entry(A, OTHER, key=KEY) is None


def test_a_later_inbound_of_an_erased_contact_stores_nothing_and_learning_skips_it():
    db, store = _db_with_two_contacts()
    with db.unit_of_work() as uow:
        erase_contact(uow, A, C, key=KEY)
        uow.commit()
    before = (len(db.state.messages), len(db.state.conversations), len(db.outbox))
    assert store.store_inbound(inbound("voltei, lembra de mim?", "wamid.9")) is False  # late or replayed record
    assert store.receive(inbound("e agora?", "wamid.10"), history=5) is None
    assert (len(db.state.messages), len(db.state.conversations), len(db.outbox)) == before
    assert store.store_inbound(inbound("oi de novo", "wamid.11", contact_id=OTHER, conversation_id="c-2"))
    conv = next(iter(db.state.conversations.values()))
    with db.unit_of_work() as uow:
        assert uow.learning.erased_or_gone(conv, KEY) is False  # the other contact still learns
        gone = conv.__class__(**{**conv.__dict__, "contact_id": C})
        assert uow.learning.erased_or_gone(gone, KEY) is True


def test_an_erasure_without_commit_leaves_everything():
    db, _ = _db_with_two_contacts()
    before = (len(db.state.messages), len(db.state.memories), list(db.outbox))
    with db.unit_of_work() as uow:
        erase_contact(uow, A, C, key=KEY)
    assert (len(db.state.messages), len(db.state.memories), list(db.outbox)) == before
    assert (A, C) not in db.state.erased


def test_a_second_erasure_keeps_the_first_record_and_announces_again():
    db, _ = _db_with_two_contacts()
    with db.unit_of_work() as uow:
        first = erase_contact(uow, A, C, key=KEY)
        uow.commit()
    with db.unit_of_work() as uow:
        again = erase_contact(uow, A, C, key=KEY)
        uow.commit()
    assert again["messages"] == again["contact_memories"] == 0
    with db.unit_of_work() as uow:
        assert uow.erasure.ledger_entry(A, C, key=KEY)["removed"] == first
    assert [t for t, _ in db.outbox] == ["contact.erased"]  # the second erasure removed the first event


def test_the_ledger_hash_needs_the_key_the_container_passes():
    with pytest.raises(ValueError, match="erasure ledger needs its key"):
        identity_hash("contact", A, C, key=None)
    h1, h2 = identity_hash("contact", A, C, key="k1"), identity_hash("contact", A, C, key="k2")
    assert h1 != h2 and str(C) not in h1 and len(h1) == 64
