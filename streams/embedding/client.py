"""The client of the embedding service (``MEMORIA_EMBEDDING_SERVICE_URL``).

An ``Embedder`` like the in-process providers, so the worker, the responder
and the CLI use it unchanged. Errors by kind:

* the service is unreachable, overloaded (429, honouring ``Retry-After``) or
  failing (5xx) → retried with backoff within ``patience_s``, then
  ``EmbeddingUnavailable`` (a ``DependencyUnavailable``: consumers wait and
  retry the same records, they never dead-letter for it);
* the service refuses the request (another model or dimension, unknown
  model: 4xx) → ``EmbeddingError`` at once (retrying cannot help).

Queries (the responder, inside its latency budget) use a short timeout and
little patience; passages (ingestion, learning) wait longer.
"""

from __future__ import annotations

import base64
import logging
import threading
import time
from typing import Sequence

import httpx
import numpy as np

from streams.embedding.port import EmbeddingError, normalise
from streams.kafka.errors import DependencyUnavailable

log = logging.getLogger(__name__)


def _vector(embedding: str | list[float]) -> np.ndarray:
    """One row of an ``/v1/embeddings`` answer: base64 of little-endian float32, or a list of numbers
    (a server that ignores ``encoding_format``)."""
    if isinstance(embedding, str):
        return np.frombuffer(base64.b64decode(embedding), dtype="<f4").astype(np.float32)
    return np.asarray(embedding, dtype=np.float32)


class EmbeddingUnavailable(EmbeddingError, DependencyUnavailable):
    """The embedding service cannot answer now (down, overloaded, failing)."""

    def __init__(self, message: str):
        DependencyUnavailable.__init__(self, "embedding", message)


class ServiceEmbedder:
    out_of_process = True   # the model runs in the service: callers may overlap their calls with other work

    def __init__(self, base_url: str, model: str, *, query_timeout_s: float = 2.0,
                 passage_timeout_s: float = 30.0, query_patience_s: float = 0.25,
                 passage_patience_s: float = 15.0, batch_size: int = 256):
        self.base_url = base_url.rstrip("/")
        self.name = model
        self.query_timeout_s, self.passage_timeout_s = query_timeout_s, passage_timeout_s
        self.query_patience_s, self.passage_patience_s = query_patience_s, passage_patience_s
        self.batch_size = batch_size
        self._client = httpx.Client(base_url=self.base_url,
                                    limits=httpx.Limits(max_connections=64, max_keepalive_connections=32))
        self._dim: int | None = None
        self._lock = threading.Lock()

    # -- dimension, from the service (the same model's size everywhere) ---------
    @property
    def dim(self) -> int:
        if self._dim is None:
            with self._lock:
                if self._dim is None:
                    body = self._request("GET", "/v1/models", None, self.query_timeout_s, self.passage_patience_s)
                    dims = {m["id"]: int(m["dimension"]) for m in body["data"]}
                    if self.name not in dims:
                        raise EmbeddingError(f"the embedding service at {self.base_url} does not serve "
                                             f"{self.name!r} (it serves {', '.join(dims) or 'nothing'})")
                    self._dim = dims[self.name]
        return self._dim

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        return self._embed(texts, "query", self.query_timeout_s, self.query_patience_s)

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        return self._embed(texts, "passage", self.passage_timeout_s, self.passage_patience_s)

    def _embed(self, texts: Sequence[str], kind: str, timeout: float, patience: float) -> np.ndarray:
        texts = list(texts)
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        parts = []
        for i in range(0, len(texts), self.batch_size):
            # base64 (little-endian float32, as OpenAI sends it): 256 vectors of 512 floats cost the
            # two processes ~7 ms this way against ~170 ms as JSON numbers
            body = self._request("POST", "/v1/embeddings",
                                 {"model": self.name, "input": texts[i:i + self.batch_size], "input_type": kind,
                                  "encoding_format": "base64"},
                                 timeout, patience)
            data = sorted(body["data"], key=lambda d: d["index"])
            parts.append(np.vstack([_vector(d["embedding"]) for d in data]))
        out = normalise(np.vstack(parts))
        if self._dim is None:
            self._dim = int(out.shape[1])
        return out

    def _request(self, method: str, path: str, payload: dict | None, timeout: float, patience: float) -> dict:
        deadline = time.monotonic() + patience
        delay = 0.05
        attempt = 0
        while True:
            attempt += 1
            try:
                r = self._client.request(method, path, json=payload, timeout=timeout)
            except httpx.HTTPError as e:  # connection refused, timeout, reset
                problem, wait = f"{type(e).__name__}: {e}", delay
            else:
                if r.status_code < 300:
                    return r.json()
                if r.status_code == 429 or r.status_code >= 500:
                    problem = f"HTTP {r.status_code}: {r.text[:200]}"
                    wait = float(r.headers.get("Retry-After", delay)) if r.status_code == 429 else delay
                else:  # refused: another model or dimension, bad request
                    raise EmbeddingError(f"embedding service refused {path}: HTTP {r.status_code}: {r.text[:500]}")
            left = deadline - time.monotonic()
            if left <= 0:
                raise EmbeddingUnavailable(f"embedding service {self.base_url} unavailable after {attempt} "
                                           f"attempt(s): {problem}")
            log.warning("embedding service attempt=%d failed (%s); retrying in %.2fs", attempt, problem,
                        min(wait, left))
            time.sleep(min(wait, left))
            delay = min(delay * 2, 2.0)

    def close(self) -> None:
        self._client.close()
