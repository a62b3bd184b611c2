"""Errors routed by kind: poison → DLQ, dependency down → retry the same records, bug → raise."""

from __future__ import annotations

import asyncio

import httpx
import psycopg
import pytest
from aiokafka.errors import KafkaConnectionError, MessageSizeTooLargeError
from psycopg_pool import PoolTimeout

from streams.kafka.consume import DeadLetter, DeadLetterWriter, Record, process_batch
from streams.kafka.envelope import DecodeError
from streams.kafka.errors import STALLS, DependencyUnavailable, dependency_of, poison_class
from streams.kafka.topics import INBOUND, dlq_topic, qualified
from tests.harness import consume_all


def _wrapped(inner: Exception) -> Exception:
    try:
        try:
            raise inner
        except Exception as e:
            raise RuntimeError("adapter failed") from e
    except RuntimeError as outer:
        return outer


def test_classification():
    assert dependency_of(psycopg.OperationalError("connection refused")) == "postgres"
    assert dependency_of(PoolTimeout("no connection")) == "postgres"
    assert dependency_of(KafkaConnectionError("down")) == "kafka"
    assert dependency_of(httpx.ConnectError("refused")) == "http"
    assert dependency_of(_wrapped(httpx.ReadTimeout("slow"))) == "http"  # found through the cause chain
    assert dependency_of(DependencyUnavailable("qdrant")) == "qdrant"
    assert dependency_of(ConnectionResetError()) == "network"
    import openai
    assert dependency_of(openai.APIConnectionError(request=httpx.Request("POST", "http://x"))) == "llm"
    for bug in (ValueError("x"), KeyError("k"), MessageSizeTooLargeError(), psycopg.ProgrammingError("syntax")):
        assert dependency_of(bug) is None and poison_class(bug) is None
    assert poison_class(DecodeError("InvalidJSON", "bad")) == "InvalidJSON"
    assert poison_class(psycopg.DataError("NUL")) == "DataError"
    assert poison_class(_wrapped(psycopg.errors.CheckViolation("lead_state too big"))) == "CheckViolation"
    from streams.respond.adapters import TenantMismatch
    assert poison_class(TenantMismatch("other account")) == "TenantMismatch"


def _records(topic, n):
    return [Record(topic, 0, i, b"k", f"v{i}".encode()) for i in range(n)]


def _run(env, handler, records, **kw):
    from aiokafka import AIOKafkaProducer

    async def go():
        p = AIOKafkaProducer(bootstrap_servers=env.settings.kafka_bootstrap_servers, enable_idempotence=False)
        await p.start()
        try:
            await process_batch(records, handler, DeadLetterWriter(p), base_delay=0.01, max_delay=0.05, **kw)
        finally:
            await p.stop()

    asyncio.run(go())


def test_dependency_down_retries_the_same_batch_until_it_recovers(env):
    topic = qualified(env.settings, INBOUND)
    seen = []

    def handler(batch):
        seen.append([r.offset for r in batch])
        if len(seen) <= 5:
            raise psycopg.OperationalError("the database system is shutting down")
        return []

    _run(env, handler, _records(topic, 3))
    assert seen == [[0, 1, 2]] * 6  # the same records, never dead-lettered
    assert topic not in STALLS  # recovered
    assert consume_all(env.settings, dlq_topic(topic), 1, timeout=2) == []


def test_a_bug_propagates_and_poison_is_isolated(env):
    topic = qualified(env.settings, INBOUND)

    def buggy(batch):
        raise KeyError("a bug")

    with pytest.raises(KeyError):
        _run(env, buggy, _records(topic, 2))

    def refuses_one(batch):  # Postgres refuses one record's data
        if any(r.value == b"v1" for r in batch):
            raise psycopg.DataError("PostgreSQL text fields cannot contain NUL (0x00) bytes")
        return [DeadLetter(r, "InvalidJSON", "bad") for r in batch if r.value == b"v3"]

    big = Record(topic, 0, 9, b"k", b"x" * 2_000)
    _run(env, refuses_one, _records(topic, 4) + [big], max_record_bytes=1_000)
    dead = consume_all(env.settings, dlq_topic(topic), 3, timeout=10)
    assert sorted(dict(d.headers)["dlq.error_class"].decode() for d in dead) == \
        ["DataError", "InvalidJSON", "RecordTooLarge"]
    assert {int(dict(d.headers)["dlq.source_offset"]) for d in dead} == {1, 3, 9}
