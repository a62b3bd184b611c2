"""``memoria maintenance aging|hard-delete``, ``forget``, ``restore``, ``erase-contact`` and
``verify-erasure``: thin commands over ``streams.maintain`` functions."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from typing import Optional

import typer

maintenance_app = typer.Typer(help="Aging and hard delete of facts (also run by the maintain role)",
                              no_args_is_help=True)


def _conn():
    from streams.settings import get_settings
    from streams.store.db import connect

    return connect(get_settings())


def _now(value: Optional[str]) -> datetime:
    if not value:
        return datetime.now(timezone.utc)
    dt = datetime.fromisoformat(value)
    return dt if dt.tzinfo else dt.replace(tzinfo=timezone.utc)


NOW = typer.Option(None, "--now", help="ISO time to age against (default: now)")


@maintenance_app.command("aging")
def aging(dry_run: bool = typer.Option(False, "--dry-run"), now: Optional[str] = NOW) -> None:
    """TTL per type (soft delete or weight 0.7) and the 50-live-facts cap."""
    from streams.maintain.aging import age_memories

    with _conn() as conn:
        report = age_memories(conn, now=_now(now), dry_run=dry_run)
    typer.echo(json.dumps(report.as_dict()))


@maintenance_app.command("hard-delete")
def hard_delete(dry_run: bool = typer.Option(False, "--dry-run"), now: Optional[str] = NOW) -> None:
    """Delete facts soft-deleted more than 30 days ago (counts per account)."""
    from streams.maintain.aging import hard_delete as run

    with _conn() as conn:
        counts = run(conn, now=_now(now), dry_run=dry_run)
    typer.echo(json.dumps({"dry_run": dry_run, "deleted": sum(counts.values()),
                           "per_account": {str(k): v for k, v in sorted(counts.items())}}))


def forget(
    account: int = typer.Option(..., "--account"),
    contact: Optional[int] = typer.Option(None, "--contact"),
    memory: Optional[int] = typer.Option(None, "--memory", help="one fact id (else every fact of --contact)"),
    actor: str = typer.Option("cli", "--actor", help="who asked (kept in the fact's audit metadata)"),
) -> None:
    """Forget one fact (--memory) or all facts of a contact (--contact): invisible to recall at once."""
    from streams.maintain.forget import forget_contact, forget_memory

    if memory is None and contact is None:
        raise typer.BadParameter("give --memory ID or --contact ID")
    with _conn() as conn:
        if memory is not None:
            ok = forget_memory(conn, account, memory, actor=actor)
            typer.echo(json.dumps({"memory_id": memory, "forgotten": ok}))
            if not ok:
                raise typer.Exit(1)
        else:
            n = forget_contact(conn, account, contact, actor=actor)
            typer.echo(json.dumps({"account_id": account, "contact_id": contact, "forgotten": n}))


def restore(
    account: int = typer.Option(..., "--account"),
    memory: int = typer.Option(..., "--memory", help="the forgotten fact's id"),
    actor: str = typer.Option("cli", "--actor", help="who asked (kept in the fact's audit metadata)"),
) -> None:
    """Restore a forgotten fact (within 30 days): re-embedded and contradiction-checked again."""
    from streams.bootstrap import Container
    from streams.maintain.forget import restore_memory

    c = Container()
    try:
        with c.pool.connection() as conn:
            try:
                r = restore_memory(conn, account, memory, actor=actor, embedder=c.memory_embedder,
                                   checker=c.checker(), llm_model=c.checker_llm_model, prices=c.prices)
            except LookupError:
                typer.echo(json.dumps({"memory_id": memory, "restored": False, "error": "not found"}))
                raise typer.Exit(1)
            except ValueError as e:
                typer.echo(json.dumps({"memory_id": memory, "restored": False, "error": str(e)}))
                raise typer.Exit(1)
    finally:
        c.close()
    typer.echo(json.dumps({"memory_id": memory, "restored": True, "status": r.status, "superseded": r.superseded,
                           "superseded_by": r.superseded_by, "embedded": r.embedded}))


def erase_contact(
    account: int = typer.Option(..., "--account"),
    contact: int = typer.Option(..., "--contact"),
) -> None:
    """Erase a contact: transcripts, facts, vectors and bookkeeping (LGPD/GDPR)."""
    from streams.maintain.forget import erase_contact as run
    from streams.maintain.forget import vacuum_after_erasure
    from streams.settings import get_settings

    with _conn() as conn:
        counts = run(conn, account, contact, key=get_settings().erasure_key)
    vacuum_after_erasure(get_settings().database_url)
    typer.echo(json.dumps({"account_id": account, "contact_id": contact, "deleted": counts,
                           "ledger": "recorded (keyed hash): replays and late events cannot bring it back",
                           "qdrant": "holds knowledge chunks only: no contact data"}))


def verify_erasure(
    account: int = typer.Option(..., "--account"),
    contact: int = typer.Option(..., "--contact"),
    qdrant: bool = typer.Option(True, "--qdrant/--no-qdrant", help="scan every vector collection too"),
) -> None:
    """Check the erasure ledger, Postgres, pgvector and Qdrant for a contact and print a
    proof of erasure (JSON) to file; exit 1 if anything remains or the ledger lacks it."""
    from streams.maintain.forget import proof_of_erasure
    from streams.settings import get_settings

    store = None
    if qdrant:
        from streams.bootstrap import open_vector_store

        store = open_vector_store(get_settings())
    try:
        with _conn() as conn:
            proof = proof_of_erasure(conn, account, contact, key=get_settings().erasure_key,
                                     vector_store=store)
    finally:
        if store is not None and hasattr(store, "close"):
            store.close()
    typer.echo(json.dumps(proof, indent=2))
    if not proof["erased"]:
        raise typer.Exit(1)


def register(app: typer.Typer) -> None:
    app.add_typer(maintenance_app, name="maintenance")
    app.command("forget")(forget)
    app.command("restore")(restore)
    app.command("erase-contact")(erase_contact)
    app.command("verify-erasure")(verify_erasure)
