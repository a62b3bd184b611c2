"""``memoria replay topic|embed-memories`` (``replay extract`` lives with the learning flow).

Every replay is idempotent, shows a progress bar, supports ``--dry-run`` and
prints a summary.
"""

from __future__ import annotations

import asyncio
import json

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from streams.learn.cli import replay_app
from streams.settings import get_settings
from streams.store.uow import joined

console = Console(stderr=True)


def _progress() -> Progress:
    return Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                    console=console)


@replay_app.command("topic")
def replay_topic(
    topic: str = typer.Option(..., "--topic", help="topic name (without the configured prefix); a .dlq topic "
                                                   "sends each record back to its source topic"),
    from_: str = typer.Option(None, "--from", help="first offset or ISO-8601 timestamp (default: beginning)"),
    to: str = typer.Option(None, "--to", help="end offset (exclusive) or timestamp (default: the current end)"),
    dry_run: bool = typer.Option(False, "--dry-run", help="count what would be replayed, produce nothing"),
) -> None:
    """Feed a range of a topic back through the agents (their de-duplication makes it idempotent)."""
    from streams.kafka.replay import parse_position
    from streams.kafka.replay import replay_topic as run
    from streams.kafka.topics import qualified

    s = get_settings()
    try:
        start, end = parse_position(from_), parse_position(to)
    except ValueError as e:
        raise typer.BadParameter(str(e)) from None
    name = qualified(s, topic)
    with _progress() as progress:
        task = progress.add_task(f"{'reading' if dry_run else 'replaying'} {name}", total=None)
        try:
            res = asyncio.run(run(s, name, start, end, dry_run=dry_run,
                                  progress=lambda n: progress.update(task, completed=n)))
        except LookupError as e:
            console.print(f"[red]error:[/red] {e}")
            raise typer.Exit(2)
    summary = {"topic": name, "read": res.read, "replayed": res.replayed, "dry_run": dry_run,
               "targets": res.by_target}
    print(json.dumps(summary))


@replay_app.command("embed-memories")
def replay_embed_memories(
    model: str = typer.Option(..., "--model", help="use-multilingual-v3 | all-minilm-l6-v2 | multilingual-e5-small"),
    batch: int = typer.Option(256, "--batch"),
    dry_run: bool = typer.Option(False, "--dry-run", help="count the facts, embed nothing"),
) -> None:
    """Re-embed every live fact with MODEL (then point MEMORIA_MEMORY_EMBEDDING_MODEL at it).

    Recall uses only facts embedded with the configured memory model, so run this
    before switching the setting; facts keep their old vectors until re-embedded.
    """
    from streams.bootstrap import Container
    from streams.learn.embed import embed_contents

    c = Container()
    try:
        with c.pool.connection() as conn:
            total = conn.execute("SELECT count(*) AS n FROM contact_memories WHERE deleted_at IS NULL AND "
                                 "superseded_at IS NULL AND embedding_model IS DISTINCT FROM %s",
                                 (model,)).fetchone()["n"]
        if dry_run:
            print(json.dumps({"model": model, "to_embed": total, "dry_run": True}))
            return
        emb = c.embedder_for(model)
        done = failed = 0
        last_id = 0
        with _progress() as progress:
            task = progress.add_task(f"embedding facts with {emb.name}", total=total)
            while True:
                with c.pool.connection() as conn:
                    rows = conn.execute(
                        "SELECT id, content FROM contact_memories WHERE deleted_at IS NULL AND superseded_at IS NULL "
                        "AND embedding_model IS DISTINCT FROM %s AND id > %s ORDER BY id LIMIT %s",
                        (emb.name, last_id, batch)).fetchall()
                if not rows:
                    break
                last_id = rows[-1]["id"]
                vecs = embed_contents(emb, [r["content"] for r in rows])
                with joined(c.pool) as uow:  # one unit of work (committed at the end)
                    for r, v in zip(rows, vecs):
                        if v is None:
                            failed += 1
                            continue
                        # a fact edited or forgotten since it was read keeps its state
                        done += uow.learning.set_embedding(r["id"], r["content"], v, emb.name)
                progress.update(task, advance=len(rows))
    finally:
        c.close()
    print(json.dumps({"model": emb.name, "embedded": done, "failed": failed}))
    if failed:
        raise typer.Exit(1)


def register(app: typer.Typer) -> None:
    """The commands join the ``replay`` group that ``streams.learn.cli`` registers."""
    return None
