"""Who pays for an embedding: tokens a paid endpoint reports, collected per unit of work.

The one mechanism for every path: a flow that must put its embeddings in the cost ledger
(a reply, an indexing batch, a learning, a manual edit or restore)
calls ``collect()`` in its own asyncio task or thread and reads the returned dict
afterwards: ``{model: tokens}`` of every embedding call made from that context,
including calls made in threads started with ``asyncio.to_thread`` (they run in a
copy of the caller's context, which holds the same dict). Local models report
nothing, so they cost nothing.
"""

from __future__ import annotations

from contextvars import ContextVar
from dataclasses import dataclass

_SINK: ContextVar[dict[str, int] | None] = ContextVar("memoria_embedding_tokens", default=None)


def collect() -> dict[str, int]:
    """Start collecting in the current context; returns the dict the calls add to."""
    sink: dict[str, int] = {}
    _SINK.set(sink)
    return sink


def report(model: str, tokens: int) -> None:
    """Called by an embedder after each call that reported token usage."""
    sink = _SINK.get()
    if sink is not None and tokens:
        sink[model] = sink.get(model, 0) + int(tokens)


@dataclass(frozen=True)
class EmbeddingUsage:
    """Tokens in the shape of the cost ledger (``streams.pricing.TokenCounts``)."""

    prompt_tokens: int = 0
    completion_tokens: int = 0


def usage(sink: dict[str, int]) -> EmbeddingUsage:
    """The collected tokens as a ledger usage (0 for local models)."""
    return EmbeddingUsage(prompt_tokens=sum(sink.values()))
