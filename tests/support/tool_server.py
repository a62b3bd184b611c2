"""A real local HTTP tool (the legacy availability lookup) speaking the tool
JSON contract of ``streams/respond/tools.py``, with a configurable delay.

    with ToolServer(delay=5.0) as tool:
        ...  # inbox tools: {"availability_check": {"url": tool.url, ...}}
        assert tool.calls == 1
        tool.requests[0]["arguments"]   # {"date": "2026-12-14", "period": "pernoite", "suite": "master"}

Answer: ``{"answer": ..., "available": bool, "data": {...}}``; ``available``
is false for the suites listed in ``unavailable``; ``status`` other than 200
answers that status (a broken tool).
"""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class ToolServer:
    def __init__(self, delay: float = 0.0, *, unavailable: tuple[str, ...] = (), status: int = 200):
        self.delay = delay
        self.unavailable = set(unavailable)
        self.status = status
        self.requests: list[dict[str, Any]] = []
        self.answered_at: list[float] = []   # wall-clock time each answer was ready (after the delay)
        self._lock = threading.Lock()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *a):  # quiet
                pass

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
                with outer._lock:
                    outer.requests.append(body)
                time.sleep(outer.delay)
                with outer._lock:
                    outer.answered_at.append(time.time())
                if outer.status != 200:
                    payload, status = {"error": "broken"}, outer.status
                else:
                    payload, status = outer.answer(body.get("arguments") or {}), 200
                data = json.dumps(payload, ensure_ascii=False).encode()
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):  # the client gave up (timeout)
                    pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)

    def answer(self, args: dict[str, str]) -> dict[str, Any]:
        suite = args.get("suite")
        when = args.get("date", "a data pedida")
        if when[:4].isdigit():
            when = f"{when[8:10]}/{when[5:7]}"
        period = args.get("period", "período")
        if suite is None:
            return {"answer": f"Sim! Temos suítes disponíveis em {when} ({period}).", "available": True,
                    "data": args}
        if suite in self.unavailable:
            return {"answer": f"Infelizmente a suíte {suite.title()} não está disponível em {when} ({period}).",
                    "available": False, "data": args}
        return {"answer": f"Sim! A suíte {suite.title()} está disponível em {when} ({period}).",
                "available": True, "data": args}

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/availability"

    @property
    def calls(self) -> int:
        with self._lock:
            return len(self.requests)

    def __enter__(self) -> "ToolServer":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._server.shutdown()
        self._server.server_close()
