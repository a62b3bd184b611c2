"""Outbox rows are built only from the typed event contracts (no service needed)."""

import json
import uuid

import pytest
from pydantic import ValidationError

from schemas.events import ChunkEvent, ContactEvent, ConversationEvent, MemoryEvent
from streams.kafka.envelope import decode_outbox
from streams.outbox.write import outbox_row


@pytest.mark.parametrize("type_,event,aggregate,key", [
    ("chunk.upserted", ChunkEvent(chunk_id=uuid.UUID(int=7), account_id=1, document_id=uuid.UUID(int=9)),
     "chunk", str(uuid.UUID(int=7))),
    ("conversation.resolved", ConversationEvent(conversation_id=42, account_id=1, contact_id=5), "conversation", "42"),
    ("memory.superseded", MemoryEvent(memory_id=3, account_id=1, contact_id=5), "memory", "3"),
    ("contact.erased", ContactEvent(account_id=1, contact_id=5), "contact", "1:5"),
])
def test_a_row_carries_its_aggregate_key_and_a_payload_the_consumer_decodes(type_, event, aggregate, key):
    row_id, aggregatetype, aggregateid, row_type, payload = outbox_row(type_, event)
    assert (aggregatetype, aggregateid, row_type) == (aggregate, key, type_)
    assert uuid.UUID(row_id).version == 7  # time-ordered ids
    decoded = decode_outbox(aggregatetype, aggregateid.encode(), payload.encode(),
                            [("id", row_id.encode()), ("type", type_.encode())])
    assert decoded.payload == event and json.loads(payload)["schema_version"] == 1


def test_an_event_type_the_contract_does_not_declare_is_refused():
    with pytest.raises(ValueError, match="not an event type of memory"):
        outbox_row("memory.exploded", MemoryEvent(memory_id=1, account_id=1, contact_id=1))
    with pytest.raises(ValueError, match="not an event type of chunk"):
        outbox_row("memory.created", ChunkEvent(chunk_id=uuid.uuid4(), account_id=1, document_id=uuid.uuid4()))


def test_an_invalid_event_cannot_be_built():
    with pytest.raises(ValidationError):
        MemoryEvent(memory_id="not a number", account_id=1, contact_id=1)
    with pytest.raises(ValidationError):
        ConversationEvent(conversation_id=1, account_id=1, contact_id=1, reason="because")
    with pytest.raises(TypeError):
        outbox_row("memory.created", {"memory_id": 1, "account_id": 1, "contact_id": 1})
