"""Benchmarks that run the worker against ``memoria embedding-service`` (BENCH_EMBEDDING_SERVICE=1)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import httpx

from tests.harness import Env, free_port, wait_until


def wanted(default: bool = False) -> bool:
    """BENCH_EMBEDDING_SERVICE=1 / 0; unset or empty: ``default``."""
    value = os.environ.get("BENCH_EMBEDDING_SERVICE", "")
    return default if value == "" else value not in ("0", "false")


def encode_seconds(url: str) -> float:
    """Seconds the service has spent in model calls so far (all models), from its /metrics."""
    total = 0.0
    for line in httpx.get(f"{url}/metrics", timeout=5).text.splitlines():
        if line.startswith("memoria_embedding_service_encode_seconds_sum"):
            total += float(line.rsplit(" ", 1)[1])
    return total


def pids(proc: subprocess.Popen, url: str) -> list[int]:
    """The service's process and its model worker processes (from /health), whose CPU is the service's."""
    models = httpx.get(f"{url}/health", timeout=5).json().get("models", {})
    return [proc.pid] + [pid for m in models.values() for pid in m.get("workers", []) if pid]


def start(env: Env, tmp: Path) -> tuple[subprocess.Popen, str]:
    """Start the service on a free port; returns the process and its URL."""
    port = free_port()
    log = open(tmp / "embedding-service.log", "ab")
    repo = str(Path(__file__).resolve().parent.parent)  # this checkout's code, not the venv's editable install
    path = os.pathsep.join(p for p in (repo, os.environ.get("PYTHONPATH", "")) if p)
    proc = subprocess.Popen([str(Path(sys.executable).parent / "memoria"), "embedding-service", "--port", str(port)],
                            stdout=log, stderr=subprocess.STDOUT, env={**os.environ, **env.env, "PYTHONPATH": path},
                            start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    wait_until(lambda: proc.poll() is None and httpx.get(f"{url}/health", timeout=1).status_code == 200, 120,
               what="embedding service")
    return proc, url


def stop(proc: subprocess.Popen | None) -> None:
    if proc is not None and proc.poll() is None:
        proc.terminate()
        proc.wait(30)
