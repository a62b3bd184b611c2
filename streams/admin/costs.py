"""Model costs per account, month and stage, from the ``model_usage`` ledger (USD, shown in BRL)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date, datetime, timezone

import psycopg

from streams.pricing import STAGES


@dataclass
class MonthCost:
    month: date                      # first day of the month (UTC)
    usd: float = 0.0
    brl: float = 0.0
    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    by_stage: dict[str, float] = field(default_factory=dict)   # stage -> BRL


def monthly_costs(conn: psycopg.Connection, account_id: int, *, rate: float, months: int = 6,
                  now: datetime | None = None) -> list[MonthCost]:
    """This month first, then the previous ``months - 1`` months (empty months included)."""
    now = now or datetime.now(timezone.utc)
    rows = conn.execute(
        """SELECT date_trunc('month', occurred_at AT TIME ZONE 'UTC')::date AS month, stage,
                  sum(cost_usd)::float8 AS usd, count(*) AS calls, sum(prompt_tokens) AS pt,
                  sum(completion_tokens) AS ct
             FROM model_usage
            WHERE account_id = %s
              AND occurred_at >= (date_trunc('month', %s AT TIME ZONE 'UTC') - make_interval(months => %s))
                                 AT TIME ZONE 'UTC'
            GROUP BY 1, 2""", (account_id, now, months - 1)).fetchall()
    out: list[MonthCost] = []
    y, m = now.year, now.month
    for _ in range(months):
        out.append(MonthCost(date(y, m, 1), by_stage={s: 0.0 for s in STAGES}))
        y, m = (y, m - 1) if m > 1 else (y - 1, 12)
    index = {c.month: c for c in out}
    for r in rows:
        c = index.get(r["month"])
        if c is None:
            continue
        c.usd += r["usd"]
        c.calls += int(r["calls"])
        c.prompt_tokens += int(r["pt"])
        c.completion_tokens += int(r["ct"])
        c.by_stage[r["stage"]] = c.by_stage.get(r["stage"], 0.0) + r["usd"] * rate
    for c in out:
        c.brl = c.usd * rate
    return out


def brl(value: float) -> str:
    """``R$ 1.234,56`` (values under a cent show four decimals, so small model costs stay visible)."""
    digits = 2 if value == 0 or abs(value) >= 0.01 else 4
    s = f"{value:,.{digits}f}".replace(",", "X").replace(".", ",").replace("X", ".")
    return f"R$ {s}"
