"""CLI commands for the learning stage; the main app registers them with
``register(app)``. They run without Kafka or Postgres."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

import typer

from streams.learn.contradiction import MemoryView
from streams.learn.extract import FactExtractor, extract_facts
from streams.learn.fixtures import read_jsonl, transcript_of


def build_extractor(provider: str) -> FactExtractor:
    from streams.bootstrap import Container

    try:
        return Container().extractor(provider)
    except ValueError as e:
        raise typer.BadParameter(str(e)) from None


def build_checker(provider: str):
    from streams.bootstrap import Container

    try:
        return Container().checker(provider)
    except ValueError as e:
        raise typer.BadParameter(str(e)) from None


def extract(
    file: Path = typer.Argument(..., exists=True, dir_okay=False, help="conversations, JSON Lines (fixture format)"),
    provider: str = typer.Option("rules", "--provider", help="rules (= offline, the learnt extractor) | patterns | openai"),
) -> None:
    """Print the validated facts of each conversation, one JSON line per fact.

    A conversation that fails (model unavailable or timed out, unreadable row) is
    reported on stderr and the batch goes on; the exit code is 1 when any failed."""
    extractor = build_extractor(provider)
    failed = 0
    total = 0
    for row in read_jsonl(file):
        total += 1
        cid = row.get("conversation_id") if isinstance(row, dict) else None
        try:
            result = extract_facts(transcript_of(row), extractor)
        except Exception as e:  # one conversation never aborts the batch
            failed += 1
            typer.echo(f"error: conversation {cid}: {type(e).__name__}: {e}", err=True)
            continue
        if result.warning:
            typer.echo(f"warning: conversation {cid}: {result.warning}", err=True)
        for fact in result.facts:
            typer.echo(json.dumps({
                "conversation_id": cid,
                "memory_type": fact.memory_type,
                "memory_key": fact.memory_key,
                "content": fact.content,
                "evidence": fact.evidence,
                "confidence": fact.confidence,
                "scope": fact.scope,
            }, ensure_ascii=False))
    if failed:
        typer.echo(f"summary: {failed} of {total} conversations failed (reported above); the others were extracted",
                   err=True)
        raise typer.Exit(1)


def contradicts(
    file: Path = typer.Argument(..., exists=True, dir_okay=False, help="pairs, JSON Lines (fixture format)"),
    provider: str = typer.Option("rules", "--provider", help="rules | openai"),
) -> None:
    """Print one JSON line per pair: ``pair_id`` and ``contradicts``."""
    if provider not in {"rules", "openai"}:
        raise typer.BadParameter(f"unknown provider {provider!r} (rules|openai)")
    checker = build_checker(provider)
    failed = 0
    for row in read_jsonl(file):
        try:
            verdict = checker.check(
                MemoryView(memory_type=row["memory_type"], content=row["old"]),
                MemoryView(memory_type=row.get("new_memory_type", row["memory_type"]), content=row["new"]),
            )
        except Exception as e:  # one pair never aborts the batch
            failed += 1
            typer.echo(f"error: pair {row.get('pair_id')}: {type(e).__name__}: {e}", err=True)
            continue
        typer.echo(json.dumps({"pair_id": row["pair_id"], "contradicts": verdict.contradicts}, ensure_ascii=False))
    if failed:
        raise typer.Exit(1)


replay_app = typer.Typer(help="Re-run a flow on purpose (idempotent: no duplicates)", no_args_is_help=True)


def _parse_time(value: str):
    from datetime import datetime, timezone

    dt = datetime.fromisoformat(value)
    return dt if dt.tzinfo else dt.replace(tzinfo=timezone.utc)


@replay_app.command("extract")
def replay_extract(
    conversation: Optional[int] = typer.Option(None, "--conversation", help="one conversation id"),
    from_: Optional[str] = typer.Option(None, "--from", help="ISO time: conversations with activity since"),
    to: Optional[str] = typer.Option(None, "--to", help="ISO time: ... and before"),
    force: bool = typer.Option(False, "--force", help="extract again even if already extracted"),
    dry_run: bool = typer.Option(False, "--dry-run", help="list the conversations, extract nothing"),
) -> None:
    """Extract memory from a conversation (or a time range) now, in this process."""
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from streams.bootstrap import Container
    from streams.learn.learn import learn_conversation

    if (conversation is None) == (from_ is None and to is None):
        raise typer.BadParameter("give either --conversation ID or --from/--to")
    c = Container()
    try:
        if conversation is not None:
            ids = [conversation]
        else:
            with c.pool.connection() as conn:
                ids = [r["id"] for r in conn.execute(
                    "SELECT id FROM conversations WHERE COALESCE(resolved_at, last_message_at, created_at) >= %s "
                    "AND COALESCE(resolved_at, last_message_at, created_at) < %s ORDER BY id",
                    (_parse_time(from_) if from_ else _parse_time("0001-01-01T00:00:00+00:00"),
                     _parse_time(to) if to else _parse_time("9999-12-31T00:00:00+00:00"))).fetchall()]
        if dry_run:
            typer.echo(json.dumps({"conversations": ids, "count": len(ids), "dry_run": True}))
            return
        ports = c.learn_ports()
        failed = 0
        statuses: dict[str, int] = {}
        totals = {"created": 0, "reinforced": 0, "superseded": 0}
        with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                      console=Console(stderr=True)) as progress:
            task = progress.add_task("extracting", total=len(ids))
            for cid in ids:
                o = learn_conversation(ports, cid, force=force)
                failed += o.status in ("failed", "missing")
                statuses[o.status] = statuses.get(o.status, 0) + 1
                totals["created"] += len(o.created)
                totals["reinforced"] += len(o.reinforced)
                totals["superseded"] += len(o.superseded)
                typer.echo(json.dumps({"conversation_id": cid, "status": o.status, "facts": o.facts,
                                       "created": o.created, "reinforced": o.reinforced,
                                       "superseded": [list(p) for p in o.superseded], "error": o.error},
                                      ensure_ascii=False))
                progress.advance(task)
        typer.echo(json.dumps({"summary": {"conversations": len(ids), "statuses": statuses, **totals}}))
    finally:
        c.close()
    if failed:
        raise typer.Exit(1)


def register(app: typer.Typer) -> None:
    """Add the ``extract``, ``contradicts`` and ``replay extract`` commands to ``app``."""
    app.command("extract")(extract)
    app.command("contradicts")(contradicts)
    app.add_typer(replay_app, name="replay")
