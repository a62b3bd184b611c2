"""Event contracts (docs/architecture.md §2): Python models and their exported JSON Schemas.

Every message carries ``schema_version``; ``python -m schemas.export`` writes
``schemas/json/*.schema.json`` and a test fails when a file is out of date.
"""

from schemas.events import (  # noqa: F401
    EVENT_MODELS,
    OUTBOX_PAYLOADS,
    ChunkEvent,
    ContactEvent,
    ConversationEvent,
    DeadLetterHeaders,
    InboundMessage,
    MemoryEvent,
    OutboundReply,
)
