"""Model tokens and estimated cost per account and stage (docs/architecture.md §6).

Prices are USD per million tokens (prompt, completion). The table is a
default; ``MEMORIA_MODEL_PRICES`` (JSON ``{"model": [prompt, completion]}``)
overrides or extends it. A model name matches its entry exactly or by prefix
("gpt-4o-mini-2024-07-18" is priced as "gpt-4o-mini"). Offline providers
report zero tokens, so they cost 0.
"""

from __future__ import annotations

import json
import logging
import os
from functools import lru_cache
from typing import Protocol

from streams import metrics

log = logging.getLogger(__name__)

DEFAULT_PRICES: dict[str, tuple[float, float]] = {
    "gpt-4o-mini": (0.15, 0.60),
    "gpt-4o": (2.50, 10.00),
    "gpt-4.1-mini": (0.40, 1.60),
    "gpt-4.1-nano": (0.10, 0.40),
    "gpt-4.1": (2.00, 8.00),
}


class TokenCounts(Protocol):
    prompt_tokens: int
    completion_tokens: int


@lru_cache(maxsize=None)
def price_table(overrides: str | None = None) -> dict[str, tuple[float, float]]:
    table = dict(DEFAULT_PRICES)
    raw = overrides if overrides is not None else os.environ.get("MEMORIA_MODEL_PRICES", "")
    if raw.strip():
        try:
            table.update({k: (float(v[0]), float(v[1])) for k, v in json.loads(raw).items()})
        except (ValueError, TypeError, IndexError, AttributeError) as e:
            log.warning('invalid MEMORIA_MODEL_PRICES ignored error="%s"', e)
    return table


def price_of(model: str, table: dict[str, tuple[float, float]] | None = None) -> tuple[float, float]:
    table = table if table is not None else price_table()
    if model in table:
        return table[model]
    prefixes = [m for m in table if model.startswith(m)]
    return table[max(prefixes, key=len)] if prefixes else (0.0, 0.0)


def cost_usd(model: str, usage: TokenCounts, table: dict[str, tuple[float, float]] | None = None) -> float:
    prompt, completion = price_of(model, table)
    return (usage.prompt_tokens * prompt + usage.completion_tokens * completion) / 1_000_000


def record_usage(account_id: int, stage: str, model: str, usage: TokenCounts,
                 table: dict[str, tuple[float, float]] | None = None) -> float:
    """Count tokens and estimated cost per account and stage; returns the cost."""
    if not (usage.prompt_tokens or usage.completion_tokens):
        return 0.0
    acct = str(account_id)
    metrics.MODEL_TOKENS.labels(acct, stage, "prompt").inc(usage.prompt_tokens)
    metrics.MODEL_TOKENS.labels(acct, stage, "completion").inc(usage.completion_tokens)
    cost = cost_usd(model, usage, table)
    metrics.MODEL_COST.labels(acct, stage).inc(cost)
    return cost
