"""Serve a ``VectorStore`` over HTTP, and the matching client.

A local Qdrant store belongs to one process (docs/architecture.md §7). The worker that
opened it mounts these routes on its web server so that CLI commands
(``search``, ``reconcile``, ``reindex``) and tests keep working beside it.
The wire format is JSON: ``POST /vectors/<operation>`` with keyword
arguments, answering ``{"result": ...}`` or ``{"error": ...}``.
"""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
from aiohttp import web

from streams.vectors.port import Hit, VectorStore

OPERATIONS = frozenset({
    "alias_target", "list_collections", "create_collection", "drop_collection", "point_alias",
    "upsert", "set_payloads", "delete", "retrieve", "search", "scroll", "count",
})


def _encode(result: Any) -> Any:
    if isinstance(result, list) and result and isinstance(result[0], Hit):
        return [{"id": h.id, "score": h.score, "payload": h.payload} for h in result]
    return result


def add_routes(app: web.Application, store: VectorStore) -> None:
    async def handle(request: web.Request) -> web.Response:
        op = request.match_info["op"]
        if op not in OPERATIONS:
            return web.json_response({"error": f"unknown operation {op!r}"}, status=404)
        try:
            kwargs = await request.json()
        except Exception:
            return web.json_response({"error": "body must be a JSON object"}, status=400)
        if not isinstance(kwargs, dict):
            return web.json_response({"error": "body must be a JSON object"}, status=400)
        try:
            result = await asyncio.to_thread(getattr(store, op), **kwargs)
        except TypeError as e:
            return web.json_response({"error": f"bad arguments: {e}"}, status=400)
        except Exception as e:  # surfaced to the caller, who decides
            return web.json_response({"error": f"{type(e).__name__}: {e}"}, status=500)
        return web.json_response({"result": _encode(result)})

    app.router.add_post("/vectors/{op}", handle)


class VectorStoreClient:
    """``VectorStore`` implemented by calls to a worker's proxy."""

    def __init__(self, base_url: str, timeout: float = 60.0):
        self.location = base_url
        self._http = httpx.Client(base_url=base_url, timeout=timeout)

    def _call(self, op: str, **kwargs: Any) -> Any:
        r = self._http.post(f"/vectors/{op}", json=kwargs)
        body = r.json()
        if r.status_code != 200:
            raise RuntimeError(f"vector proxy {op}: {body.get('error')}")
        return body["result"]

    def close(self) -> None:
        self._http.close()

    def alias_target(self, alias):
        return self._call("alias_target", alias=alias)

    def list_collections(self):
        return self._call("list_collections")

    def create_collection(self, name, dim):
        return self._call("create_collection", name=name, dim=dim)

    def drop_collection(self, name):
        return self._call("drop_collection", name=name)

    def point_alias(self, alias, collection):
        return self._call("point_alias", alias=alias, collection=collection)

    def upsert(self, collection, ids, vectors, payloads):
        return self._call("upsert", collection=collection, ids=[str(i) for i in ids],
                          vectors=[[float(x) for x in v] for v in vectors], payloads=list(payloads))

    def set_payloads(self, collection, items):
        return self._call("set_payloads", collection=collection, items=[[str(i), p] for i, p in items])

    def delete(self, collection, ids):
        return self._call("delete", collection=collection, ids=[str(i) for i in ids])

    def retrieve(self, collection, ids):
        return self._call("retrieve", collection=collection, ids=[str(i) for i in ids])

    def search(self, collection, vector, *, account_id, limit, min_score=None):
        rows = self._call("search", collection=collection, vector=[float(x) for x in vector],
                          account_id=account_id, limit=limit, min_score=min_score)
        return [Hit(r["id"], r["score"], r["payload"]) for r in rows]

    def scroll(self, collection, account_id=None):
        return self._call("scroll", collection=collection, account_id=account_id)

    def count(self, collection):
        return self._call("count", collection=collection)
