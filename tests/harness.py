"""Test harness against the real local stack (Tansu, embedded Postgres, Qdrant local).

Each ``Env`` is isolated: its own database (migrated), topic prefix, consumer
group, Qdrant path and ports, so tests never see each other's data and can
run while ``make up``'s worker is running.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Callable

import httpx
import psycopg

from streams.settings import REPO_ROOT, Settings

# Test databases are created on the stack's Postgres (MEMORIA_DATABASE_URL's server, database
# "postgres"), so a shell with its own stack ports never touches the default one.
ADMIN_URL = os.environ.get("MEMORIA_TEST_ADMIN_URL") or Settings().database_url.rsplit("/", 1)[0] + "/postgres"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_until(fn: Callable[[], object], timeout: float = 60.0, interval: float = 0.2, what: str = "") -> object:
    deadline = time.time() + timeout
    last = None
    while time.time() < deadline:
        try:
            last = fn()
            if last:
                return last
        except Exception as e:  # keep polling; report the last error
            last = e
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout}s waiting for {what or fn}: last={last!r}")


class Env:
    def __init__(self, tmp: Path, name: str = "t"):
        import re

        tag = f"{re.sub('[^a-z0-9_]', '_', name.lower())}_{uuid.uuid4().hex[:8]}"
        self.tag = tag
        self.dbname = f"memoria_{tag}"
        with psycopg.connect(ADMIN_URL, autocommit=True) as c:
            c.execute(f'CREATE DATABASE "{self.dbname}"')
        base = Settings()
        self.env = {
            "MEMORIA_DATABASE_URL": ADMIN_URL.rsplit("/", 1)[0] + "/" + self.dbname,
            "MEMORIA_TOPIC_PREFIX": f"{tag}.",
            "MEMORIA_CONSUMER_GROUP": f"memoria-{tag}",
            "MEMORIA_QDRANT_PATH": str(tmp / "qdrant"),
            "MEMORIA_WORKER_WEB_PORT": str(free_port()),
            "MEMORIA_METRICS_PORT": str(free_port()),
            "MEMORIA_KAFKA_BOOTSTRAP_SERVERS": base.kafka_bootstrap_servers,
            "MEMORIA_KAFKA_SESSION_TIMEOUT": "3",
            "MEMORIA_KAFKA_REBALANCE_TIMEOUT": "3",
            "MEMORIA_RELAY_POLL_INTERVAL": "0.5",
        }
        self.settings = Settings(**{k[len("MEMORIA_"):].lower(): v for k, v in self.env.items()})
        from streams.kafka.topics import create_topics_sync
        from streams.store.db import migrate

        migrate(self.settings.database_url)
        create_topics_sync(self.settings)
        self.workers: list[subprocess.Popen] = []

    # -- database ---------------------------------------------------------
    def conn(self) -> psycopg.Connection:
        from streams.store.db import connect

        return connect(self.settings, autocommit=True)

    def q(self, sql: str, *args):
        with self.conn() as c:
            cur = c.execute(sql, args or None)
            return cur.fetchall() if cur.description else cur.rowcount

    # -- processes ----------------------------------------------------------
    def memoria(self, *args: str, check: bool = True, timeout: float = 300, **kw) -> subprocess.CompletedProcess:
        env = {**os.environ, **self.env, **kw.pop("env", {})}
        return subprocess.run([str(Path(sys.executable).parent / "memoria"), *args], env=env,
                              capture_output=True, text=True, check=check, timeout=timeout, cwd=REPO_ROOT, **kw)

    def start_worker(self, roles: str = "relay,ingest", extra_env: dict | None = None,
                     log_name: str = "worker") -> subprocess.Popen:
        env = {**os.environ, **self.env, **(extra_env or {})}
        # this checkout's code, also when a benchmark (not pytest's conftest) starts the worker:
        # the shared venv's editable install points at another checkout
        env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO_ROOT), env.get("PYTHONPATH", "")) if p)
        log = open(Path(self.env["MEMORIA_QDRANT_PATH"]).parent / f"{log_name}.log", "ab")
        p = subprocess.Popen([str(Path(sys.executable).parent / "memoria"), "worker", "--roles", roles],
                             env=env, stdout=log, stderr=subprocess.STDOUT, cwd=REPO_ROOT,
                             start_new_session=True)
        self.workers.append(p)
        port = int(env["MEMORIA_WORKER_WEB_PORT"])
        wait_until(lambda: p.poll() is None and httpx.get(f"http://127.0.0.1:{port}/health", timeout=1)
                   .status_code == 200, timeout=90, what="worker health")
        if p.poll() is not None:
            raise AssertionError(f"worker exited: see {log.name}")
        return p

    def worker_log(self, log_name: str = "worker") -> str:
        return (Path(self.env["MEMORIA_QDRANT_PATH"]).parent / f"{log_name}.log").read_text(errors="replace")

    def stop_worker(self, p: subprocess.Popen, sig: int = signal.SIGTERM, timeout: float = 60) -> None:
        if p.poll() is None:
            os.killpg(p.pid, sig)
            try:
                p.wait(timeout)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait(10)

    def metrics(self) -> dict[str, float]:
        text = httpx.get(f"http://127.0.0.1:{self.env['MEMORIA_METRICS_PORT']}/metrics", timeout=5).text
        out: dict[str, float] = {}
        for line in text.splitlines():
            if line and not line.startswith("#"):
                k, _, v = line.rpartition(" ")
                out[k] = float(v)
        return out

    def vector_store(self):
        """The worker's proxy when a worker holds the local store, else the store itself."""
        from streams.bootstrap import open_vector_store

        return open_vector_store(self.settings)

    def close(self) -> None:
        for p in self.workers:
            self.stop_worker(p, signal.SIGKILL, timeout=10)
        with psycopg.connect(ADMIN_URL, autocommit=True) as c:
            c.execute(f'DROP DATABASE IF EXISTS "{self.dbname}" WITH (FORCE)')


# -- kafka helpers -------------------------------------------------------------
def consume_all(settings: Settings, topic: str, expect: int, timeout: float = 120.0) -> list:
    """Read a topic from the beginning (manual assignment, no group) until ``expect`` records (or ``timeout`` s:
    it returns as soon as they are all there, so the bound only matters on a slow, loaded machine)."""
    from aiokafka import AIOKafkaConsumer

    async def run():
        c = AIOKafkaConsumer(bootstrap_servers=settings.kafka_bootstrap_servers, enable_auto_commit=False,
                             auto_offset_reset="earliest")
        await c.start()
        try:
            from streams.kafka.topics import assign_from_beginning

            await assign_from_beginning(c, topic)
            out = []
            deadline = time.time() + timeout
            while len(out) < expect and time.time() < deadline:
                batch = await c.getmany(timeout_ms=500)
                for recs in batch.values():
                    out.extend(recs)
            return out
        finally:
            await c.stop()

    return asyncio.run(run())


def produce(settings: Settings, topic: str, records: list[tuple[bytes | None, bytes | None, list]]) -> None:
    from aiokafka import AIOKafkaProducer

    async def run():
        p = AIOKafkaProducer(bootstrap_servers=settings.kafka_bootstrap_servers, enable_idempotence=False)
        await p.start()
        try:
            for key, value, headers in records:
                await p.send_and_wait(topic, key=key, value=value, headers=headers)
        finally:
            await p.stop()

    asyncio.run(run())


def jl(s: str) -> list[dict]:
    return [json.loads(x) for x in s.splitlines() if x.strip()]
