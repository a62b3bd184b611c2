"""The embedding service over the real models: OpenAI-compatible route (called
with the official ``openai`` client), collection-aware route with mismatch
refusals, micro-batching, back-pressure, and its client's errors by kind."""

from __future__ import annotations

import asyncio
import threading
import time

import httpx
import numpy as np
import pytest

from streams.bootstrap import embedder_factories
from streams.embedding.client import EmbeddingUnavailable, ServiceEmbedder
from streams.embedding.port import EmbeddingError
from streams.embedding.service import ServiceConfig, build_service
from streams.kafka.errors import DependencyUnavailable
from streams.settings import Settings
from tests.harness import free_port, wait_until
from tests.support.embedders import use_embedder

USE = "use-multilingual-v3"
pytestmark = pytest.mark.slow  # loads the models and serves them over HTTP


class Server:
    """The service app under uvicorn in a thread, on a free port."""

    def __init__(self, config: ServiceConfig, port: int | None = None):
        import uvicorn

        self.port = port or free_port()
        self.app = build_service(config, factories=embedder_factories(config))
        self.server = uvicorn.Server(uvicorn.Config(self.app, host="127.0.0.1", port=self.port,
                                                    log_level="warning", access_log=False))
        self.thread = threading.Thread(target=self.server.run, daemon=True)
        self.url = f"http://127.0.0.1:{self.port}"

    def __enter__(self):
        self.thread.start()
        wait_until(lambda: httpx.get(f"{self.url}/health", timeout=1).status_code == 200, 120,
                   what="embedding service health")
        return self

    def __exit__(self, *exc):
        self.server.should_exit = True
        self.thread.join(30)

    def metric(self, name: str) -> float:
        for line in httpx.get(f"{self.url}/metrics").text.splitlines():
            if line.startswith(name + " ") or line.startswith(name + "{"):
                return float(line.rsplit(" ", 1)[1])
        raise KeyError(name)


def config(**kw) -> ServiceConfig:
    return ServiceConfig.from_settings(Settings(**kw))


@pytest.fixture(scope="module")
def service():
    with Server(config(embedding_service_max_wait_ms=20)) as s:
        yield s


def test_openai_compatible_route_with_the_openai_client(service):
    from openai import OpenAI

    client = OpenAI(base_url=f"{service.url}/v1", api_key="unused")
    texts = ["quanto custa o pernoite?", "Vocês aceitam cachorro?"]
    resp = client.embeddings.create(model=USE, input=texts)
    got = np.array([d.embedding for d in sorted(resp.data, key=lambda d: d.index)], dtype=np.float32)
    local = use_embedder().embed_passages(texts)
    assert got.shape == (2, 512)
    assert np.allclose(got, local, atol=1e-5)
    # a single string is accepted too; an unknown model is a 404
    assert len(client.embeddings.create(model=USE, input="olá").data[0].embedding) == 512
    r = httpx.post(f"{service.url}/v1/embeddings", json={"model": "text-embedding-3-small", "input": "x"})
    assert r.status_code == 404 and "not served" in r.text
    # numbers when asked for floats (or nothing), the same vectors as base64
    floats = httpx.post(f"{service.url}/v1/embeddings",
                        json={"model": USE, "input": texts, "input_type": "passage", "encoding_format": "float"}).json()
    assert all(isinstance(x, float) for x in floats["data"][0]["embedding"])
    assert np.allclose([d["embedding"] for d in floats["data"]], local, atol=1e-5)


def test_collection_route_resolves_the_model_and_refuses_a_mismatch(service):
    info = httpx.get(f"{service.url}/v1/collections/chunks").json()
    assert info == {"collection": "chunks", "model": USE, "dimension": 512}
    ok = httpx.post(f"{service.url}/v1/collections/memories/embed",
                    json={"input": ["prefere suíte Master"], "kind": "query", "model": USE, "dimension": 512})
    assert ok.status_code == 200
    body = ok.json()
    assert body["model"] == USE and body["dimension"] == 512 and len(body["vectors"][0]) == 512
    # a versioned chunk collection binds its model in its name
    named = httpx.post(f"{service.url}/v1/collections/memoria__text__chunks__{USE}__v2/embed",
                       json={"input": ["a"]})
    assert named.status_code == 200
    wrong_model = httpx.post(f"{service.url}/v1/collections/chunks/embed",
                             json={"input": ["a"], "model": "all-minilm-l6-v2"})
    assert wrong_model.status_code == 409 and "one vector space" in wrong_model.text
    wrong_dim = httpx.post(f"{service.url}/v1/collections/chunks/embed", json={"input": ["a"], "dimension": 384})
    assert wrong_dim.status_code == 409 and "dimension 512" in wrong_dim.text
    unknown = httpx.post(f"{service.url}/v1/collections/nope/embed", json={"input": ["a"]})
    assert unknown.status_code == 404
    assert service.metric('memoria_embedding_service_rejected_total{model="use-multilingual-v3",'
                          'reason="model_mismatch"}') >= 1


def test_concurrent_requests_are_micro_batched(service):
    before_calls = service.metric('memoria_embedding_service_batch_size_count{model="use-multilingual-v3"}')
    before_texts = service.metric('memoria_embedding_service_batch_size_sum{model="use-multilingual-v3"}')

    async def burst():
        async with httpx.AsyncClient(base_url=service.url, timeout=30) as c:
            rs = await asyncio.gather(*(c.post("/v1/embeddings", json={"model": USE, "input": [f"mensagem {i}"]})
                                        for i in range(40)))
        return rs

    rs = asyncio.run(burst())
    assert all(r.status_code == 200 for r in rs)
    # each caller gets its own text's vector back
    local = use_embedder().embed_passages(["mensagem 7"])[0]
    assert np.allclose(np.array(rs[7].json()["data"][0]["embedding"]), local, atol=1e-5)
    calls = service.metric('memoria_embedding_service_batch_size_count{model="use-multilingual-v3"}') - before_calls
    texts = service.metric('memoria_embedding_service_batch_size_sum{model="use-multilingual-v3"}') - before_texts
    assert texts == 40
    assert calls < 40 and texts / calls > 1, f"{texts} texts in {calls} model calls: no batching"


def test_full_queue_answers_429_with_retry_after():
    # a small queue and a long batching wait: the first request holds the queue while the others arrive
    with Server(config(embedding_service_max_queue=8, embedding_service_max_batch=8,
                       embedding_service_max_wait_ms=300)) as s:
        async def burst():
            async with httpx.AsyncClient(base_url=s.url, timeout=30) as c:
                return await asyncio.gather(*(c.post("/v1/embeddings",
                                                     json={"model": USE, "input": [f"a {i}", f"b {i}", f"c {i}"]})
                                              for i in range(12)))

        rs = asyncio.run(burst())
        codes = [r.status_code for r in rs]
        assert codes.count(200) >= 2 and codes.count(429) >= 1, codes
        refused = next(r for r in rs if r.status_code == 429)
        assert int(refused.headers["Retry-After"]) >= 1
        assert refused.json()["error"]["type"] == "queue_full"
        assert s.metric('memoria_embedding_service_rejected_total{model="use-multilingual-v3",'
                        'reason="queue_full"}') >= 1
        assert s.metric('memoria_embedding_service_queue_depth{model="use-multilingual-v3"}') == 0
        # the client waits out a 429 (Retry-After) instead of failing
        emb = ServiceEmbedder(s.url, USE, passage_patience_s=30)

        def hammer(i):
            return emb.embed_passages([f"x {i} {j}" for j in range(3)])

        async def clients():
            return await asyncio.gather(*(asyncio.to_thread(hammer, i) for i in range(12)))

        out = asyncio.run(clients())
        assert all(v.shape == (3, 512) for v in out)


def test_client_errors_by_kind(service):
    emb = ServiceEmbedder(service.url, USE)
    assert emb.dim == 512 and emb.name == USE
    v = emb.embed_queries(["quanto custa o pernoite?"])
    assert np.allclose(v, use_embedder().embed_queries(["quanto custa o pernoite?"]), atol=1e-5)
    # a service that does not serve the expected model: refused at once, not "unavailable"
    with pytest.raises(EmbeddingError) as refused:
        _ = ServiceEmbedder(service.url, "multilingual-e5-small").dim
    assert not isinstance(refused.value, DependencyUnavailable)
    # nobody listening: retried within the patience, then unavailable (a dependency, never dead-lettered)
    down = ServiceEmbedder(f"http://127.0.0.1:{free_port()}", USE, passage_patience_s=0.5, query_patience_s=0.2)
    t = time.perf_counter()
    with pytest.raises(EmbeddingUnavailable) as e:
        down.embed_passages(["a"])
    assert isinstance(e.value, DependencyUnavailable)
    assert 0.4 <= time.perf_counter() - t < 5
    assert "attempt" in str(e.value)


def test_service_config_from_settings():
    cfg = config(embedding_provider="sentence-transformers", embedding_model="all-minilm-l6-v2",
                 memory_embedding_provider="use", memory_embedding_model=USE,
                 embedding_service_models="multilingual-e5-small", embedding_service_workers=2)
    assert cfg.models == {"all-minilm-l6-v2": "sentence-transformers", USE: "use",
                          "multilingual-e5-small": "e5"}
    assert cfg.collections["chunks"] == "all-minilm-l6-v2" and cfg.collections["memories"] == USE
    assert cfg.model_of_collection("memoria__text__chunks__multilingual-e5-small__v3") == "multilingual-e5-small"
    assert cfg.model_of_collection("memoria__text__chunks__unknown-model") is None
    assert cfg.workers == 2
    with pytest.raises(ValueError, match="unknown model"):
        config(embedding_service_models="gpt-embeddings")


def test_the_client_asks_for_base64_and_reads_numbers_from_a_server_that_ignores_it():
    """The client's vectors travel as base64 (a JSON array of 131,072 numbers per batch of 256 cost
    both processes ~170 ms here); a server that answers numbers anyway is read all the same."""
    import json
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    asked: list[dict] = []

    class NumbersOnly(BaseHTTPRequestHandler):
        def log_message(self, *a):
            pass

        def do_POST(self):  # noqa: N802
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            asked.append(body)
            raw = json.dumps({"data": [{"index": i, "embedding": [3.0, 4.0]} for i in range(len(body["input"]))][::-1]
                              }).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(raw)))
            self.end_headers()
            self.wfile.write(raw)

    srv = ThreadingHTTPServer(("127.0.0.1", 0), NumbersOnly)
    threading.Thread(target=srv.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    try:
        v = ServiceEmbedder(f"http://127.0.0.1:{srv.server_address[1]}", "m").embed_passages(["a", "b"])
    finally:
        srv.shutdown()
    assert asked[0]["encoding_format"] == "base64" and asked[0]["input_type"] == "passage"
    assert v.shape == (2, 2) and np.allclose(v, [[0.6, 0.8], [0.6, 0.8]])


def test_a_batch_in_parts_through_the_service_has_the_local_vectors_and_is_counted_as_encoding(service):
    """What the ingest worker does through the service (``passages_in_parts``): every part in flight
    at once, answered in order with the local model's vectors; the benchmark reads the service's
    encoding time from /metrics."""
    from benchmarks.service import encode_seconds
    from streams.embedding.parts import passages_in_parts

    texts = [f"A suíte {i} tem hidromassagem e custa R$ {100 + i}." for i in range(10)]
    client = ServiceEmbedder(service.url, USE)
    before = encode_seconds(service.url)
    def batches() -> float:
        try:
            return service.metric('memoria_embedding_service_batch_size_count{model="use-multilingual-v3"}')
        except KeyError:  # no batch yet
            return 0.0

    calls = batches()
    parts = list(passages_in_parts(client, texts, part=4))
    assert [s for s, _ in parts] == [0, 4, 8]
    assert np.allclose(np.vstack([v for _, v in parts]), use_embedder().embed_passages(texts), atol=1e-5)
    # three requests of at most 4 texts: the service encodes 1 to 3 batches (it may group them)
    assert 1 <= batches() - calls <= 3
    assert encode_seconds(service.url) > before


def test_the_benchmark_embeds_through_the_service_unless_told_not_to(monkeypatch):
    from benchmarks.service import wanted

    monkeypatch.delenv("BENCH_EMBEDDING_SERVICE", raising=False)
    assert wanted(default=True) and not wanted()
    monkeypatch.setenv("BENCH_EMBEDDING_SERVICE", "0")
    assert not wanted(default=True)
    monkeypatch.setenv("BENCH_EMBEDDING_SERVICE", "1")
    assert wanted()


# ------------------------------------------------------------------ model workers as processes
def _stat(pid: int) -> list[str]:
    """/proc/<pid>/stat after the command name: state, ppid, ... (utime, stime at 11, 12)."""
    from pathlib import Path

    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()


def _gone(pid: int) -> bool:
    """The process has exited (a zombie waiting for its reaper counts as exited)."""
    try:
        return _stat(pid)[0] in ("Z", "X")
    except FileNotFoundError:
        return True


def _workers(url: str) -> list[int]:
    return httpx.get(f"{url}/health", timeout=5).json()["models"][USE]["workers"]


def _cpu(pid: int) -> float:
    import os

    fields = _stat(pid)
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def test_the_model_encodes_in_worker_processes_of_its_own(service):
    import os

    from streams.embedding.model_process import ModelProcess

    pids = _workers(service.url)
    assert len(pids) == 1 and pids[0] != os.getpid()
    assert int(_stat(pids[0])[1]) == os.getpid()  # the service (a thread here) spawned it
    # the encoding's CPU is spent in the worker process
    before = _cpu(pids[0])
    texts = [f"A suíte {i} tem hidromassagem e custa R$ {100 + i}." for i in range(300)]
    r = httpx.post(f"{service.url}/v1/embeddings", json={"model": USE, "input": texts}, timeout=60)
    assert r.status_code == 200 and len(r.json()["data"]) == 300
    assert _cpu(pids[0]) > before
    # a worker reports which process encoded each batch: its own, not the caller's
    p = ModelProcess(USE, embedder_factories(config())[USE])
    p.start()
    try:
        vecs, pid = p.encode("query", ["quanto custa o pernoite?"])
        assert pid == p.pid != os.getpid()
        assert np.allclose(vecs, use_embedder().embed_queries(["quanto custa o pernoite?"]), atol=1e-5)
    finally:
        p.stop()
    assert _gone(pid)


def test_a_worker_process_that_dies_fails_its_batch_and_is_replaced():
    import signal

    with Server(config()) as s:
        old = _workers(s.url)[0]
        # killed while encoding: that request gets 503 worker_died (the client retries it) ...
        big = [f"mensagem longa número {i} sobre a suíte e o pernoite" for i in range(3000)]
        box: dict = {}
        t = threading.Thread(target=lambda: box.update(r=httpx.post(
            f"{s.url}/v1/embeddings", json={"model": USE, "input": big}, timeout=120)))
        busy0 = _cpu(old)
        t.start()
        wait_until(lambda: _cpu(old) > busy0 + 0.3, 60, interval=0.05, what="the worker encoding")
        import os

        os.kill(old, signal.SIGKILL)
        t.join(60)
        assert box["r"].status_code == 503 and box["r"].json()["error"]["type"] == "worker_died"
        assert box["r"].headers["Retry-After"] == "1"
        # ... the service lives on: a new process replaces it, health is ok again, and it encodes
        new = wait_until(lambda: httpx.get(f"{s.url}/health").status_code == 200 and _workers(s.url)[0], 120,
                         what="a replacement worker")
        assert new != old and _gone(old)
        v = ServiceEmbedder(s.url, USE).embed_queries(["quanto custa o pernoite?"])
        assert np.allclose(v, use_embedder().embed_queries(["quanto custa o pernoite?"]), atol=1e-5)
        # killed between batches: noticed without any request (health 503 until it is back)
        os.kill(new, signal.SIGKILL)
        newer = wait_until(lambda: httpx.get(f"{s.url}/health").status_code == 200 and _workers(s.url)[0], 120,
                           what="a second replacement")
        assert newer not in (old, new)
        assert s.metric('memoria_embedding_service_worker_restarts_total{model="use-multilingual-v3"}') == 2


def test_no_worker_process_outlives_the_service(tmp_path):
    import os
    import signal
    import subprocess
    import sys
    from pathlib import Path

    # stopped: the workers are stopped with it
    with Server(config(embedding_service_workers=2)) as s:
        pids = _workers(s.url)
        assert len(set(pids)) == 2
    assert all(_gone(p) for p in pids)
    # killed (SIGKILL, no shutdown code runs): the workers see their pipe close and exit
    port = free_port()
    repo = str(Path(__file__).resolve().parents[2])
    proc = subprocess.Popen([str(Path(sys.executable).parent / "memoria"), "embedding-service", "--port", str(port),
                             "--workers", "2"], env={**os.environ, "PYTHONPATH": repo},
                            stdout=open(tmp_path / "service.log", "wb"), stderr=subprocess.STDOUT,
                            start_new_session=True)
    try:
        url = f"http://127.0.0.1:{port}"
        wait_until(lambda: proc.poll() is None and httpx.get(f"{url}/health", timeout=1).status_code == 200, 120,
                   what="the embedding service")
        pids = _workers(url)
        assert len(set(pids)) == 2
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(30)
        wait_until(lambda: all(_gone(p) for p in pids), 30, what="the orphaned workers exiting")
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(30)
