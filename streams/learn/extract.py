"""The extraction port and the one handler every provider goes through."""

from __future__ import annotations

import logging
from typing import Iterable, Protocol

from streams.learn.model import ExtractionResult, Proposal, Transcript
from streams.learn.validate import validate

log = logging.getLogger(__name__)


class FactExtractor(Protocol):
    """A provider proposes candidate facts; it never validates them itself."""

    name: str
    version: str

    def propose(self, transcript: Transcript) -> Proposal:
        """Candidates for one conversation. Raises ``ExtractionFailed`` (retryable)
        when the model is unavailable; returns a ``Proposal`` with ``warning`` set
        when the model's output was unusable (discard the conversation)."""
        ...


def extract_facts(
    transcript: Transcript, extractor: FactExtractor, *, extra_types: Iterable[str] = ()
) -> ExtractionResult:
    """Propose with ``extractor``, then keep what ``validate`` accepts."""
    proposal = extractor.propose(transcript)
    facts, discarded = validate(proposal.candidates, transcript, extra_types=extra_types)
    status = "discarded" if proposal.warning else "ok"
    for d in discarded:
        log.info(
            'fact discarded conversation_id="%s" reason="%s" memory_type="%s"',
            transcript.conversation_id, d.reason, d.fact.memory_type,
        )
    if proposal.warning:
        log.warning('extraction discarded conversation_id="%s" warning="%s"', transcript.conversation_id, proposal.warning)
    return ExtractionResult(
        conversation_id=transcript.conversation_id,
        facts=facts,
        discarded=discarded,
        usage=proposal.usage,
        status=status,
        warning=proposal.warning,
        extractor=f"{extractor.name}:{extractor.version}",
    )
