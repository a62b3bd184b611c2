"""Decode outbox records in the Debezium outbox event router shape.

Both our relay and Debezium's EventRouter produce: key = aggregateid, value =
the expanded JSON payload, header ``id`` = the outbox row's UUID, header
``type`` = the event type. Debezium's JSON header converter may quote header
values (``"abc"``), so both forms are accepted.
"""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass
from typing import Any, Iterable

from pydantic import BaseModel, ValidationError

from schemas.events import EVENT_TYPES, OUTBOX_PAYLOADS
from streams.kafka.errors import PoisonRecord


class DecodeError(PoisonRecord):
    """A record that can never be processed; it goes to the DLQ with this reason."""


@dataclass(frozen=True)
class OutboxEnvelope:
    event_id: str
    type: str
    aggregateid: str
    payload: BaseModel


def header(headers: Iterable[tuple[str, Any]] | dict | None, name: str) -> str | None:
    if not headers:
        return None
    items = headers.items() if isinstance(headers, dict) else headers
    for k, v in items:
        if k == name:
            if v is None:
                return None
            s = v.decode("utf-8", "replace") if isinstance(v, (bytes, bytearray)) else str(v)
            s = s.strip()
            if len(s) >= 2 and s[0] == s[-1] == '"':
                s = json.loads(s)
            return s
    return None


def decode_outbox(aggregatetype: str, key: bytes | None, value: bytes | None, headers) -> OutboxEnvelope:
    event_id = header(headers, "id")
    if not event_id:
        raise DecodeError("MissingHeader", "header 'id' (outbox event id) is missing")
    try:
        event_id = str(uuid.UUID(event_id))
    except ValueError:
        raise DecodeError("InvalidHeader", f"header 'id' is not a UUID: {event_id[:80]!r}") from None
    type_ = header(headers, "type")
    if type_ not in EVENT_TYPES[aggregatetype]:
        raise DecodeError("UnknownEventType",
                          f"event type {type_!r} is not one of {sorted(EVENT_TYPES[aggregatetype])}")
    if value is None:
        raise DecodeError("EmptyValue", "record value is empty (tombstone?)")
    try:
        data = json.loads(value)
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise DecodeError("InvalidJSON", f"value is not valid JSON: {e}") from None
    if isinstance(data, str):  # Debezium without expanded payload: a JSON string of JSON
        try:
            data = json.loads(data)
        except json.JSONDecodeError as e:
            raise DecodeError("InvalidJSON", f"payload string is not JSON: {e}") from None
    if not isinstance(data, dict):
        raise DecodeError("InvalidPayload", f"payload must be a JSON object, got {type(data).__name__}")
    try:
        payload = OUTBOX_PAYLOADS[aggregatetype].model_validate(data)
    except ValidationError as e:
        errs = "; ".join(f"{'.'.join(map(str, x['loc']))}: {x['msg']}" for x in e.errors()[:5])
        raise DecodeError("SchemaValidation", f"payload does not match {aggregatetype} schema: {errs}") from None
    return OutboxEnvelope(event_id=event_id, type=type_, aggregateid=(key or b"").decode("utf-8", "replace"),
                          payload=payload)
