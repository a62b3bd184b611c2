"""``memoria admin ...``: serve the API, manage tokens, export the OpenAPI document."""

from __future__ import annotations

import json
from pathlib import Path

import typer
from rich.console import Console

from streams.settings import REPO_ROOT, get_settings

OPENAPI_FILE = REPO_ROOT / "docs" / "openapi.json"
console = Console(stderr=True)


def render_openapi() -> str:
    from streams.admin.api import create_app

    doc = create_app(container=None, console=False).openapi()
    return json.dumps(doc, indent=2, ensure_ascii=False, sort_keys=True) + "\n"


def register(app: typer.Typer) -> None:
    admin = typer.Typer(help="Admin HTTP API and its tokens", no_args_is_help=True)
    token = typer.Typer(help="Per-account API tokens (stored hashed)", no_args_is_help=True)
    admin.add_typer(token, name="token")
    app.add_typer(admin, name="admin")

    @admin.command("serve")
    def serve(host: str = typer.Option(None, help="default MEMORIA_ADMIN_HOST (127.0.0.1)"),
              port: int = typer.Option(None, help="default MEMORIA_ADMIN_PORT (8080)")) -> None:
        """Run the admin API (OpenAPI at /openapi.json, docs at /docs) and the operator console (/console)."""
        import uvicorn

        from streams.admin.api import create_app
        from streams.bootstrap import Container

        s = get_settings()
        uvicorn.run(create_app(Container(s)), host=host or s.admin_host, port=port or s.admin_port,
                    log_level="info")

    @admin.command("openapi")
    def openapi(out: Path = typer.Option(OPENAPI_FILE, help="where to write the document")) -> None:
        """Write the published OpenAPI document (docs/openapi.json)."""
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(render_openapi())
        console.print(f"wrote {out}")

    @token.command("create")
    def create(account: int = typer.Option(..., "--account"), name: str = typer.Option("", "--name")) -> None:
        """Create a token for an account; the secret is printed once."""
        from streams.admin.tokens import create_token
        from streams.store.db import connect

        with connect(get_settings()) as conn:
            try:
                tid, secret = create_token(conn, account, name)
            except LookupError as e:
                console.print(f"[red]error:[/red] {e}")
                raise typer.Exit(2)
        console.print(f"token {tid} for account {account} (shown once):")
        print(secret)

    @token.command("revoke")
    def revoke(token_id: int = typer.Argument(...)) -> None:
        from streams.admin.tokens import revoke_token
        from streams.store.db import connect

        with connect(get_settings()) as conn:
            if not revoke_token(conn, token_id):
                console.print(f"[red]error:[/red] no active token {token_id}")
                raise typer.Exit(2)
        console.print(f"token {token_id} revoked")
