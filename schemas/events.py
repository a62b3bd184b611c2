"""Message shapes of every topic (docs/architecture.md §2). All values are UTF-8 JSON."""

from __future__ import annotations

import re
from datetime import datetime
from typing import Literal
from uuid import UUID

from pydantic import BaseModel, ConfigDict, Field, field_validator


class _Event(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)


# Control characters (C0 but tab/newline/carriage return, DEL, C1) and lone
# surrogates: Postgres refuses NUL in text and no channel means them.
_CONTROL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\ud800-\udfff]")


def clean_text(value: str) -> str:
    """``value`` without control characters and lone surrogates, stripped."""
    return _CONTROL.sub("", value).strip()


#: What a channel message was; ``text`` always carries its text form (caption,
#: button title, coordinates...). The responder answers media it cannot read with
#: a fixed fallback, and does not answer reactions.
MessageType = Literal["text", "image", "document", "video", "audio", "sticker", "location", "contacts",
                      "interactive", "button", "reaction", "unsupported"]


# ------------------------------------------------------------ channel topics
class InboundMessage(_Event):
    """``channel.inbound.messages``, key = conversation id."""

    schema_version: Literal[1] = 1
    message_id: str = Field(min_length=1, max_length=256, description="unique, from the channel")
    account_id: int = Field(gt=0)
    inbox_id: int = Field(gt=0)
    conversation_id: str = Field(min_length=1, max_length=128)
    contact_id: int = Field(gt=0)
    unit_id: int | None = None
    channel: str = Field(min_length=1, max_length=32)
    message_type: MessageType = Field("text", description="the channel's message type; text is its text form")
    placeholder: bool = Field(False, description="text only describes content that cannot be read (media "
                                                 "without a caption): not the customer's words")
    text: str = Field(min_length=1, max_length=8000,
                      description="control characters are removed on decoding; empty afterwards is invalid")
    sent_at: datetime

    @field_validator("text", mode="before")
    @classmethod
    def _clean(cls, v):
        return clean_text(v) if isinstance(v, str) else v


class ConversationLifecycleEvent(_Event):
    """``channel.conversation.events``, key = conversation id (the channel's, as in
    ``InboundMessage.conversation_id``). A conversation is resolved or reopened by
    the channel side (e.g. a Chatwoot ``conversation_status_changed`` webhook)."""

    schema_version: Literal[1] = 1
    event_id: str = Field(min_length=1, max_length=256, description="unique per change (de-duplication)")
    type: Literal["resolved", "reopened"]
    account_id: int = Field(gt=0)
    conversation_id: str = Field(min_length=1, max_length=128)
    source: str = Field("channel", min_length=1, max_length=64, description="who changed it (chatwoot, ...)")
    occurred_at: datetime


class WhatsAppTemplate(_Event):
    """A pre-approved WhatsApp message template: outside the 24-hour customer
    service window only templates may be sent (proactive offers)."""

    name: str = Field(min_length=1, max_length=512)
    language: str = Field("pt_BR", min_length=2, max_length=16)
    parameters: list[str] = Field(default_factory=list, description="body parameters {{1}}, {{2}}, ... in order")


class OutboundReply(_Event):
    """``channel.outbound.replies``, key = conversation id.

    Also carries proactive messages (``kind="offer"``: ``in_reply_to`` is empty
    and ``template`` is set) and the second reply of a slow tool
    (``kind="tool_result"``). Consumers of version 1 that ignore the new
    optional fields keep working: ``text`` is always the full message.
    """

    schema_version: Literal[1] = 1
    reply_id: str
    in_reply_to: str = Field(description="the inbound message_id")
    account_id: int
    conversation_id: str
    contact_id: int
    text: str
    intent: str
    strategy: Literal["required", "optional", "none"]
    memory_ids: list[int] = []
    chunk_ids: list[UUID] = []
    degraded: list[str] = Field(default_factory=list, description="reasons the reply was degraded")
    created_at: datetime
    kind: Literal["reply", "acknowledgement", "tool_result", "rights", "offer"] = Field(
        "reply", description="reply: the answer; acknowledgement: a slow tool is running; tool_result: its "
                             "answer; rights: a data access/erasure/opt-out answer; offer: proactive")
    tools: list[str] = Field(default_factory=list, description="tools whose results the text uses")
    template: WhatsAppTemplate | None = Field(None, description="send as this template (required outside "
                                                               "the 24-hour window)")


# --------------------------------------------- outbox payloads (value only)
# Topic ``outbox.event.<aggregatetype>``; key = aggregateid; headers ``id``
# (outbox row UUID, for de-duplication) and ``type``. Events are pointers:
# consumers re-read the current rows.
class ChunkEvent(_Event):
    """aggregatetype ``chunk``; types ``chunk.upserted`` and ``chunk.deleted``."""

    schema_version: Literal[1] = 1
    chunk_id: UUID
    account_id: int
    document_id: UUID


class ConversationEvent(_Event):
    """aggregatetype ``conversation``; types ``conversation.resolved``, ``conversation.silent``
    (both start a learning) and ``conversation.reopened`` (announces the change only)."""

    schema_version: Literal[1] = 1
    conversation_id: int
    account_id: int
    contact_id: int
    reason: Literal["resolved", "silent", "replay", "reopened"] = "resolved"


class MemoryEvent(_Event):
    """aggregatetype ``memory``; types ``memory.created``, ``memory.reinforced``,
    ``memory.updated``, ``memory.superseded``, ``memory.deleted``."""

    schema_version: Literal[1] = 1
    memory_id: int
    account_id: int
    contact_id: int


class ContactEvent(_Event):
    """aggregatetype ``contact``; types ``contact.forgotten`` and ``contact.erased``."""

    schema_version: Literal[1] = 1
    account_id: int
    contact_id: int


class DeadLetterHeaders(_Event):
    """Headers of a record on ``<source topic>.dlq``; the value is the original bytes."""

    error_class: str
    error_message: str
    source_topic: str
    source_partition: int
    source_offset: int
    first_seen: datetime


OUTBOX_PAYLOADS: dict[str, type[_Event]] = {
    "chunk": ChunkEvent,
    "conversation": ConversationEvent,
    "memory": MemoryEvent,
    "contact": ContactEvent,
}

EVENT_TYPES: dict[str, frozenset[str]] = {
    "chunk": frozenset({"chunk.upserted", "chunk.deleted"}),
    "conversation": frozenset({"conversation.resolved", "conversation.silent", "conversation.reopened"}),
    "memory": frozenset({"memory.created", "memory.reinforced", "memory.updated",
                         "memory.superseded", "memory.deleted"}),
    "contact": frozenset({"contact.forgotten", "contact.erased"}),
}

EVENT_MODELS: dict[str, type[BaseModel]] = {
    "inbound_message.v1": InboundMessage,
    "outbound_reply.v1": OutboundReply,
    "conversation_lifecycle.v1": ConversationLifecycleEvent,
    "outbox_chunk.v1": ChunkEvent,
    "outbox_conversation.v1": ConversationEvent,
    "outbox_memory.v1": MemoryEvent,
    "outbox_contact.v1": ContactEvent,
    "dead_letter_headers.v1": DeadLetterHeaders,
}
