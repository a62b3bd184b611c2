"""The learning use case over the in-memory unit of work (unit tier: no Postgres, Kafka or Qdrant)."""

from __future__ import annotations

import uuid
from datetime import timedelta

import pytest

from schemas.events import MemoryEvent
from streams.learn.contradiction import RulesContradictionChecker
from streams.learn.extract_rules import RulesExtractor
from streams.learn.learn import LearnPorts, learn_conversation
from streams.learn.store import Conversation
from streams.store.fake_uow import FakeDatabase
from tests.learn.seed import HIDRO, MASTER, T0

ACCOUNT, CONTACT = 7, 70


def _db(*, extraction: bool = True) -> FakeDatabase:
    db = FakeDatabase()
    db.add_account(ACCOUNT, memory_extraction_enabled=extraction)
    return db


def _conv(db: FakeDatabase, cid: int, messages, at=T0) -> Conversation:
    conv = Conversation(id=cid, account_id=ACCOUNT, contact_id=CONTACT, inbox_id=1, unit_id=None, status="resolved",
                        last_message_at=at + timedelta(minutes=len(messages)))
    db.add_conversation(conv, [(role, text, at + timedelta(minutes=i)) for i, (role, text) in enumerate(messages)])
    return conv


def _ports(db: FakeDatabase) -> LearnPorts:
    return LearnPorts(pool=None, extractor=RulesExtractor(), embedder=None, checker=RulesContradictionChecker(),
                      clock=lambda: T0 + timedelta(days=1), uow=db.unit_of_work)


def test_finished_conversation_becomes_facts_and_their_events():
    db = _db()
    _conv(db, 1, HIDRO)
    out = learn_conversation(_ports(db), 1, account_id=ACCOUNT)
    assert out.status == "done" and out.created
    live = db.live_memories(ACCOUNT, CONTACT)
    assert {m["memory_type"] for m in live} == {"preferencia", "restricao"}
    assert sorted(m["id"] for m in live) == sorted(out.created)
    # one memory.created per fact, committed with them, typed and pointing at them
    assert [t for t, _ in db.outbox] == ["memory.created"] * len(out.created)
    assert all(isinstance(e, MemoryEvent) and e.account_id == ACCOUNT and e.contact_id == CONTACT
               for _, e in db.outbox)
    assert sorted(e.memory_id for _, e in db.outbox) == sorted(out.created)
    assert db.state.extractions[1]["status"] == "done"


def test_redelivery_is_idempotent():
    db = _db()
    _conv(db, 1, HIDRO)
    ports = _ports(db)
    first = learn_conversation(ports, 1, account_id=ACCOUNT)
    before = (dict(db.state.memories), list(db.outbox), db.commits)
    again = learn_conversation(ports, 1, account_id=ACCOUNT)
    assert first.status == "done" and again.status == "already"
    assert (dict(db.state.memories), list(db.outbox), db.commits) == before


def test_contradiction_supersedes_and_announces_it():
    db = _db()
    _conv(db, 1, HIDRO)
    _conv(db, 2, MASTER, at=T0 + timedelta(days=1))
    ports = _ports(db)
    learn_conversation(ports, 1)
    out = learn_conversation(ports, 2)
    assert out.status == "done" and out.superseded
    old, new = out.superseded[0]
    assert db.state.memories[old]["superseded_by_id"] == new
    assert ("memory.superseded", old) in [(t, e.memory_id) for t, e in db.outbox]


def test_erased_contact_learns_nothing():
    db = _db()
    _conv(db, 1, HIDRO)
    db.state.erased.add((ACCOUNT, CONTACT))
    out = learn_conversation(_ports(db), 1, account_id=ACCOUNT)
    assert out.status == "erased"
    assert db.state.memories == {} and db.outbox == [] and 1 not in db.state.extractions


def test_flag_off_records_skipped_without_facts():
    db = _db(extraction=False)
    _conv(db, 1, HIDRO)
    out = learn_conversation(_ports(db), 1)
    assert out.status == "skipped" and db.state.memories == {} and db.outbox == []
    assert db.state.extractions[1]["status"] == "skipped"


def test_wrong_account_is_a_mismatch():
    db = _db()
    _conv(db, 1, HIDRO)
    assert learn_conversation(_ports(db), 1, account_id=ACCOUNT + 1).status == "mismatch"
    assert db.state.memories == {} and db.outbox == []


def test_an_exception_inside_a_unit_rolls_back_the_change_and_its_events():
    db = _db()
    _conv(db, 1, HIDRO)
    with pytest.raises(RuntimeError), db.unit_of_work() as uow:
        uow.learning.soft_delete([], ACCOUNT, CONTACT, now=T0, reason="x")
        uow.learning.record_extraction(db.state.conversations[1], "done", now=T0)
        uow.add_event("memory.deleted", MemoryEvent(memory_id=1, account_id=ACCOUNT, contact_id=CONTACT))
        raise RuntimeError("boom")
    assert db.state.extractions == {} and db.outbox == [] and db.commits == 0


def test_only_typed_events_of_their_contract_are_accepted():
    db = _db()
    with db.unit_of_work() as uow:
        with pytest.raises(TypeError):
            uow.add_event("memory.deleted", {"memory_id": 1, "account_id": 1, "contact_id": 1})
        with pytest.raises(ValueError):
            uow.add_event("chunk.deleted", MemoryEvent(memory_id=1, account_id=1, contact_id=1))
        # a model built without validation is caught at commit
        uow.add_event("memory.deleted", MemoryEvent(memory_id=1, account_id=1, contact_id=1))
        uow._pending.append(("memory.deleted", MemoryEvent.model_construct(memory_id="x", account_id=1,
                                                                           contact_id=1)))
        with pytest.raises(ValueError):
            uow.commit()
    assert db.outbox == []


def _record(conv_id: int, event_id: str, *, account_id: int = ACCOUNT, offset: int = 0):
    import json

    from streams.kafka.consume import Record

    payload = {"schema_version": 1, "conversation_id": conv_id, "account_id": account_id,
               "contact_id": CONTACT, "reason": "resolved"}
    return Record("outbox.event.conversation", 0, offset, str(conv_id).encode(), json.dumps(payload).encode(),
                  (("id", event_id.encode()), ("type", b"conversation.resolved")))


def test_the_consumer_learns_once_per_event_and_dead_letters_another_accounts():
    from streams.learn.learn import ConversationEventHandler

    db = _db()
    _conv(db, 1, HIDRO)
    handler = ConversationEventHandler(_ports(db))
    e1, e2, e3 = (str(uuid.uuid4()) for _ in range(3))
    assert handler([_record(1, e1), _record(1, e1, offset=1)]) == []   # a duplicate in the batch
    created = sorted(db.state.memories)
    assert created and ("learn", e1) in db.state.processed
    events = list(db.outbox)
    assert handler([_record(1, e1)]) == [] and list(db.outbox) == events  # redelivered later
    assert handler([_record(1, e2)]) == [] and list(db.outbox) == events  # another event: already learnt
    [dead] = handler([_record(1, e3, account_id=ACCOUNT + 1)])
    assert dead.error_class == "AccountMismatch" and sorted(db.state.memories) == created
