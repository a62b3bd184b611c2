"""The ``memoria`` command line (Typer).

Each flow keeps its commands in its own package (a module with ``register(app)``);
this module only lists them. A command's module is imported when that command
runs or its own ``--help`` is asked, never for ``memoria --help``, so the root
help answers without loading PyTorch, Faust, Qdrant or Postgres drivers.
Every command builds its dependencies through ``streams.bootstrap``.
"""

from __future__ import annotations

import importlib
import logging
import sys
from typing import Any, NamedTuple

import typer
from typer.core import TyperCommand, TyperGroup

from streams.plugins import module_present


class Entry(NamedTuple):
    help: str  # the line ``memoria --help`` shows (the command's first docstring paragraph / group help)
    modules: tuple[str, ...]  # whose ``register(app)`` add the command, in order


# Every top-level command and group, in the order ``memoria --help`` lists them.
# tests/test_cli.py checks that each line equals what the loaded command says about itself.
COMMANDS: dict[str, Entry] = {
    "migrate": Entry("Apply pending SQL migrations (safe to run twice).", ("streams.ops_cli",)),
    "worker": Entry("Run worker roles (relay, ingest, learn, respond, maintain) in one process.",
                    ("streams.ops_cli",)),
    "embedding-service": Entry("Serve the embedding models over HTTP (OpenAI-compatible + collection-aware routes).",
                               ("streams.ops_cli",)),
    "ingest": Entry("Write documents and their chunks (with outbox events) to Postgres, keyed by a stable key.",
                    ("streams.ingest.cli",)),
    "search": Entry("Top chunks of an account with their cosine distance.", ("streams.ingest.cli",)),
    "reindex": Entry("Blue-green re-embed of every live chunk into a new collection, then swap the alias.",
                     ("streams.ingest.cli",)),
    "reconcile": Entry("Every projection against Postgres: chunks → Qdrant points, finished conversations →\n"
                       "extractions, stored replies → the outbound topic. --repair re-enqueues the drift.",
                       ("streams.ops_cli",)),
    "extract": Entry("Print the validated facts of each conversation, one JSON line per fact.",
                     ("streams.learn.cli",)),
    "contradicts": Entry("Print one JSON line per pair: ``pair_id`` and ``contradicts``.", ("streams.learn.cli",)),
    "rank": Entry("Print, per recall case, the indices of the facts recall would inject.", ("streams.respond.rank",)),
    "ask": Entry("Send one message through the real topics and print the worker's reply.", ("streams.respond.cli",)),
    "forget": Entry("Forget one fact (--memory) or all facts of a contact (--contact): invisible to recall at once.",
                    ("streams.maintain.cli",)),
    "restore": Entry("Restore a forgotten fact (within 30 days): re-embedded and contradiction-checked again.",
                     ("streams.maintain.cli",)),
    "erase-contact": Entry("Erase a contact: transcripts, facts, vectors and bookkeeping (LGPD/GDPR).",
                           ("streams.maintain.cli",)),
    "verify-erasure": Entry("Check the erasure ledger, Postgres, pgvector and Qdrant for a contact and print a\n"
                            "proof of erasure (JSON) to file; exit 1 if anything remains or the ledger lacks it.",
                            ("streams.maintain.cli",)),
    "demo": Entry("Run the main job end to end against the running stack and worker (see `make demo`).",
                  ("streams.demo",)),
    "topics": Entry("Kafka topics", ("streams.ops_cli",)),
    "documents": Entry("Knowledge documents: list, delete", ("streams.ingest.cli",)),
    "replay": Entry("Re-run a flow on purpose (idempotent: no duplicates)", ("streams.learn.cli", "streams.replay_cli")),
    "conversations": Entry("Conversations: list, resolve (starts the learning), reopen", ("streams.learn.lifecycle_cli",)),
    "maintenance": Entry("Aging and hard delete of facts (also run by the maintain role)", ("streams.maintain.cli",)),
    "admin": Entry("Admin HTTP API and its tokens", ("streams.admin.cli",)),
    "connectors": Entry("Channel connectors (WhatsApp Cloud API)", ("connectors.whatsapp.cli", "connectors.chatwoot.cli")),
}


def load_command(name: str) -> Any:
    """Import the modules behind ``name``, let them register on a scratch app, return the click command."""
    scratch = typer.Typer()
    for module in COMMANDS[name].modules:
        if module_present(module):  # a flow that is not installed adds nothing
            importlib.import_module(module).register(scratch)
    return typer.main.get_group(scratch).commands.get(name)


class LazyGroup(TyperGroup):
    """The root group: lists every command from ``COMMANDS`` and loads one only to run it (or show its help)."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        for name, entry in COMMANDS.items():
            if name not in self.commands and any(module_present(m) for m in entry.modules):
                self.commands[name] = TyperCommand(name=name, help=entry.help)  # a listing, never invoked
        self._loaded: set[str] = set()

    def resolve_command(self, ctx: Any, args: list[str]) -> Any:
        name = args[0] if args else None
        if name in COMMANDS and name not in self._loaded:
            command = load_command(name)
            if command is not None:
                self.commands[name] = command
            else:
                self.commands.pop(name, None)
            self._loaded.add(name)
        return super().resolve_command(ctx, args)


app = typer.Typer(cls=LazyGroup, help="memoria: Kafka-native memory and knowledge layer for chat agents",
                  no_args_is_help=True, pretty_exceptions_enable=False)


def _logging(level: str = "INFO") -> None:
    logging.basicConfig(level=getattr(logging, level.upper(), logging.INFO),
                        format="%(asctime)s %(levelname)s %(name)s %(message)s", stream=sys.stderr)


@app.callback()
def _main(log_level: str | None = typer.Option(None, help="default: MEMORIA_LOG_LEVEL, else WARNING")) -> None:
    # Imported here, not above: `memoria --help` never runs this callback and needs no settings.
    from streams.settings import get_settings

    _logging(log_level or get_settings().log_level)


def _unreachable(e: BaseException) -> str | None:
    """One clear line when Postgres or Kafka cannot be reached; None for anything else.

    Only a command that imported the driver can raise its errors, so the drivers
    are looked up in ``sys.modules`` (importing them here would slow every command)."""
    psycopg = sys.modules.get("psycopg")
    if psycopg is not None and isinstance(e, psycopg.OperationalError):
        first = str(e).strip().splitlines()[0] if str(e).strip() else repr(e)
        return (f"cannot reach Postgres ({first}). Is the stack up (`make up`), "
                "or is MEMORIA_DATABASE_URL right?")
    kafka_errors = sys.modules.get("aiokafka.errors")
    if kafka_errors is not None and isinstance(e, kafka_errors.KafkaConnectionError):
        return (f"cannot reach Kafka ({e}). Is the stack up (`make up`), or is "
                "MEMORIA_KAFKA_BOOTSTRAP_SERVERS right?")
    return None


def main() -> None:
    """Entry point: infrastructure errors become one clear line, not a traceback."""
    try:
        app()
    except Exception as e:
        line = _unreachable(e)
        if line is None:
            raise
        typer.echo(f"{typer.style('error:', fg='red')} {line}", err=True)
        raise SystemExit(3)


if __name__ == "__main__":  # python -m streams.cli
    main()
