"""Runnable connector processes: the webhook (HTTP → Kafka) and the sender (Kafka → HTTP)."""

from __future__ import annotations

import asyncio
import json
import logging
import signal

from aiohttp import web
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from pydantic import ValidationError

from connectors.whatsapp.postgres_resolver import PostgresResolver
from connectors.whatsapp.sender import WhatsAppSender
from connectors.whatsapp.webhook import WebhookConfig, create_app
from schemas.events import InboundMessage, OutboundReply
from streams.kafka.consume import DeadLetter, DeadLetterWriter, Record
from streams.kafka.topics import INBOUND, OUTBOUND, qualified
from streams.settings import Settings

log = logging.getLogger(__name__)


async def run_webhook(settings: Settings, host: str, port: int, stop: asyncio.Event | None = None) -> None:
    from streams.store.db import make_pool

    if not settings.whatsapp_verify_token:
        raise ValueError("MEMORIA_WHATSAPP_VERIFY_TOKEN (or WHATSAPP_VERIFY_TOKEN) is required")
    if not settings.whatsapp_app_secret:
        log.warning("WHATSAPP_APP_SECRET is not set: request signatures are NOT checked (development only)")
    pool = await asyncio.to_thread(make_pool, settings, name="whatsapp-webhook")
    producer = AIOKafkaProducer(bootstrap_servers=settings.kafka_bootstrap_servers, acks="all",
                                enable_idempotence=False)
    await producer.start()
    topic = qualified(settings, INBOUND)

    async def publish(msg: InboundMessage) -> None:
        await producer.send_and_wait(topic, key=msg.conversation_id.encode(), value=msg.model_dump_json().encode())

    app = create_app(WebhookConfig(verify_token=settings.whatsapp_verify_token,
                                   app_secret=settings.whatsapp_app_secret or None),
                     publish, PostgresResolver(pool))
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
        pool.close()


def _stop_on_signals() -> asyncio.Event:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    return stop


async def run_sender(settings: Settings, stop: asyncio.Event | None = None) -> None:
    """Consume replies, post them, commit the offsets only after each batch is settled.

    A reply the API refuses for good (4xx, unknown destination) or that still
    fails after the sender's retries goes to ``channel.outbound.replies.dlq``.
    """
    from streams.store.db import make_pool

    pool = await asyncio.to_thread(make_pool, settings, name="whatsapp-sender")
    topic = qualified(settings, OUTBOUND)
    consumer = AIOKafkaConsumer(topic, bootstrap_servers=settings.kafka_bootstrap_servers,
                                group_id=f"{settings.topic_prefix}{settings.consumer_group}-whatsapp-sender",
                                enable_auto_commit=False, auto_offset_reset="earliest",
                                session_timeout_ms=int(settings.kafka_session_timeout * 1000),
                                heartbeat_interval_ms=int(settings.kafka_heartbeat_interval * 1000))
    producer = AIOKafkaProducer(bootstrap_servers=settings.kafka_bootstrap_servers, acks="all",
                                enable_idempotence=False)
    sender = WhatsAppSender(settings.whatsapp_api_base_url, settings.whatsapp_access_token or "",
                            PostgresResolver(pool))
    await consumer.start()
    await producer.start()
    dlq = DeadLetterWriter(producer)
    stop = stop or _stop_on_signals()
    try:
        while not stop.is_set():
            batch = await consumer.getmany(timeout_ms=500, max_records=50)
            for tp, recs in batch.items():
                dead = []
                for r in recs:
                    rec = Record(r.topic, r.partition, r.offset, r.key, r.value, tuple(r.headers or ()))
                    try:
                        reply = OutboundReply.model_validate(json.loads(r.value))
                    except (ValueError, ValidationError) as e:
                        dead.append(DeadLetter(rec, "InvalidReply", str(e)[:1000]))
                        continue
                    result = await sender.send(reply)
                    if not result.ok:
                        dead.append(DeadLetter(rec, "SendFailed", f"status={result.status} {result.error}"))
                    else:
                        log.info("whatsapp sent reply_id=%s wa_message_id=%s", reply.reply_id, result.wa_message_id)
                if dead:
                    await dlq.write(dead)
                await consumer.commit({tp: recs[-1].offset + 1})
    finally:
        await sender.aclose()
        await consumer.stop()
        await producer.stop()
        pool.close()
