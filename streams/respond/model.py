"""Value objects of the respond flow (no I/O)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal, Mapping
from uuid import UUID

from streams.respond.recall import ScoredFact

DEFAULT_RAG_DISTANCE_THRESHOLD = None  # None: calibrated for the knowledge model (see ingest.knowledge)
DEFAULT_RAG_MAX_RESULTS = 3
DEFAULT_TEMPERATURE = 0.7


@dataclass(frozen=True)
class InboxConfig:
    """Per-inbox responder configuration (``inboxes`` row)."""

    inbox_id: int
    system_prompt: str | None = None
    playbook_prompt: str | None = None
    rag_distance_threshold: float | None = DEFAULT_RAG_DISTANCE_THRESHOLD  # cosine distance
    rag_max_results: int = DEFAULT_RAG_MAX_RESULTS
    model: str | None = None
    temperature: float = DEFAULT_TEMPERATURE
    intent_keywords: Mapping[str, Any] | None = None


@dataclass(frozen=True)
class HistoryMessage:
    role: Literal["contact", "agent"]
    text: str
    sent_at: datetime | None = None


@dataclass(frozen=True)
class ConversationContext:
    """What the responder needs to know about the conversation, read in one go."""

    recall_enabled: bool  # the account's memory_recall_enabled flag (default OFF)
    inbox: InboxConfig
    history: tuple[HistoryMessage, ...] = ()  # oldest first, WITHOUT the current message
    lead_state: Mapping[str, Any] | None = None
    retrieval_count: int = 0  # knowledge retrievals already done in this conversation
    status: str = "open"  # "open" | "resolved"


@dataclass(frozen=True)
class KnowledgeChunk:
    chunk_id: UUID
    document_id: UUID
    distance: float  # cosine distance, 0 = identical
    text: str


@dataclass(frozen=True)
class Usage:
    prompt_tokens: int = 0
    completion_tokens: int = 0

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens


@dataclass(frozen=True)
class Generation:
    text: str
    usage: Usage = Usage()
    model: str = "offline"
    provider: str = "offline"


@dataclass(frozen=True)
class ReplyRequest:
    """Everything a generator may use. LLMs read ``messages``; the offline
    composer reads the structured fields (it never sees anything else)."""

    messages: list[dict[str, str]]
    message: str
    intent: str
    retrieval: str  # "required" | "optional" | "none"
    chunks: tuple[KnowledgeChunk, ...] = ()
    memories: tuple[ScoredFact, ...] = ()
    model: str | None = None
    temperature: float = DEFAULT_TEMPERATURE
    extra: dict[str, Any] = field(default_factory=dict)
    # the message's vector as the knowledge search used it, and its model, so the
    # composer does not embed the message a second time
    query_vector: Any = None
    query_model: str | None = None
    account_id: int | None = None   # whose chunks (the composer's stored sentence vectors are read by account)
