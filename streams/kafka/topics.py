"""Topic names (docs/architecture.md §2) and explicit creation: never rely on auto-create."""

from __future__ import annotations

import asyncio
import logging

from aiokafka.admin import AIOKafkaAdminClient, NewTopic
from aiokafka.errors import TopicAlreadyExistsError
from aiokafka.protocol.metadata import MetadataRequest

from streams.settings import Settings

log = logging.getLogger(__name__)

INBOUND = "channel.inbound.messages"
OUTBOUND = "channel.outbound.replies"
CONVERSATION_EVENTS = "channel.conversation.events"
AGGREGATE_TYPES = ("chunk", "conversation", "memory", "contact")


def outbox_topic(aggregatetype: str) -> str:
    return f"outbox.event.{aggregatetype}"


def dlq_topic(source_topic: str) -> str:
    return f"{source_topic}.dlq"


def base_topics() -> list[str]:
    names = [INBOUND, OUTBOUND, CONVERSATION_EVENTS] + [outbox_topic(a) for a in AGGREGATE_TYPES]
    return names + [dlq_topic(n) for n in names]


def qualified(settings: Settings, name: str) -> str:
    return f"{settings.topic_prefix}{name}"


async def create_topics(settings: Settings, names: list[str] | None = None) -> list[str]:
    """Create every topic with the configured partition count; returns the new ones."""
    names = [qualified(settings, n) for n in (names or base_topics())]
    admin = AIOKafkaAdminClient(bootstrap_servers=settings.kafka_bootstrap_servers,
                                request_timeout_ms=15000)
    await admin.start()
    try:
        existing = await _existing(admin, names)
        missing = [n for n in names if n not in existing]
        created = []
        for name in missing:
            try:
                await admin.create_topics([NewTopic(name, settings.topic_partitions,
                                                    settings.topic_replication_factor)])
                created.append(name)
            except TopicAlreadyExistsError:
                pass
        # Tansu answers create before metadata settles; wait until all are visible.
        for _ in range(50):
            if set(names) <= await _existing(admin, names):
                break
            await asyncio.sleep(0.1)
        return created
    finally:
        await admin.close()


async def ensure_topics(settings: Settings, pool=None) -> list[str]:
    """Create the missing topics; when some were missing and ``pool`` (a callable
    returning a psycopg pool) is given, record a broker loss for ``reconcile``."""
    created = await create_topics(settings)
    if created:
        from streams import metrics

        metrics.TOPICS_RECREATED.inc(len(created))
        log.warning("topics were missing and have been created: %s", ", ".join(created))
        if pool is not None:
            def note() -> None:
                from streams.store.uow import joined

                with joined(pool()) as uow:
                    uow.reconcile.record_loss(created)

            try:
                await asyncio.to_thread(note)
            except Exception as e:  # Postgres down: reconcile's own checks still find the drift
                log.warning("could not record the broker loss: %r", e)
    return created


async def _existing(admin: AIOKafkaAdminClient, names: list[str]) -> set[str]:
    """Which of ``names`` the broker has. Only these topics' metadata is asked for: a shared
    broker may hold thousands of topics, and parsing all of their metadata every
    ``topic_check_interval`` held the worker's event loop (about 25 ms for 272 topics); the
    request says not to auto-create them. A broker too old for that flag (metadata v < 4)
    gets the whole list, as before."""
    resp = await admin._send_request(MetadataRequest(names, allow_auto_topic_creation=False))  # noqa: SLF001
    if getattr(resp, "API_VERSION", 0) < 4:
        return set(await admin.list_topics())
    return {t["topic"] for t in resp.to_object()["topics"] if t["error_code"] == 0}


def create_topics_sync(settings: Settings, names: list[str] | None = None) -> list[str]:
    return asyncio.run(create_topics(settings, names))


async def assign_from_beginning(consumer, topic: str, attempts: int = 50) -> list:
    """Assign every partition of ``topic`` to a started consumer, at offset 0.

    Reading from the beginning and filtering is the reliable way to find a
    record on the embedded broker (its end offsets are wrong, docs/architecture.md §7).
    The position is offset 0 itself, not the broker's answer to "earliest": Tansu 0.6
    answers with the batch written first in time, which is not the first in offset order
    when two producers wrote the partition concurrently (§7). Where retention has deleted
    offset 0 (a real Kafka), the consumer's ``auto_offset_reset="earliest"`` moves it to the
    log start. Raises LookupError when the topic does not exist.
    """
    from aiokafka import TopicPartition

    parts = consumer.partitions_for_topic(topic) or set()
    for _ in range(attempts):
        if parts:
            break
        await consumer._client.force_metadata_update()  # noqa: SLF001 - no public refresh in aiokafka
        parts = consumer.partitions_for_topic(topic) or set()
        await asyncio.sleep(0.1)
    if not parts:
        raise LookupError(f"topic {topic!r} does not exist: run `memoria topics create`")
    tps = [TopicPartition(topic, p) for p in sorted(parts)]
    consumer.assign(tps)
    for tp in tps:
        consumer.seek(tp, 0)
    return tps
