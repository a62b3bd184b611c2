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
from streams.respond.intent import IntentResult, asks_a_question

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


def knowledge_required(intent: IntentResult, text: str, *, decided: bool = False) -> bool:
    """Whether a message whose strategy requires knowledge, and that found none, is handed
    over (the fixed sentence, no model call, no memory).

    Yes when the message asks something (a question mark or a question word:
    ``asks_a_question``), when a keyword of the dictionary (the default one or the inbox's)
    named its intent, or when the acts step did (``decided``): the customer asked for
    something the knowledge must state and the business has not written it, so nothing may
    be made up. No when only the learnt classifier (or the nearest example phrase) gave the
    intent to a message that asks nothing ("Quero ir aí hoje à noite, na suíte Stilo de
    sempre", a wish read as ``policy``): that verdict is a guess, and a wrong guess must not
    make the reply worse than a ``general`` read would, so such a message is answered as
    ``general`` is (the model, the customer's memory, the "no knowledge" note of the prompt).
    """
    if decided or asks_a_question(text):
        return True
    return bool(intent.matched) and not all(m.startswith("~") for m in intent.matched)
