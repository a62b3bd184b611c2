"""In-memory ports for the responder's unit tests."""

from __future__ import annotations

import asyncio
import time
import zlib
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, Mapping, Sequence
from uuid import UUID, uuid5

import numpy as np

from schemas.events import InboundMessage, OutboundReply
from streams.respond.model import ConversationContext, HistoryMessage, InboxConfig, KnowledgeChunk
from streams.respond.recall import MemoryFact

NS = UUID("00000000-0000-0000-0000-000000000001")


class BagOfWordsEmbedder:
    """Deterministic toy embedder: hashed folded words → unit vector (crc32, not
    ``hash()``, which is salted per process and made collisions random)."""

    def __init__(self, name: str = "bow", dim: int = 256):
        self.name, self.dim = name, dim
        self.calls = 0

    def _one(self, text: str) -> np.ndarray:
        from streams.respond.text import content_tokens, stem

        v = np.zeros(self.dim, dtype=np.float32)
        for t in content_tokens(text):
            v[zlib.crc32(stem(t).encode()) % self.dim] += 1.0
        n = np.linalg.norm(v)
        return v / n if n else v

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        return np.stack([self._one(t) for t in texts]) if texts else np.zeros((0, self.dim))

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        self.calls += 1  # only queries are counted: the handler embeds the message
        return self.embed_passages(texts)


@dataclass
class FakeStore:
    recall_enabled: bool = True
    inbox: InboxConfig = field(default_factory=lambda: InboxConfig(inbox_id=1101))
    history: list[HistoryMessage] = field(default_factory=list)
    lead_state: dict[str, Any] | None = None
    retrieval_count: int = 0
    seen: set[str] = field(default_factory=set)
    replies: list[OutboundReply] = field(default_factory=list)
    model_calls: list = field(default_factory=list)

    def store_inbound(self, msg: InboundMessage) -> bool:
        if msg.message_id in self.seen:
            return False
        self.seen.add(msg.message_id)
        return True

    def load_context(self, msg: InboundMessage, history: int) -> ConversationContext:
        return ConversationContext(recall_enabled=self.recall_enabled, inbox=self.inbox,
                                   history=tuple(self.history[-history:]), lead_state=self.lead_state,
                                   retrieval_count=self.retrieval_count)

    def receive(self, msg: InboundMessage, history: int) -> ConversationContext | None:
        return self.load_context(msg, history) if self.store_inbound(msg) else None

    def save_reply(self, reply: OutboundReply, lead_state: Mapping[str, Any] | None, *,
                   model_call=None, recall_ms=None, embedding_calls=()) -> None:
        self.replies.append(reply)
        self.model_calls.append(model_call)
        self.lead_state = dict(lead_state) if lead_state is not None else None
        self.retrieval_count = int((lead_state or {}).get("retrieval_count", 0))
        self.history.append(HistoryMessage("agent", reply.text))

@dataclass
class FakeMemory:
    facts: list[MemoryFact] = field(default_factory=list)
    sleep_s: float = 0.0
    fail: bool = False
    calls: list[tuple[int, int, float]] = field(default_factory=list)

    def live_facts(self, account_id: int, contact_id: int, *, timeout_s: float) -> Sequence[MemoryFact]:
        self.calls.append((account_id, contact_id, timeout_s))
        if self.sleep_s:
            time.sleep(self.sleep_s)
        if self.fail:
            raise RuntimeError("db down")
        return list(self.facts)


@dataclass
class AsyncSlowMemory:
    sleep_s: float = 2.0
    cancelled: bool = False

    async def live_facts(self, account_id: int, contact_id: int, *, timeout_s: float):
        try:
            await asyncio.sleep(self.sleep_s)
        except asyncio.CancelledError:
            self.cancelled = True
            raise
        return []


@dataclass
class FakeKnowledge:
    """Brute-force cosine search over (document_id, text) pairs."""

    embedder: Any
    docs: list[tuple[int, str, str]] = field(default_factory=list)  # (account_id, doc, text)
    calls: int = 0

    def search(self, query_vec, account_id: int, limit: int, max_distance: float):
        self.calls += 1
        out = []
        for acc, doc, text in self.docs:
            if acc != account_id:
                continue
            vec = self.embedder.embed_passages([text])[0]
            dist = 1.0 - float(np.dot(query_vec, vec))
            if dist <= max_distance:
                out.append((uuid5(NS, f"{doc}:{text}"), uuid5(NS, doc), dist, text))
        out.sort(key=lambda h: h[2])
        return out[:limit]


class FixedClock:
    def now(self) -> datetime:
        return datetime(2025, 1, 2, 3, 4, 5, tzinfo=timezone.utc)


def inbound(text: str, message_id: str = "wamid.1", unit_id: int | None = 11, **kw) -> InboundMessage:
    base = dict(message_id=message_id, account_id=101, inbox_id=1101, conversation_id="c-1",
                contact_id=5001, unit_id=unit_id, channel="whatsapp", text=text,
                sent_at=datetime(2025, 1, 2, 3, 4, tzinfo=timezone.utc))
    base.update(kw)
    return InboundMessage(**base)


def chunk(text: str, distance: float = 0.5) -> KnowledgeChunk:
    """A knowledge chunk of its own document (random ids)."""
    from uuid import uuid4

    return KnowledgeChunk(uuid4(), uuid4(), distance, text)


class WordIndex:
    """The word search port (``lexical_search``) over {first stem asked: chunks}; ``asked`` records the stems."""

    def __init__(self, index: Mapping[str, Sequence[KnowledgeChunk]]):
        self.index = index
        self.asked: list[list[str]] = []

    def __call__(self, account_id: int, stems: Sequence[str], limit: int) -> list[KnowledgeChunk]:
        self.asked.append(list(stems))
        return list(self.index.get(stems[0], []))[:limit]


def run_steps(steps) -> Any:
    """Drive one of the handler's step generators (``_*_steps``) on a fresh loop."""
    from streams.respond.handler import _steps_on_loop

    return asyncio.run(_steps_on_loop(steps))


def composed(message: str, intent: str, *texts: str) -> str:
    """The offline composer's reply to ``message`` read as ``intent``, over chunks of ``texts``; it never quotes a
    price the chunks do not hold."""
    from uuid import uuid4

    from streams.respond.generate import OfflineComposer, unsupported_prices
    from streams.respond.model import ReplyRequest

    chunks = [KnowledgeChunk(uuid4(), uuid4(), 0.3, t) for t in texts]
    req = ReplyRequest(messages=[], message=message, intent=intent, retrieval="required", chunks=tuple(chunks))
    text = OfflineComposer().generate(req).text
    assert not unsupported_prices(text, chunks)
    return text
