"""The worker's small HTTP server: health, readiness and the vector-store proxy."""

from __future__ import annotations

from aiohttp import web

from streams.vectors.store import VectorStore


def build_web_app(*, roles: list[str], store: VectorStore | None) -> web.Application:
    app = web.Application(client_max_size=64 * 1024 * 1024)

    async def health(_: web.Request) -> web.Response:
        return web.json_response({"status": "ok", "roles": roles})

    app.router.add_get("/health", health)
    if store is not None:
        from streams.vectors.proxy import add_routes

        add_routes(app, store)
    return app


async def start_web(app: web.Application, host: str, port: int) -> web.AppRunner:
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, host, port)
    await site.start()
    return runner
