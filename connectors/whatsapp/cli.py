"""``memoria connectors whatsapp-webhook|whatsapp-sender``."""

from __future__ import annotations

import asyncio

import typer

from streams.settings import get_settings


def register(app: typer.Typer) -> None:
    connectors = typer.Typer(help="Channel connectors (WhatsApp Cloud API)", no_args_is_help=True)
    app.add_typer(connectors, name="connectors")

    @connectors.command("whatsapp-webhook")
    def webhook(host: str = typer.Option("127.0.0.1"), port: int = typer.Option(8081)) -> None:
        """Receive WhatsApp Cloud API webhooks (GET handshake, signed POSTs) and publish InboundMessages."""
        from connectors.whatsapp.run import run_webhook

        try:
            asyncio.run(run_webhook(get_settings(), host, port))
        except ValueError as e:
            typer.echo(f"error: {e}", err=True)
            raise typer.Exit(2)

    @connectors.command("whatsapp-sender")
    def sender() -> None:
        """Post every OutboundReply to the WhatsApp Cloud API (retries; failures to the DLQ)."""
        from connectors.whatsapp.run import run_sender

        asyncio.run(run_sender(get_settings()))
