"""The Faust application: thin wiring of agents, timers and services.

Each agent: take a batch of raw records → hand them to a plain handler (in a
thread) → dead-letter what can never succeed → only then acknowledge the
offsets, batch after batch in order (``streams.kafka.agent.consume_in_order``). State lives in Postgres, never in Faust tables (docs/architecture.md §7).
"""

from __future__ import annotations

import asyncio
import logging
from typing import Callable, Sequence

import faust

from streams import metrics
from streams import roles as flow_roles
from streams.bootstrap import Container
from streams.kafka.agent import consume_in_order, edges_ready
from streams.kafka.consume import DeadLetterWriter, Handler, process_batch
from streams.kafka.errors import until_available
from streams.kafka.faust_transport import App as FetchTunedApp
from streams.kafka.topics import outbox_topic, qualified
from streams.settings import Settings

log = logging.getLogger(__name__)

ALL_ROLES = ("relay", "ingest", "learn", "respond", "maintain")


def worker_client_id(roles: Sequence[str]) -> str:
    """The Kafka client id of a worker running ``roles`` (its consumer and producers)."""
    return f"memoria-worker-{'-'.join(roles)}"


def consumer_group_for(settings: Settings, roles: Sequence[str]) -> str:
    """The Faust app id (= consumer group) of a worker running ``roles``.

    Workers running the same roles share a group (partitions are split, one
    leader runs the timers); workers with other role sets never join it, so a
    maintenance timer can never be "led" by a worker that does not run it.
    """
    base = f"{settings.topic_prefix}{settings.consumer_group}"
    if set(roles) == set(ALL_ROLES):
        return base
    return f"{base}-{'-'.join(r for r in ALL_ROLES if r in roles)}"


async def start_edges(settings: Settings, c: Container, roles: Sequence[str], state: dict) -> None:
    """The worker's edges: topics, the shared producer and dead-letter writer, metrics and the web server
    (health, readiness and the vector-store proxy when this worker holds the local store)."""
    from aiokafka import AIOKafkaProducer
    from prometheus_client import start_http_server

    from streams.kafka.topics import ensure_topics
    from streams.web import build_web_app, start_web

    await ensure_topics(settings, pool=lambda: c.pool)  # before anything is consumed or produced
    prod = AIOKafkaProducer(**c.producer_config(worker_client_id(roles)))
    await prod.start()
    state["producer"] = prod
    state["dlq"] = DeadLetterWriter(prod, max_record_bytes=settings.kafka_max_record_bytes,
                                    excerpt_bytes=settings.dlq_excerpt_bytes, pool=lambda: c.pool)
    store = None
    if set(roles) & {"ingest", "respond"} and not settings.qdrant_url:
        store = await asyncio.to_thread(lambda: c.vector_store)
    if settings.metrics_port:
        try:
            start_http_server(settings.metrics_port, addr=settings.worker_web_host)
        except OSError as e:
            log.warning("metrics port %s unavailable: %s", settings.metrics_port, e)
    state["web"] = await start_web(build_web_app(roles=list(roles), store=store),
                                   settings.worker_web_host, settings.worker_web_port)
    log.info("worker roles=%s web=%s:%s", ",".join(roles), settings.worker_web_host,
             settings.worker_web_port)


async def stop_edges(state: dict) -> None:
    if "web" in state:
        await state["web"].cleanup()
    if "producer" in state:
        await state["producer"].stop()


def build_app(settings: Settings, roles: Sequence[str], container: Container | None = None) -> faust.App:
    unknown = set(roles) - set(ALL_ROLES)
    if unknown:
        raise ValueError(f"unknown roles {sorted(unknown)}; known: {', '.join(ALL_ROLES)}")
    c = container or Container(settings)
    group = consumer_group_for(settings, roles)
    app = FetchTunedApp(
        group,
        **c.faust_config(group, worker_client_id(roles)),
        key_serializer="raw",
        value_serializer="raw",
        processing_guarantee="at_least_once",
        store="memory://",
        web_enabled=False,
        broker_commit_interval=1.0,
    )
    app.conf.memoria_roles = list(roles)
    app.conf.memoria_fetch_max_wait_ms = settings.kafka_fetch_max_wait_ms
    state: dict = {}

    @app.service
    class Edges(faust.Service):
        """Shared producer for dead letters, the web server and metrics."""

        async def on_start(self) -> None:
            await start_edges(settings, c, roles, state)

        async def on_stop(self) -> None:
            await stop_edges(state)

    def batch_agent(topic_name: str, make_handler: Callable[[], Handler], *, name: str) -> None:
        topic = app.topic(qualified(settings, topic_name), key_type=bytes, value_type=bytes,
                          key_serializer="raw", value_serializer="raw")
        metrics.init_series([qualified(settings, topic_name)])

        @app.agent(topic, name=name)
        async def agent(stream):
            # dependencies down at start (Postgres...): wait for them like for any batch
            handler = await until_available(name, lambda: asyncio.to_thread(make_handler),
                                            base=settings.dependency_backoff_base,
                                            cap=settings.dependency_backoff_max)
            await edges_ready(state)

            async def work(records) -> None:
                await process_batch(records, handler, state["dlq"],
                                    max_record_bytes=settings.kafka_max_record_bytes,
                                    base_delay=settings.dependency_backoff_base,
                                    max_delay=settings.dependency_backoff_max)

            # a handler with a lookahead (``prepare``: ingest's) reads the next batch while one runs
            await consume_in_order(stream.noack_take(settings.ingest_batch_max,
                                                     within=settings.ingest_batch_interval),
                                   work, stream.ack, name=name, prepare=getattr(handler, "prepare", None))

    @app.timer(settings.topic_check_interval)
    async def topics_present() -> None:
        """A broker without replication that restarts comes back without topics:
        re-create them (every worker does; creating is idempotent) and note the
        loss in Postgres so that ``reconcile`` republishes what was in flight."""
        from streams.kafka.topics import ensure_topics

        try:
            await ensure_topics(settings, pool=lambda: c.pool)
        except Exception as e:  # the broker is down: the next tick tries again
            log.warning("topic check failed: %r", e)

    if "relay" in roles:
        @app.task
        async def relay() -> None:
            from streams.outbox.relay import run_relay

            stop = asyncio.Event()
            try:
                await run_relay(settings, stop)
            finally:
                stop.set()

    if "ingest" in roles:
        def make_ingest() -> Handler:
            from streams.ingest.handler import ChunkEventHandler

            return ChunkEventHandler(pool=c.pool, store=c.vector_store, domain=settings.vector_domain,
                                     embedder=c.embedder, embedder_for=c.embedder_for, prices=c.prices,
                                     embed_part=settings.ingest_embed_part,
                                     sentences=settings.chunk_sentence_vectors)

        batch_agent(outbox_topic("chunk"), make_ingest, name="ingest")

    flow_roles.register(app, settings, c, roles, batch_agent=batch_agent, state=state)
    return app
