"""Merge a conversation's facts into a contact's memory (docs/architecture.md §4B). Pure.

``plan_consolidation`` decides, for each validated fact of one conversation:

- **reinforce** an equivalent live fact (same type and the same slot and
  value, or semantically equivalent: cosine distance ≤ ``EQUIVALENT_DISTANCE``
  when the slots do not disagree), never inserting a duplicate;
- otherwise **insert** it, then ask the contradiction checker about its
  candidates (the contact's live facts of the same type within cosine
  distance 0.6, at most 3, plus up to 2 farther ones holding the same
  single-valued slot, such as the job or the payment method; a fact without
  embedding falls back to the live facts of the same type and ``memory_key``)
  and **supersede** the older
  facts it contradicts.

The caller applies the plan in one transaction (``store.apply_plan``).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from datetime import datetime
from typing import Sequence

import numpy as np

from streams.learn.contradiction import ContradictionChecker, MemoryView, select_candidates
from streams.learn.lexicon import CONTRADICTION_DISTANCE, single_valued
from streams.learn.model import NEGATED_PREFIX, Fact, TokenUsage
from streams.learn.taxonomy import default_scope, expires_at
from streams.learn.text import fold

log = logging.getLogger(__name__)

#: Cosine distance under which two facts of one type say the same thing
#: (measured with USE multilingual: "22h" vs "23h" is 0.08, so slots that
#: disagree are never merged whatever the distance).
EQUIVALENT_DISTANCE = 0.05
CANDIDATE_DISTANCE = CONTRADICTION_DISTANCE
MAX_CANDIDATES = 3
#: Live facts of the same single-valued slot asked beyond the distance cut-off.
MAX_SLOT_CANDIDATES = 2
#: Bounded increase of confidence when another conversation confirms a fact.
REINFORCE_STEP = 0.05
MAX_LIVE_FACTS = 50


@dataclass
class StoredFact:
    """A live fact of the contact, as the store returns it."""

    id: int
    memory_type: str
    memory_key: str
    content: str
    normalized_value: str
    confidence: float
    embedding: np.ndarray | None
    last_verified_at: datetime
    source_conversation_id: int | None = None
    supporting_conversation_ids: list[int] = field(default_factory=list)
    observed_at: datetime | None = None   # when the customer said it

    def conversations(self) -> set[int]:
        ids = set(self.supporting_conversation_ids)
        if self.source_conversation_id is not None:
            ids.add(self.source_conversation_id)
        return ids


@dataclass
class NewFact:
    fact: Fact
    embedding: np.ndarray | None


@dataclass
class Reinforce:
    memory_id: int
    confidence: float
    expires_at: datetime | None
    fill_embedding: np.ndarray | None = None  # the stored fact had none


@dataclass
class Insert:
    fact: Fact
    embedding: np.ndarray | None
    scope: str
    expires_at: datetime | None
    superseded_by: int | None = None  # stated before a contradicting live fact: stored as history


@dataclass
class Supersede:
    old_id: int
    memory_type: str
    new_index: int  # into Plan.inserts
    reason: str


@dataclass
class Plan:
    reinforce: list[Reinforce] = field(default_factory=list)
    inserts: list[Insert] = field(default_factory=list)
    supersede: list[Supersede] = field(default_factory=list)
    unchanged: list[int] = field(default_factory=list)  # already supported by this conversation
    usage: TokenUsage = field(default_factory=TokenUsage)


def _norm(value: str | None) -> str:
    return fold(value or "").strip()


def _distance(a: np.ndarray | None, b: np.ndarray | None) -> float | None:
    if a is None or b is None or len(a) != len(b):
        return None
    na, nb = float(np.linalg.norm(a)), float(np.linalg.norm(b))
    if na == 0 or nb == 0:
        return None
    return 1.0 - float(np.dot(a, b)) / (na * nb)


def equivalent(new: NewFact, old: StoredFact) -> bool:
    f = new.fact
    if f.memory_type != old.memory_type:
        return False
    new_value, old_value = _norm(f.normalized_value), _norm(old.normalized_value)
    if f.memory_key == old.memory_key:
        if new_value and old_value:
            return new_value == old_value
        if not new_value and not old_value and _norm(f.content) == _norm(old.content):
            return True
    if new_value.startswith(NEGATED_PREFIX) != old_value.startswith(NEGATED_PREFIX):
        return False
    d = _distance(new.embedding, old.embedding)
    return d is not None and d <= EQUIVALENT_DISTANCE


def scope_for(memory_type: str, unit_id: int | None) -> str:
    """Default scope by type. A unit-scoped type learnt in a conversation
    without a unit is stored as global: there is no unit to bind it to, and
    a unit fact with no unit would be invisible everywhere."""
    scope = default_scope(memory_type)
    return "global" if scope == "unit" and unit_id is None else scope


def plan_consolidation(
    new_facts: Sequence[NewFact],
    live: Sequence[StoredFact],
    checker: ContradictionChecker,
    *,
    conversation_id: int,
    unit_id: int | None,
    now: datetime,
    learnt_here: Sequence[StoredFact] = (),
    observed_at: datetime | None = None,
) -> Plan:
    """``learnt_here``: every fact this conversation already produced or
    supported, whatever became of it (superseded, forgotten): a replay never
    inserts those again, so it neither duplicates nor resurrects them.

    ``observed_at``: when this conversation's facts were stated. A contradiction
    is settled by that time, not by processing order: a new fact stated after
    the live one supersedes it; one stated before it (an old conversation
    processed late or replayed) is stored already superseded by the live one."""
    observed_at = observed_at or now
    plan = Plan()
    superseded: set[int] = set()
    touched: set[int] = set()
    live_ids = {old.id for old in live}
    for new in new_facts:
        f = new.fact
        seen = next((old for old in learnt_here if old.id not in live_ids and equivalent(new, old)), None)
        if seen is not None:
            plan.unchanged.append(seen.id)
            continue
        match = next((old for old in live if old.id not in superseded and equivalent(new, old)), None)
        if match is not None:
            if match.id in touched:
                continue
            touched.add(match.id)
            if conversation_id in match.conversations():
                plan.unchanged.append(match.id)  # a replay of the same evidence
                continue
            confidence = min(1.0, max(match.confidence, f.confidence) + REINFORCE_STEP)
            fill = new.embedding if match.embedding is None and new.embedding is not None else None
            plan.reinforce.append(Reinforce(match.id, round(confidence, 4), expires_at(f.memory_type, now), fill))
            continue
        index = len(plan.inserts)
        plan.inserts.append(Insert(f, new.embedding, scope_for(f.memory_type, unit_id),
                                   expires_at(f.memory_type, now)))
        pool = [old for old in live if old.id not in superseded and old.id not in touched]
        same_slot = [old for old in pool if old.memory_type == f.memory_type and old.memory_key == f.memory_key]
        if new.embedding is not None:
            candidates = select_candidates(new.embedding, pool, f.memory_type,
                                           max_distance=CANDIDATE_DISTANCE, limit=MAX_CANDIDATES)
            if single_valued(f.memory_key):
                # A slot that holds one value at a time is asked whatever the distance:
                # "Caminhoneiro" and "Agora sou motorista de aplicativo" sit 0.70 apart.
                candidates += [old for old in same_slot if old not in candidates][:MAX_SLOT_CANDIDATES]
        else:
            candidates = same_slot[:MAX_CANDIDATES]
        new_view = MemoryView(memory_type=f.memory_type, content=f.content, memory_key=f.memory_key,
                              normalized_value=f.normalized_value)
        for old in candidates:
            old_view = MemoryView(memory_type=old.memory_type, content=old.content, memory_key=old.memory_key,
                                  normalized_value=old.normalized_value or None)
            # The question is always "does the later statement make the earlier one stale?"
            # (change of state reads one way: "parei de fumar" ends "fumo bastante", not the
            # reverse), so a fact stated before the live one is asked as the earlier of the two.
            stated_before = old.observed_at is not None and observed_at < old.observed_at
            verdict = checker.check(new_view, old_view) if stated_before else checker.check(old_view, new_view)
            plan.usage = plan.usage + verdict.usage
            if not verdict.contradicts:
                continue
            if stated_before:
                plan.inserts[index].superseded_by = old.id  # the newer statement stays current
                break
            superseded.add(old.id)
            plan.supersede.append(Supersede(old.id, old.memory_type, index, verdict.reason))
    return plan


def over_cap(live: Sequence[tuple[int, datetime]], cap: int = MAX_LIVE_FACTS) -> list[int]:
    """Ids beyond the cap: the least recently verified (ties: oldest id) go first."""
    ranked = sorted(live, key=lambda x: (x[1], x[0]), reverse=True)
    return [i for i, _ in ranked[cap:]]

