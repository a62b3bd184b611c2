"""``memoria conversations list|resolve|reopen``."""

from __future__ import annotations

import json
from typing import Optional

import typer
from rich.console import Console

from streams.settings import get_settings

console = Console(stderr=True)


def _jsonable(row: dict) -> dict:
    return {k: (v.isoformat() if hasattr(v, "isoformat") else v) for k, v in row.items()}


def register(app: typer.Typer) -> None:
    conv = typer.Typer(help="Conversations: list, resolve (starts the learning), reopen", no_args_is_help=True)
    app.add_typer(conv, name="conversations")

    @conv.command("list")
    def list_(account: int = typer.Option(..., "--account"),
              contact: Optional[int] = typer.Option(None, "--contact"),
              status: Optional[str] = typer.Option(None, "--status", help="open | resolved"),
              limit: int = typer.Option(100, "--limit", min=1, max=10000),
              as_json: bool = typer.Option(False, "--json", help="one JSON object per line")) -> None:
        """An account's conversations, most recent first."""
        from streams.learn.lifecycle import list_conversations
        from streams.store.db import connect

        if status not in (None, "open", "resolved"):
            raise typer.BadParameter("--status must be open or resolved")
        with connect(get_settings()) as conn:
            rows = list_conversations(conn, account, contact_id=contact, status=status, limit=limit)
        if as_json:
            for r in rows:
                print(json.dumps(_jsonable(r), ensure_ascii=False))
            return
        if not rows:
            console.print("no conversations")
            return
        print(f"{'id':>8}  {'status':8}  {'contact':>10}  {'msgs':>5}  {'learning':9}  {'last message':25}  external id")
        for r in rows:
            last = r["last_message_at"].isoformat(timespec="seconds") if r["last_message_at"] else "-"
            print(f"{r['id']:>8}  {r['status']:8}  {r['contact_id']:>10}  {r['messages']:>5}  "
                  f"{r['learning'] or '-':9}  {last:25}  {r['external_id'] or '-'}")

    def _change(conversation_id: int, account: Optional[int], action: str) -> None:
        from streams.learn.lifecycle import ConversationNotFound, change_status
        from streams.store.db import connect

        with connect(get_settings()) as conn:
            if account is None:
                row = conn.execute("SELECT account_id FROM conversations WHERE id = %s",
                                   (conversation_id,)).fetchone()
                conn.rollback()
                if row is None:
                    console.print(f"[red]error:[/red] conversation {conversation_id} not found")
                    raise typer.Exit(2)
                account = row["account_id"]
            try:
                r = change_status(conn, account_id=account, conversation_id=conversation_id, action=action,
                                  source="cli")
            except ConversationNotFound as e:
                console.print(f"[red]error:[/red] {e}")
                raise typer.Exit(2)
        what = {"resolve": "resolved", "reopen": "reopened"}[action]
        console.print(f"conversation {r.conversation_id}: {what}" if r.changed else
                      f"conversation {r.conversation_id}: already {r.status}, nothing changed")

    @conv.command("resolve")
    def resolve(conversation_id: int = typer.Argument(..., help="the conversation id (see `list`)"),
                account: Optional[int] = typer.Option(None, "--account", help="check it belongs to this account")
                ) -> None:
        """Resolve a conversation: clears its lead state and starts its learning (once)."""
        _change(conversation_id, account, "resolve")

    @conv.command("reopen")
    def reopen(conversation_id: int = typer.Argument(...),
               account: Optional[int] = typer.Option(None, "--account")) -> None:
        """Reopen a resolved conversation; the next resolution learns from its new messages only."""
        _change(conversation_id, account, "reopen")
