"""Typed values that flow through the learning stage."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, Field

from streams.learn.taxonomy import Scope

Role = Literal["contact", "agent"]

#: Prefix of a ``normalized_value`` that states the *absence* of the value
#: ("não sou mais alérgico a camarão" → ``not:camarao``); ``not:*`` negates the
#: whole slot ("não tenho nenhuma alergia").
NEGATED_PREFIX = "not:"


class Message(BaseModel):
    role: Role
    text: str
    sent_at: datetime | None = None


class Transcript(BaseModel):
    conversation_id: str | int
    account_id: int
    contact_id: int
    unit_id: int | None = None
    inbox_id: int | None = None
    messages: list[Message] = Field(default_factory=list)

    def contact_texts(self) -> list[str]:
        return [m.text for m in self.messages if m.role == "contact"]


class CandidateFact(BaseModel):
    """What an extractor proposes, before validation (fields are lenient)."""

    memory_type: str
    memory_key: str | None = None
    content: str = ""
    normalized_value: str | None = None
    evidence: str = ""
    confidence: float = 0.0


class Fact(BaseModel):
    """A validated fact: known type, verbatim contact evidence, confidence ≥ 0.5."""

    memory_type: str
    memory_key: str
    content: str = Field(max_length=1000)
    normalized_value: str | None = None
    evidence: str
    confidence: float = Field(ge=0.5, le=1.0)
    scope: Scope

    @property
    def negated(self) -> bool:
        return bool(self.normalized_value and self.normalized_value.startswith(NEGATED_PREFIX))


class TokenUsage(BaseModel):
    prompt_tokens: int = 0
    completion_tokens: int = 0

    def __add__(self, other: "TokenUsage") -> "TokenUsage":
        return TokenUsage(
            prompt_tokens=self.prompt_tokens + other.prompt_tokens,
            completion_tokens=self.completion_tokens + other.completion_tokens,
        )


class Discard(BaseModel):
    fact: CandidateFact
    reason: str


class Proposal(BaseModel):
    """An extractor's raw output for one conversation."""

    candidates: list[CandidateFact] = Field(default_factory=list)
    usage: TokenUsage = Field(default_factory=TokenUsage)
    # Set when the model's output could not be used at all: the conversation
    # is "discarded with a warning" (no facts, not retried).
    warning: str | None = None


class ExtractionResult(BaseModel):
    conversation_id: str | int
    facts: list[Fact] = Field(default_factory=list)
    discarded: list[Discard] = Field(default_factory=list)
    usage: TokenUsage = Field(default_factory=TokenUsage)
    status: Literal["ok", "discarded"] = "ok"
    warning: str | None = None
    extractor: str = ""
