"""The respond role: a Faust agent on ``channel.inbound.messages``.

    decode → ``respond(msg, deps)`` → send the OutboundReply (key = conversation
    id) and wait for Kafka's ack → the batch's sent replies marked published in one
    store call → only then ack the offsets.

Errors by kind (``streams.kafka.errors``): malformed, oversized or
wrong-tenant records go to ``channel.inbound.messages.dlq`` with their reason;
a dependency that is down (Postgres, Kafka) retries the same message with
backoff until it recovers (memory recall and knowledge only enrich: they
degrade the reply instead); anything else is a bug and ends the process
before the offsets are committed. Messages of one conversation are handled in order; different
conversations of a batch in parallel. All state is in Postgres, so any number
of workers can share the topic.

A redelivered message whose reply was stored but never acknowledged by Kafka
(crash in between) re-emits the stored reply, same ``reply_id``.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections import defaultdict
from dataclasses import dataclass
from typing import Any, Sequence

from pydantic import ValidationError

from schemas.events import InboundMessage, OutboundReply
from streams import metrics
from streams.embedding import EmbeddingError
from streams.kafka import errors
from streams.kafka.agent import consume_in_order, edges_ready
from streams.kafka.consume import DeadLetter, Record, oversized
from streams.kafka.topics import INBOUND, OUTBOUND, qualified
from streams.pricing import count_metrics
from streams.respond.handler import Responder, RespondOutcome, reply_id_for, respond

log = logging.getLogger(__name__)

BATCH_MAX = 64
PARALLEL_CONVERSATIONS = 8


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
    max_delay: float = 10.0
    max_record_bytes: int = 1_000_000

    async def handle(self, records: Sequence[Record]) -> None:
        fitting, dead = oversized(records, self.max_record_bytes)
        by_conversation: dict[str, list[tuple[Record, InboundMessage]]] = defaultdict(list)
        for r in fitting:
            m = decode(r)
            if isinstance(m, DeadLetter):
                dead.append(m)
            else:
                by_conversation[m.conversation_id].append((r, m))
        sem = asyncio.Semaphore(PARALLEL_CONVERSATIONS)
        published: list[OutboundReply] = []   # sent to Kafka: marked in the store once per batch

        async def conversation(items):
            async with sem:
                for r, m in items:  # in order within a conversation
                    d = await self._one(r, m, published)
                    if d is not None:
                        dead.append(d)

        await asyncio.gather(*(conversation(v) for v in by_conversation.values()))
        if published:  # retried on its own: a database hiccup here must not send the replies again
            await errors.until_available(self.outbound_topic,
                                         lambda: asyncio.to_thread(self.deps.store.mark_published, published),
                                         base=self.base_delay, cap=self.max_delay)
        if dead:
            await errors.until_available(records[0].topic, lambda: self.dlq.write(dead), base=self.base_delay,
                                         cap=self.max_delay)
        if records:
            metrics.EVENTS_PROCESSED.labels(records[0].topic).inc(len(records) - len(dead))

    async def _one(self, record: Record, msg: InboundMessage,
                   published: list[OutboundReply]) -> DeadLetter | None:
        t0 = time.perf_counter()

        async def attempt() -> None:
            try:
                outcome = await respond(msg, self.deps)
            except Exception:
                metrics.EVENTS_FAILED.labels(record.topic).inc()
                raise
            if outcome is None:
                if msg.message_type == "reaction":  # stored, never answered
                    return
                metrics.EVENTS_DUPLICATE.labels(record.topic).inc()
                if any(r.reply_id == reply_id_for(msg) for r in published):
                    return   # a copy of a message this batch answered: its reply is sent, not yet marked
                reply = await asyncio.to_thread(self.deps.store.unpublished_reply, msg)
                if reply is not None:
                    log.info("re-emitting stored reply reply_id=%s", reply.reply_id)
                    await self._emit(reply)
                    published.append(reply)
                return
            await self._emit(outcome.reply)
            published.append(outcome.reply)
            self._observe(outcome, time.perf_counter() - t0)

        try:  # a dependency that is down: the same message again, until it recovers
            await errors.until_available(record.topic, attempt, base=self.base_delay, cap=self.max_delay)
        except Exception as e:
            reason = errors.poison_class(e)  # wrong tenant, data Postgres refuses
            if reason is None:
                raise  # a bug: the process exits before committing
            return DeadLetter(record, reason, str(e)[:2000])
        return None

    async def _emit(self, reply: OutboundReply) -> None:
        """Send the reply and wait for Kafka's ack; ``handle`` marks the batch's sent replies published
        in one store call (a crash before that: the redelivered messages re-emit their stored
        replies, same ``reply_id``, as after a crash between the send and the mark before)."""
        await self.producer.send_and_wait(self.outbound_topic, key=reply.conversation_id.encode(),
                                          value=reply.model_dump_json().encode())

    def _observe(self, o: RespondOutcome, seconds: float) -> None:
        metrics.REPLY_LATENCY.observe(seconds)
        if o.recall_ms is not None:
            metrics.RECALL_LATENCY.observe(o.recall_ms / 1000)
            degraded = any(d.startswith("recall") for d in o.reply.degraded)
            metrics.RECALL_REQUESTS.labels("degraded" if degraded else "hit" if o.memories else "miss").inc()
        for reason in o.reply.degraded:
            metrics.DEGRADED_REPLIES.labels(reason).inc()
        for call in (o.model_call, *o.embedding_calls):
            count_metrics(call)


def register(app, settings, container, roles, *, batch_agent, state) -> None:
    if "respond" not in roles:
        return
    metrics.init_series([qualified(settings, INBOUND)])
    topic = app.topic(qualified(settings, INBOUND), key_type=bytes, value_type=bytes,
                      key_serializer="raw", value_serializer="raw")
    outbound = qualified(settings, OUTBOUND)

    @app.agent(topic, name="respond")
    async def respond_agent(stream):
        from concurrent.futures import ThreadPoolExecutor

        # blocking ports run in threads: enough of them that recall never queues behind generation
        asyncio.get_running_loop().set_default_executor(ThreadPoolExecutor(32, thread_name_prefix="respond"))
        deps = await errors.until_available(
            "respond", lambda: asyncio.to_thread(container.responder),
            base=settings.dependency_backoff_base, cap=settings.dependency_backoff_max)
        # warm the models once, off the first message's latency (an embedding service that is
        # not up yet is no reason not to start: replies degrade until it answers)
        for embedder in (deps.memory_embedder, deps.knowledge_embedder):
            try:
                await asyncio.to_thread(embedder.embed_queries, ["olá"])
            except EmbeddingError as e:
                log.warning("respond: embedder %s not ready at start: %s", embedder.name, e)
        if deps.recall_examples is not None:   # the labelled recall cases' vectors, once
            try:
                await asyncio.to_thread(deps.recall_examples.warm)
            except EmbeddingError as e:
                log.warning("respond: recall examples not embedded at start: %s", e)
        await edges_ready(state)  # the DLQ producer is started by the Edges service
        runner = RespondRunner(deps, state["producer"], state["dlq"], outbound,
                               base_delay=settings.dependency_backoff_base,
                               max_delay=settings.dependency_backoff_max,
                               max_record_bytes=settings.kafka_max_record_bytes)
        if deps.acts is not None:
            deps.acts.emit = runner._emit  # a slow tool's second reply leaves like any reply
        await consume_in_order(stream.noack_take(BATCH_MAX, within=settings.respond_batch_within),
                               runner.handle, stream.ack, name="respond")
