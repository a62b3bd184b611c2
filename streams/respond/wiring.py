"""The respond role: a Faust agent on ``channel.inbound.messages``.

    decode → ``respond(msg, deps)`` → send the OutboundReply (key = conversation
    id) and wait for Kafka's ack → mark it published → only then ack the offsets.

Malformed records go to ``channel.inbound.messages.dlq`` with their reason;
a record that keeps failing (database down, ...) is retried with backoff and
then dead-lettered. Messages of one conversation are handled in order; different
conversations of a batch in parallel. All state is in Postgres, so any number
of workers can share the topic.

A redelivered message whose reply was stored but never acknowledged by Kafka
(crash in between) re-emits the stored reply, same ``reply_id``.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import time
from collections import defaultdict
from dataclasses import dataclass
from typing import Any, Sequence

from pydantic import ValidationError

from schemas.events import InboundMessage, OutboundReply
from streams import metrics
from streams.pricing import record_usage
from streams.kafka.consume import DeadLetter, Record
from streams.kafka.topics import INBOUND, OUTBOUND, qualified
from streams.respond.handler import RespondOutcome, Responder, respond

log = logging.getLogger(__name__)

BATCH_MAX = 64
BATCH_WITHIN_S = float(os.environ.get("MEMORIA_RESPOND_BATCH_WITHIN", "0.005"))
PARALLEL_CONVERSATIONS = 8
ATTEMPTS = 3


def build_responder(settings, container) -> Responder:
    """The responder's ports over the container's real dependencies (composition root)."""
    from streams.respond.adapters import (ChunkKnowledgeSearch, CollectionEmbedder, PostgresConversationStore,
                                          PostgresMemoryRecall)
    from streams.respond.generate import build_generator

    memory_embedder = container.memory_embedder
    store = container.vector_store  # the worker owns the local store: never its HTTP proxy
    knowledge_embedder = CollectionEmbedder(store, settings.vector_domain, container.embedder_for,
                                            container.embedder)
    delay = float(os.environ.get("MEMORIA_RECALL_INJECT_DELAY_S", "0") or 0)  # drills and tests only
    return Responder(
        store=PostgresConversationStore(container.pool),
        memory=PostgresMemoryRecall(container.pool, memory_embedder.name, inject_delay_s=delay),
        knowledge=ChunkKnowledgeSearch(container.pool, store, settings.vector_domain, container.embedder_for,
                                       query_model=lambda: knowledge_embedder.name),
        memory_embedder=memory_embedder, knowledge_embedder=knowledge_embedder,
        generator=build_generator(settings.reply_provider, settings,
                                  embedder=knowledge_embedder if settings.reply_provider == "offline" else None),
        acts=build_acts(settings, container, memory_embedder))


def build_acts(settings, container, embedder):
    """Rights, opt-out and tools (streams/respond/acts.py); ``emit`` is wired once the producer runs."""
    from streams.respond.acts import Acts
    from streams.respond.acts_store import PostgresActsStore
    from streams.respond.tools import build_flights

    return Acts(store=PostgresActsStore(container.pool), embedder=embedder,
                flights=build_flights(settings, container.pool), budget_ms=settings.tool_budget_ms,
                timeout_ms=settings.tool_timeout_ms, flight_ttl_ms=settings.tool_flight_ttl_ms,
                acknowledgement=settings.tool_acknowledgement)


def decode(record: Record) -> InboundMessage | DeadLetter:
    try:
        data = json.loads(record.value or b"")
    except (ValueError, UnicodeDecodeError) as e:
        return DeadLetter(record, "InvalidJSON", str(e))
    try:
        return InboundMessage.model_validate(data)
    except ValidationError as e:
        return DeadLetter(record, "SchemaValidation", str(e)[:1500])


@dataclass
class RespondRunner:
    """Plain async batch processing, independent of Faust (the agent only feeds it)."""

    deps: Responder
    producer: Any  # started AIOKafkaProducer
    dlq: Any       # DeadLetterWriter
    outbound_topic: str
    base_delay: float = 0.5

    async def handle(self, records: Sequence[Record]) -> None:
        dead: list[DeadLetter] = []
        by_conversation: dict[str, list[tuple[Record, InboundMessage]]] = defaultdict(list)
        for r in records:
            m = decode(r)
            if isinstance(m, DeadLetter):
                dead.append(m)
            else:
                by_conversation[m.conversation_id].append((r, m))
        sem = asyncio.Semaphore(PARALLEL_CONVERSATIONS)

        async def conversation(items):
            async with sem:
                for r, m in items:  # in order within a conversation
                    d = await self._one(r, m)
                    if d is not None:
                        dead.append(d)

        await asyncio.gather(*(conversation(v) for v in by_conversation.values()))
        if dead:
            await self.dlq.write(dead)
        if records:
            metrics.EVENTS_PROCESSED.labels(records[0].topic).inc(len(records) - len(dead))

    async def _one(self, record: Record, msg: InboundMessage) -> DeadLetter | None:
        from streams.respond.adapters import TenantMismatch

        t0 = time.perf_counter()
        last: Exception | None = None
        for attempt in range(ATTEMPTS):
            try:
                outcome = await respond(msg, self.deps)
                if outcome is None:
                    metrics.EVENTS_DUPLICATE.labels(record.topic).inc()
                    reply = await asyncio.to_thread(self.deps.store.unpublished_reply, msg)
                    if reply is not None:
                        log.info("re-emitting stored reply reply_id=%s", reply.reply_id)
                        await self._emit(reply)
                    return None
                await self._emit(outcome.reply)
                self._observe(outcome, time.perf_counter() - t0)
                return None
            except TenantMismatch as e:
                return DeadLetter(record, type(e).__name__, str(e))
            except asyncio.CancelledError:
                raise
            except Exception as e:  # transient by assumption: retry, then dead-letter
                last = e
                metrics.EVENTS_FAILED.labels(record.topic).inc()
                log.warning("respond failed message_id=%s attempt=%d/%d error=%r", msg.message_id,
                            attempt + 1, ATTEMPTS, e)
                await asyncio.sleep(self.base_delay * (2 ** attempt))
        return DeadLetter(record, type(last).__name__, f"failed after {ATTEMPTS} attempts: {last}")

    async def _emit(self, reply: OutboundReply) -> None:
        await self.producer.send_and_wait(self.outbound_topic, key=reply.conversation_id.encode(),
                                          value=reply.model_dump_json().encode())
        await asyncio.to_thread(self.deps.store.mark_published, [reply])

    def _observe(self, o: RespondOutcome, seconds: float) -> None:
        metrics.REPLY_LATENCY.observe(seconds)
        if o.recall_ms is not None:
            metrics.RECALL_LATENCY.observe(o.recall_ms / 1000)
            degraded = any(d.startswith("recall") for d in o.reply.degraded)
            metrics.RECALL_REQUESTS.labels("degraded" if degraded else "hit" if o.memories else "miss").inc()
        for reason in o.reply.degraded:
            metrics.DEGRADED_REPLIES.labels(reason).inc()
        record_usage(o.reply.account_id, "reply", o.model, o.usage)


def register(app, settings, container, roles, *, batch_agent, state) -> None:
    if "respond" not in roles:
        return
    from streams.app import _record, edges_ready, settle

    metrics.init_series([qualified(settings, INBOUND)])
    topic = app.topic(qualified(settings, INBOUND), key_type=bytes, value_type=bytes,
                      key_serializer="raw", value_serializer="raw")
    outbound = qualified(settings, OUTBOUND)

    @app.agent(topic, name="respond")
    async def respond_agent(stream):
        from concurrent.futures import ThreadPoolExecutor

        # blocking ports run in threads: enough of them that recall never queues behind generation
        asyncio.get_running_loop().set_default_executor(ThreadPoolExecutor(32, thread_name_prefix="respond"))
        deps = await asyncio.to_thread(build_responder, settings, container)
        # warm the models once, off the first message's latency
        await asyncio.to_thread(deps.memory_embedder.embed_queries, ["olá"])
        await asyncio.to_thread(deps.knowledge_embedder.embed_queries, ["olá"])
        await edges_ready(state)  # the DLQ producer is started by the Edges service
        runner = RespondRunner(deps, state["producer"], state["dlq"], outbound)
        if deps.acts is not None:
            deps.acts.emit = runner._emit  # a slow tool's second reply leaves like any reply
        async for events in stream.take_events(BATCH_MAX, within=BATCH_WITHIN_S):
            await settle(runner.handle([_record(e) for e in events]), "respond")
