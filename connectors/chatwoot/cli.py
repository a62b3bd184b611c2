"""``memoria connectors chatwoot-webhook``."""

from __future__ import annotations

import asyncio
import logging
import signal

import typer

from streams.settings import Settings, get_settings

log = logging.getLogger(__name__)


async def run_chatwoot_webhook(settings: Settings, host: str, port: int, stop: asyncio.Event | None = None) -> None:
    from aiohttp import web
    from aiokafka import AIOKafkaProducer

    from connectors.chatwoot.webhook import ChatwootConfig, create_app
    from streams.kafka.topics import CONVERSATION_EVENTS, qualified

    config = ChatwootConfig(token=settings.chatwoot_webhook_token, secret=settings.chatwoot_webhook_secret)
    from streams.bootstrap import producer_config

    producer = AIOKafkaProducer(**producer_config(settings, "memoria-chatwoot-webhook"))
    await producer.start()
    topic = qualified(settings, CONVERSATION_EVENTS)

    async def publish(event) -> None:
        await producer.send_and_wait(topic, key=event.conversation_id.encode(),
                                     value=event.model_dump_json().encode())

    runner = web.AppRunner(create_app(config, publish), access_log=None)
    await runner.setup()
    await web.TCPSite(runner, host, port).start()
    log.info("chatwoot webhook listening on http://%s:%d%s → %s", host, port, config.path, topic)
    if stop is None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
    try:
        await stop.wait()
    finally:
        await runner.cleanup()
        await producer.stop()


def register(app: typer.Typer) -> None:
    connectors = next((g.typer_instance for g in app.registered_groups if g.name == "connectors"), None)
    if connectors is None:
        connectors = typer.Typer(help="Channel connectors", no_args_is_help=True)
        app.add_typer(connectors, name="connectors")

    @connectors.command("chatwoot-webhook")
    def chatwoot_webhook(host: str = typer.Option("127.0.0.1"), port: int = typer.Option(8082)) -> None:
        """Receive Chatwoot conversation_status_changed webhooks → channel.conversation.events."""
        try:
            asyncio.run(run_chatwoot_webhook(get_settings(), host, port))
        except ValueError as e:
            typer.echo(f"error: {e}", err=True)
            raise typer.Exit(2)
