"""What starts a learning, over the in-memory unit of work (unit tier: no service); the SQL of
these ``uow.learning`` methods is tested against Postgres in tests/learn/test_learn_flow.py."""

from __future__ import annotations

from datetime import timedelta

from schemas.events import ConversationEvent
from streams.learn.store import Conversation
from streams.learn.triggers import SILENCE, announce_silent, reopen_conversation, resolve_conversation
from streams.store.fake_uow import FakeDatabase
from tests.learn.seed import T0

A, C = 7, 70


def _db(*convs: tuple[int, str, object]) -> FakeDatabase:
    db = FakeDatabase()
    for cid, status, last in convs:
        db.add_conversation(Conversation(id=cid, account_id=A, contact_id=C, inbox_id=1, unit_id=None,
                                         status=status, last_message_at=last), [])
    return db


def _run(db: FakeDatabase, fn, *args, **kw):
    """``fn`` in a unit of its own, committed (what a connection target does in Postgres)."""
    with db.unit_of_work() as uow:
        out = fn(uow, *args, **kw)
        uow.commit()
    return out


def _event(type_: str, cid: int, reason: str):
    return type_, ConversationEvent(conversation_id=cid, account_id=A, contact_id=C, reason=reason)


def test_resolve_announces_once_and_clears_the_lead_state():
    db = _db((1, "open", T0))
    db.state.lead_states[1] = {"stage": "quote"}
    assert _run(db, resolve_conversation, 1, now=T0) is True
    assert _run(db, resolve_conversation, 1, now=T0) is False   # already resolved: nothing
    assert _run(db, resolve_conversation, 99, now=T0) is False  # unknown: nothing
    assert db.state.conversations[1].status == "resolved" and db.state.lead_states[1] == {}
    assert db.state.transitions[1]["resolved_at"] == T0
    assert db.outbox == [_event("conversation.resolved", 1, "resolved")]


def test_reopen_sets_the_status_reopens_the_extraction_and_forgets_the_silence():
    db = _db((1, "resolved", T0), (2, "open", T0))
    db.state.extractions[1] = {"status": "done", "attempts": 1, "through_message_id": 5, "next_attempt_at": None}
    db.state.silences[1] = {"account_id": A, "contact_id": C}
    later = T0 + timedelta(hours=1)
    assert _run(db, reopen_conversation, 1, now=later) is True
    assert _run(db, reopen_conversation, 2, now=later) is False  # open: not resolved
    assert db.state.conversations[1].status == "open"
    assert db.state.transitions[1] == {"resolved_at": None, "reopened_at": later}
    assert db.state.extractions[1]["status"] == "reopened" and db.state.extractions[1]["through_message_id"] == 5
    assert 1 not in db.state.silences
    assert db.outbox == [_event("conversation.reopened", 1, "reopened")]
    # reopened, it can be resolved (and learnt) again
    assert _run(db, resolve_conversation, 1, now=later) is True
    assert [t for t, _ in db.outbox] == ["conversation.reopened", "conversation.resolved"]


def test_a_transition_in_the_callers_unit_is_announced_only_when_the_caller_commits():
    db = _db((1, "open", T0))
    with db.unit_of_work() as uow:
        assert resolve_conversation(uow, 1, now=T0)
        assert db.outbox == [] and db.state.conversations[1].status == "open"  # not yet committed
    assert db.outbox == [] and db.state.conversations[1].status == "open"      # left without commit
    with db.unit_of_work() as uow:
        assert resolve_conversation(uow, 1, now=T0)
        uow.commit()
    assert db.outbox == [_event("conversation.resolved", 1, "resolved")]


def test_silence_is_announced_once_per_open_unlearnt_conversation_oldest_first():
    now = T0 + timedelta(hours=2)
    db = _db((1, "open", now - SILENCE - timedelta(minutes=5)), (2, "open", now - SILENCE - timedelta(hours=1)),
             (3, "open", now - timedelta(minutes=1)),       # recent
             (4, "resolved", now - timedelta(hours=1)),     # not open
             (5, "open", now - timedelta(hours=1)))         # already learnt
    db.state.extractions[5] = {"status": "done", "attempts": 1, "through_message_id": 1}
    assert _run(db, announce_silent, now=now) == [2, 1]
    assert _run(db, announce_silent, now=now) == []   # tracked: never re-announced
    assert _run(db, announce_silent, now=now + timedelta(hours=1)) == [3]
    assert db.outbox == [_event("conversation.silent", c, "silent") for c in (2, 1, 3)]
    assert _run(db, announce_silent, now=now + timedelta(days=1), limit=1) == []
