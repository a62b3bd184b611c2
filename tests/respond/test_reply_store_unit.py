"""The responder's writes over the in-memory unit of work (unit tier: no service)."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest

from schemas.events import OutboundReply
from streams.pricing import ModelCall
from streams.respond.adapters import PostgresConversationStore, TenantMismatch
from streams.respond.handler import reply_id_for
from streams.store.fake_uow import FakeDatabase
from tests.respond.fakes import inbound


def _store(db: FakeDatabase) -> PostgresConversationStore:
    return PostgresConversationStore(None, uow=db.unit_of_work)


def _reply(msg, text="Custa R$ 200.") -> OutboundReply:
    return OutboundReply(reply_id=reply_id_for(msg), in_reply_to=msg.message_id, account_id=msg.account_id,
                         conversation_id=msg.conversation_id, contact_id=msg.contact_id, text=text,
                         intent="price", strategy="optional", created_at=datetime(2025, 1, 2, 3, 5, tzinfo=timezone.utc))


def _agent_messages(db):
    return [m for m in db.state.messages if m["role"] == "agent"]


def test_a_reply_is_recorded_once_with_its_model_call_and_lead_state():
    db = FakeDatabase()
    store, msg = _store(db), inbound("quanto custa o pernoite?")
    assert store.store_inbound(msg)          # new: needs a reply
    call = ModelCall(msg.account_id, "generation", "m", 10, 5, 0.001, ref=reply_id_for(msg))
    store.save_reply(_reply(msg), {"stage": "quote"}, model_call=call, recall_ms=12.5)
    assert store.store_inbound(msg) is False  # redelivered after the reply: no second answer
    store.save_reply(_reply(msg, "outra geração"), {"stage": "booking"}, model_call=call)  # redelivered reply
    [agent] = _agent_messages(db)
    assert agent["text"] == "Custa R$ 200." and agent["reply"]["recall_ms"] == 12.5
    assert db.state.ledger == [call]
    assert list(db.state.lead_states.values()) == [{"stage": "booking"}]
    assert db.outbox == []  # a reply is published by the responder itself, not through the outbox


def test_a_redelivered_message_without_a_reply_still_needs_one():
    db = FakeDatabase()
    store, msg = _store(db), inbound("oi")
    assert store.store_inbound(msg) and store.store_inbound(msg)
    assert len([m for m in db.state.messages if m["role"] == "contact"]) == 1


def test_erased_contact_stores_nothing():
    db = FakeDatabase()
    msg = inbound("oi de novo")
    db.state.erased.add((msg.account_id, msg.contact_id))
    assert _store(db).store_inbound(msg) is False
    assert db.state.messages == [] and db.state.conversations == {} and db.commits == 0


def test_a_contact_of_another_account_is_refused_and_nothing_is_kept():
    db = FakeDatabase()
    store = _store(db)
    store.store_inbound(inbound("oi"))
    with pytest.raises(TenantMismatch):
        store.store_inbound(inbound("oi", message_id="wamid.2", account_id=999, conversation_id="c-2"))
    assert len(db.state.messages) == 1 and "c-2" not in db.state.channel_conversations


def test_a_published_reply_keeps_its_first_acknowledgement():
    from streams.respond.acts_store import PostgresActsStore

    db = FakeDatabase()
    store, msg = _store(db), inbound("quanto custa o pernoite?")
    store.store_inbound(msg)
    store.save_reply(_reply(msg), {})
    acts = PostgresActsStore(None, uow=db.unit_of_work)   # what the tool's second reply waits for
    assert not acts.is_published(reply_id_for(msg))
    store.mark_published([_reply(msg)])
    [agent] = _agent_messages(db)
    first = agent["published_at"]
    assert first is not None and acts.is_published(reply_id_for(msg))
    store.mark_published([_reply(msg)])
    assert _agent_messages(db)[0]["published_at"] == first
