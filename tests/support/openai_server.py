"""A real local HTTP server that speaks the OpenAI chat completions API, with
scripted answers, for tests that must not reach a real model.

    from tests.support.openai_server import FakeOpenAI, Reply

    with FakeOpenAI([Reply.json({"facts": []}, prompt_tokens=50, completion_tokens=5),
                     Reply.error(500), Reply.text("not json")]) as server:
        client = openai.OpenAI(base_url=server.base_url, api_key="test")
        ...
        assert server.chat_count == 1
        body = server.chat_requests[0]          # the decoded JSON request body

API (small on purpose):
- ``FakeOpenAI(replies=(), default=None)``: context manager; binds 127.0.0.1 on a
  free port; ``.base_url`` ends in ``/v1``.
- ``Reply.json(obj_or_str, ...)`` / ``Reply.text(str, finish_reason="stop")``:
  a 200 chat completion whose message content is that text.
  ``Reply.error(status, message)``: an OpenAI-shaped error body with that status.
  Every reply accepts ``delay=seconds`` (sleep before answering: triggers client
  timeouts) and ``prompt_tokens`` / ``completion_tokens`` (the usage figures;
  ``None`` estimates them from the request and the answer, ~4 characters a token).
- ``.push(*replies)`` queues more replies. When the queue is empty the server
  answers ``default`` if given, else HTTP 500 "no scripted reply".
- ``.requests``: every request as ``(path, body)``; ``.chat_requests``: bodies of
  ``POST /v1/chat/completions``; ``.chat_count``.
- ``POST /v1/embeddings`` answers deterministic unit vectors (dimension 8,
  hashed from the text); it does not consume the reply queue.
"""

from __future__ import annotations

import hashlib
import json
import math
import threading
import time
from collections import deque
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Iterable


@dataclass(frozen=True)
class Reply:
    status: int = 200
    content: str | None = None
    finish_reason: str = "stop"
    delay: float = 0.0
    prompt_tokens: int | None = 10       # None: estimated from the request (characters / 4)
    completion_tokens: int | None = 5    # None: estimated from the content (characters / 4)
    error_message: str = "scripted error"

    @classmethod
    def json(cls, obj: Any, **kw: Any) -> "Reply":
        text = obj if isinstance(obj, str) else json.dumps(obj, ensure_ascii=False)
        return cls(content=text, **kw)

    @classmethod
    def text(cls, text: str, **kw: Any) -> "Reply":
        return cls(content=text, **kw)

    @classmethod
    def error(cls, status: int = 500, message: str = "scripted error", **kw: Any) -> "Reply":
        return cls(status=status, error_message=message, **kw)


class FakeOpenAI:
    def __init__(self, replies: Iterable[Reply] = (), default: Reply | None = None):
        self._queue: deque[Reply] = deque(replies)
        self._lock = threading.Lock()
        self.default = default
        self.requests: list[tuple[str, Any]] = []
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- scripting ------------------------------------------------------------
    def push(self, *replies: Reply) -> None:
        with self._lock:
            self._queue.extend(replies)

    def _next(self) -> Reply:
        with self._lock:
            if self._queue:
                return self._queue.popleft()
        return self.default or Reply.error(500, "no scripted reply")

    # -- inspection -----------------------------------------------------------
    @property
    def chat_requests(self) -> list[Any]:
        return [body for path, body in self.requests if path.endswith("/chat/completions")]

    @property
    def chat_count(self) -> int:
        return len(self.chat_requests)

    @property
    def base_url(self) -> str:
        assert self._server is not None, "server not started"
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}/v1"

    # -- lifecycle ------------------------------------------------------------
    def start(self) -> "FakeOpenAI":
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:  # keep test output quiet
                pass

            def _send(self, status: int, payload: Any) -> None:
                data = json.dumps(payload).encode()
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (timeout)

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                try:
                    body = json.loads(raw or b"{}")
                except json.JSONDecodeError:
                    body = raw.decode(errors="replace")
                with fake._lock:
                    fake.requests.append((self.path, body))
                if self.path.endswith("/embeddings"):
                    self._send(200, _embeddings(body))
                    return
                if not self.path.endswith("/chat/completions"):
                    self._send(404, {"error": {"message": f"unknown path {self.path}", "type": "not_found"}})
                    return
                reply = fake._next()
                if reply.delay:
                    time.sleep(reply.delay)
                if reply.status != 200:
                    self._send(reply.status, {"error": {"message": reply.error_message, "type": "server_error", "code": None}})
                    return
                self._send(200, {
                    "id": f"chatcmpl-fake-{len(fake.requests)}",
                    "object": "chat.completion",
                    "created": int(time.time()),
                    "model": body.get("model", "fake") if isinstance(body, dict) else "fake",
                    "choices": [{
                        "index": 0,
                        "message": {"role": "assistant", "content": reply.content},
                        "finish_reason": reply.finish_reason,
                    }],
                    "usage": _usage(reply, body),
                })

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05},
                                        name="fake-openai", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> "FakeOpenAI":
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()


def estimate_tokens(text: str) -> int:
    """OpenAI's rule of thumb, about 4 characters per token (no tokenizer ships offline)."""
    return math.ceil(len(text) / 4)


def _usage(reply: Reply, body: Any) -> dict:
    prompt = reply.prompt_tokens
    if prompt is None:
        parts = [str(m.get("content", "")) for m in body.get("messages", [])] if isinstance(body, dict) else []
        schema = json.dumps(body.get("response_format", {}), ensure_ascii=False) if isinstance(body, dict) else ""
        prompt = estimate_tokens("".join(parts) + schema) + 4 * len(parts)  # + per-message framing
    completion = reply.completion_tokens
    if completion is None:
        completion = estimate_tokens(reply.content or "")
    return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}


def _vector(text: str, dim: int = 8) -> list[float]:
    digest = hashlib.sha256(text.encode()).digest()
    v = [(b - 127.5) / 127.5 for b in digest[:dim]]
    norm = math.sqrt(sum(x * x for x in v)) or 1.0
    return [x / norm for x in v]


def _embeddings(body: Any) -> dict:
    inputs = body.get("input", []) if isinstance(body, dict) else []
    if isinstance(inputs, str):
        inputs = [inputs]
    return {
        "object": "list",
        "data": [{"object": "embedding", "index": i, "embedding": _vector(str(t))} for i, t in enumerate(inputs)],
        "model": body.get("model", "fake") if isinstance(body, dict) else "fake",
        "usage": {"prompt_tokens": sum(len(str(t).split()) for t in inputs), "total_tokens": 0},
    }
