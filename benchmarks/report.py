"""Shared helpers of the benchmarks: percentiles and the printed table."""

from __future__ import annotations

from typing import Iterable, Sequence

from rich.console import Console
from rich.table import Table


def pct(xs: Sequence[float], p: float) -> float:
    """Nearest-rank percentile; NaN for no samples."""
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p / 100 * (len(xs) - 1))))] if xs else float("nan")


def print_table(title: str, columns: Sequence[str], rows: Iterable[Sequence[str]],
                console: Console | None = None) -> None:
    table = Table(title=title)
    for col in columns:
        table.add_column(col)
    for row in rows:
        table.add_row(*row)
    (console or Console()).print(table)
