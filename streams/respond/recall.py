"""Memory recall scoring (pure): which of a contact's live facts to inject.

A fact is *compatible* with a conversation when its scope is ``global``, or
its scope is ``unit`` and it was learnt in the conversation's own unit. A
unit-scoped fact is never shown in another unit's conversation, and a
conversation without a unit sees no unit-scoped fact at all. A fact without
an embedding (embedding failed) or whose vector has another dimension (a
different model) is invisible.

score = cosine similarity × weight (weight 0.7 once a "reduce weight" TTL
expired). Vectors are L2-normalised by the embedders, but we normalise again
so a store returning raw pgvector values cannot skew the ranking.

``min_score`` is an optional relevance floor. Measured on the dev recall set
(``python -m streams.respond.evaluate_recall``): a floor cannot raise
recall@5, it only trims; the default keeps none (``DEFAULT_MIN_SCORE``),
see that module's output for the trade-off per embedder.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

TOP_K = 5
DEFAULT_MIN_SCORE: float | None = None


@dataclass(frozen=True)
class MemoryFact:
    id: int
    memory_type: str
    content: str
    confidence: float
    scope: str  # "global" | "unit"
    source_unit_id: int | None
    weight: float = 1.0
    embedding: Sequence[float] | np.ndarray | None = None


@dataclass(frozen=True)
class ScoredFact:
    fact: MemoryFact
    similarity: float
    score: float


def compatible(fact: MemoryFact, unit_id: int | None) -> bool:
    """Tenant rule for units: global facts everywhere, unit facts only at home."""
    if fact.scope == "global":
        return True
    if fact.scope == "unit":
        return unit_id is not None and fact.source_unit_id == unit_id
    return False  # an unknown scope is treated as the most restrictive


def score_memories(query_vec: Sequence[float] | np.ndarray, facts: Sequence[MemoryFact],
                   unit_id: int | None, top_k: int = TOP_K,
                   min_score: float | None = DEFAULT_MIN_SCORE) -> list[ScoredFact]:
    """The at most ``top_k`` compatible facts, best first (ties: higher confidence, lower id)."""
    q = np.asarray(query_vec, dtype=np.float32).reshape(-1)
    qn = float(np.linalg.norm(q))
    if qn == 0.0 or top_k <= 0:
        return []
    q = q / qn
    scored: list[ScoredFact] = []
    for fact in facts:
        if fact.embedding is None or not compatible(fact, unit_id):
            continue
        e = np.asarray(fact.embedding, dtype=np.float32).reshape(-1)
        if e.shape != q.shape:
            continue
        en = float(np.linalg.norm(e))
        if en == 0.0:
            continue
        sim = float(np.dot(q, e) / en)
        score = sim * float(fact.weight)
        if min_score is not None and score < min_score:
            continue
        scored.append(ScoredFact(fact, sim, score))
    scored.sort(key=lambda s: (-s.score, -s.fact.confidence, s.fact.id))
    return scored[:top_k]


def fact_passage_text(memory_type: str, content: str) -> str:
    """The text a fact is embedded from (learning and ranking must agree).

    Only the content: measured on the dev recall set, prefixing the type
    label did not help (see ``evaluate_recall --variants``).
    """
    return content
