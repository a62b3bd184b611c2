"""Text helpers shared by the rule-based extractor and contradiction checker.

``fold`` lower-cases and strips accents **without changing the length**, so
a span found in folded text is the same span in the original text: evidence
is always cut from the original message.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass


def fold(text: str) -> str:
    out = []
    for ch in text:
        base = unicodedata.normalize("NFD", ch)[0]
        low = base.lower()
        out.append(low if len(low) == 1 else base)
    return "".join(out)


def slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "_", fold(text)).strip("_")


@dataclass(frozen=True)
class Sentence:
    text: str      # original text of the sentence
    folded: str    # fold(text), same length
    index: int     # position of the message in the transcript


_SENT_END = re.compile(r"(?<=[.!?…])\s+|\n+")


def sentences(text: str, index: int = 0) -> list[Sentence]:
    """Split a message into sentences (whitespace-trimmed, original text kept)."""
    out = []
    for part in _SENT_END.split(text):
        part = part.strip()
        if part:
            out.append(Sentence(part, fold(part), index))
    return out


def clause_around(sentence: Sentence, start: int, end: int) -> tuple[int, int]:
    """Bounds of the clause (delimited by , ; : or the sentence) holding a span."""
    left = max(sentence.text.rfind(c, 0, start) for c in ",;:")
    right_candidates = [i for i in (sentence.text.find(c, end) for c in ",;:") if i != -1]
    right = min(right_candidates) if right_candidates else len(sentence.text)
    return left + 1, right


def tokens(text: str) -> list[str]:
    return re.findall(r"[a-z0-9]+", fold(text))
