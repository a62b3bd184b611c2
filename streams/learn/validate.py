"""The one validation every extractor's output goes through (docs/architecture.md §4B).

Rules, in order, with stable discard reason codes:

- ``unknown_type``: the type is not in the taxonomy (plus configured extras).
- ``empty_content``: no content after trimming. Content longer than
  ``MAX_CONTENT_CHARS`` is **truncated** (not discarded) at a word boundary.
- ``invalid_key``: ``memory_key`` cannot be normalised to snake_case
  (a missing key defaults to the memory type).
- ``low_confidence``: confidence (clamped to [0, 1]) is below ``MIN_CONFIDENCE``.
- ``evidence_not_found``: the evidence is not a substring of a **contact**
  message, comparing with whitespace collapsed and case folded only (accents
  and punctuation must match). Kept facts carry the exact original substring.
- ``duplicate``: same type and key and value (or same type and content) as a
  fact already kept; the higher-confidence one is kept.
- ``over_limit``: beyond ``MAX_FACTS`` (highest confidence first).
"""

from __future__ import annotations

import re
import unicodedata
from typing import Iterable, Sequence

from streams.learn.model import CandidateFact, Discard, Fact, Transcript
from streams.learn.taxonomy import allowed_types, default_scope, normalise_type

MAX_FACTS = 5
MIN_CONFIDENCE = 0.5
MAX_CONTENT_CHARS = 1000
MAX_KEY_CHARS = 64

_KEY_RE = re.compile(r"^[a-z][a-z0-9_]*$")


def normalise_key(key: str | None, memory_type: str) -> str | None:
    """snake_case ASCII slot name, or None when nothing usable is left."""
    if key is None or not key.strip():
        return normalise_type(memory_type)
    # camelCase → camel_case, strip accents, non-alphanumerics → "_"
    text = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", key.strip())
    text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode()
    text = re.sub(r"[^a-z0-9]+", "_", text.lower()).strip("_")
    text = text[:MAX_KEY_CHARS].strip("_")
    return text if _KEY_RE.match(text) else None


def truncate(content: str, limit: int = MAX_CONTENT_CHARS) -> str:
    if len(content) <= limit:
        return content
    cut = content[: limit - 1]
    space = cut.rfind(" ")
    if space > limit // 2:
        cut = cut[:space]
    return cut.rstrip() + "…"


def find_verbatim(evidence: str, sources: Iterable[str]) -> str | None:
    """The exact substring of one source that equals ``evidence`` up to
    whitespace and case, or None. Accents and punctuation must match."""
    words = evidence.split()
    if not words:
        return None
    pattern = re.compile(r"\s+".join(re.escape(w) for w in words), re.IGNORECASE)
    for source in sources:
        match = pattern.search(source)
        if match:
            return match.group(0)
    return None


def validate(
    candidates: Sequence[CandidateFact],
    transcript: Transcript,
    *,
    extra_types: Iterable[str] = (),
    max_facts: int = MAX_FACTS,
) -> tuple[list[Fact], list[Discard]]:
    """Keep the candidates that pass every rule; say why the others did not."""
    known = allowed_types(extra_types)
    sources = transcript.contact_texts()
    discarded: list[Discard] = []
    valid: list[Fact] = []

    for cand in candidates:
        memory_type = normalise_type(cand.memory_type or "")
        if memory_type not in known:
            discarded.append(Discard(fact=cand, reason="unknown_type"))
            continue
        content = " ".join((cand.content or "").split())
        if not content:
            discarded.append(Discard(fact=cand, reason="empty_content"))
            continue
        key = normalise_key(cand.memory_key, memory_type)
        if key is None:
            discarded.append(Discard(fact=cand, reason="invalid_key"))
            continue
        confidence = min(1.0, max(0.0, float(cand.confidence)))
        if confidence < MIN_CONFIDENCE:
            discarded.append(Discard(fact=cand, reason="low_confidence"))
            continue
        evidence = find_verbatim(cand.evidence or "", sources)
        if evidence is None:
            discarded.append(Discard(fact=cand, reason="evidence_not_found"))
            continue
        value = (cand.normalized_value or "").strip() or None
        valid.append(
            Fact(
                memory_type=memory_type,
                memory_key=key,
                content=truncate(content),
                normalized_value=value,
                evidence=evidence,
                confidence=round(confidence, 4),
                scope=default_scope(memory_type),
            )
        )

    # Highest confidence first (stable: extractor order breaks ties).
    order = sorted(range(len(valid)), key=lambda i: -valid[i].confidence)
    kept: list[Fact] = []
    seen: set[tuple[str, ...]] = set()
    for i in order:
        fact = valid[i]
        marks = {(fact.memory_type, "c", fact.content.casefold())}
        if fact.normalized_value is not None:
            marks.add((fact.memory_type, fact.memory_key, fact.normalized_value.casefold()))
        if marks & seen:
            discarded.append(Discard(fact=_as_candidate(fact), reason="duplicate"))
            continue
        if len(kept) >= max_facts:
            discarded.append(Discard(fact=_as_candidate(fact), reason="over_limit"))
            continue
        seen |= marks
        kept.append(fact)
    return kept, discarded


def _as_candidate(fact: Fact) -> CandidateFact:
    return CandidateFact(**fact.model_dump(exclude={"scope"}))
