"""The strategy table: the single place that decides what a reply may use.

Today a strategy only says whether knowledge retrieval is required, optional
or skipped. Tool calls (booking lookup, availability, handover) plug in here
later as extra fields of :class:`Strategy`, so the handler keeps asking one
question: ``decide(intent)``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from streams.respond import intent as i

Retrieval = Literal["required", "optional", "none"]


@dataclass(frozen=True)
class Strategy:
    retrieval: Retrieval
    # Names of tools the reply may call (none yet; reserved for the tool-calling step).
    tools: tuple[str, ...] = field(default_factory=tuple)

    @property
    def retrieves(self) -> bool:
        return self.retrieval != "none"


STRATEGIES: dict[str, Strategy] = {
    i.PRICE: Strategy("required"),
    i.INFO: Strategy("required"),
    i.POLICY: Strategy("required"),
    i.OBJECTION: Strategy("optional"),
    i.GENERAL: Strategy("optional"),
    i.GREETING: Strategy("none"),
    i.CONFIRMATION: Strategy("none"),
}
# An intent an inbox adds through its keyword dictionary retrieves if it can.
DEFAULT_STRATEGY = Strategy("optional")


def decide(intent: str) -> Strategy:
    """The strategy for an intent (unknown intents: optional retrieval)."""
    return STRATEGIES.get(intent, DEFAULT_STRATEGY)
