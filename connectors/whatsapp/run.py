"""Runnable connector processes: the webhook (HTTP → Kafka) and the sender (Kafka → HTTP)."""

from __future__ import annotations

import asyncio
import json
import logging
import signal
from datetime import datetime, timezone

from aiohttp import web
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer

from connectors.whatsapp.delivery import PostgresSentLedger, ReplyDelivery, Stopped
from connectors.whatsapp.postgres_resolver import PostgresResolver
from connectors.whatsapp.sender import WhatsAppSender
from connectors.whatsapp.webhook import WebhookConfig, create_app
from schemas.events import InboundMessage
from streams.kafka.consume import DeadLetterWriter, Record
from streams.kafka.topics import INBOUND, OUTBOUND, dlq_topic, qualified
from streams.settings import Settings

log = logging.getLogger(__name__)


async def run_webhook(settings: Settings, host: str, port: int, stop: asyncio.Event | None = None) -> None:
    from streams.bootstrap import Container

    if not settings.whatsapp_verify_token:
        raise ValueError("MEMORIA_WHATSAPP_VERIFY_TOKEN (or WHATSAPP_VERIFY_TOKEN) is required")
    if not settings.whatsapp_app_secret:
        log.warning("WHATSAPP_APP_SECRET is not set: request signatures are NOT checked (development only)")
    container = Container(settings, pool_name="whatsapp-webhook")
    pool = await asyncio.to_thread(lambda: container.pool)
    producer = AIOKafkaProducer(**container.producer_config("memoria-whatsapp-webhook"))
    await producer.start()
    topic = qualified(settings, INBOUND)

    async def publish(msg: InboundMessage) -> None:
        await producer.send_and_wait(topic, key=msg.conversation_id.encode(), value=msg.model_dump_json().encode())

    async def record_invalid(raw, reason: str) -> None:
        """A message that can never be published: to the inbound DLQ, with its reason (bounded)."""
        value = json.dumps(raw, ensure_ascii=False, default=str).encode("utf-8", "replace")[:64 * 1024]
        now = datetime.now(timezone.utc).isoformat()
        headers = [("dlq.error_class", b"InvalidChannelMessage"),
                   ("dlq.error_message", reason[:2000].encode("utf-8", "replace")),
                   ("dlq.source_topic", topic.encode()), ("dlq.origin", b"whatsapp-webhook"),
                   ("dlq.source_partition", b"-1"),
                   ("dlq.source_offset", b"-1"), ("dlq.first_seen", now.encode())]
        await producer.send_and_wait(dlq_topic(topic), value=value, headers=headers)

    app = create_app(WebhookConfig(verify_token=settings.whatsapp_verify_token,
                                   app_secret=settings.whatsapp_app_secret or None),
                     publish, PostgresResolver(pool, erasure_key=container.erasure_key), record_invalid=record_invalid)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    await web.TCPSite(runner, host, port).start()
    log.info("whatsapp webhook listening on http://%s:%d/webhooks/whatsapp → %s", host, port, topic)
    stop = stop or _stop_on_signals()
    try:
        await stop.wait()
    finally:
        await runner.cleanup()
        await producer.stop()
        container.close()


async def _serve_health(settings: Settings) -> web.AppRunner | None:
    """The sender's ``/health`` and ``/ready`` (503 while it waits for Postgres or the
    channel API, the worker's stall format) and ``/metrics`` (Prometheus)."""
    if not settings.sender_web_port:
        return None
    from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

    from streams.web import build_web_app, start_web

    app = build_web_app(roles=["whatsapp-sender"], store=None)

    async def scrape(_: web.Request) -> web.Response:
        return web.Response(body=generate_latest(), headers={"Content-Type": CONTENT_TYPE_LATEST})

    app.router.add_get("/metrics", scrape)
    try:
        runner = await start_web(app, settings.worker_web_host, settings.sender_web_port)
    except OSError as e:  # like the worker's metrics port: delivery matters more than its health page
        log.warning("sender health port %s unavailable: %s", settings.sender_web_port, e)
        return None
    log.info("whatsapp sender health on http://%s:%d/health", settings.worker_web_host, settings.sender_web_port)
    return runner


def _stop_on_signals() -> asyncio.Event:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    return stop


async def run_sender(settings: Settings, stop: asyncio.Event | None = None) -> None:
    """Consume replies and deliver each exactly once (``delivery.ReplyDelivery``).

    Offsets are committed only past settled records: sent (now or before) or
    dead-lettered (invalid, refused for good, outcome unknown). While the API or
    Postgres is unavailable the same record is retried and nothing after it is
    committed; on shutdown the records not settled are left for the next run.
    """
    from streams.bootstrap import Container

    container = Container(settings, pool_name="whatsapp-sender")
    pool = await asyncio.to_thread(lambda: container.pool)
    topic = qualified(settings, OUTBOUND)
    consumer = AIOKafkaConsumer(topic, **container.consumer_config(
        f"{settings.topic_prefix}{settings.consumer_group}-whatsapp-sender", "memoria-whatsapp-sender",
        max_poll_interval_ms=24 * 3600 * 1000))  # a stall may last long
    producer = AIOKafkaProducer(**container.producer_config("memoria-whatsapp-sender"))
    sender = WhatsAppSender(settings.whatsapp_api_base_url, settings.whatsapp_access_token or "",
                            PostgresResolver(pool, erasure_key=container.erasure_key),
                            backoff_max=min(8.0, settings.whatsapp_send_backoff_max))
    await consumer.start()
    await producer.start()
    dlq = DeadLetterWriter(producer, max_record_bytes=settings.kafka_max_record_bytes,
                           excerpt_bytes=settings.dlq_excerpt_bytes, pool=lambda: pool)
    stop = stop or _stop_on_signals()
    web_runner = await _serve_health(settings)
    delivery = ReplyDelivery(sender, PostgresSentLedger(pool), stop=stop,
                             backoff_max=settings.whatsapp_send_backoff_max)
    try:
        while not stop.is_set():
            batch = await consumer.getmany(timeout_ms=500, max_records=50)
            for tp, recs in batch.items():
                settled = None
                try:
                    for r in recs:
                        rec = Record(r.topic, r.partition, r.offset, r.key, r.value, tuple(r.headers or ()))
                        dead = await delivery.handle(rec)
                        if dead is not None:
                            await dlq.write([dead])
                        settled = r.offset
                except Stopped:
                    pass
                finally:
                    if settled is not None:
                        await consumer.commit({tp: settled + 1})
                if stop.is_set():
                    break
    finally:
        if web_runner is not None:
            await web_runner.cleanup()
        await sender.aclose()
        await consumer.stop()
        await producer.stop()
        container.close()
