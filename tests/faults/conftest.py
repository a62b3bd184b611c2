"""Fault drills against the real local services (embedded Postgres, Tansu, Qdrant local).

These tests stop and restart the stack's shared Postgres and Kafka: they carry
the ``faults`` marker, and every stop is undone in a ``finally`` block. Each
test records its counts (sent, replied, dead-lettered, lost, duplicated) in
``$MEMORIA_DATA_DIR/fault-counts.jsonl`` (and prints them).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections import Counter
from datetime import datetime, timezone
from pathlib import Path

import pytest

from streams.settings import REPO_ROOT

STACK = Path(os.environ.get("MEMORIA_DATA_DIR", REPO_ROOT / ".stack"))


def stack(command: str) -> None:
    r = subprocess.run([sys.executable, str(REPO_ROOT / "infra" / "localstack.py"), command],
                       capture_output=True, text=True, timeout=180)
    if r.returncode != 0:
        raise AssertionError(f"localstack {command} failed: {r.stdout}{r.stderr}")


def record_counts(test: str, **counts) -> dict:
    row = {"test": test, "at": datetime.now(timezone.utc).isoformat(timespec="seconds"), **counts}
    STACK.mkdir(parents=True, exist_ok=True)
    with open(STACK / "fault-counts.jsonl", "a") as f:
        f.write(json.dumps(row) + "\n")
    print("FAULT-COUNTS", json.dumps(row))
    return row


def reply_counts(records, message_ids) -> dict:
    """sent / replied / lost / duplicated from the outbound topic's records."""
    per = Counter(json.loads(r.value)["in_reply_to"] for r in records)
    ids = list(message_ids)
    return {"sent": len(ids), "replied": sum(1 for m in ids if per[m] >= 1),
            "lost": sum(1 for m in ids if per[m] == 0),
            "duplicated": sum(per[m] - 1 for m in ids if per[m] > 1)}


@pytest.fixture
def postgres_restored():
    """Whatever a test does to Postgres, it is running again afterwards."""
    try:
        yield
    finally:
        stack("start-postgres")


@pytest.fixture
def kafka_restored():
    """Whatever a test does to Kafka, it is running again (with every topic) afterwards."""
    try:
        yield
    finally:
        stack("start-kafka")


def wait_for(fn, timeout: float, what: str, interval: float = 0.5):
    from tests.harness import wait_until

    return wait_until(fn, timeout=timeout, interval=interval, what=what)


def now() -> float:
    return time.time()
