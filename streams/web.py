"""The worker's small HTTP server: health, readiness and the vector-store proxy."""

from __future__ import annotations

from aiohttp import web

from streams.vectors.port import VectorStore
from streams.vectors.proxy import add_routes


def build_web_app(*, roles: list[str], store: VectorStore | None) -> web.Application:
    app = web.Application(client_max_size=64 * 1024 * 1024)

    def stalls() -> list[dict]:
        from time import time

        from streams.kafka.errors import STALLS

        return [{"topic": s.topic, "dependency": s.dependency, "seconds": round(time() - s.since, 1),
                 "attempts": s.attempts, "error": s.error} for s in list(STALLS.values())]

    async def health(_: web.Request) -> web.Response:
        """Liveness (always 200 while the process serves) with the stall status."""
        st = stalls()
        return web.json_response({"status": "stalled" if st else "ok", "roles": roles, "stalled": st})

    async def ready(_: web.Request) -> web.Response:
        """Readiness: 503 while a consumer waits for a dependency."""
        st = stalls()
        return web.json_response({"status": "stalled" if st else "ok", "stalled": st}, status=503 if st else 200)

    app.router.add_get("/health", health)
    app.router.add_get("/ready", ready)
    if store is not None:
        add_routes(app, store)
    return app


async def start_web(app: web.Application, host: str, port: int) -> web.AppRunner:
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, host, port)
    await site.start()
    return runner
