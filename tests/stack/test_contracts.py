"""Event contracts: exported JSON Schemas are current; models accept and reject what they should."""

import json
from datetime import datetime, timezone

import pytest
from pydantic import ValidationError

from schemas.events import EVENT_MODELS, InboundMessage, OutboundReply
from schemas.export import OUT, render
from streams.kafka.envelope import DecodeError, decode_outbox, header


def test_exported_json_schemas_are_up_to_date():
    rendered = render()
    assert set(rendered) == {p.name for p in OUT.glob("*.schema.json")}, \
        "schemas/json has missing or stale files: run `make schemas`"
    for name, text in rendered.items():
        assert (OUT / name).read_text() == text, f"{name} is out of date: run `make schemas`"


def test_every_model_is_versioned():
    for name, model in EVENT_MODELS.items():
        assert name.endswith(".v1")
        if name != "dead_letter_headers.v1":
            assert "schema_version" in model.model_fields


def test_inbound_message_validation():
    ok = InboundMessage(message_id="wamid.1", account_id=1, inbox_id=2, conversation_id="c1", contact_id=3,
                        unit_id=None, channel="whatsapp", text="oi", sent_at=datetime.now(timezone.utc))
    assert ok.schema_version == 1
    with pytest.raises(ValidationError):
        InboundMessage(message_id="", account_id=1, inbox_id=2, conversation_id="c1", contact_id=3,
                       channel="whatsapp", text="oi", sent_at=datetime.now(timezone.utc))
    with pytest.raises(ValidationError):
        OutboundReply.model_validate({"reply_id": "r"})


def test_outbox_envelope_decoding_accepts_relay_and_debezium_headers():
    payload = json.dumps({"schema_version": 1, "chunk_id": "01900000-0000-7000-8000-000000000001",
                          "account_id": 1, "document_id": "01900000-0000-7000-8000-000000000002"}).encode()
    eid = "01900000-0000-7000-8000-0000000000aa"
    relay = decode_outbox("chunk", b"k", payload, [("id", eid.encode()), ("type", b"chunk.upserted")])
    debezium = decode_outbox("chunk", b"k", json.dumps(payload.decode()).encode(),
                             [("id", f'"{eid}"'.encode()), ("type", b'"chunk.upserted"')])
    assert relay.event_id == debezium.event_id == eid
    assert relay.payload == debezium.payload
    assert header({"id": b"x"}, "id") == "x"


@pytest.mark.parametrize("value,headers,error", [
    (b"{not json", [("id", b"01900000-0000-7000-8000-0000000000aa"), ("type", b"chunk.upserted")], "InvalidJSON"),
    (b"{}", [("id", b"01900000-0000-7000-8000-0000000000aa"), ("type", b"chunk.exploded")], "UnknownEventType"),
    (b'{"account_id": 1}', [("id", b"01900000-0000-7000-8000-0000000000aa"), ("type", b"chunk.upserted")],
     "SchemaValidation"),
    (b"{}", [("type", b"chunk.upserted")], "MissingHeader"),
    (b"[1]", [("id", b"01900000-0000-7000-8000-0000000000aa"), ("type", b"chunk.deleted")], "InvalidPayload"),
])
def test_outbox_envelope_rejects_poison(value, headers, error):
    with pytest.raises(DecodeError) as e:
        decode_outbox("chunk", b"k", value, headers)
    assert e.value.error_class == error
