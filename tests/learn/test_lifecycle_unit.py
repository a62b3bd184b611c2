"""A conversation's status change (``change_status``) over the in-memory unit of work: found by our
id or the channel's, scoped by account, stale channel events ignored, one event per real change.
The SQL of ``uow.lifecycle`` is tested against Postgres in tests/learn/test_lifecycle.py."""

from __future__ import annotations

from datetime import timedelta

import pytest

from schemas.events import ConversationEvent, ConversationLifecycleEvent
from streams.kafka.consume import Record
from streams.learn.lifecycle import ConversationNotFound, LifecycleEventHandler, change_status
from streams.learn.store import Conversation
from streams.store.fake_uow import FakeDatabase
from tests.learn.seed import T0

A, B, C = 7, 8, 70


def _db() -> FakeDatabase:
    db = FakeDatabase()
    db.add_conversation(Conversation(id=1, account_id=A, contact_id=C, inbox_id=1, unit_id=None, status="open",
                                     last_message_at=T0), [])
    db.state.channel_conversations["wa-1"] = 1
    return db


def _change(db: FakeDatabase, **kw):
    """``change_status`` in a unit of its own, committed (what a connection target does in Postgres)."""
    with db.unit_of_work() as uow:
        out = change_status(uow, **kw)
        uow.commit()
    return out


def _types(db):
    return [t for t, _ in db.outbox]


def test_resolve_by_the_channels_id_announces_once():
    db = _db()
    first = _change(db, account_id=A, external_id="wa-1", action="resolve", now=T0)
    assert (first.conversation_id, first.external_id, first.contact_id, first.status, first.changed) == \
        (1, "wa-1", C, "resolved", True)
    again = _change(db, account_id=A, conversation_id=1, action="resolve", now=T0 + timedelta(minutes=1))
    assert (again.status, again.changed) == ("resolved", False)   # a repeated "resolved" learns once
    assert db.outbox == [("conversation.resolved",
                          ConversationEvent(conversation_id=1, account_id=A, contact_id=C, reason="resolved"))]


def test_a_channel_event_older_than_the_last_change_is_ignored():
    db = _db()
    _change(db, account_id=A, external_id="wa-1", action="resolve", now=T0 + timedelta(hours=1))
    late = _change(db, account_id=A, external_id="wa-1", action="reopen", now=T0)   # a webhook retried late
    assert (late.status, late.changed) == ("resolved", False)
    assert db.state.conversations[1].status == "resolved" and _types(db) == ["conversation.resolved"]
    later = _change(db, account_id=A, external_id="wa-1", action="reopen", now=T0 + timedelta(hours=2))
    assert (later.status, later.changed) == ("open", True)
    assert _types(db) == ["conversation.resolved", "conversation.reopened"]


def test_another_accounts_conversation_is_not_found():
    db = _db()
    for account, ref in ((B, {"external_id": "wa-1"}), (B, {"conversation_id": 1}),
                         (A, {"external_id": "nope"}), (A, {"conversation_id": 99})):
        with pytest.raises(ConversationNotFound):
            _change(db, account_id=account, action="resolve", now=T0, **ref)
    assert db.state.conversations[1].status == "open" and db.outbox == []


def test_the_change_commits_with_the_callers_unit_or_not_at_all():
    db = _db()
    with db.unit_of_work() as uow:
        assert change_status(uow, account_id=A, conversation_id=1, action="resolve", now=T0).changed
        # the caller leaves without committing: no change, no event
    assert db.state.conversations[1].status == "open" and db.outbox == []


def test_arguments_are_checked():
    db = _db()
    with pytest.raises(ValueError, match="exactly one"):
        _change(db, account_id=A, conversation_id=1, external_id="wa-1", action="resolve")
    with pytest.raises(ValueError, match="unknown action"):
        _change(db, account_id=A, conversation_id=1, action="close")


def _event(type_: str, event_id: str, conversation_id: str = "wa-1", account_id: int = A) -> Record:
    e = ConversationLifecycleEvent(event_id=event_id, type=type_, account_id=account_id,
                                   conversation_id=conversation_id, source="chatwoot", occurred_at=T0)
    return Record("channel.conversation.events", 0, 0, conversation_id.encode(), e.model_dump_json().encode())


def test_the_channels_event_is_marked_handled_in_the_unit_of_its_change():
    db = _db()
    handler = LifecycleEventHandler(None, uow=db.unit_of_work)
    commits = db.commits
    assert handler([_event("resolved", "cw-1"), _event("resolved", "cw-1")]) == []  # the same event twice
    assert db.commits == commits + 1  # one unit: the change, its event and its mark
    assert _types(db) == ["conversation.resolved"] and ("lifecycle", f"{A}:cw-1") in db.state.processed
    # an unknown conversation can never be applied: dead-lettered, and marked so a redelivery is not retried
    dead = handler([_event("reopened", "cw-2", conversation_id="wa-404")])
    assert [d.error_class for d in dead] == ["UnknownConversation"]
    assert ("lifecycle", f"{A}:cw-2") in db.state.processed and _types(db) == ["conversation.resolved"]
    assert handler([_event("reopened", "cw-2", conversation_id="wa-404")]) == []  # redelivered: skipped
