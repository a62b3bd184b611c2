"""One model worker of the embedding service: a child process that owns one embedder instance.

USE's encode holds the GIL (its tokenizer is pure Python), so model workers as threads of the
HTTP process shared one GIL with each other and with the event loop (request parsing, base64
answers): two threads encoded no more than one, and the encode ran ~25 % slower than in a bare
process. Each worker is therefore a process of its own (``spawn``: a fresh interpreter, no copy
of the parent's threads or sockets), talking to the service over one pipe, one batch at a time:

    parent → child   (kind, texts)                 kind: "query" | "passage"; None: stop
    child → parent   ("ok", vectors, pid) | ("error", message, pid)
    first message    ("ready", dim, pid)  | ("failed", message, pid)   after the model loaded

Lifetime: the child exits when the parent closes its end of the pipe, which the kernel does when
the parent dies by any means (SIGKILL included: the child was given no other copy of that end),
so a killed service leaves no orphan. The child ignores SIGINT and SIGTERM: a Ctrl-C in a terminal
and ``infra/localstack.py down`` (SIGTERM to the process group) reach the whole group, and the
service, not the child, decides when its workers stop (it stops them on its way out).
"""

from __future__ import annotations

import logging
import multiprocessing
import os
import signal
import threading
from typing import Callable, Sequence

import numpy as np

from streams.embedding.port import Embedder, EmbeddingError

log = logging.getLogger(__name__)

_SPAWN = multiprocessing.get_context("spawn")


class WorkerDied(EmbeddingError):
    """The model worker's process is gone (killed, crashed, out of memory) — the batch it was
    encoding is lost; the service replaces the process and the caller may retry."""


def _serve(factory: Callable[[], Embedder], conn) -> None:
    """The child's main: build the embedder, report ready, then encode batches until told to stop."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    pid = os.getpid()
    try:
        embedder = factory()
    except BaseException as e:  # noqa: BLE001 - the parent reports it and refuses to start
        conn.send(("failed", f"{type(e).__name__}: {e}", pid))
        return
    conn.send(("ready", int(embedder.dim), pid))
    while True:
        try:
            msg = conn.recv()
        except (EOFError, OSError):  # the parent is gone
            return
        if msg is None:
            return
        kind, texts = msg
        encode = embedder.embed_queries if kind == "query" else embedder.embed_passages
        try:
            reply = ("ok", np.asarray(encode(texts), dtype=np.float32), pid)
        except Exception as e:  # noqa: BLE001 - a failed batch is the callers' error; the worker lives on
            reply = ("error", f"{type(e).__name__}: {e}", pid)
        try:
            conn.send(reply)
        except (BrokenPipeError, OSError):
            return


class ModelProcess:
    """The parent's handle on one model worker process (blocking calls: run them in a thread).

    ``factory`` must be picklable (a module-level function or a ``functools.partial`` of one): it
    is sent to the child, which calls it to build its embedder.
    """

    def __init__(self, name: str, factory: Callable[[], Embedder]):
        self.name, self.factory = name, factory
        self.dim = 0
        self.pid: int | None = None
        self._proc: multiprocessing.process.BaseProcess | None = None
        self._conn = None
        self._mu = threading.Lock()  # one batch in flight per process

    def start(self, timeout: float = 300.0) -> None:
        """Spawn the child and wait until its model is loaded (seconds)."""
        parent, child = _SPAWN.Pipe()
        proc = _SPAWN.Process(target=_serve, args=(self.factory, child), name=f"embed-{self.name}", daemon=True)
        proc.start()
        child.close()  # the child's end lives in the child only: its death is EOF here
        try:
            if not parent.poll(timeout):
                raise EmbeddingError(f"model worker {self.name} did not load within {timeout:.0f}s")
            status, value, pid = parent.recv()
        except (EOFError, OSError) as e:
            proc.join(5)
            raise WorkerDied(f"model worker {self.name} exited while loading (exit code {proc.exitcode})") from e
        except BaseException:
            proc.kill()
            proc.join(5)
            raise
        if status != "ready":
            proc.join(5)
            raise EmbeddingError(f"model worker {self.name} could not load its model: {value}")
        self._proc, self._conn, self.dim, self.pid = proc, parent, int(value), pid
        log.info("model worker started model=%s pid=%d dim=%d", self.name, pid, self.dim)

    @property
    def alive(self) -> bool:
        return self._proc is not None and self._proc.is_alive()

    @property
    def exitcode(self) -> int | None:
        """The exit code of a process that ended (negative: the signal that killed it)."""
        return self._proc.exitcode if self._proc is not None else None

    def encode(self, kind: str, texts: Sequence[str]) -> tuple[np.ndarray, int]:
        """The batch's vectors and the pid of the process that encoded them."""
        with self._mu:
            if self._conn is None:
                raise WorkerDied(f"model worker {self.name} is not running")
            try:
                self._conn.send((kind, list(texts)))
                status, value, pid = self._conn.recv()
            except (EOFError, OSError) as e:
                code = self._proc.exitcode if self._proc is not None else None
                raise WorkerDied(f"model worker {self.name} (pid {self.pid}) died "
                                 f"(exit code {code}) while encoding {len(texts)} texts") from e
        if status != "ok":
            raise EmbeddingError(value)
        return value, pid

    def stop(self, timeout: float = 5.0) -> None:
        """Ask the child to exit; kill it if it does not in time (it ignores SIGTERM)."""
        proc, conn = self._proc, self._conn
        self._proc = self._conn = None
        if conn is not None:
            try:
                conn.send(None)
            except (BrokenPipeError, OSError):
                pass
            conn.close()
        if proc is None:
            return
        proc.join(timeout)
        if proc.is_alive():
            proc.kill()
            proc.join(timeout)
        proc.close()
