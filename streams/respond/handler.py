"""The responder use-case (docs/architecture.md §4C) as one async function over ports.

    outcome = await respond(msg, deps)   # None: duplicate, nothing to send

Steps, each a function of its own (testable over in-memory ports):

* ``receive``: store the inbound message once (a duplicate gets no reply) and read
  the conversation (inbox, flags, history, lead state);
* ``plan``: intent (keywords, the acts step, example phrases) → strategy; starts
  the message's embedding when recall or knowledge needs it;
* ``gather``: recall (only if the account's flag is on; embedding + fetch +
  scoring within ``recall_budget_s``) and knowledge retrieval (top
  ``rag_max_results`` within ``rag_distance_threshold``), side by side;
* ``compose``: fallback sentences or prompt + generate → price guard;
* ``record``: OutboundReply → lead state, saved with the reply in one store call.

Async: the Faust agent awaits this. Port methods may be sync (run in a
worker thread) or async (awaited). Recall runs as its own task under
``asyncio.wait_for``: on timeout the task is cancelled (an async port is
really cancelled; a blocking port's thread is abandoned and should bound
itself with the ``timeout_s`` it receives), and the reply goes on without
memory, marked ``degraded=["recall_timeout"]``. Memory never blocks a reply.

The message is embedded once: when the memory and knowledge embedders are
the same model (same ``name``), the recall vector is reused for retrieval.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import dataclasses
import functools
import inspect
import itertools
import logging
import re
import threading
import time
import uuid
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, Awaitable, Callable, Sequence, TypeVar
from typing import Generator as Steps

import numpy as np

from schemas.events import InboundMessage, OutboundReply
from streams.embedding import tokens as embedding_tokens
from streams.ingest.knowledge import default_max_distance
from streams.pricing import ModelCall, PriceTable, model_call
from streams.respond.compose import (
    PROBLEM_STEMS,
    addresses_problem,
    amounts_named,
    answer_units,
    asks_deadline,
    asks_deposit_to_book,
    asks_price,
    asks_to_bring,
    asks_what_to_do,
    attribute_bonus,
    booking_acts,
    booking_order,
    carried_question,
    carries_asked_attribute,
    carries_deadline,
    carries_price,
    cheaper_alternative,
    chunk_words,
    compared_items,
    concept_forms,
    denies_outright,
    extreme_item,
    extreme_price,
    fetches_order,
    halves_named,
    instalments_apply,
    is_yes_no,
    item_head,
    item_name,
    long_stem,
    names_pickup,
    objected_price,
    offered_object,
    offers_deal,
    opens_with_no,
    paired_items,
    party_size,
    payment_told,
    phrase_forms,
    price_labels_asked,
    question_clauses,
    question_part,
    question_words,
    states_bringing,
    states_party_limit,
    states_payment,
    stem,
    told_place,
    uncovered_focus,
    unit_amounts,
    unit_words,
    units_of_chunks,
    unnamed_phrases,
)
from streams.respond.generate import (
    CONTACTS_REPLY,
    FALLBACK_AUDIO,
    FALLBACK_LOOP,
    FALLBACK_MEDIA,
    FALLBACK_NO_KNOWLEDGE,
    FALLBACK_UNSUPPORTED,
    LOCATION_REPLY,
    subjects_named_otherwise,
    unsupported_prices,
)
from streams.respond.intent import (
    CONFIRMATION,
    GENERAL,
    GREETING,
    OBJECTION,
    IntentExamples,
    IntentResult,
    detect_intent,
    intent_by_form,
    refine_intent,
)
from streams.respond.lead import next_lead_state
from streams.respond.model import ConversationContext, Generation, KnowledgeChunk, ReplyRequest, Usage
from streams.respond.ports import Clock, ConversationStore, Embedder, Generator, KnowledgeSearch, MemoryRecall
from streams.respond.prompt import HISTORY_MESSAGES, build_messages
from streams.respond.recall import TOP_K, ScoredFact, message_parts, score_memories
from streams.respond.strategy import Strategy, decide, knowledge_required
from streams.respond.text import STOPWORDS, fold, normalize_chat

log = logging.getLogger(__name__)

RECALL_BUDGET_S = 0.5
MAX_RETRIEVALS = 5  # a 6th retrieval in one conversation triggers loop protection
REPLY_NAMESPACE = uuid.UUID("6f1c9a52-2d43-4c1e-9a57-6d2f0e3b8a10")

T = TypeVar("T")


class SystemClock:
    def now(self) -> datetime:
        return datetime.now(timezone.utc)


@dataclass
class Responder:
    """The ports one responder needs (built once by the composition root)."""

    store: ConversationStore
    memory: MemoryRecall
    knowledge: KnowledgeSearch
    memory_embedder: Embedder
    knowledge_embedder: Embedder
    generator: Generator
    clock: Clock = field(default_factory=SystemClock)
    recall_budget_s: float = RECALL_BUDGET_S
    max_retrievals: int = MAX_RETRIEVALS
    top_k_memories: int = TOP_K
    min_memory_score: float | None = None
    # similarity fallback for what the keyword dictionary leaves "general"; it
    # must embed with memory_embedder (it reuses the message's one vector)
    intent_examples: IntentExamples | None = None
    # labelled recall cases that vote for the facts queries like the message needed (same
    # embedder as memory_embedder: it reuses the message's one vector); None: no vote
    recall_examples: Any = None
    # rights, opt-out and tools: one step before generation (streams/respond/acts.py)
    acts: Any = None
    prices: PriceTable | None = None  # the cost table (Container.prices); None: the built-in one


@dataclass(frozen=True)
class RespondOutcome:
    reply: OutboundReply
    lead_state: dict[str, Any] | None
    usage: Usage
    provider: str
    model: str
    recall_ms: float | None  # None: recall not attempted (flag off)
    total_ms: float
    memories: tuple[ScoredFact, ...] = ()
    chunks: tuple[KnowledgeChunk, ...] = ()
    model_call: ModelCall | None = None   # in the cost ledger with the reply (None: no tokens used)
    embedding_calls: tuple[ModelCall, ...] = ()   # the paid embeddings this reply made (one per model)


async def _call(fn: Callable[..., T | Awaitable[T]], *args: Any, **kwargs: Any) -> T:
    """Await an async port, or run a blocking one in a worker thread."""
    if inspect.iscoroutinefunction(fn):
        return await fn(*args, **kwargs)
    return await asyncio.to_thread(fn, *args, **kwargs)


async def _call_all(calls: Sequence[tuple[Callable[..., Any], tuple]]) -> list[Any]:
    """Several port calls (``(fn, args)``), their results in order. Blocking ones run one after
    another in one worker thread: one hand-off to a thread and back instead of one per call (each
    hand-off costs the GIL twice, and under load every GIL hand-off waits its turn; the calls
    are short and would hold the GIL in turns anyway). Any async port among them: all are
    awaited side by side, as with ``_call``. The first failure is raised, as ``gather`` does."""
    if not calls:
        return []
    if any(inspect.iscoroutinefunction(fn) for fn, _ in calls):
        return list(await asyncio.gather(*(_call(fn, *args) for fn, args in calls)))
    return await asyncio.to_thread(lambda: [fn(*args) for fn, args in calls])


def reply_id_for(msg: InboundMessage) -> str:
    """Deterministic: a redelivered message maps to the same reply id."""
    return _reply_id(msg.account_id, msg.message_id)


@functools.lru_cache(maxsize=1024)
def _reply_id(account_id: int, message_id: str) -> str:
    # asked for several times while one message is answered (the store, the reply, the ledger)
    return str(uuid.uuid5(REPLY_NAMESPACE, f"{account_id}:{message_id}"))


def _as_chunk(hit: Any) -> KnowledgeChunk:
    if isinstance(hit, KnowledgeChunk):
        return hit
    chunk_id, document_id, distance, text = hit
    return KnowledgeChunk(uuid.UUID(str(chunk_id)), uuid.UUID(str(document_id)), float(distance), str(text))


def channel_reply(msg: InboundMessage) -> tuple[str, str] | None:
    """(fixed reply, reason) for a message that is not words to answer from
    knowledge: media we cannot read, a location, a shared contact. None: answer it."""
    if msg.placeholder:
        if msg.message_type == "audio":
            return FALLBACK_AUDIO, "media_fallback"
        if msg.message_type == "unsupported":
            return FALLBACK_UNSUPPORTED, "unsupported_message"
        return FALLBACK_MEDIA, "media_fallback"
    if msg.message_type == "location":
        return LOCATION_REPLY, "location"
    if msg.message_type == "contacts":
        return CONTACTS_REPLY, "contacts"
    return None


def embedding_calls(account_id: int, reply_id: str, used: dict[str, int],
                    table: PriceTable | None = None) -> tuple[ModelCall, ...]:
    """The cost-ledger entries of a reply's paid embeddings, one per model (ref = reply and model, so a
    redelivered message counts once)."""
    calls = (model_call(account_id, "embedding", model, Usage(prompt_tokens=n), ref=f"{reply_id}:{model}",
                        table=table)
             for model, n in sorted(used.items()))
    return tuple(c for c in calls if c is not None)


async def respond(msg: InboundMessage, deps: Responder) -> RespondOutcome | None:
    """The reply to ``msg``; None when there is nothing to send (a duplicate, or
    a reaction: it is stored, and answering an emoji would be noise).

    A short pipeline of named steps, each testable alone over in-memory ports:
    receive → :func:`plan` (acts, intent, strategy) → :func:`gather` (recall and
    knowledge, side by side) → :func:`compose` (fallbacks or generation, guards) →
    :func:`record` (the reply and the lead state in one store call)."""
    t0 = time.perf_counter()
    embed_tokens = embedding_tokens.collect()   # paid embeddings this message makes (cost ledger)
    ctx = await receive(msg, deps)
    if ctx is None:
        return None
    fixed = channel_reply(msg)
    if fixed is not None:
        return await _fixed_reply(msg, ctx, fixed, deps, t0)
    p = await plan(msg, ctx, deps)
    if p.act is not None and p.act.suppress:
        p.close()
        return None
    if p.act is not None and p.act.text is not None:
        p.close()
        return await _act_reply(msg, ctx, p.act, deps, t0, embed_tokens)
    try:
        g = await gather(msg, ctx, p, deps)
    finally:
        p.close()
    if not (inspect.iscoroutinefunction(deps.generator.generate)
            or inspect.iscoroutinefunction(deps.store.save_reply)):
        # blocking ports: the generation and the reply's record in one hand-off to a worker thread
        return await asyncio.to_thread(_compose_and_record, msg, ctx, p, g, deps, t0, embed_tokens)
    c = await compose(msg, ctx, p, g, deps)
    return await record(msg, ctx, p, g, c, deps, t0=t0, embed_tokens=embed_tokens)


async def receive(msg: InboundMessage, deps: Responder) -> ConversationContext | None:
    """Store the message once and read its conversation; None: nothing to answer
    (a duplicate, an erased contact, or a reaction, which is stored only)."""
    ctx = await _call(deps.store.receive, msg, HISTORY_MESSAGES)
    if ctx is None:
        log.info("respond duplicate message_id=%s conversation_id=%s", msg.message_id, msg.conversation_id)
        return None
    if msg.message_type == "reaction":
        log.info("respond reaction stored, no reply message_id=%s conversation_id=%s", msg.message_id,
                 msg.conversation_id)
        return None
    return ctx


class MessageVector:
    """The message's vector, embedded at most once (a task started on first use) and
    shared by the intent fallback, recall, knowledge and the composer.

    Awaited on the event loop (``get``) or waited for in a worker thread (``wait``): recall
    and the knowledge search take it in the thread that uses it, so the vector reaches them
    without a turn of the event loop (under load a turn waits behind the other messages'
    work). A thread that waits for a vector whose embedding has not started yet (its job is
    still queued in the executor) embeds it itself, so a waiting thread never waits for a
    job queued behind it, and the message is still embedded once."""

    def __init__(self, embedder: Embedder, text: str):
        self.embedder, self.text = embedder, text
        self._task: asyncio.Task[np.ndarray] | None = None
        self._ready: concurrent.futures.Future = concurrent.futures.Future()
        self._claimed = False
        self._lock = threading.Lock()

    def start(self) -> "MessageVector":
        if self._task is None:
            self._task = asyncio.create_task(asyncio.to_thread(self._embedded))
        return self

    def _embedded(self) -> np.ndarray:
        """The vector, embedded by the first thread that needs it (the others wait for it)."""
        with self._lock:
            first, self._claimed = not self._claimed, True
        if first:
            try:
                self._ready.set_result(np.asarray(self.embedder.embed_queries([self.text])[0], dtype=np.float32))
            except BaseException as e:
                self._ready.set_exception(e)
        return self._ready.result()

    async def get(self) -> np.ndarray:
        """The vector (shielded: a caller's timeout does not cancel it for the others)."""
        return await asyncio.shield(self.start()._task)

    def wait(self) -> np.ndarray:
        """The vector, in a worker thread (``start`` was called on the loop)."""
        return self._embedded()

    def close(self) -> None:
        """Cancel it if nobody waited for it; a failure was already reported by whoever used it."""
        t = self._task
        if t is None:
            return
        if not t.done():
            t.cancel()
        elif not t.cancelled():
            t.exception()


@dataclass
class Plan:
    """What to do with the message: intent, strategy, what the acts step said, and the
    message vector when recall or knowledge will need it."""

    intent: IntentResult
    strategy: Strategy
    act: Any = None
    retrieve: bool = False       # search the knowledge
    over_limit: bool = False     # knowledge wanted, but the conversation used up its retrievals
    vector: MessageVector | None = None   # the memory embedder's vector of the message
    degraded: list[str] = field(default_factory=list)

    def close(self) -> None:
        if self.vector is not None:
            self.vector.close()


async def plan(msg: InboundMessage, ctx: ConversationContext, deps: Responder) -> Plan:
    """Intent (keywords, then the acts step, then the example phrases for what stays
    ``general``) and strategy; starts the message's embedding when it will be needed."""
    detected = detect_intent(msg.text, ctx.inbox.intent_keywords)
    # Memory that acts (rights, opt-out, tools): may answer, stay silent, or bring tool data.
    act = await deps.acts.before_reply(msg, ctx, detected.intent) if deps.acts is not None else None
    if act is not None and (act.suppress or act.text is not None):
        return Plan(detected, decide(detected.intent), act=act)
    if act is not None and act.intent:
        detected = IntentResult(act.intent, detected.score, detected.matched)
    vector: MessageVector | None = None
    examples = deps.intent_examples
    left_open = examples is not None and not (act is not None and act.intent) and examples.decides(detected)
    formed = intent_by_form(detected, msg.text) if left_open else None
    if formed is not None:
        detected = formed   # an amount asked, an agreement: the form decides, no clause is embedded for it
    elif left_open and examples.model == deps.memory_embedder.name:
        # what the dictionary leaves open ("general", or with the learnt classifier a
        # verdict it may overrule) is read from the message's vector, which recall and
        # retrieval use afterwards (no second embedding)
        vector = MessageVector(deps.memory_embedder, msg.text).start()
        # the learnt classifier may read the clause that carries the question apart (a story or a
        # second question around it): embedded alongside the message, only when it is not all of it
        clause_for = getattr(examples, "clause_for", None)  # a classifier that reads no clause has none
        clause = clause_for(msg.text) if clause_for is not None else None
        clause_vector = MessageVector(deps.memory_embedder, clause).start() if clause is not None else None
        try:
            detected = refine_intent(detected, await vector.get(), examples, msg.text,
                                     None if clause_vector is None else await clause_vector.get())
        except Exception as e:  # the embedding failure is reported by recall/knowledge
            log.warning("intent fallback skipped conversation_id=%s error=%r", msg.conversation_id, e)
    strategy = decide(detected.intent)
    if detected.intent in (CONFIRMATION, GREETING) and carried_question(msg.text) is not None:
        strategy = decide(GENERAL)   # "fechado, pode reservar …! como pago o sinal?": the question is searched
    over_limit = strategy.retrieves and ctx.retrieval_count >= deps.max_retrievals
    retrieve = strategy.retrieves and not over_limit
    same_model = deps.memory_embedder.name == deps.knowledge_embedder.name
    if vector is None and (ctx.recall_enabled or (retrieve and same_model)):
        vector = MessageVector(deps.memory_embedder, msg.text).start()
    return Plan(detected, strategy, act=act, retrieve=retrieve, over_limit=over_limit, vector=vector,
                degraded=list(act.degraded) if act is not None else [])


@dataclass
class Gathered:
    """What recall and the knowledge search brought (each may have failed: ``degraded``)."""

    memories: list[ScoredFact] = field(default_factory=list)
    chunks: list[KnowledgeChunk] = field(default_factory=list)
    recall_ms: float | None = None   # None: recall not attempted (flag off)
    retrieval_count: int = 0         # the conversation's retrievals, this one included
    query: dict[str, Any] = field(default_factory=dict)   # the vector the search used, for the composer
    tool_chunk: KnowledgeChunk | None = None
    degraded: list[str] = field(default_factory=list)


async def gather(msg: InboundMessage, ctx: ConversationContext, p: Plan, deps: Responder) -> Gathered:
    """Recall (flag on; within ``recall_budget_s``, cancelled after it) and the knowledge
    search, side by side. Neither can fail the reply: a failure is a ``degraded`` reason."""
    g = Gathered(retrieval_count=ctx.retrieval_count)
    recall_started = time.perf_counter()
    recall_task = (asyncio.create_task(asyncio.wait_for(recall(msg, p, deps), timeout=deps.recall_budget_s))
                   if ctx.recall_enabled else None)
    knowledge_task = asyncio.create_task(knowledge(msg, ctx, p, deps, g.query)) if p.retrieve else None
    if recall_task is not None:
        try:
            g.memories = await recall_task
        except asyncio.TimeoutError:
            g.degraded.append("recall_timeout")
            log.warning("recall timeout conversation_id=%s budget_s=%.3f", msg.conversation_id,
                        deps.recall_budget_s)
        except Exception as e:  # memory never blocks a reply
            g.degraded.append("recall_error")
            log.warning("recall error conversation_id=%s error=%r", msg.conversation_id, e)
        g.recall_ms = (time.perf_counter() - recall_started) * 1000
        # the reply's one INFO line carries recall_ms and memory_ids (a log line costs the event loop)
        log.debug("recall conversation_id=%s contact_id=%s memory_ids=%s ms=%.1f", msg.conversation_id,
                  msg.contact_id, [m.fact.id for m in g.memories], g.recall_ms)
    if knowledge_task is not None:
        g.retrieval_count += 1
        try:
            g.chunks = await knowledge_task
        except Exception as e:
            g.degraded.append("knowledge_error")
            log.warning("knowledge error conversation_id=%s error=%r", msg.conversation_id, e)
    g.tool_chunk = p.act.chunk() if p.act is not None else None
    if g.tool_chunk is not None:  # the tool's result: data with the standing of the knowledge
        g.chunks = [g.tool_chunk] + g.chunks
    return g


async def recall(msg: InboundMessage, p: Plan, deps: Responder) -> list[ScoredFact]:
    """The contact's best live facts for this message (embedding and fetch side by side)."""
    vector = p.vector or MessageVector(deps.memory_embedder, msg.text)
    if inspect.iscoroutinefunction(deps.memory.live_facts):
        facts, vec = await asyncio.gather(
            deps.memory.live_facts(msg.account_id, msg.contact_id, timeout_s=deps.recall_budget_s), vector.get())
        parts = message_parts(msg.text) if facts else []
        part_vecs = await _call(deps.memory_embedder.embed_queries, parts) if parts else None
    else:   # the fetch, the parts' vectors and the scoring in one hand-off to a worker thread
        return await asyncio.to_thread(_recall_here, deps, msg, vector)
    return score_memories(vec, facts, msg.unit_id, top_k=deps.top_k_memories,
                          min_score=deps.min_memory_score, query_text=msg.text, part_vecs=part_vecs,
                          examples=deps.recall_examples)


def _recall_here(deps: Responder, msg: InboundMessage, vector: MessageVector) -> list[ScoredFact]:
    """Recall with a blocking port, in the worker thread that runs this: the facts, only when
    there are some the vectors of the message's parts (a message of several parts recalls a
    fact for each; one batch), the message's vector (embedded meanwhile in another thread) and
    the scoring — no work left for the event loop, whose turns wait behind other messages."""
    facts = deps.memory.live_facts(msg.account_id, msg.contact_id, timeout_s=deps.recall_budget_s)
    parts = message_parts(msg.text) if facts else []
    part_vecs = deps.memory_embedder.embed_queries(parts) if parts else None
    vec = vector.wait()
    return score_memories(vec, facts, msg.unit_id, top_k=deps.top_k_memories,
                          min_score=deps.min_memory_score, query_text=msg.text, part_vecs=part_vecs,
                          examples=deps.recall_examples)


Calls = list[tuple[Callable[..., Any], tuple]]


async def knowledge(msg: InboundMessage, ctx: ConversationContext, p: Plan, deps: Responder,
                    query: dict[str, Any] | None = None) -> list[KnowledgeChunk]:
    """The account's chunks within the inbox's cut-off (or rescued by the question's words),
    re-ranked, at most ``rag_max_results``; a specific word of the question that none of them
    names brings a chunk that does (``_cover_missing_word``), and an objection brings the
    account's deals (``_deals``). ``query`` receives the vector used.

    With blocking ports (search, word search, embedder) all of it — the message's vector, every
    search, the re-ranking and the follow-up searches — runs in **one** worker thread: the event
    loop only starts it and takes the result. With an async port the same steps
    (``_knowledge_steps``) are driven from the loop, their calls through ``_call_all``."""
    shared = p.vector is not None and deps.memory_embedder.name == deps.knowledge_embedder.name
    lexical = getattr(deps.knowledge, "lexical_search", None)
    if not any(inspect.iscoroutinefunction(f) for f in (deps.knowledge.search, lexical,
                                                          deps.knowledge_embedder.embed_queries)):
        vector = p.vector if shared else MessageVector(deps.knowledge_embedder, msg.text)
        return await asyncio.to_thread(_knowledge_here, msg, ctx, p, deps, vector, query)
    vec = await p.vector.get() if shared else await _embed(deps.knowledge_embedder, msg.text)
    return await _steps_on_loop(_knowledge_steps(msg, ctx, p, deps, vec, query))


def _knowledge_here(msg: InboundMessage, ctx: ConversationContext, p: Plan, deps: Responder,
                    vector: MessageVector, query: dict[str, Any] | None) -> list[KnowledgeChunk]:
    """``knowledge`` with blocking ports, in the worker thread that runs this."""
    return _steps_here(_knowledge_steps(msg, ctx, p, deps, vector.wait(), query))


async def _steps_on_loop(steps: Steps[Calls, list[Any], T]) -> T:
    """Drive ``steps`` from the event loop: each batch of port calls through ``_call_all``."""
    try:
        calls = next(steps)
        while True:
            calls = steps.send(await _call_all(calls))
    except StopIteration as done:
        return done.value


def _steps_here(steps: Steps[Calls, list[Any], T]) -> T:
    """Drive ``steps`` in this (worker) thread: each batch of port calls one after another."""
    try:
        calls = next(steps)
        while True:
            calls = steps.send([fn(*args) for fn, args in calls])
    except StopIteration as done:
        return done.value


def _knowledge_steps(msg: InboundMessage, ctx: ConversationContext, p: Plan, deps: Responder, vec: np.ndarray,
                     query: dict[str, Any] | None) -> Steps[Calls, list[Any], list[KnowledgeChunk]]:
    """``knowledge`` as steps: yields the port calls it needs (a list of ``(fn, args)``), is sent
    their results in order, and returns the chunks."""
    if query is not None:
        query.update(query_vector=vec, query_model=deps.knowledge_embedder.name)
    inbox = ctx.inbox
    threshold = inbox.rag_distance_threshold
    if threshold is None:
        threshold = default_max_distance(deps.knowledge_embedder.name)
    pool = inbox.rag_max_results * RERANK_POOL
    # "tem elevador? minha esposa tem problema no joelho": the question alone is searched too
    # ("metade calabresa metade mussarela" is searched as the menu says it, "meio a meio")
    asked = halves_named(question_part(msg.text))
    searches: Calls = [(deps.knowledge.search, (vec, msg.account_id, pool, threshold + RESCUE_MARGIN))]
    if asked != msg.text:
        searches.append(_search_of(deps, asked, (msg.account_id, pool, threshold + RESCUE_MARGIN)))
    lexical = getattr(deps.knowledge, "lexical_search", None)
    stems = lexical_stems(asked) if lexical is not None else []
    variants = _named_otherwise(asked, stems) if stems else []
    for v in ([stems] + variants if stems else []):
        searches.append((lexical, (msg.account_id, v, pool)))
    # "qnto sai o pacote de 10 creches e vale por qnto tempo": each question searched on its own too
    clauses = question_clauses(asked) or compared_items(asked) or paired_items(asked)
    clause_searches = _clause_searches(deps, clauses, lexical, (msg.account_id, pool, threshold + RESCUE_MARGIN))
    found = yield searches + [s for pair in clause_searches for s in pair]   # one batch: one hand-off, or none
    per_clause, k = [], len(searches)
    for pair in clause_searches:   # each question's vector hits and word hits together
        per_clause.append([h for hits in found[k:k + len(pair)] for h in hits])
        k += len(pair)
    found = found[: len(searches)]
    vector_hits = sorted((c for hits in found[: 2 if asked != msg.text else 1] for c in map(_as_chunk, hits)),
                         key=lambda c: c.distance)
    chunks, seen = [], set()
    for c in vector_hits:
        if c.chunk_id not in seen and (c.distance <= threshold or lexically_sure(asked, c.text)):
            chunks.append(c)
            seen.add(c.chunk_id)
    if stems:  # found by the question's words alone (or other names of them): kept on the same lexical evidence
        for hits in found[len(found) - 1 - len(variants):]:
            for c in map(_as_chunk, hits):
                if c.chunk_id not in seen and lexically_sure(asked, c.text):
                    chunks.append(c)
                    seen.add(c.chunk_id)
    chunks = rerank(halves_named(msg.text), chunks)[: inbox.rag_max_results]
    if per_clause:
        chunks = _each_question_chunk(clauses, per_clause, chunks, threshold, inbox.rag_max_results)
    if lexical is not None:
        chunks = yield from _by_words_steps(msg, p, asked, stems, chunks, lexical, inbox.rag_max_results)
    return chunks


def _clause_searches(deps: Responder, clauses: list[str], lexical, args: tuple) -> list[Calls]:
    """Per question of a message: its vector search, and its word search (a short question's words
    find its chunk when its vector does not)."""
    account_id, pool, _ = args
    out = []
    for clause in clauses:
        stems = lexical_stems(clause) if lexical is not None else []
        out.append([_search_of(deps, clause, args)] + ([(lexical, (account_id, stems, pool))] if stems else []))
    return out


def _each_question_chunk(clauses: list[str], hits_of: list[Any], chunks: list[KnowledgeChunk], threshold: float,
                         limit: int) -> list[KnowledgeChunk]:
    """A message asking two things ("qnto custa o pacote pétalas e precisa pedir com qnto tempo
    antes?"): the whole message's vector finds the first question's chunks, and the best chunk for
    each question on its own (naming all its words, else the nearest within the cut-off) takes the
    place of the last one no other question needs, so each question can be answered."""
    out = list(chunks)
    needed: set = set()
    for clause, hits in zip(clauses, hits_of):
        near: dict = {}
        for c in map(_as_chunk, hits):   # a chunk found by both searches keeps its real distance
            if c.chunk_id not in near or c.distance < near[c.chunk_id].distance:
                near[c.chunk_id] = c
        sure = [c for c in near.values() if lexically_sure(clause, c.text)]
        # a chunk naming every word of the question first, else the nearest within the cut-off
        ranked = rerank(clause, sure) or rerank(clause, [c for c in near.values() if c.distance <= threshold])
        if not ranked or not answer_units(ranked[0].text):
            continue
        best = ranked[0]
        have = next((c for c in out if c.chunk_id == best.chunk_id), None)
        if have is None:
            spare = [k for k in range(len(out) - 1, -1, -1) if out[k].chunk_id not in needed]
            if len(out) < limit:
                out.append(best)
            elif spare:
                out[spare[0]] = best
            else:
                continue
        needed.add(best.chunk_id)
    return out


def _by_words_steps(msg: InboundMessage, p: Plan, asked: str, stems: list[str], chunks: list[KnowledgeChunk],
                    lexical, limit: int) -> Steps[Calls, list[Any], list[KnowledgeChunk]]:
    """What the lexical search adds to the retrieved chunks: the chunks with most of the words when
    nothing found can answer, a chunk naming a specific word none names, an objection's deals and
    the item a superlative price question asks for."""
    if stems and (not any(answer_units(c.text) for c in chunks) or _names_nothing_asked(asked, chunks)):
        chunks = yield from _most_words_steps(msg, asked, stems, chunks, lexical, limit)
    if chunks:
        chunks = yield from _cover_missing_word_steps(msg, chunks, lexical, limit)
    if chunks:
        chunks = yield from _rule_subject_steps(msg, chunks, lexical, limit)
    if stems and chunks:
        chunks = yield from _asked_attribute_steps(msg, asked, stems, chunks, lexical, limit)
    if p.intent.intent == OBJECTION or asks_about_deal(asked):
        # "tá caro" and "se eu for buscar tem algum desconto?" alike: the deals are found by their words,
        # whether the question was read as an objection or as a policy question (a fragile line)
        chunks += yield from _deals_steps(msg, chunks, lexical)
    if p.intent.intent == OBJECTION:
        chunks += yield from _concession_steps(msg, chunks, lexical)
    if asks_what_to_do(msg.text) and not any(addresses_problem(u.text) for u in units_of_chunks(
            [c.text for c in chunks])):
        # "a pizza chegou fria, o q eu faço?": what the business does about a problem is found by its
        # words, whatever the story names
        chunks = chunks[: max(0, limit - 1)] + (yield from _problem_steps(msg, chunks, lexical))
    chunks = yield from _denial_steps(msg, asked, stems, chunks, lexical, limit)
    if chunks:
        chunks = yield from _named_item_line_steps(msg, asked, chunks, lexical, limit)
    chunks = yield from _extreme_of_kind_steps(msg, asked, chunks, lexical, limit)
    chunks = yield from _party_limit_steps(msg, chunks, lexical, limit)
    if p.intent.intent == CONFIRMATION:
        chunks = yield from _booking_rule_steps(msg, chunks, lexical, limit)
    chunks = yield from _brought_rule_steps(msg, chunks, lexical, limit)
    return (yield from _deadline_steps(msg, chunks, lexical, limit))


def _brought_rule_steps(msg: InboundMessage, chunks: list[KnowledgeChunk], lexical,
                        limit: int) -> Steps[Calls, list[Any], list[KnowledgeChunk]]:
    """"posso levar minha cerveja?" (``compose.asks_to_bring``): the vector finds the drinks sold; the rule on
    things brought from outside ("Trazer de fora: é permitido trazer bebidas, com taxa de rolha") is found by
    "fora" and takes the last place when no retrieved unit states one."""
    if not asks_to_bring(msg.text):
        return chunks
    return (yield from _stating_line_steps(msg, chunks, lexical, limit, ["fora"], states_bringing))


def _booking_rule_steps(msg: InboundMessage, chunks: list[KnowledgeChunk], lexical,
                        limit: int) -> Steps[Calls, list[Any], list[KnowledgeChunk]]:
    """"fechado, pode reservar a coral pra sexta 22h": a confirmation that books a day or a time is
    answered with what the business asks to book it ("Para reservar, pedimos um sinal de 30%"). The
    message's vector follows the suite it names, not the booking; so when no retrieved unit states the
    condition, the account's chunks naming the booking act (by its root) are read for a deposit asked
    to book (``compose.asks_deposit_to_book``)."""
    piece = booking_order(msg.text)
    if not piece:
        return chunks
    if fetches_order(piece):   # "vou retirar no balcão": what the business says of a pick-up, found by its word
        return (yield from _stating_line_steps(msg, chunks, lexical, limit, ["retir"],
                                               lambda text: names_pickup(fold(text).split())))
    method = payment_told(piece)
    if method:   # "vou pagar no pix": the line on paying that way, found by the method's word
        return (yield from _stating_line_steps(msg, chunks, lexical, limit, [method],
                                               lambda text: states_payment(method, text)))
    for act in booking_acts(piece):   # the act named; every one for a booking told without a verb
        found = yield from _stating_line_steps(msg, chunks, lexical, limit, [act],
                                               lambda text: asks_deposit_to_book(piece, text))
        if found is not chunks:
            return found
    return chunks


def _deadline_steps(msg: InboundMessage, chunks: list[KnowledgeChunk], lexical,
                    limit: int) -> Steps[Calls, list[Any], list[KnowledgeChunk]]:
    """"vcs arrumam o quarto com pétalas? tem q avisar com qnto tempo?": a second question asking only
    how long before names nothing the search can find; its answer is the line of the deadline
    ("pedida com 48 horas de antecedência"). When a later question of the message asks a deadline
    and no retrieved unit states one, the best chunk with "antecedência" stating a deadline takes the
    last place (``_stating_line_steps``)."""
    if not chunks or not any(asks_deadline(c) for c in question_clauses(msg.text)[1:]):
        return chunks
    return (yield from _stating_line_steps(msg, chunks, lexical, limit, ["antecedencia"], carries_deadline))


def _stating_line_steps(msg: InboundMessage, chunks: list[KnowledgeChunk], lexical, limit: int, stems: list[str],
                        states: Callable[[str], Any]) -> Steps[Calls, list[Any], list[KnowledgeChunk]]:
    """When no retrieved unit ``states`` what was asked (a deadline, a limit on people), the account's
    chunks with ``stems`` are read and the best one for the message with a unit that states it takes
    the last place: the words that find such a line are not the customer's."""
    if not limit:
        return chunks
    if any(states(u.text) for u in units_of_chunks([c.text for c in chunks])):
        return chunks
    ids = {c.chunk_id for c in chunks}
    (hits,) = yield [(lexical, (msg.account_id, stems, limit * RERANK_POOL))]
    found = [c for c in map(_as_chunk, hits) if c.chunk_id not in ids
             and any(states(u.text) for u in answer_units(c.text))]
    if not found:
        return chunks
    return chunks[: max(0, limit - 1)] + rerank(msg.text, found)[:1]


_CAPITALISED = re.compile(r"(?<![.!?:\n-]\s)(?<!^)\b[A-ZÀ-Ý][a-zà-ÿ]+")


def _written_as_name(stem_: str, text: str) -> bool:
    """The chunk writes a word starting with ``stem_`` capitalised inside a sentence: a proper name
    (a place, a brand, a unit), not a common word."""
    return any(fold(m.group(0)).startswith(stem_) for m in _CAPITALISED.finditer(text))


def _names_nothing_asked(asked: str, chunks: list[KnowledgeChunk]) -> bool:
    """The retrieved chunks name none of the question's focus words (two at least): "o leva e traz vai
    no alto da colina? e qnto fica" brought only a price table of another service."""
    focus = question_words(asked)[1]
    return len(focus) >= 2 and uncovered_focus(asked, units_of_chunks([c.text for c in chunks])) >= focus


def _asked_attribute_steps(msg: InboundMessage, asked: str, stems: list[str], chunks: list[KnowledgeChunk], lexical,
                          limit: int) -> Steps[Calls, list[Any], list[KnowledgeChunk]]:
    """"onde fica a unidade vila nova?": the question asks an attribute (an address, hours, a day, a
    deadline, a duration) and no retrieved unit carries it ("Unidade Vila Nova atende: ..."): the
    account's chunks naming every word of the question are read, and the best one with a unit that
    carries the attribute and names something asked (by itself or its heading: "## Vila Nova" /
    "Av. dos Ipês, 1.250.") takes the last place."""
    if carries_asked_attribute(asked, "") is None:   # no attribute asked
        return chunks
    have = units_of_chunks([c.text for c in chunks])
    if any(carries_asked_attribute(asked, u.text) for u in have):
        return chunks
    focus = set(stems)
    ids = {c.chunk_id for c in chunks}
    (hits,) = yield [(lexical, (msg.account_id, stems, limit * RERANK_POOL))]
    found = [c for c in map(_as_chunk, hits) if c.chunk_id not in ids and any(
        carries_asked_attribute(asked, u.text) and focus & chunk_words(f"{u.text} {u.context}")
        for u in answer_units(c.text))]
    if not found:
        return chunks
    return chunks[: max(0, limit - 1)] + rerank(msg.text, found)[:1]


def _party_limit_steps(msg: InboundMessage, chunks: list[KnowledgeChunk], lexical,
                       limit: int) -> Steps[Calls, list[Any], list[KnowledgeChunk]]:
    """"da pra ir eu e mais 4 amigas numa suíte só?": the customer counts a party, and whether that
    many may come is a rule on people ("Máximo de 2 pessoas por suíte") that the story's words
    (a bachelorette party, friends) do not find. When no retrieved unit states such a limit, the best
    chunk with the word "pessoa" stating one takes the last place (``compose.states_party_limit``,
    ``_stating_line_steps``)."""
    size = party_size(msg.text)
    if size is None:
        return chunks
    return (yield from _stating_line_steps(msg, chunks, lexical, limit, ["pessoa"],
                                           lambda text: states_party_limit(text, size)))


# a proper name used in a sentence, after an article or a preposition ("tudo o que a Brisa tem")
_MENTIONED_NAME = re.compile(r"\b(?:[ao]s?|d[ao]s?|n[ao]s?|pel[ao]s?)\s+([A-ZÀ-Ý][a-zà-ÿ]{3,})\b")


async def _named_item_line(msg: InboundMessage, asked: str, chunks: list[KnowledgeChunk], lexical,
                           limit: int) -> list[KnowledgeChunk]:
    return await _steps_on_loop(_named_item_line_steps(msg, asked, chunks, lexical, limit))


def _named_item_line_steps(msg: InboundMessage, asked: str, chunks: list[KnowledgeChunk], lexical,
                           limit: int) -> Steps[Calls, list[Any], list[KnowledgeChunk]]:
    """"qual a diferença de preço da brisa pra coral?": the question names an item that the
    retrieved chunks only mention inside another item's line ("Suíte Coral: tudo o que a Brisa
    tem ..."), never as a line of its own; its own line ("Suíte Brisa: ... R$ 89,00") is found by
    its name and takes the last place, so the composer can quote both (``compose.refers_to``)."""
    words = {w for w in normalize_chat(asked).split() if len(w) >= 4}
    labelled = {fold(w) for u in units_of_chunks([c.text for c in chunks]) for w in item_name(u).split()}
    names = sorted({fold(m.group(1)) for c in chunks for m in _MENTIONED_NAME.finditer(c.text)}
                   & words - labelled)
    if not names or limit < 2:
        return chunks
    have = {c.chunk_id for c in chunks}
    for name, hits in zip(names, (yield [(lexical, (msg.account_id, [n], limit * RERANK_POOL)) for n in names])):
        for c in map(_as_chunk, hits):
            if c.chunk_id not in have and any(name in fold(item_name(u)).split() and fold(u.text).startswith(
                    fold(item_name(u))) for u in answer_units(c.text)):
                return chunks[: limit - 1] + [c]
    return chunks


async def _extreme_of_kind(msg: InboundMessage, asked: str, chunks: list[KnowledgeChunk], lexical,
                           limit: int) -> list[KnowledgeChunk]:
    return await _steps_on_loop(_extreme_of_kind_steps(msg, asked, chunks, lexical, limit))


def _extreme_of_kind_steps(msg: InboundMessage, asked: str, chunks: list[KnowledgeChunk], lexical,
                           limit: int) -> Steps[Calls, list[Any], list[KnowledgeChunk]]:
    """"qual a suíte mais baratinha?": the cheapest (or dearest) of a kind is a comparison over
    every priced item of that kind, and a vector search finds the list, not its cheapest line.
    The account's chunks naming the kind (``extreme_price``) are read, the items of that kind
    compared by price (``extreme_item``), and the chunk holding the answer takes the first place
    when it was not retrieved. With no kind named, the price labels it asks ("a opção mais em conta pra 2h":
    ``price_labels_asked``) find the priced lists; with neither, what was retrieved is compared."""
    extreme = extreme_price(asked)
    words = (sorted(extreme[1]) or price_labels_asked(asked)) if extreme is not None else []
    if not words:
        return chunks
    found: dict = {c.chunk_id: c for c in chunks}
    for hits in (yield [(lexical, (msg.account_id, [k], limit * RERANK_POOL)) for k in words]):
        for c in map(_as_chunk, hits):
            found.setdefault(c.chunk_id, c)
    holder = {}
    for c in found.values():
        for u in answer_units(c.text):
            holder.setdefault(u.text, c)
    units = units_of_chunks([c.text for c in found.values()])
    best = extreme_item(asked, units)
    chunk = holder.get(best.text) if best is not None else None
    if chunk is None or any(c.chunk_id == chunk.chunk_id for c in chunks):
        return chunks
    out = [chunk] + chunks[: max(0, limit - 1)]
    if extreme_item(asked, units_of_chunks([c.text for c in out])) != best:
        # the chunk holding the answer alone holds no other item to compare it with (the list's first lines): the
        # chunk holding the next item of the comparison comes second, so the answer can still be told as such
        rival = next((holder[u.text] for u in units if u.text != best.text and item_head(u) == item_head(best)
                      and holder.get(u.text) is not None and holder[u.text].chunk_id != chunk.chunk_id), None)
        if rival is not None:
            out = [chunk, rival] + [c for c in chunks if c.chunk_id != rival.chunk_id][: max(0, limit - 2)]
    return out


async def _most_words(msg: InboundMessage, asked: str, stems: list[str], chunks: list[KnowledgeChunk], lexical,
                      limit: int) -> list[KnowledgeChunk]:
    return await _steps_on_loop(_most_words_steps(msg, asked, stems, chunks, lexical, limit))


def _most_words_steps(msg: InboundMessage, asked: str, stems: list[str], chunks: list[KnowledgeChunk], lexical,
                      limit: int) -> Steps[Calls, list[Any], list[KnowledgeChunk]]:
    """Nothing found can answer (no chunk, or only a heading: "# Leva e traz"), and no chunk holds
    every word of the question ("cortam a unha avulso?": the knowledge says "Corte de unhas
    avulso"): the chunks holding all of its words but one (or two, of four), best first."""
    # a price asked by one question of two ("o leva e traz vai no alto da colina? e qnto fica") does
    # not bar a chunk answering the other
    priced_only = asks_price(asked) and len(question_clauses(asked)) < 2
    for drop in range(1, max(2, len(stems) - 1)):
        found: dict = {}
        combos = list(itertools.combinations(stems, len(stems) - drop))
        keeps = [(lexical, (msg.account_id, list(keep), limit * RERANK_POOL)) for keep in combos]
        for keep, hits in zip(combos, (yield keeps)):
            for c in map(_as_chunk, hits):
                # one word of two kept: only a name the knowledge writes as one ("o leva e traz vai no
                # são josé?" / "Unidade Centro: Centro, São José…"), never a common word ("caixa de som")
                if len(keep) == 1 and not _written_as_name(keep[0], c.text):
                    continue
                if answer_units(c.text) and (carries_price(c.text) or not priced_only):
                    found.setdefault(c.chunk_id, c)
        if found:
            return rerank(msg.text, list(found.values()))[:limit]
    return chunks


def _rule_subject_steps(msg: InboundMessage, chunks: list[KnowledgeChunk], lexical,
                        limit: int) -> Steps[Calls, list[Any], list[KnowledgeChunk]]:
    """The subject of a rule said by another name anywhere in the message, the story included ("reservei pra
    hoje mas não vou conseguir ir, perco o pix?" → cancelamento: ``subjects_named_otherwise``): when no
    retrieved chunk names it as the knowledge does, the best of the few chunks of the account naming it takes the
    last place."""
    # the subject's long stem ("parcel" of "parcelamento"), which "parceiros" does not start with
    words = {w for c in chunks for w in re.findall(r"\w+", fold(c.text))}
    missing = list(dict.fromkeys(p for p in (long_stem(fold(n)) for n in subjects_named_otherwise(msg.text))
                                 if not any(w.startswith(p) for w in words)))
    if not missing:
        return chunks
    hits_of = yield [(lexical, (msg.account_id, [p], MAX_MISSING_WORD_CHUNKS + 1)) for p in missing]
    found = {c.chunk_id: c for hits in hits_of for c in map(_as_chunk, hits) if answer_units(c.text)}
    if not found or len(found) > MAX_MISSING_WORD_CHUNKS:
        return chunks
    return chunks[: max(0, limit - 1)] + rerank(msg.text, list(found.values()))[:1]


MAX_DENIAL_SEARCHES = 12


def _denial_steps(msg: InboundMessage, asked: str, stems: list[str], chunks: list[KnowledgeChunk], lexical,
                  limit: int) -> Steps[Calls, list[Any], list[KnowledgeChunk]]:
    """A yes/no question's honest "no" is often a short line ("Não hospedamos gatos.", "Não temos elevador.")
    whose vector is far from the question ("posso deixar minha gata hospedada uns dias?", "meu namorado operou o
    quadril, a suíte de cima tem elevador?"): a line of the account opening with a denial that names every word
    of the question but one (or another name of it: ``concept_forms``), or that denies outright the thing a
    "tem X?" asks (``offered_object``, ``denies_outright``), takes the last place, when no retrieved line is
    such a denial."""
    if not is_yes_no(asked):
        return chunks
    forms = concept_forms(asked)
    keeps = list(itertools.combinations(stems, len(stems) - 1)) if len(stems) >= 3 else []
    thing = sorted(offered_object(asked), key=len, reverse=True)

    def names(unit_stems: frozenset[str], keep: Sequence[str]) -> bool:
        return all(any(w.startswith(x) for w in unit_stems for x in {k} | forms.get(k, set()) if len(x) >= 3)
                   for k in keep)

    def denial_in(c: KnowledgeChunk) -> bool:
        return any((opens_with_no(u.text) and any(names(unit_words(u), keep) for keep in keeps))
                   or any(denies_outright(u.text, t) for t in thing) for u in units_of_chunks([c.text]))
    if not (keeps or thing) or any(denial_in(c) for c in chunks):
        return chunks
    searches = [[t] for t in thing if len(t) >= 4 and " " not in t]
    for keep in keeps:
        searches.append(list(keep))
        searches += _named_otherwise(asked, list(keep))
    searches = searches[:MAX_DENIAL_SEARCHES]
    hits_of = yield [(lexical, (msg.account_id, v, MAX_MISSING_WORD_CHUNKS + 1)) for v in searches]
    have = {c.chunk_id for c in chunks}
    found = {c.chunk_id: c for hits in hits_of for c in map(_as_chunk, hits)
             if c.chunk_id not in have and denial_in(c)}
    if not found:
        return chunks
    return chunks[: max(0, limit - 1)] + rerank(msg.text, list(found.values()))[:1]


DEAL_STEMS = ("promo", "desco")   # "promoção", "desconto": where a business writes its deals
MAX_DEAL_CHUNKS = 2


async def _deals(msg: InboundMessage, chunks: list[KnowledgeChunk], lexical) -> list[KnowledgeChunk]:
    return await _steps_on_loop(_deals_steps(msg, chunks, lexical))


def asks_about_deal(asked: str) -> bool:
    """A question about a deal ("tem algum desconto?", "a tarde aurora vale no sábado?" is not one:
    no deal word): it names a discount or a promotion, and asks."""
    return "?" in asked and offers_deal(asked)


def _deals_steps(msg: InboundMessage, chunks: list[KnowledgeChunk],
                 lexical) -> Steps[Calls, list[Any], list[KnowledgeChunk]]:
    """An objection ("tá caro") is answered with a deal, and a deal is found by its words, not by
    the meaning of a complaint: the account's chunks that offer one (``compose.offers_deal``), best
    for the message first, besides what the vector search found."""
    have = {c.chunk_id for c in chunks}
    found: dict = {}
    for hits in (yield [(lexical, (msg.account_id, [s], 2 * MAX_DEAL_CHUNKS)) for s in DEAL_STEMS]):
        for c in map(_as_chunk, hits):
            if c.chunk_id not in have and any(offers_deal(u.text) for u in answer_units(c.text)):
                found.setdefault(c.chunk_id, c)
    return rerank(msg.text, list(found.values()))[:MAX_DEAL_CHUNKS]


def _concession_steps(msg: InboundMessage, chunks: list[KnowledgeChunk],
                      lexical) -> Steps[Calls, list[Any], list[KnowledgeChunk]]:
    """"459 na lírio?? tá puxado": what concedes on the price objected to is seldom near the complaint's
    vector. When a retrieved line is priced at the amount the message names, the account's chunks are read
    for the line that lets one pay that amount in instalments (``compose.instalments_apply``, found by
    "parcel") and for the cheapest item of the same kind under the same labels (``compose.cheaper_alternative``,
    found by the label of that amount: "pernoite"), each added when no retrieved chunk has it. With no amount
    named, the line of the item the message names by its proper name is the one objected to, found by the
    message's word pairs when not retrieved (``_named_item_steps``), and its cheaper kin by its kind ("pacot")."""
    named = amounts_named(msg.text)
    units = units_of_chunks([c.text for c in chunks])
    quoted = next((u for u in units if named & set(unit_amounts(u.text))), None)
    have = {c.chunk_id for c in chunks}
    found_line: list[KnowledgeChunk] = []
    if quoted is None and named:
        # "na pizzaria do lado a grande sai 45, ai ta 58??": the line priced at the amount objected to, found by
        # the amount itself ("58" starts "58,00") when the vector brought only the deals
        asked = sorted(named)[:2]
        hits = yield [(lexical, (msg.account_id, [f"{a:.0f}" if a == int(a) else f"{a:.2f}".replace(".", ",")],
                                 RERANK_POOL)) for a in asked]
        pool = {c.chunk_id: c for hs in hits for c in map(_as_chunk, hs) if c.chunk_id not in have
                and any(named & set(unit_amounts(u.text)) for u in answer_units(c.text))}
        found_line = rerank(msg.text, list(pool.values()))[:1]
        units = units + units_of_chunks([c.text for c in found_line])
        have |= {c.chunk_id for c in found_line}
        quoted = next((u for u in units if named & set(unit_amounts(u.text))), None)
    if quoted is None and not named:
        # "achei salgado o pacote do pedido de casamento": no amount, the item named by its proper name; its
        # line is found by two words of the message standing together, when no retrieved line is it
        quoted = next((u for u in units if objected_price(msg.text, u) is not None), None)
        if quoted is None:
            found_line = yield from _named_item_steps(msg, have, lexical)
            units = units + units_of_chunks([c.text for c in found_line])
            have |= {c.chunk_id for c in found_line}
            quoted = next((u for u in units if objected_price(msg.text, u) is not None), None)
    if quoted is None:
        return []
    amount, label, labels = objected_price(msg.text, quoted)
    paid = any(instalments_apply(u.text, amount, label, labels) for u in units)
    # the same kind of item for less is found by the label of the amount ("pernoite"), or, for items with one
    # price and a proper name ("Pacote Pedido de Casamento"), by their kind ("pacot")
    kind = stem(label) if label else (item_head(quoted) if item_name(quoted) else "")
    searches = ([] if paid else [["parcel"]]) + ([[kind]] if kind else [])
    if not searches:
        return found_line
    found = dict(zip(map(tuple, searches), (yield [(lexical, (msg.account_id, s, RERANK_POOL * 2))
                                                    for s in searches])))
    added: list[KnowledgeChunk] = list(found_line)
    if not paid:
        paying = [c for c in map(_as_chunk, found[("parcel",)]) if c.chunk_id not in have and any(
            instalments_apply(u.text, amount, label, labels) for u in answer_units(c.text))]
        added += rerank(msg.text, paying)[:1]
    if kind:
        known = cheaper_alternative(quoted, amount, units)
        pool = [c for c in map(_as_chunk, found[(kind,)]) if c.chunk_id not in have]
        better = cheaper_alternative(quoted, amount, units + units_of_chunks([c.text for c in pool]))
        if better is not None and (known is None or better.text != known.text):
            added += [c for c in pool if better.text in {u.text for u in answer_units(c.text)}][:1]
    return added


MAX_NAME_PAIRS = 6   # word pairs of a message searched for the item it names (the first ones)


def _named_item_steps(msg: InboundMessage, have: set, lexical) -> Steps[Calls, list[Any], list[KnowledgeChunk]]:
    """The chunk holding the line of a priced item the message names by its proper name ("o pacote do pedido
    de casamento" → "Pacote Pedido de Casamento — R$ 390,00: ..."), searched by each pair of the message's
    words standing together (stopwords and the words that made it an objection skipped: "caro", "vou pensar"):
    a name of two words is such a pair."""
    said = {w for k in detect_intent(msg.text).matched for w in fold(k).split()}
    words = [stem(w) for w in normalize_chat(msg.text).split() if len(w) >= 4 and w not in STOPWORDS | said]
    pairs = list(dict.fromkeys(zip(words, words[1:])))[:MAX_NAME_PAIRS]
    if not pairs:
        return []
    pool = {}
    for hits in (yield [(lexical, (msg.account_id, list(p), RERANK_POOL)) for p in pairs]):
        for c in map(_as_chunk, hits):
            if c.chunk_id not in have and any(objected_price(msg.text, u) is not None for u in answer_units(c.text)):
                pool.setdefault(c.chunk_id, c)
    return rerank(msg.text, list(pool.values()))[:1]


def _problem_steps(msg: InboundMessage, chunks: list[KnowledgeChunk],
                  lexical) -> Steps[Calls, list[Any], list[KnowledgeChunk]]:
    """The account's chunk with a unit on a problem (``compose.addresses_problem``), best for the
    message, besides what the vector search found (at most one)."""
    have = {c.chunk_id for c in chunks}
    found: dict = {}
    for hits in (yield [(lexical, (msg.account_id, [s], 4)) for s in PROBLEM_STEMS]):
        for c in map(_as_chunk, hits):
            if c.chunk_id not in have and any(addresses_problem(u.text) for u in answer_units(c.text)):
                found.setdefault(c.chunk_id, c)
    return rerank(msg.text, list(found.values()))[:1]


MAX_MISSING_WORD_CHUNKS = 3   # a word found in more chunks than this is not specific enough to rescue one
MAX_MISSING_WORDS = 4   # missing words searched; at most two of them may be words the account uses


async def _cover_missing_word(msg: InboundMessage, chunks: list[KnowledgeChunk], lexical,
                              limit: int) -> list[KnowledgeChunk]:
    return await _steps_on_loop(_cover_missing_word_steps(msg, chunks, lexical, limit))


def _cover_missing_word_steps(msg: InboundMessage, chunks: list[KnowledgeChunk], lexical,
                              limit: int) -> Steps[Calls, list[Any], list[KnowledgeChunk]]:
    """When a specific word of the question ("gripe" of "a vacina de gripe qnto é?"), or the
    knowledge's word for it ("drinks" for "caipirinha"), is in none of the retrieved chunks but in
    a few chunks of the account, the best of those takes the last place: a short question names
    one item of a long list, and the list's vector does not find it."""
    asked = question_part(msg.text)
    units = units_of_chunks([c.text for c in chunks])
    # ... and the place the customer tells around it ("vcs buscam em casa? moro na vila sol"), which the
    # question's own part leaves out: the list of the places they serve names it
    place = " ".join(told_place(msg.text))
    # ... and a phrase whose meaning none names though its bare word is there ("vcs atendem em casa?" with
    # "voltam para casa" retrieved: the knowledge says "domiciliar")
    # (searched by its other names only; the one thing searched in a message with too many words missing)
    phrased = unnamed_phrases(asked, units)
    missing = sorted(uncovered_focus(asked, units) | (uncovered_focus(place, units) if place else set()) | phrased)
    if len(missing) > MAX_MISSING_WORDS:
        missing = sorted(phrased)
    if not missing or len(missing) > MAX_MISSING_WORDS:
        return chunks
    forms = {w: (f - {w} if w in phrased else f) for w, f in concept_forms(asked).items()}
    have = {c.chunk_id for c in chunks}
    options = []   # each missing word's few chunks: the best of them all for the message wins
    covers: dict = {}
    # the word itself first, then its other names (the most specific one wins): every word's
    # every form searched in one hand-off (``_call_all``)
    asks = [(word, n, form) for word in missing
            for n, form in enumerate(sorted(forms.get(word, {word}), key=lambda f: (f != word, f)))
            if len(form) >= 4 and not form.isdigit()]
    hits_of = yield [(lexical, (msg.account_id, form.split(), MAX_MISSING_WORD_CHUNKS + 1))
                     for _, _, form in asks]
    # a word no chunk of the account names ("eae", "mano" of "eae mano qnto ta a lirio pernoite??")
    # names nothing of the business: only the others count (at most two, to be specific)
    # (by the stem of a word of its own: the word search matches prefixes, "mano" finds "manobrista")
    foreign = {word for word in missing if not any(
        word in chunk_words(c.text) for (w, _, _), hits in zip(asks, hits_of) if w == word
        for c in map(_as_chunk, hits))}
    if len(set(missing) - foreign) > 2:
        return chunks
    for word in missing:
        per_form = []
        for (w, n, _), hits in zip(asks, hits_of):
            if w != word:
                continue
            found = [c for c in map(_as_chunk, hits) if c.chunk_id not in have and answer_units(c.text)]
            if 0 < len(found) <= MAX_MISSING_WORD_CHUNKS:
                per_form.append((n > 0, len(found), n, found))
        if per_form:
            found = min(per_form, key=lambda x: x[:3])[3]
            options += [c for c in found if c.chunk_id not in {o.chunk_id for o in options}]
            for c in found:
                covers[c.chunk_id] = covers.get(c.chunk_id, 0) + 1
    if options:   # the chunk naming most of the missing words, then the best for the message
        order = {c.chunk_id: k for k, c in enumerate(rerank(msg.text, options))}
        best = min(options, key=lambda c: (-covers[c.chunk_id], order[c.chunk_id]))
        return chunks[: max(0, limit - 1)] + [best]
    return chunks


@dataclass
class Composed:
    text: str
    generation: Generation = field(default_factory=lambda: Generation(text="", usage=Usage(), model="none",
                                                                      provider="none"))
    memories: list[ScoredFact] = field(default_factory=list)   # the ones the reply was given
    chunks: list[KnowledgeChunk] = field(default_factory=list)  # the knowledge chunks it was given
    degraded: list[str] = field(default_factory=list)


async def compose(msg: InboundMessage, ctx: ConversationContext, p: Plan, g: Gathered,
                  deps: Responder) -> Composed:
    """The reply text: a fixed sentence when knowledge is required and missing (or the
    conversation is over its retrievals), else the generator's, guarded (never a price
    the chunks do not state, never against a tool's answer)."""
    c, request = _to_generate(msg, ctx, p, g)
    if request is None:
        return c
    try:
        generation, error = await _call(deps.generator.generate, request), None
    except Exception as e:
        generation, error = None, e
    return _generated(msg, p, g, c, generation, error)


def _to_generate(msg: InboundMessage, ctx: ConversationContext, p: Plan,
                 g: Gathered) -> tuple[Composed, ReplyRequest | None]:
    """``compose`` before the generator: a fixed sentence (no request), or the request."""
    if p.over_limit and p.strategy.retrieval == "required" and g.tool_chunk is None:
        return Composed(FALLBACK_LOOP, degraded=["retrieval_limit"]), None
    intent = p.intent.intent
    if p.strategy.retrieval == "required" and not g.chunks:
        if knowledge_required(p.intent, msg.text, decided=p.act is not None and bool(p.act.intent)):
            return Composed(FALLBACK_NO_KNOWLEDGE), None
        # a guessed intent found no knowledge for a message that asks nothing: answered as a
        # ``general`` read is (the model with the customer's memory), never handed over for it
        log.info("no knowledge for a guessed intent, answered as general conversation_id=%s intent=%s",
                 msg.conversation_id, intent)
        p.strategy, intent = decide(GENERAL), GENERAL
    c = Composed("", memories=g.memories, chunks=g.chunks)
    inbox = ctx.inbox
    messages = build_messages(msg.text, system_prompt=inbox.system_prompt, playbook=inbox.playbook_prompt,
                              lead_state=ctx.lead_state, memories=c.memories,
                              chunks=c.chunks if p.retrieve else None, history=ctx.history)
    return c, ReplyRequest(messages=messages, message=msg.text, intent=intent,
                           retrieval=p.strategy.retrieval, chunks=tuple(c.chunks), memories=tuple(c.memories),
                           model=inbox.model, temperature=inbox.temperature, account_id=msg.account_id,
                           **g.query)


def _generated(msg: InboundMessage, p: Plan, g: Gathered, c: Composed, generation: Generation | None,
               error: Exception | None) -> Composed:
    """``compose`` after the generator (which answered ``generation`` or raised ``error``): the guards."""
    if error is None:
        c.generation = generation
        c.text = c.generation.text.strip()
        if not c.text:
            c.degraded.append("empty_generation")
            c.text = FALLBACK_NO_KNOWLEDGE
    else:
        c.degraded.append("generation_error")
        log.warning("generation error conversation_id=%s error=%r", msg.conversation_id, error)
        c.text = FALLBACK_NO_KNOWLEDGE
    tool = p.act.tool if p.act is not None else None
    if tool is not None:  # never contradicts the tool
        c.text = p.act.guard(c.text, offline=c.generation.provider == "offline")
    if unsupported_prices(c.text, c.chunks):
        c.degraded.append("ungrounded_price")
        log.warning("ungrounded price conversation_id=%s reply=%r", msg.conversation_id, c.text)
        c.text = tool.answer if tool is not None else FALLBACK_NO_KNOWLEDGE
    c.chunks = [ch for ch in c.chunks if ch is not g.tool_chunk]
    return c


async def record(msg: InboundMessage, ctx: ConversationContext, p: Plan, g: Gathered, c: Composed,
                 deps: Responder, *, t0: float | None = None,
                 embed_tokens: dict[str, int] | None = None) -> RespondOutcome:
    """The OutboundReply (deterministic ``reply_id``), the next lead state, the cost-ledger
    entries: saved in one store call (idempotent on the reply id)."""
    o = _to_record(msg, ctx, p, g, c, deps, embed_tokens)
    await _call(deps.store.save_reply, o.reply, o.lead_state, model_call=o.model_call, recall_ms=g.recall_ms,
                embedding_calls=o.embedding_calls)
    return _recorded(msg, p, c, o, t0)


def _compose_and_record(msg: InboundMessage, ctx: ConversationContext, p: Plan, g: Gathered, deps: Responder,
                        t0: float, embed_tokens: dict[str, int]) -> RespondOutcome:
    """``compose`` then ``record`` with a blocking generator and store, in the worker thread
    that runs this: one hand-off for both (``respond``)."""
    c, request = _to_generate(msg, ctx, p, g)
    if request is not None:
        try:
            generation, error = deps.generator.generate(request), None
        except Exception as e:
            generation, error = None, e
        c = _generated(msg, p, g, c, generation, error)
    o = _to_record(msg, ctx, p, g, c, deps, embed_tokens)
    deps.store.save_reply(o.reply, o.lead_state, model_call=o.model_call, recall_ms=g.recall_ms,
                          embedding_calls=o.embedding_calls)
    return _recorded(msg, p, c, o, t0)


def _to_record(msg: InboundMessage, ctx: ConversationContext, p: Plan, g: Gathered, c: Composed,
               deps: Responder, embed_tokens: dict[str, int] | None) -> RespondOutcome:
    """What ``record`` saves (``total_ms`` not yet known)."""
    now = deps.clock.now()
    degraded = [*p.degraded, *g.degraded, *c.degraded]
    reply = OutboundReply(
        reply_id=reply_id_for(msg), in_reply_to=msg.message_id, account_id=msg.account_id,
        conversation_id=msg.conversation_id, contact_id=msg.contact_id, text=c.text,
        intent=p.intent.intent, strategy=p.strategy.retrieval,
        memory_ids=[m.fact.id for m in c.memories], chunk_ids=[ch.chunk_id for ch in c.chunks],
        degraded=degraded, created_at=now, tools=list(p.act.tools) if p.act is not None else [])
    lead_state = next_lead_state(ctx.lead_state, intent=p.intent.intent, retrieval_count=g.retrieval_count,
                                 now=now)
    generation = c.generation
    call = model_call(msg.account_id, "reply", generation.model, generation.usage, ref=reply.reply_id,
                      table=deps.prices)
    embeds = embedding_calls(msg.account_id, reply.reply_id, embed_tokens or {}, deps.prices)
    return RespondOutcome(reply=reply, lead_state=lead_state, usage=generation.usage,
                          provider=generation.provider, model=generation.model,
                          recall_ms=g.recall_ms, total_ms=0.0, memories=tuple(c.memories),
                          chunks=tuple(c.chunks), model_call=call, embedding_calls=embeds)


def _recorded(msg: InboundMessage, p: Plan, c: Composed, o: RespondOutcome, t0: float | None) -> RespondOutcome:
    """The saved reply's outcome and its log line."""
    total_ms = (time.perf_counter() - t0) * 1000 if t0 is not None else 0.0
    log.info("reply conversation_id=%s intent=%s strategy=%s chunks=%d memory_ids=%s degraded=%s recall_ms=%s "
             "ms=%.1f", msg.conversation_id, p.intent.intent, p.strategy.retrieval, len(c.chunks),
             ",".join(str(m.fact.id) for m in c.memories) or "-", ",".join(o.reply.degraded) or "-",
             "-" if o.recall_ms is None else f"{o.recall_ms:.1f}", total_ms)
    return dataclasses.replace(o, total_ms=total_ms)


async def _fixed_reply(msg: InboundMessage, ctx: ConversationContext, fixed: tuple[str, str], deps: Responder,
                       t0: float) -> RespondOutcome:
    """Media we cannot read, a location, a shared contact: a fixed sentence, nothing gathered."""
    now = deps.clock.now()
    text, reason = fixed
    reply = OutboundReply(reply_id=reply_id_for(msg), in_reply_to=msg.message_id, account_id=msg.account_id,
                          conversation_id=msg.conversation_id, contact_id=msg.contact_id, text=text,
                          intent="general", strategy="none",
                          degraded=[reason] if reason.endswith(("fallback", "message")) else [],
                          created_at=now)
    lead_state = next_lead_state(ctx.lead_state, intent="general", retrieval_count=ctx.retrieval_count, now=now)
    await _call(deps.store.save_reply, reply, lead_state)
    total_ms = (time.perf_counter() - t0) * 1000
    log.info("reply conversation_id=%s message_type=%s fixed=%s ms=%.1f", msg.conversation_id,
             msg.message_type, reason, total_ms)
    return RespondOutcome(reply=reply, lead_state=lead_state, usage=Usage(), provider="none", model="none",
                          recall_ms=None, total_ms=total_ms)


async def _act_reply(msg: InboundMessage, ctx: ConversationContext, act: Any, deps: Responder,
                     t0: float, embed_tokens: dict[str, int]) -> RespondOutcome:
    """A reply the acts step wrote (rights answer, tool acknowledgement): no recall, no generation."""
    now = deps.clock.now()
    intent = act.intent or "general"
    reply = OutboundReply(
        reply_id=reply_id_for(msg), in_reply_to=msg.message_id, account_id=msg.account_id,
        conversation_id=msg.conversation_id, contact_id=msg.contact_id, text=act.text, intent=intent,
        strategy="none", degraded=list(act.degraded), created_at=now, kind=act.kind, tools=list(act.tools))
    lead_state = next_lead_state(ctx.lead_state, intent=intent, retrieval_count=ctx.retrieval_count, now=now)
    embeds = embedding_calls(msg.account_id, reply.reply_id, embed_tokens, deps.prices)
    await _call(deps.store.save_reply, reply, lead_state, embedding_calls=embeds)
    total_ms = (time.perf_counter() - t0) * 1000
    log.info("reply conversation_id=%s intent=%s kind=%s ms=%.1f", msg.conversation_id, intent, act.kind, total_ms)
    return RespondOutcome(reply=reply, lead_state=lead_state, usage=Usage(), provider="none", model="none",
                          recall_ms=None, total_ms=total_ms, embedding_calls=embeds)


RERANK_POOL = 8          # candidates per result taken from the vector search
LEXICAL_WEIGHT = 0.04    # distance units per idf-weighted word shared with the message
# A chunk up to this far beyond the cut-off is kept only on lexical evidence: it
# names every focus word of the question and carries the kind of answer asked.
# Short chat questions ("qnto é o pacote de petalas") embed poorly; their words do not.
RESCUE_MARGIN = 0.1


MAX_LEXICAL_STEMS = 4   # a longer message is a paraphrase job for the vector search


def lexical_stems(message: str) -> list[str]:
    """The focus stems a lexical search looks for (all of them must be in a chunk);
    none when the message has no focus word or too many to be a short question."""
    _, focus = question_words(message)
    return sorted(focus) if 0 < len(focus) <= MAX_LEXICAL_STEMS else []


MAX_VARIANTS = 4   # lexical searches with another name of one word ("gata" → "gato")


def _named_otherwise(message: str, stems: list[str]) -> list[list[str]]:
    """The lexical search's stems with one word swapped for another name the knowledge may use
    (``concept_forms``: "minha gata ... banho" → "gato" + "banho", where the table says "Gatos: banho")."""
    forms = concept_forms(message)
    out = []
    for k, s in enumerate(stems):
        for f in sorted(forms.get(s, ())):
            if f != s and len(f) >= 4 and " " not in f:
                out.append(stems[:k] + [f] + stems[k + 1:])
    return out[:MAX_VARIANTS]


def lexically_sure(message: str, text: str) -> bool:
    """Every focus word of the question is in ``text`` (at least one; a word may be there by
    another name: ``concept_forms``), and an amount is there if a price is asked (for a yes/no on a charge,
    "cobra algo?", a free or a charged share answers too: ``carries_price``)."""
    _, focus = question_words(message)
    if not focus:
        return False
    words, forms = chunk_words(text), concept_forms(message)
    if not all(f in words or any(x in words for x in forms.get(f, ())) for f in focus):
        return False
    return carries_price(text, is_yes_no(message)) or not asks_price(message)


def _named_words(words: frozenset[str], forms: dict[str, set[str]]) -> frozenset[str]:
    """``words`` with each asked word whose other name is among them (``forms``: asked stem → the
    stems of its other names)."""
    extra = {t for t, names in forms.items() if t not in words and names & words}
    return words | extra if extra else words


def rerank(message: str, chunks: Sequence[KnowledgeChunk]) -> list[KnowledgeChunk]:
    """Hybrid order: cosine distance, minus a small bonus per rare word the chunk
    shares with the message (chat spelling normalised, singular stems, idf over
    the candidates; the question's focus words — not "quanto", "tem", "vocês" —
    count twice), and for carrying the kind of answer asked (an amount for a
    price, hours, a weekday, an address: ``compose.attribute_bonus``). A chunk
    that is only a heading goes last. Dense vectors blur lists of similar items ("Suíte Luxo ...
    Suíte Master ..."); the words the customer typed break those ties. Only
    candidates already within the distance cut-off are reordered: the cut-off
    still decides *whether*."""
    import math

    if not chunks:
        return []
    query, focus = question_words(message)
    norm = normalize_chat(message)
    # a word the chunk names by the other name of the customer's phrase ("em casa" → "domiciliar":
    # ``phrase_forms``; not a single word's wider kind, "gato" → "pet") is named
    forms = {t: {f for f in x if f != t} for t, x in phrase_forms(message).items() if t in query}
    bags = [_named_words(chunk_words(c.text), forms) for c in chunks]
    n = len(chunks)
    df = {t: sum(t in b for b in bags) for t in query}

    def score(i: int) -> float:
        if not answer_units(chunks[i].text):
            return math.inf  # a heading alone: nothing in it can answer
        bonus = sum((2.0 if t in focus else 1.0) * (1.0 + math.log(n / df[t]))
                    for t in query & bags[i] if df[t]) + attribute_bonus(norm, chunks[i].text)
        return chunks[i].distance - LEXICAL_WEIGHT * bonus
    return [chunks[i] for i in sorted(range(n), key=lambda i: (score(i), chunks[i].distance))]


def _search_of(deps: Responder, text: str, args: tuple) -> tuple[Callable[..., Any], tuple]:
    """The knowledge search for ``text`` as a ``_call_all`` entry that embeds ``text`` first, in
    the same call: a blocking search in its worker thread (no hand-off of its own), an async
    one awaited after the embedding."""
    if inspect.iscoroutinefunction(deps.knowledge.search):
        return _search_embedded_async, (deps.knowledge.search, deps.knowledge_embedder, text, *args)
    return _search_embedded, (deps.knowledge.search, deps.knowledge_embedder, text, *args)


async def _search_embedded_async(search: Callable[..., Any], embedder: Embedder, text: str, *args: Any) -> Any:
    """An async knowledge search for ``text``, embedded first (in a worker thread)."""
    return await search(await _embed(embedder, text), *args)


def _search_embedded(search: Callable[..., Any], embedder: Embedder, text: str, *args: Any) -> Any:
    """A blocking knowledge search for ``text``, embedded first (in the same worker thread)."""
    return search(np.asarray(embedder.embed_queries([text])[0], dtype=np.float32), *args)


async def _embed(embedder: Embedder, text: str) -> np.ndarray:
    vecs = await asyncio.to_thread(embedder.embed_queries, [text])
    return np.asarray(vecs[0], dtype=np.float32)


