"""Ports of the respond flow. Adapters (Postgres, Qdrant, models) live at the edges.

Every port method may be plain (blocking) or ``async``: the handler awaits
async methods directly and runs plain ones in a worker thread
(``asyncio.to_thread``), so the sync psycopg pool can be used as is without
blocking the Faust event loop.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Mapping, Protocol, Sequence
from uuid import UUID

import numpy as np

from schemas.events import InboundMessage, OutboundReply
from streams.embedding import Embedder  # noqa: F401  (re-exported: embed_queries/embed_passages, name, dim)
from streams.pricing import ModelCall
from streams.respond.model import ConversationContext, Generation, KnowledgeChunk, ReplyRequest
from streams.respond.recall import MemoryFact


class ConversationStore(Protocol):
    def store_inbound(self, msg: InboundMessage) -> bool:
        """Store the message once (unique on the channel message id; creates the
        contact/conversation rows if needed). Returns True when this message still
        needs a reply: it is new, or an earlier delivery stored it but no reply
        was recorded (the worker died in between). False → the handler stops."""

    def load_context(self, msg: InboundMessage, history: int) -> ConversationContext:
        """Account recall flag, inbox config, the last ``history`` messages before
        this one (oldest first), lead state, retrievals so far, status."""

    def receive(self, msg: InboundMessage, history: int) -> ConversationContext | None:
        """``store_inbound`` then, when it returned True, ``load_context`` (the responder's
        first step: an adapter does both in one checkout and as few round trips as it can).
        None: nothing to answer."""

    def save_reply(self, reply: OutboundReply, lead_state: Mapping[str, Any] | None, *,
                   model_call: ModelCall | None = None, recall_ms: float | None = None,
                   embedding_calls: Sequence[ModelCall] = ()) -> None:
        """In ONE transaction: store the agent message (with ``recall_ms``, for the unit
        reports), the new lead state (≤ 4 KB, already enforced; None clears it) and the
        reply's model call in the cost ledger. Idempotent on reply.reply_id."""

class MemoryRecall(Protocol):
    def live_facts(self, account_id: int, contact_id: int, *, timeout_s: float) -> Sequence[MemoryFact]:
        """The contact's live facts (not deleted, not superseded, embedded or not),
        with ``weight`` already applied by aging (0.7 for expired "reduce weight"
        facts). ``timeout_s`` is the remaining recall budget: a blocking adapter
        should bound its query with it (``SET LOCAL statement_timeout``) because a
        thread cannot be cancelled from outside; an async adapter is cancelled."""


class KnowledgeSearch(Protocol):
    def search(self, query_vec: np.ndarray, account_id: int, limit: int,
               max_distance: float) -> Sequence[KnowledgeChunk | tuple[UUID, UUID, float, str]]:
        """The account's live chunks nearest to ``query_vec`` (cosine distance ≤
        ``max_distance``), at most ``limit``, nearest first, as
        (chunk_id, document_id, distance, text). The text is re-read from Postgres
        (the vector store holds no text)."""

    # Optional: ``lexical_search(account_id, stems, limit)`` — the account's live chunks
    # holding, for every one of ``stems`` (folded word prefixes: "chopp", "parce"), a word
    # that starts with it (case and accents ignored), at most ``limit``, as KnowledgeChunk
    # with ``distance`` 1.0 (not found by meaning). Short chat questions ("qnto é o chopp?")
    # embed far from the list that answers them; their words do not. The handler uses it
    # when the adapter has it (``ChunkKnowledgeSearch``: one SQL query, beside the vector search).

    # Optional: ``sentence_vectors(account_id, chunk_ids, model)`` — the sentence vectors the
    # indexer stored with these chunks of the account (``store_sentences``), as {sentence: vector},
    # only those embedded by ``model``; the offline composer reads them instead of embedding the
    # sentences at reply time (a sentence missing there is embedded as before).


class Generator(Protocol):
    def generate(self, request: ReplyRequest) -> Generation: ...


class Clock(Protocol):
    def now(self) -> datetime: ...
