"""Model tokens and estimated cost per account and stage (docs/architecture.md §6).

Prices are USD per million tokens (prompt, completion). The table is a
default; ``MEMORIA_MODEL_PRICES`` (JSON ``{"model": [prompt, completion]}``,
read by ``streams.settings``) overrides or extends it: the composition root
builds that table once (``Container.prices``) and hands it to every flow that
prices a call (``table=``); without one, the built-in table applies. A model name matches its
entry exactly or by prefix ("gpt-4o-mini-2024-07-18" is priced as
"gpt-4o-mini"). Offline providers report zero tokens, so they cost 0.

Every model call that used tokens is counted twice: Prometheus counters (for
dashboards; they reset with the process) and one row of the ``model_usage``
ledger in Postgres (per account, stage, model, with tokens and cost), written
on the caller's connection, inside the transaction that records the call's
effect, so both commit together. ``ref`` (a reply id, ...) makes a redelivered
event count once.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from functools import lru_cache
from typing import Mapping, Protocol

import psycopg

from streams import metrics

log = logging.getLogger(__name__)

DEFAULT_PRICES: dict[str, tuple[float, float]] = {
    "gpt-4o-mini": (0.15, 0.60),
    "gpt-4o": (2.50, 10.00),
    "gpt-4.1-mini": (0.40, 1.60),
    "gpt-4.1-nano": (0.10, 0.40),
    "gpt-4.1": (2.00, 8.00),
    "text-embedding-3-small": (0.02, 0.0),
    "text-embedding-3-large": (0.13, 0.0),
}
STAGES = ("extraction", "contradiction", "reply", "embedding")


class TokenCounts(Protocol):
    prompt_tokens: int
    completion_tokens: int


PriceTable = Mapping[str, tuple[float, float]]


@lru_cache(maxsize=None)
def price_table(overrides: str = "") -> dict[str, tuple[float, float]]:
    """The built-in table with ``overrides`` (``MEMORIA_MODEL_PRICES``'s JSON) applied."""
    table = dict(DEFAULT_PRICES)
    raw = overrides or ""
    if raw.strip():
        try:
            table.update({k: (float(v[0]), float(v[1])) for k, v in json.loads(raw).items()})
        except (ValueError, TypeError, IndexError, AttributeError) as e:
            log.warning('invalid MEMORIA_MODEL_PRICES ignored error="%s"', e)
    return table


def price_of(model: str, table: PriceTable | None = None) -> tuple[float, float]:
    table = table if table is not None else DEFAULT_PRICES
    if model in table:
        return table[model]
    prefixes = [m for m in table if model.startswith(m)]
    return table[max(prefixes, key=len)] if prefixes else (0.0, 0.0)


def cost_usd(model: str, usage: TokenCounts, table: PriceTable | None = None) -> float:
    prompt, completion = price_of(model, table)
    return (usage.prompt_tokens * prompt + usage.completion_tokens * completion) / 1_000_000


@dataclass(frozen=True)
class ModelCall:
    """One model call to put in the ledger."""

    account_id: int
    stage: str
    model: str
    prompt_tokens: int
    completion_tokens: int
    cost_usd: float
    ref: str | None = None


def model_call(account_id: int, stage: str, model: str, usage: TokenCounts, *, ref: str | None = None,
               table: PriceTable | None = None) -> ModelCall | None:
    """The ledger entry of a call, or None when it used no tokens (offline providers)."""
    if stage not in STAGES:
        raise ValueError(f"unknown stage {stage!r}; known: {STAGES}")
    if not (usage.prompt_tokens or usage.completion_tokens):
        return None
    return ModelCall(account_id, stage, model or "unknown", int(usage.prompt_tokens),
                     int(usage.completion_tokens), cost_usd(model, usage, table), ref)


LEDGER_INSERT = """INSERT INTO model_usage (account_id, stage, model, prompt_tokens, completion_tokens, cost_usd, ref)
                   VALUES (%s, %s, %s, %s, %s, %s, %s) ON CONFLICT DO NOTHING"""


def ledger_args(call: ModelCall) -> tuple:
    return (call.account_id, call.stage, call.model, call.prompt_tokens, call.completion_tokens, call.cost_usd,
            call.ref)


def write_ledger(conn: psycopg.Connection, calls: list[ModelCall | None]) -> int:
    """Insert the calls (None skipped) in the caller's transaction; returns how many were new."""
    calls = [c for c in calls if c is not None]
    if not calls:
        return 0
    if len(calls) == 1:
        return conn.execute(LEDGER_INSERT, ledger_args(calls[0])).rowcount
    with conn.cursor() as cur:
        cur.executemany(LEDGER_INSERT, [ledger_args(c) for c in calls])
        return len(calls)


def count_metrics(call: ModelCall | None) -> float:
    """The Prometheus counters of a call (after its ledger row committed); returns the cost."""
    if call is None:
        return 0.0
    acct = str(call.account_id)
    metrics.MODEL_TOKENS.labels(acct, call.stage, "prompt").inc(call.prompt_tokens)
    metrics.MODEL_TOKENS.labels(acct, call.stage, "completion").inc(call.completion_tokens)
    metrics.MODEL_COST.labels(acct, call.stage).inc(call.cost_usd)
    return call.cost_usd


def record_usage(account_id: int, stage: str, model: str, usage: TokenCounts,
                 table: PriceTable | None = None, *,
                 conn: psycopg.Connection | None = None, ref: str | None = None) -> float:
    """Count tokens and estimated cost per account and stage (metrics, and the
    ledger when ``conn`` is given); returns the cost."""
    call = model_call(account_id, stage, model, usage, ref=ref, table=table)
    if call is None:
        return 0.0
    if conn is not None:
        write_ledger(conn, [call])
    return count_metrics(call)
