"""Lead state: a small JSON document per conversation (≤ 4 KB, docs/architecture.md §3).

Kept keys: ``stage``, ``last_intent``, ``retrieval_count``, ``recent_intents``
(last 5) and ``updated_at``; other keys written by other components are
preserved but are the first to go when the document exceeds the limit.
Cleared (None) when the conversation closes.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any, Mapping

from streams.respond import intent as i

MAX_LEAD_STATE_BYTES = 4096
CORE_KEYS = ("stage", "last_intent", "retrieval_count", "updated_at")
RECENT_INTENTS = 5

# The funnel; a message moves the stage forward, never back (general keeps it).
STAGES = ("novo", "abertura", "qualificacao", "cotacao", "negociacao", "fechamento")
STAGE_BY_INTENT = {
    i.GREETING: "abertura",
    i.INFO: "qualificacao",
    i.POLICY: "qualificacao",
    i.PRICE: "cotacao",
    i.OBJECTION: "negociacao",
    i.CONFIRMATION: "fechamento",
}


def _size(state: Mapping[str, Any]) -> int:
    return len(json.dumps(state, ensure_ascii=False, sort_keys=True, default=str).encode("utf-8"))


def next_lead_state(prev: Mapping[str, Any] | None, *, intent: str, retrieval_count: int,
                    now: datetime) -> dict[str, Any]:
    state: dict[str, Any] = dict(prev or {})
    current = state.get("stage") if state.get("stage") in STAGES else "novo"
    target = STAGE_BY_INTENT.get(intent, current)
    # confirming before any quote is still qualification, not a closed deal
    if intent == i.CONFIRMATION and STAGES.index(current) < STAGES.index("cotacao"):
        target = current
    stage = target if STAGES.index(target) > STAGES.index(current) else current
    recent = [x for x in state.get("recent_intents", []) if isinstance(x, str)][-(RECENT_INTENTS - 1):]
    state.update(stage=stage, last_intent=intent, retrieval_count=int(retrieval_count),
                 recent_intents=recent + [intent], updated_at=now.isoformat())
    return enforce_size(state)


def enforce_size(state: Mapping[str, Any], limit: int = MAX_LEAD_STATE_BYTES) -> dict[str, Any]:
    """Trim to ``limit`` bytes of UTF-8 JSON: drop the largest extra keys first,
    then shorten long string values; core keys always survive."""
    out = dict(state)
    while _size(out) > limit:
        extras = [k for k in out if k not in CORE_KEYS]
        if not extras:
            break
        biggest = max(extras, key=lambda k: _size({k: out[k]}))
        del out[biggest]
    if _size(out) > limit:
        for k in CORE_KEYS:
            v = out.get(k)
            if isinstance(v, str) and len(v) > 64:
                out[k] = v[:64]
    if _size(out) > limit:  # cannot happen with sane core values; never exceed anyway
        out = {k: out[k] for k in ("stage", "retrieval_count") if k in out}
    return out
