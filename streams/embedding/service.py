"""The embedding service: one thin process over the embedding models.

    memoria embedding-service            # MEMORIA_EMBEDDING_SERVICE_HOST/_PORT

Shared by ingestion and query so that both live in the same vector space. It
receives text (and, on the collection-aware route, the target collection),
resolves collection → model → dimension from configuration, and returns
L2-normalised vectors. It writes nothing and searches nothing.

Routes
  POST /v1/embeddings                       OpenAI-compatible ({"model", "input"})
  POST /v1/collections/{collection}/embed   {"input", "kind": "query"|"passage",
                                             "model"?, "dimension"?} → 409 on a mismatch
  GET  /v1/models, /v1/collections/{collection}, /health, /metrics

Requests of one model are micro-batched: a batcher takes what is queued, waits
at most ``max_wait_ms`` for more (up to ``max_batch`` texts), encodes once in a
model worker process and answers every request of the batch. The queue is
bounded (``max_queue`` texts per model): when full the request is refused at
once with 429 and ``Retry-After``, never queued without limit. The model workers are
child processes (``model_process.py``): the encode does not share this process's GIL.
"""

from __future__ import annotations

import asyncio
import base64
import logging
import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Callable, Literal, Sequence

import numpy as np
from fastapi import FastAPI, HTTPException
from fastapi.responses import JSONResponse, Response
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from pydantic import BaseModel, Field

from streams.embedding.model_process import ModelProcess, WorkerDied
from streams.embedding.port import Embedder
from streams.embedding.providers import MODEL_PROVIDERS, model_slug, served_name

log = logging.getLogger(__name__)



class QueueFull(Exception):
    def __init__(self, retry_after_s: float):
        super().__init__(f"embedding queue full; retry after {retry_after_s:.1f}s")
        self.retry_after_s = retry_after_s


@dataclass
class _Job:
    texts: list[str]
    kind: str
    future: asyncio.Future
    queued_at: float = field(default_factory=time.perf_counter)


class ServiceMetrics:
    """Prometheus series of one service instance (its own registry: tests run several)."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        r = self.registry
        self.batch_size = Histogram("memoria_embedding_service_batch_size", "Texts encoded per model call",
                                    ["model"], buckets=(1, 2, 4, 8, 16, 32, 64, 128, 256, 512), registry=r)
        self.queue_depth = Gauge("memoria_embedding_service_queue_depth", "Texts waiting to be encoded",
                                 ["model"], registry=r)
        self.latency = Histogram("memoria_embedding_service_request_seconds",
                                 "Request latency, queue wait included", ["model", "route"],
                                 buckets=(.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5),
                                 registry=r)
        self.encode = Histogram("memoria_embedding_service_encode_seconds", "One model call",
                                ["model"], buckets=(.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5),
                                registry=r)
        self.texts = Counter("memoria_embedding_service_texts", "Texts embedded", ["model"], registry=r)
        self.rejected = Counter("memoria_embedding_service_rejected", "Requests refused",
                                ["model", "reason"], registry=r)
        self.restarts = Counter("memoria_embedding_service_worker_restarts", "Model worker processes replaced",
                                ["model"], registry=r)


class ModelBatcher:
    """Micro-batching over one model: a bounded queue and ``workers`` model workers.

    Each worker is a process of its own (``model_process.ModelProcess``) with its own embedder
    instance (``factory()``, called in the child, so the factory must be picklable): the encode
    runs outside this process's GIL, and two workers encode on two cores. A worker process that
    dies is replaced (the batch it held fails with ``WorkerDied``, 503 to its callers); a watcher
    notices a death between batches within ``watch_s``.
    """

    def __init__(self, name: str, factory: Callable[[], Embedder], *, workers: int = 1, max_batch: int = 64,
                 max_wait_ms: float = 2.0, max_queue: int = 1024, metrics: ServiceMetrics, watch_s: float = 0.5):
        self.name, self.factory = name, factory
        self.workers, self.max_batch, self.max_wait_s = max(1, workers), max(1, max_batch), max_wait_ms / 1000
        self.max_queue = max_queue
        self.metrics = metrics
        self.watch_s = watch_s
        self.dim = 0
        self._queue: asyncio.Queue[_Job] | None = None
        self._pending = 0  # texts queued, not yet taken by a worker
        self._tasks: list[asyncio.Task] = []
        self._pool: ThreadPoolExecutor | None = None   # threads that wait on the worker processes
        self._procs: list[ModelProcess] = []
        self._locks: list[asyncio.Lock] = []           # a process is encoding or being replaced
        self._encode_s = 0.005  # moving average of one batch, for Retry-After
        self._stopping = False

    async def start(self) -> None:
        """Spawn the worker processes and wait until each has loaded its model (seconds)."""
        self._procs = [ModelProcess(self.name, self.factory) for _ in range(self.workers)]
        try:
            await asyncio.gather(*(asyncio.to_thread(p.start) for p in self._procs))
        except BaseException:
            await asyncio.gather(*(asyncio.to_thread(p.stop) for p in self._procs))
            raise
        self.dim = self._procs[0].dim
        self._locks = [asyncio.Lock() for _ in self._procs]
        self._queue = asyncio.Queue()
        self._pool = ThreadPoolExecutor(self.workers, thread_name_prefix=f"embed-{self.name}")
        self._tasks = [asyncio.create_task(self._worker(i)) for i in range(self.workers)]
        self._tasks += [asyncio.create_task(self._watch(i)) for i in range(self.workers)]

    async def stop(self) -> None:
        self._stopping = True  # no replacement from here on
        for t in self._tasks:
            t.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        await asyncio.gather(*(asyncio.to_thread(p.stop) for p in self._procs))
        if self._pool is not None:
            self._pool.shutdown(wait=False, cancel_futures=True)

    @property
    def pids(self) -> list[int | None]:
        """The worker processes' pids (None: not running)."""
        return [p.pid if p.alive else None for p in self._procs]

    @property
    def healthy(self) -> bool:
        return bool(self._procs) and all(p.alive for p in self._procs)

    async def _ensure(self, i: int) -> None:
        """Replace worker ``i``'s process if it is gone (the caller holds its lock)."""
        p = self._procs[i]
        if p.alive or self._stopping:
            return
        log.error("model worker died model=%s pid=%s exit=%s: replacing it", self.name, p.pid,
                  p.exitcode)
        self.metrics.restarts.labels(self.name).inc()
        await asyncio.to_thread(p.stop)
        await asyncio.to_thread(p.start)

    async def _watch(self, i: int) -> None:
        """Notice a worker process that died between batches and replace it."""
        while True:
            await asyncio.sleep(self.watch_s)
            if self._procs[i].alive:
                continue
            async with self._locks[i]:
                try:
                    await self._ensure(i)
                except Exception:  # noqa: BLE001 - could not load the model: health fails, try again
                    log.exception("model worker of %s could not be replaced; retrying", self.name)
                    await asyncio.sleep(max(1.0, self.watch_s))

    @property
    def pending(self) -> int:
        return self._pending

    async def embed(self, texts: Sequence[str], kind: str) -> np.ndarray:
        assert self._queue is not None, "batcher not started"
        texts = list(texts)
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        if self._pending + len(texts) > self.max_queue and self._pending > 0:
            self.metrics.rejected.labels(self.name, "queue_full").inc()
            batches_ahead = self._pending / self.max_batch / self.workers
            raise QueueFull(max(1.0, batches_ahead * self._encode_s))
        fut = asyncio.get_running_loop().create_future()
        self._pending += len(texts)
        self.metrics.queue_depth.labels(self.name).set(self._pending)
        await self._queue.put(_Job(texts, kind, fut))
        return await fut

    async def _take(self, carry: list[_Job]) -> list[_Job]:
        """One job, then whatever arrives within ``max_wait`` up to ``max_batch`` texts.

        A job of the other kind (query/passage) or one that would overflow the
        batch is carried over to this worker's next batch."""
        q = self._queue
        first = carry.pop(0) if carry else await q.get()
        jobs, n = [first], len(first.texts)
        deadline = time.perf_counter() + self.max_wait_s
        while n < self.max_batch and not carry:
            try:
                job = q.get_nowait()
            except asyncio.QueueEmpty:
                left = deadline - time.perf_counter()
                if left <= 0:
                    break
                try:
                    job = await asyncio.wait_for(q.get(), left)
                except asyncio.TimeoutError:
                    break
            if job.kind != first.kind or n + len(job.texts) > self.max_batch:
                carry.append(job)
                break
            jobs.append(job)
            n += len(job.texts)
        return jobs

    async def _worker(self, i: int) -> None:
        loop = asyncio.get_running_loop()
        carry: list[_Job] = []
        while True:
            jobs = await self._take(carry)
            self._pending -= sum(len(j.texts) for j in jobs)
            jobs = [j for j in jobs if not j.future.done()]  # a cancelled caller
            n = sum(len(j.texts) for j in jobs)
            self.metrics.queue_depth.labels(self.name).set(max(self._pending, 0))
            if not jobs:
                continue
            texts = [t for j in jobs for t in j.texts]
            try:
                async with self._locks[i]:
                    await self._ensure(i)
                    t0 = time.perf_counter()
                    vecs, _pid = await loop.run_in_executor(self._pool, self._procs[i].encode, jobs[0].kind, texts)
            except Exception as e:  # noqa: BLE001 - the callers get the error, the worker lives on
                for j in jobs:
                    if not j.future.done():
                        j.future.set_exception(e)
                continue
            dt = time.perf_counter() - t0
            self._encode_s = 0.8 * self._encode_s + 0.2 * dt
            self.metrics.encode.labels(self.name).observe(dt)
            self.metrics.batch_size.labels(self.name).observe(n)
            self.metrics.texts.labels(self.name).inc(n)
            i0 = 0
            for j in jobs:
                if not j.future.done():
                    j.future.set_result(vecs[i0:i0 + len(j.texts)])
                i0 += len(j.texts)


# ------------------------------------------------------------------ config
@dataclass(frozen=True)
class ServiceConfig:
    """What the service serves: models (name → provider) and collections (name → model)."""

    models: dict[str, str]
    collections: dict[str, str]
    workers: int = 1
    max_batch: int = 64
    max_wait_ms: float = 2.0
    max_queue: int = 1024
    threads: int = 1

    @classmethod
    def from_settings(cls, s) -> "ServiceConfig":
        """Collections ``chunks`` (and the chunk alias) → the knowledge model, ``memories`` → the
        memory model; ``MEMORIA_EMBEDDING_SERVICE_MODELS`` adds models (for versioned collections)."""
        from streams.ingest.knowledge import chunk_alias

        chunks = served_name(s.embedding_provider, s.embedding_model)
        memories = served_name(s.memory_embedding_provider, s.memory_embedding_model)
        models = {chunks: s.embedding_provider, memories: s.memory_embedding_provider}
        for name in filter(None, (m.strip() for m in s.embedding_service_models.split(","))):
            if name not in MODEL_PROVIDERS:
                raise ValueError(f"unknown model {name!r} in MEMORIA_EMBEDDING_SERVICE_MODELS "
                                 f"(known: {', '.join(MODEL_PROVIDERS)})")
            models.setdefault(name, MODEL_PROVIDERS[name])
        collections = {"chunks": chunks, chunk_alias(s.vector_domain): chunks, "memories": memories}
        return cls(models=models, collections=collections, workers=s.embedding_service_workers,
                   max_batch=s.embedding_service_max_batch, max_wait_ms=s.embedding_service_max_wait_ms,
                   max_queue=s.embedding_service_max_queue, threads=s.embedding_threads)

    def model_of_collection(self, collection: str) -> str | None:
        """A configured collection, or a versioned chunk collection whose name binds its model."""
        if collection in self.collections:
            return self.collections[collection]
        from streams.ingest.knowledge import model_of

        try:
            model = model_of(collection)
        except ValueError:
            return None
        return model if model in self.models else None


# ------------------------------------------------------------------ the app
class EmbeddingsRequest(BaseModel):
    model: str
    input: str | list[str]
    encoding_format: Literal["float", "base64"] | None = None  # the openai client asks for base64
    # Not in OpenAI's API: how to encode (asymmetric models such as e5). Default: passage.
    input_type: Literal["query", "passage"] = "passage"


class CollectionEmbedRequest(BaseModel):
    input: list[str] = Field(min_length=0)
    kind: Literal["query", "passage"] = "query"
    model: str | None = None       # what the caller believes the collection's model is
    dimension: int | None = None   # what the caller's index expects


def _encoded(vecs: np.ndarray, encoding_format: str) -> list:
    if encoding_format == "base64":  # little-endian float32, as OpenAI sends it
        return [base64.b64encode(v.astype("<f4").tobytes()).decode() for v in vecs]
    return [v.tolist() for v in vecs]


def _refuse_another_space(b: ModelBatcher, collection: str, req: CollectionEmbedRequest,
                          metrics: ServiceMetrics) -> None:
    """409 when the caller's model or dimension is not the collection's: query and index must agree."""
    if req.model is not None and model_slug(req.model) != b.name:
        metrics.rejected.labels(b.name, "model_mismatch").inc()
        raise HTTPException(409, f"collection {collection!r} is embedded with {b.name!r}, "
                                 f"not {req.model!r}: query and index must share one vector space")
    if req.dimension is not None and req.dimension != b.dim:
        metrics.rejected.labels(b.name, "dimension_mismatch").inc()
        raise HTTPException(409, f"collection {collection!r} has dimension {b.dim}, not {req.dimension}")


async def _embed(b: ModelBatcher, texts: list[str], kind: str, route: str,
                 metrics: ServiceMetrics) -> np.ndarray | JSONResponse:
    """The vectors, or 429 with ``Retry-After`` when the model's queue is full."""
    t0 = time.perf_counter()
    try:
        vecs = await b.embed(texts, kind)
    except QueueFull as e:
        return JSONResponse({"error": {"message": str(e), "type": "queue_full"}}, status_code=429,
                            headers={"Retry-After": str(max(1, round(e.retry_after_s)))})
    except WorkerDied as e:  # the process is being replaced: the caller retries
        return JSONResponse({"error": {"message": str(e), "type": "worker_died"}}, status_code=503,
                            headers={"Retry-After": "1"})
    metrics.latency.labels(b.name, route).observe(time.perf_counter() - t0)
    return vecs


def build_service(config: ServiceConfig, *, factories: dict[str, Callable[[], Embedder]]) -> FastAPI:
    """The FastAPI app. ``factories``: model → the constructor of its embedder, one per served model
    (``streams.bootstrap.embedder_factories``; the models load in the workers, on start)."""
    metrics = ServiceMetrics()
    batchers = {
        name: ModelBatcher(name, factories[name], workers=config.workers, max_batch=config.max_batch,
                           max_wait_ms=config.max_wait_ms, max_queue=config.max_queue, metrics=metrics)
        for name in config.models}

    @asynccontextmanager
    async def lifespan(app: FastAPI):
        await asyncio.gather(*(b.start() for b in batchers.values()))
        log.info("embedding service ready models=%s", {n: b.dim for n, b in batchers.items()})
        yield
        await asyncio.gather(*(b.stop() for b in batchers.values()))

    app = FastAPI(title="memoria embedding service", lifespan=lifespan)
    app.state.batchers = batchers
    app.state.metrics = metrics
    app.state.config = config

    def batcher(model: str) -> ModelBatcher:
        b = batchers.get(model) or batchers.get(model_slug(model))
        if b is None:
            raise HTTPException(404, f"model {model!r} not served (served: {', '.join(batchers)})")
        return b

    async def run(b: ModelBatcher, texts: list[str], kind: str, route: str) -> np.ndarray | JSONResponse:
        return await _embed(b, texts, kind, route, metrics)

    @app.post("/v1/embeddings")
    async def embeddings(req: EmbeddingsRequest):
        b = batcher(req.model)
        texts = [req.input] if isinstance(req.input, str) else list(req.input)
        vecs = await run(b, texts, req.input_type, "openai")
        if isinstance(vecs, JSONResponse):
            return vecs
        enc = _encoded(vecs, req.encoding_format)
        # a JSONResponse is sent as built: FastAPI's jsonable_encoder walks every float of a
        # returned dict (150 ms for 256 × 512 floats here, against 4 ms for the same in base64)
        return JSONResponse({"object": "list", "model": b.name,
                             "data": [{"object": "embedding", "index": i, "embedding": e} for i, e in enumerate(enc)],
                             "usage": {"prompt_tokens": sum(len(t.split()) for t in texts),
                                       "total_tokens": sum(len(t.split()) for t in texts)}})

    def resolve(collection: str) -> ModelBatcher:
        model = config.model_of_collection(collection)
        if model is None:
            raise HTTPException(404, f"collection {collection!r} is not configured")
        return batchers[model]

    @app.get("/v1/collections/{collection}")
    async def collection_info(collection: str):
        b = resolve(collection)
        return {"collection": collection, "model": b.name, "dimension": b.dim}

    @app.post("/v1/collections/{collection}/embed")
    async def collection_embed(collection: str, req: CollectionEmbedRequest):
        b = resolve(collection)
        _refuse_another_space(b, collection, req, metrics)
        vecs = await run(b, req.input, req.kind, "collection")
        if isinstance(vecs, JSONResponse):
            return vecs
        # raw little-endian float32 rows would be smaller; JSON keeps the route easy to call
        return JSONResponse({"collection": collection, "model": b.name, "dimension": b.dim, "vectors": vecs.tolist()})

    @app.get("/v1/models")
    async def models():
        return {"object": "list", "data": [{"id": n, "object": "model", "dimension": b.dim}
                                           for n, b in batchers.items()]}

    @app.get("/health")
    async def health():
        """200 while every model worker process runs; 503 while one is gone (it is being replaced)."""
        ok = all(b.healthy for b in batchers.values())
        body = {"status": "ok" if ok else "degraded",
                "models": {n: {"dimension": b.dim, "queue": b.pending, "workers": b.pids}
                           for n, b in batchers.items()}}
        return JSONResponse(body, status_code=200 if ok else 503)

    @app.get("/metrics")
    async def prometheus():
        return Response(generate_latest(metrics.registry), media_type=CONTENT_TYPE_LATEST)

    return app


def serve(app: FastAPI, host: str, port: int) -> None:
    """Run the service app (``Container.embedding_service()``) in this process (blocking) with uvicorn."""
    import uvicorn

    uvicorn.run(app, host=host, port=port, log_level="warning", access_log=False)
