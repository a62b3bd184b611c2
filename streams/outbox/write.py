"""Write outbox rows inside the caller's transaction (docs/architecture.md §2, §3).

Events are the typed contracts of ``schemas/events.py`` (``ChunkEvent``,
``ConversationEvent``, ``MemoryEvent``, ``ContactEvent``): the model is
validated when it is built, its aggregate (topic ``outbox.event.<aggregate>``)
and key follow from its class, and the event type must be one the contract
declares. Only the unit of work (``streams/store/uow.py``) calls ``add_events``,
at its commit, so a row the relay or Debezium publishes always decodes on the
consuming side; flows announce events with ``uow.add_event``.
"""

from __future__ import annotations

from typing import Iterable, Union

import psycopg
from uuid6 import uuid7

from schemas.events import EVENT_TYPES, OUTBOX_PAYLOADS, ChunkEvent, ContactEvent, ConversationEvent, MemoryEvent

OutboxEvent = Union[ChunkEvent, ConversationEvent, MemoryEvent, ContactEvent]
AGGREGATE_OF: dict[type, str] = {model: name for name, model in OUTBOX_PAYLOADS.items()}


def aggregate_id(event: OutboxEvent) -> str:
    """The record key: one aggregate's events stay in order on one partition."""
    if isinstance(event, ChunkEvent):
        return str(event.chunk_id)
    if isinstance(event, ConversationEvent):
        return str(event.conversation_id)
    if isinstance(event, MemoryEvent):
        return str(event.memory_id)
    if isinstance(event, ContactEvent):
        return f"{event.account_id}:{event.contact_id}"
    raise TypeError(f"{type(event).__name__} is not an outbox event")


def checked_aggregate(type_: str, event: OutboxEvent) -> str:
    """The aggregate ``event`` belongs to, once ``type_`` is one of its contract's event types
    (TypeError for anything that is not an outbox event, ValueError for a foreign type)."""
    aggregate = AGGREGATE_OF.get(type(event))
    if aggregate is None:
        raise TypeError(f"{type(event).__name__} is not an outbox event (use the models of schemas/events.py)")
    if type_ not in EVENT_TYPES[aggregate]:
        raise ValueError(f"{type_!r} is not an event type of {aggregate}: {sorted(EVENT_TYPES[aggregate])}")
    return aggregate


def outbox_row(type_: str, event: OutboxEvent) -> tuple:
    """One outbox row for ``event`` announced as ``type_`` (e.g. ``chunk.upserted``)."""
    aggregate = checked_aggregate(type_, event)
    return (str(uuid7()), aggregate, aggregate_id(event), type_, event.model_dump_json())


def add_events(conn: psycopg.Connection, rows: Iterable[tuple]) -> int:
    """Insert rows built by ``outbox_row`` on the caller's connection (its transaction)."""
    rows = list(rows)
    if not rows:
        return 0
    with conn.cursor() as cur:
        cur.executemany(
            "INSERT INTO outbox (id, aggregatetype, aggregateid, type, payload) "
            "VALUES (%s, %s, %s, %s, %s::jsonb)", rows)
    return len(rows)
