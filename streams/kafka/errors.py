"""Errors by kind, decided in one place for every consumer (worker agents,
responder, connectors).

* **Poison** (``PoisonRecord``, or a handler's ``DeadLetter``): the record can
  never be processed (undecodable, invalid contract, wrong tenant, too large).
  It goes to ``<topic>.dlq`` with its reason and the consumer moves on.
* **Dependency unavailable** (``dependency_of(exc)`` names it): Postgres,
  Qdrant, the embedding service, the LLM, Kafka or a channel API is down or
  overloaded. The consumer stops taking new records, backs off and retries the
  *same* records until it recovers; nothing past them is committed. The stall
  is visible as ``memoria_consumer_stalled{topic,dependency}`` and in the
  worker's ``/health`` (``status: stalled``) and ``/ready`` (503).
* **Everything else is a bug**: it propagates, and the agent exits before
  committing (a restart redelivers the batch).
"""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass
from typing import Awaitable, Callable, TypeVar

from streams import metrics

log = logging.getLogger(__name__)

T = TypeVar("T")


class PoisonRecord(ValueError):
    """A record that can never be processed; it goes to the DLQ with ``error_class``."""

    def __init__(self, error_class: str, message: str):
        super().__init__(message)
        self.error_class = error_class


class DependencyUnavailable(RuntimeError):
    """Raised by adapters that know a dependency is down (``dependency`` names it)."""

    def __init__(self, dependency: str, message: str = ""):
        super().__init__(message or f"{dependency} unavailable")
        self.dependency = dependency


def _chain(exc: BaseException):
    seen = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        yield exc
        exc = exc.__cause__ or exc.__context__


def _postgres_down(e: BaseException) -> bool:
    try:
        import psycopg
        from psycopg_pool import PoolTimeout
    except ImportError:  # pragma: no cover
        return False
    return (isinstance(e, (PoolTimeout, psycopg.OperationalError))  # lost/refused, shutdown, statement timeout
            or (isinstance(e, psycopg.InterfaceError) and "closed" in str(e)))


def _kafka_down(e: BaseException) -> bool:
    try:
        from aiokafka.errors import KafkaConnectionError, KafkaError, KafkaTimeoutError
    except ImportError:  # pragma: no cover
        return False
    return (isinstance(e, (KafkaConnectionError, KafkaTimeoutError))
            or (isinstance(e, KafkaError) and bool(getattr(e, "retriable", False))))


def _llm_down(e: BaseException) -> bool:
    try:
        import openai
    except ImportError:  # pragma: no cover
        return False
    return isinstance(e, (openai.APIConnectionError, openai.RateLimitError, openai.InternalServerError))


def _qdrant_down(e: BaseException) -> bool:
    if not (type(e).__module__ or "").startswith("qdrant_client"):
        return False
    status = getattr(e, "status_code", None)
    return type(e).__name__ == "ResponseHandlingException" or (isinstance(status, int) and
                                                               (status >= 500 or status == 429))


def _http_down(e: BaseException) -> bool:
    try:
        import httpx
    except ImportError:  # pragma: no cover
        return False
    return isinstance(e, httpx.TransportError) or (isinstance(e, httpx.HTTPStatusError) and
                                                   (e.response.status_code >= 500 or e.response.status_code == 429))


# In this order: the first that recognises an exception names the dependency.
_DEPENDENCIES = (("postgres", _postgres_down), ("kafka", _kafka_down), ("llm", _llm_down),
                 ("qdrant", _qdrant_down), ("http", _http_down),
                 ("network", lambda e: isinstance(e, (ConnectionError, TimeoutError))))


def _one(e: BaseException) -> str | None:
    if isinstance(e, DependencyUnavailable):
        return e.dependency
    return next((name for name, down in _DEPENDENCIES if down(e)), None)


def dependency_of(exc: BaseException) -> str | None:
    """The dependency an exception says is unavailable, or None (poison or bug)."""
    for e in _chain(exc):
        if isinstance(e, PoisonRecord):
            return None
        dep = _one(e)
        if dep is not None:
            return dep
    return None


def poison_class(exc: BaseException) -> str | None:
    """The DLQ reason when an exception says the *record* can never succeed:
    ``PoisonRecord``, or Postgres refusing its data (invalid text such as NUL,
    a value out of range, a check or uniqueness violation). None otherwise."""
    for e in _chain(exc):
        if isinstance(e, PoisonRecord):
            return e.error_class
        try:
            import psycopg

            if isinstance(e, (psycopg.DataError, psycopg.IntegrityError)):
                return type(e).__name__
        except ImportError:  # pragma: no cover
            pass
    return None


# ----------------------------------------------------------------- stalls
@dataclass
class Stall:
    topic: str
    dependency: str
    since: float
    attempts: int
    error: str


#: topic → current stall (process-wide; read by the worker's /health)
STALLS: dict[str, Stall] = {}


def stalled(topic: str, dependency: str, error: BaseException, attempt: int) -> None:
    s = STALLS.get(topic)
    if s is None or s.dependency != dependency:
        if s is not None:
            metrics.CONSUMER_STALLED.labels(topic, s.dependency).set(0)
        s = STALLS[topic] = Stall(topic, dependency, time.time(), 0, "")
        log.warning("consumer stalled topic=%s dependency=%s error=%r: retrying the same records",
                    topic, dependency, error)
    s.attempts = attempt + 1
    s.error = f"{type(error).__name__}: {error}"[:300]
    metrics.CONSUMER_STALLED.labels(topic, dependency).set(1)
    metrics.DEPENDENCY_RETRIES.labels(topic, dependency).inc()


def recovered(topic: str) -> None:
    s = STALLS.pop(topic, None)
    if s is not None:
        metrics.CONSUMER_STALLED.labels(topic, s.dependency).set(0)
        log.warning("consumer recovered topic=%s dependency=%s after %.1fs (%d attempts)", topic,
                    s.dependency, time.time() - s.since, s.attempts)


def backoff(attempt: int, base: float, cap: float) -> float:
    return min(cap, base * (2 ** min(attempt, 16)))


async def until_available(topic: str, fn: Callable[[], Awaitable[T]], *, base: float = 0.5,
                          cap: float = 10.0) -> T:
    """Await ``fn()`` until it succeeds. A dependency error stalls (backoff, retry the
    same work, forever); anything else propagates (poison is the caller's, bugs crash)."""
    attempt = 0
    while True:
        try:
            result = await fn()
        except asyncio.CancelledError:
            raise
        except Exception as e:
            dep = dependency_of(e)
            if dep is None:
                raise
            stalled(topic, dep, e, attempt)
            await asyncio.sleep(backoff(attempt, base, cap))
            attempt += 1
            continue
        if attempt:
            recovered(topic)
        return result
