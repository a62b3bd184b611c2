"""The learning use case: one conversation → the contact's memory (docs/architecture.md §4B).

``learn_conversation`` is a plain function over ports (a connection pool, a
fact extractor, a memory embedder, a contradiction checker and a clock):

1. skip when already extracted (unless ``force``) or when the account's
   ``memory_extraction_enabled`` flag is off (then no model is called);
2. load the transcript and extract (outside any transaction: model calls are
   slow); a model that stays unavailable records the conversation as
   ``failed`` with a next attempt time, so it is never lost;
3. embed the facts' content (3 attempts, else NULL);
4. ask the contradiction checker about the candidates **outside any
   transaction** (a model call takes seconds): plan on the contact's live facts
   read without the lock, keeping every verdict;
5. in one short transaction under a per-contact lock: re-check that nobody
   finished it meanwhile, plan again on the live facts now (reusing the verdicts;
   a candidate that appeared meanwhile sends us back to step 4, at most
   ``PLAN_ROUNDS`` times), apply (reinforce / insert / supersede), the 50-fact
   cap, write the memory events and mark the conversation done. No model is ever
   called while the lock is held.

``ConversationEventHandler`` is the consumer of ``outbox.event.conversation``:
decode → de-duplicate on the event id → ``learn_conversation`` → mark the event
processed. Records that can never succeed are returned as dead letters.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import Callable, Sequence

from psycopg_pool import ConnectionPool

from streams import metrics
from streams.embedding import Embedder
from streams.embedding import tokens as embedding_tokens
from streams.kafka.consume import DeadLetter, Record
from streams.kafka.envelope import DecodeError, decode_outbox
from streams.learn import store
from streams.learn.consolidate import NewFact, plan_consolidation
from streams.learn.contradiction import ContradictionChecker, MemoryView, Verdict
from streams.learn.embed import embed_contents
from streams.learn.extract import FactExtractor, extract_facts
from streams.learn.llm import ExtractionFailed, ModelTimedOut
from streams.learn.model import TokenUsage
from streams.pricing import PriceTable, count_metrics, model_call
from streams.store.uow import PostgresUnitOfWork, UnitOfWork, UnitOfWorkFactory

log = logging.getLogger(__name__)

CONSUMER = "learn"
LEARNING_EVENTS = frozenset({"conversation.resolved", "conversation.silent"})
#: A failed extraction is retried after 1, 2, 4, 8, 16 min...; given up (kept
#: as ``failed``, replayable) after ``MAX_ATTEMPTS``.
RETRY_BASE = timedelta(minutes=1)
RETRY_MAX = timedelta(hours=1)
MAX_ATTEMPTS = 6


#: Rounds of "ask outside the lock, re-check under it" before giving up for now.
PLAN_ROUNDS = 3


def utcnow() -> datetime:
    return datetime.now(timezone.utc)


@dataclass
class LearnPorts:
    pool: ConnectionPool | None           # None when ``uow`` is given (the in-memory fake)
    extractor: FactExtractor
    embedder: Embedder | None
    checker: ContradictionChecker
    clock: Callable[[], datetime] = utcnow
    extra_types: tuple[str, ...] = ()
    llm_model: str = ""               # for the cost estimate of model-backed providers
    embed_attempts: int = 3
    embed_backoff: float = 0.2
    uow: UnitOfWorkFactory | None = None  # default: a Postgres unit of work over ``pool``
    erasure_key: str | None = None  # the erasure ledger's HMAC key (Container.erasure_key); Postgres needs it
    prices: PriceTable | None = None  # the cost table (Container.prices); None: the built-in one

    def unit(self) -> UnitOfWork:
        return self.uow() if self.uow is not None else PostgresUnitOfWork(self.pool)


def _verdict_key(old: MemoryView, new: MemoryView) -> tuple:
    return (old.memory_type, old.content, old.memory_key, old.normalized_value,
            new.memory_type, new.content, new.memory_key, new.normalized_value)


class _AskingChecker:
    """Outside any transaction: asks the real checker and keeps its verdicts."""

    def __init__(self, checker: ContradictionChecker, verdicts: dict):
        self.checker, self.verdicts, self.name = checker, verdicts, checker.name
        self.usage = TokenUsage()

    def check(self, old: MemoryView, new: MemoryView) -> Verdict:
        key = _verdict_key(old, new)
        if key not in self.verdicts:
            verdict = self.checker.check(old, new)
            self.usage = self.usage + verdict.usage
            self.verdicts[key] = verdict.model_copy(update={"usage": TokenUsage()})
        return self.verdicts[key]


class _StaleCandidates(Exception):
    """A candidate appeared between the unlocked plan and the locked one."""


class _RecordedChecker:
    """Under the contact lock: only verdicts already asked; never the model."""

    def __init__(self, verdicts: dict, name: str):
        self.verdicts, self.name = verdicts, name

    def check(self, old: MemoryView, new: MemoryView) -> Verdict:
        verdict = self.verdicts.get(_verdict_key(old, new))
        if verdict is None:
            raise _StaleCandidates()
        return verdict


@dataclass
class Outcome:
    conversation_id: int
    status: str  # done | already | skipped | failed | discarded | missing | mismatch | erased
    facts: int = 0
    created: list[int] = field(default_factory=list)
    reinforced: list[int] = field(default_factory=list)
    superseded: list[tuple[int, int]] = field(default_factory=list)
    capped: list[int] = field(default_factory=list)
    error: str | None = None


def next_attempt(attempts: int, now: datetime) -> datetime | None:
    if attempts >= MAX_ATTEMPTS:
        return None
    return now + min(RETRY_BASE * (2 ** max(0, attempts - 1)), RETRY_MAX)


def _failed(ports: LearnPorts, conv: store.Conversation, error: Exception, now: datetime) -> Outcome:
    metrics.EXTRACTION_FAILURES.labels(type(error).__name__).inc()
    with ports.unit() as uow:
        state = uow.learning.extraction_state(conv.id, for_update=True)
        attempts = (state["attempts"] if state else 0) + 1
        uow.learning.record_extraction(
            conv, "failed", now=now, error=f"{type(error).__name__}: {error}",
            extractor=f"{ports.extractor.name}:{ports.extractor.version}",
            next_attempt_at=None if isinstance(error, ModelTimedOut) else next_attempt(attempts, now))
        uow.commit()
    log.warning('extraction failed conversation_id=%d account_id=%d attempts=%d error="%s"',
                conv.id, conv.account_id, attempts, error)
    return Outcome(conv.id, "failed", error=str(error))


def _erased_meanwhile(uow: UnitOfWork, conv: store.Conversation, erasure_key: str | None) -> bool:
    """The contact was erased (ledger) or its conversation deleted since it was loaded."""
    from streams.maintain.erasure import dropped

    if uow.learning.erased_or_gone(conv, erasure_key):
        dropped("learn", conv.account_id, "facts of a conversation")
        return True
    return False


def _report_done(conv, result, applied, capped, vectors) -> None:
    """Metrics and the log line of a finished extraction."""
    for f in result.facts:
        metrics.EXTRACTIONS.labels(str(conv.account_id), f.memory_type).inc()
    for old, new, memory_type, reason in applied.superseded:
        metrics.SUPERSEDED.labels(memory_type).inc()
        log.info('memory superseded account_id=%d contact_id=%d memory_id=%d superseded_by_id=%d '
                 'memory_type="%s" reason="%s"', conv.account_id, conv.contact_id, old, new, memory_type, reason)
    log.info("extraction done conversation_id=%d account_id=%d contact_id=%d extractor=%s facts=%d created=%s "
             "reinforced=%s superseded=%d discarded=%d capped=%d unembedded=%d",
             conv.id, conv.account_id, conv.contact_id, result.extractor, len(result.facts), applied.created,
             applied.reinforced, len(applied.superseded), len(result.discarded), len(capped),
             sum(v is None for v in vectors))


def learn_conversation(ports: LearnPorts, conversation_id: int, *, force: bool = False,
                       account_id: int | None = None) -> Outcome:
    """Learn from one conversation; ``account_id`` (from an event) must own it."""
    now = ports.clock()
    with ports.unit() as uow:  # leaving it uncommitted releases the snapshot before the slow part
        repo = uow.learning
        conv = repo.conversation(conversation_id)
        if conv is None:
            return Outcome(conversation_id, "missing")
        if account_id is not None and conv.account_id != account_id:
            return Outcome(conv.id, "mismatch", error=f"conversation {conv.id} is not of account {account_id}")
        state = repo.extraction_state(conv.id)
        if state and state["status"] in ("done", "discarded") and not force:
            return Outcome(conv.id, "already")
        if not repo.extraction_enabled(conv.account_id):
            repo.record_extraction(conv, "skipped", now=now, error="memory_extraction_enabled is off",
                                   count_attempt=False)
            uow.commit()
            log.info("extraction skipped conversation_id=%d account_id=%d reason=flag_off", conv.id, conv.account_id)
            return Outcome(conv.id, "skipped")
        # a reopened conversation learns from the messages after the last one learnt
        after = state["through_message_id"] if state and not force else None
        through = repo.last_message_id(conv.id)
        transcript = repo.transcript(conv, after_message_id=after, through_message_id=through)

    t0 = time.perf_counter()
    try:
        result = extract_facts(transcript, ports.extractor, extra_types=ports.extra_types)
    except ExtractionFailed as e:
        return _failed(ports, conv, e, now)
    metrics.EXTRACTION_LATENCY.observe(time.perf_counter() - t0)
    extraction_call = model_call(conv.account_id, "extraction", ports.llm_model, result.usage, table=ports.prices)
    for d in result.discarded:
        metrics.FACTS_DISCARDED.labels(d.reason).inc()
    if result.status == "discarded":
        metrics.EXTRACTION_FAILURES.labels("unusable_output").inc()
        with ports.unit() as uow:
            uow.learning.record_extraction(conv, "discarded", now=now, error=result.warning,
                                           extractor=result.extractor, through_message_id=through)
            uow.learning.record_calls([extraction_call])
            uow.commit()
        count_metrics(extraction_call)
        return Outcome(conv.id, "discarded", error=result.warning)

    paid = embedding_tokens.collect()   # tokens a paid embedding endpoint reports (cost ledger)
    vectors = embed_contents(ports.embedder, [f.content for f in result.facts],
                             attempts=ports.embed_attempts, backoff=ports.embed_backoff)
    model = ports.embedder.name if ports.embedder is not None else None
    embedding_call = model_call(conv.account_id, "embedding", model or "", embedding_tokens.usage(paid),
                                table=ports.prices)
    new_facts = [NewFact(f, v) for f, v in zip(result.facts, vectors)]
    observed = conv.last_message_at or now
    verdicts: dict = {}
    asking = _AskingChecker(ports.checker, verdicts)
    metadata = {"extractor": result.extractor, "embedding_model": model, "learnt_at": now.isoformat()}
    if ports.llm_model and result.usage.prompt_tokens:
        metadata["model"] = ports.llm_model
    try:
        for _ in range(PLAN_ROUNDS):
            # 1. outside any transaction: the slow contradiction checks
            with ports.unit() as uow:  # read only: never committed
                live = uow.learning.live_facts(conv.account_id, conv.contact_id)
                learnt_here = uow.learning.facts_learnt_from(conv.account_id, conv.contact_id, conv.id)
            plan_consolidation(new_facts, live, asking, conversation_id=conv.id, unit_id=conv.unit_id, now=now,
                               learnt_here=learnt_here, observed_at=observed)
            # 2. a short transaction under the contact's lock, with the verdicts already known
            try:
                with ports.unit() as uow:
                    repo = uow.learning
                    repo.lock_contact(conv.account_id, conv.contact_id)
                    if _erased_meanwhile(uow, conv, ports.erasure_key):  # the erasure takes the same lock
                        return Outcome(conv.id, "erased")
                    state = repo.extraction_state(conv.id, for_update=True)
                    if state and state["status"] in ("done", "discarded") and not force:
                        return Outcome(conv.id, "already")  # another worker finished it meanwhile
                    live = repo.live_facts(conv.account_id, conv.contact_id)
                    learnt_here = repo.facts_learnt_from(conv.account_id, conv.contact_id, conv.id)
                    plan = plan_consolidation(new_facts, live, _RecordedChecker(verdicts, ports.checker.name),
                                              conversation_id=conv.id, unit_id=conv.unit_id, now=now,
                                              learnt_here=learnt_here, observed_at=observed)
                    applied = repo.apply_plan(plan, conv, now=now, metadata=metadata, embedding_model=model,
                                              observed_at=observed)
                    capped = repo.enforce_cap(conv.account_id, conv.contact_id, now=now)
                    repo.record_extraction(conv, "done", now=now, facts=len(result.facts),
                                           extractor=result.extractor, through_message_id=through)
                    plan.usage = asking.usage
                    contradiction_call = model_call(conv.account_id, "contradiction", ports.llm_model, plan.usage,
                                                    table=ports.prices)
                    calls = [extraction_call, contradiction_call, embedding_call]
                    repo.record_calls(calls)
                    uow.commit()  # the facts, the memory events and the extraction row together
                break
            except _StaleCandidates:
                continue  # the contact's memory changed meanwhile: ask about the new candidates, outside
        else:
            raise ExtractionFailed(f"the contact's memory changed during {PLAN_ROUNDS} rounds of contradiction checks")
    except ExtractionFailed as e:  # the contradiction model was unavailable: retry the whole conversation
        return _failed(ports, conv, e, now)
    for call in calls:
        count_metrics(call)

    _report_done(conv, result, applied, capped, vectors)
    return Outcome(conv.id, "done", facts=len(result.facts), created=applied.created, reinforced=applied.reinforced,
                   superseded=[(o, n) for o, n, _, _ in applied.superseded], capped=capped)


def retry_failed(ports: LearnPorts, *, limit: int = 20) -> list[Outcome]:
    """Extract again the failed conversations whose next attempt is due."""
    with ports.unit() as uow:
        due = uow.learning.due_retries(ports.clock(), limit)
    return [learn_conversation(ports, cid) for cid in due]


class ConversationEventHandler:
    """``handler(records) -> dead letters`` for ``outbox.event.conversation``."""

    def __init__(self, ports: LearnPorts, consumer: str = CONSUMER):
        self.ports = ports
        self.consumer = consumer

    def __call__(self, records: Sequence[Record]) -> list[DeadLetter]:
        dead: list[DeadLetter] = []
        decoded = []
        for r in records:
            try:
                decoded.append((r, decode_outbox("conversation", r.key, r.value, r.headers)))
            except DecodeError as e:
                dead.append(DeadLetter(r, e.error_class, str(e)))
        with self.ports.unit() as uow:
            fresh = uow.processed.unprocessed(self.consumer, [env.event_id for _, env in decoded])
        for r, env in decoded:
            if env.event_id not in fresh:
                metrics.EVENTS_DUPLICATE.labels(r.topic).inc()
                continue
            fresh.discard(env.event_id)
            event = env.payload
            if env.type not in LEARNING_EVENTS:  # conversation.reopened: nothing to learn yet
                self._mark(env.event_id)
                continue
            outcome = learn_conversation(self.ports, event.conversation_id, account_id=event.account_id)
            if outcome.status == "mismatch":  # tenant isolation: never learn across accounts
                dead.append(DeadLetter(r, "AccountMismatch", outcome.error or ""))
            log.debug("conversation event id=%s type=%s conversation_id=%d status=%s", env.event_id, env.type,
                      event.conversation_id, outcome.status)
            self._mark(env.event_id)
        return dead

    def _mark(self, event_id: str) -> None:
        with self.ports.unit() as uow:
            uow.processed.mark(self.consumer, [event_id])
            uow.commit()
