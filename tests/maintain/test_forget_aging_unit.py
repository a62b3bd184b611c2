"""Forgetting and aging over the in-memory unit of work (unit tier: no service)."""

from __future__ import annotations

from datetime import timedelta

import pytest

from schemas.events import ContactEvent, MemoryEvent
from streams.maintain.aging import age_memories, hard_delete
from streams.maintain.forget import forget_contact, forget_memory
from streams.store.fake_uow import FakeDatabase
from tests.learn.seed import T0

A, C, OTHER = 3, 30, 31


def _fact(db: FakeDatabase, contact: int, memory_type: str, *, expires=None, last_verified=T0) -> int:
    s = db.state
    mid = s.new_id()
    s.memories[mid] = dict(id=mid, account_id=A, contact_id=contact, memory_type=memory_type, memory_key=f"k{mid}",
                           content=f"fato {mid}", normalized_value="", evidence="", confidence=0.9, scope="account",
                           embedding=[0.1, 0.2], embedding_model="m", source_conversation_id=None,
                           supporting_conversation_ids=[], expires_at=expires, last_verified_at=last_verified,
                           metadata={}, created_at=T0, updated_at=T0, observed_at=T0, superseded_at=None,
                           superseded_by_id=None, deleted_at=None, weight=1.0)
    return mid


def test_forget_one_fact_soft_deletes_it_and_announces_it():
    db = FakeDatabase()
    keep, gone, other = _fact(db, C, "preferencia"), _fact(db, C, "restricao"), _fact(db, OTHER, "restricao")
    with db.unit_of_work() as uow:
        assert forget_memory(uow, A, gone, actor="test", now=T0)
        uow.commit()
    assert db.state.memories[gone]["deleted_at"] == T0 and db.state.memories[gone]["embedding"] is None
    assert db.state.memories[gone]["metadata"]["deleted"]["by"] == "test"
    assert db.state.memories[keep]["deleted_at"] is None and db.state.memories[other]["deleted_at"] is None
    assert db.outbox == [("memory.deleted", MemoryEvent(memory_id=gone, account_id=A, contact_id=C))]
    with db.unit_of_work() as uow:  # again, or of another account: nothing
        assert not forget_memory(uow, A, gone, now=T0)
        assert not forget_memory(uow, A + 1, keep, now=T0)
        uow.commit()
    assert len(db.outbox) == 1


def test_forget_all_of_a_contact_announces_every_fact_and_the_contact():
    db = FakeDatabase()
    ids = [_fact(db, C, "preferencia"), _fact(db, C, "restricao")]
    other = _fact(db, OTHER, "restricao")
    with db.unit_of_work() as uow:
        assert forget_contact(uow, A, C, actor="test", now=T0) == 2
        uow.commit()
    assert db.live_memories(A, C) == [] and db.state.memories[other]["deleted_at"] is None
    assert db.outbox == [("memory.deleted", MemoryEvent(memory_id=i, account_id=A, contact_id=C)) for i in ids] + [
        ("contact.forgotten", ContactEvent(account_id=A, contact_id=C))]


def test_forget_without_commit_changes_nothing():
    db = FakeDatabase()
    mid = _fact(db, C, "restricao")
    with pytest.raises(KeyError), db.unit_of_work() as uow:
        forget_contact(uow, A, C, now=T0)
        raise KeyError("the caller failed after forgetting")
    assert db.state.memories[mid]["deleted_at"] is None and db.outbox == []


def test_aging_expires_by_ttl_caps_and_announces():
    db = FakeDatabase()
    complaint = _fact(db, C, "reclamacao", expires=T0 - timedelta(days=1))       # ttl action: delete
    preference = _fact(db, C, "preferencia", expires=T0 - timedelta(days=1))     # ttl action: reduce weight
    fresh = _fact(db, C, "reclamacao", expires=T0 + timedelta(days=1))
    crowd = [_fact(db, OTHER, "restricao", last_verified=T0 - timedelta(days=i)) for i in range(5)]
    with db.unit_of_work() as uow:
        dry = age_memories(uow, now=T0, dry_run=True, cap=3)
    assert (dry.deleted[A], dry.weight_reduced[A], dry.capped[A]) == (1, 1, 2) and db.outbox == []
    with db.unit_of_work() as uow:
        report = age_memories(uow, now=T0, cap=3)
        uow.commit()
    assert (report.deleted[A], report.weight_reduced[A], report.capped[A]) == (1, 1, 2)
    m = db.state.memories
    assert m[complaint]["deleted_at"] == T0 and m[preference]["weight"] == 0.7 and m[fresh]["deleted_at"] is None
    assert [i for i in crowd if m[i]["deleted_at"]] == crowd[3:]  # the least recently verified
    assert sorted((t, e.memory_id) for t, e in db.outbox) == sorted(
        [("memory.deleted", complaint), ("memory.updated", preference)] + [("memory.deleted", i) for i in crowd[3:]])
    with db.unit_of_work() as uow:  # idempotent: the weight is reduced once
        again = age_memories(uow, now=T0 + timedelta(hours=12), cap=3)
        uow.commit()
    assert sum(again.deleted.values()) + sum(again.weight_reduced.values()) + sum(again.capped.values()) == 0
    with db.unit_of_work() as uow:
        assert hard_delete(uow, now=T0 + timedelta(days=31)) == {A: 3}
        uow.commit()
    assert complaint not in db.state.memories and preference in db.state.memories
