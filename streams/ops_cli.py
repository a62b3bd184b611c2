"""``memoria migrate``, ``topics create|list``, ``worker``, ``embedding-service`` and ``reconcile``:
the commands that run or repair the stack itself."""

from __future__ import annotations

import json
import logging
import sys
from typing import Optional

import typer
from rich.console import Console

from streams.settings import get_settings

console = Console(stderr=True)
topics_app = typer.Typer(help="Kafka topics", no_args_is_help=True)


def migrate() -> None:
    """Apply pending SQL migrations (safe to run twice)."""
    from streams.store.db import migrate as run

    applied = run(get_settings().database_url)
    console.print(f"migrations applied: {', '.join(applied) if applied else 'none (up to date)'}")


@topics_app.command("create")
def topics_create() -> None:
    """Create every topic explicitly with the configured partition count."""
    from streams.kafka.topics import create_topics_sync

    s = get_settings()
    created = create_topics_sync(s)
    console.print(f"topics: {len(created)} created ({s.topic_partitions} partitions each)")


@topics_app.command("list")
def topics_list() -> None:
    from streams.kafka.topics import base_topics, qualified

    for t in base_topics():
        print(qualified(get_settings(), t))


def worker(
    roles: str = typer.Option(",".join(("relay", "ingest", "learn", "respond", "maintain")),
                              help="comma-separated roles to run in this process"),
    loglevel: str = typer.Option("info"),
) -> None:
    """Run worker roles (relay, ingest, learn, respond, maintain) in one process."""
    import faust

    from streams.app import build_app

    wanted = [r.strip() for r in roles.split(",") if r.strip()]
    s = get_settings()
    # The worker hops between the event loop and worker threads on every message;
    # under load each hop can wait a whole GIL switch interval (5 ms by default).
    sys.setswitchinterval(s.worker_switch_interval)
    fapp = build_app(s, wanted)
    w = faust.Worker(fapp, loglevel=loglevel, quiet=True, redirect_stdouts=False)
    w.execute_from_commandline()


def embedding_service(
    host: Optional[str] = typer.Option(None, help="default MEMORIA_EMBEDDING_SERVICE_HOST"),
    port: Optional[int] = typer.Option(None, help="default MEMORIA_EMBEDDING_SERVICE_PORT"),
    workers: Optional[int] = typer.Option(None, help="model workers per model (MEMORIA_EMBEDDING_SERVICE_WORKERS)"),
) -> None:
    """Serve the embedding models over HTTP (OpenAI-compatible + collection-aware routes)."""
    from streams.bootstrap import Container
    from streams.embedding.service import serve

    s = get_settings()
    updates = {k: v for k, v in (("embedding_service_host", host), ("embedding_service_port", port),
                                 ("embedding_service_workers", workers)) if v is not None}
    if not logging.getLogger().isEnabledFor(logging.INFO):
        logging.getLogger("streams").setLevel(logging.INFO)
    s = s.model_copy(update=updates)
    serve(Container(s).embedding_service(), s.embedding_service_host, s.embedding_service_port)


def reconcile(
    account: Optional[int] = typer.Option(None, "--account"),
    repair: bool = typer.Option(False, "--repair", help="re-enqueue / republish the drift"),
    only: Optional[str] = typer.Option(None, "--only", help="comma-separated: chunks,extractions,replies"),
    min_age: float = typer.Option(0.0, "--min-age", help="ignore changes younger than this (seconds)"),
) -> None:
    """Every projection against Postgres: chunks → Qdrant points, finished conversations →
    extractions, stored replies → the outbound topic. --repair re-enqueues the drift."""
    import asyncio

    from streams.bootstrap import Container
    from streams.maintain.reconcile import PROJECTIONS, reconcile_all

    wanted = tuple(p.strip() for p in only.split(",")) if only else PROJECTIONS
    unknown = set(wanted) - set(PROJECTIONS)
    if unknown:
        raise typer.BadParameter(f"unknown projections {sorted(unknown)}; known: {', '.join(PROJECTIONS)}")
    c = Container()

    async def run():
        from aiokafka import AIOKafkaProducer

        producer = None
        if repair and "replies" in wanted:
            producer = AIOKafkaProducer(**c.producer_config("memoria-reconcile"))
            await producer.start()
        try:
            store = c.vector_store if "chunks" in wanted else None
            return await reconcile_all(c.settings, c.pool, store, producer, account_id=account, repair=repair,
                                       min_age=min_age, projections=wanted)
        finally:
            if producer is not None:
                await producer.stop()

    try:
        report = asyncio.run(run())
    finally:
        c.close()
    print(json.dumps(report.as_dict()))
    if not report.drift:
        console.print("in sync: no drift")
    elif not repair:
        raise typer.Exit(1)


def register(app: typer.Typer) -> None:
    app.command()(migrate)
    app.command()(worker)
    app.command("embedding-service")(embedding_service)
    app.command()(reconcile)
    app.add_typer(topics_app, name="topics")
