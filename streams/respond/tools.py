"""Tools in the strategy: per-inbox intent → HTTP tool, with a single-flight key.

An inbox maps intents to tools (``inboxes.tools``, JSON)::

    {"availability_check": {"url": "http://legacy.local/availability",
                            "keywords": ["disponivel", "tem vaga", "livre"],
                            "budget_ms": 1500, "timeout_ms": 30000}}

The key is the intent (detected with the inbox's keywords plus the tool's own
``keywords``); ``tool`` names the tool when it differs from the intent.

**HTTP JSON contract.** ``POST url`` with::

    {"tool": "availability_check", "request_id": "<single-flight key>",
     "account_id": 1, "contact_id": 100, "arguments": {"date": "2026-12-14", "period": "pernoite",
                                                       "suite": "master"}}

answered by ``200`` and a JSON object with at least ``answer`` (a sentence
for the customer) and optionally ``available`` (bool) and ``data`` (object).
Anything else is a tool error.

**Single flight.** The key is the contact plus the *resolved* request (tool
and arguments, not the raw text), so "tem master dia 14/12?" and "a suíte
master está livre em 14/12?" share one call. It lives in a shared store with
a TTL: Redis (``SET NX PX``, compare-and-delete on release) when
``REDIS_URL`` is set, else a Postgres table (insert, or take over an expired
key). A stuck call cannot hold the key longer than the TTL.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import re
from dataclasses import dataclass, field
from datetime import date, timedelta
from typing import Any, Mapping, Protocol

import httpx

from streams.respond.text import fold
from streams.store.uow import PostgresUnitOfWork, UnitOfWork, UnitOfWorkFactory

log = logging.getLogger(__name__)


# ----------------------------------------------------------------- config
@dataclass(frozen=True)
class ToolSpec:
    intent: str
    name: str
    url: str
    keywords: tuple[str, ...] = ()
    budget_ms: int | None = None     # None: the settings' default
    timeout_ms: int | None = None


class ToolConfigError(ValueError):
    pass


def parse_tools(raw: Mapping[str, Any] | None) -> dict[str, ToolSpec]:
    """intent → ToolSpec from an inbox's ``tools`` JSON (raises ToolConfigError with the reason)."""
    out: dict[str, ToolSpec] = {}
    for intent, cfg in (raw or {}).items():
        if not isinstance(cfg, Mapping):
            raise ToolConfigError(f"tool for intent {intent!r} must be an object")
        url = cfg.get("url")
        if not isinstance(url, str) or not re.match(r"^https?://", url):
            raise ToolConfigError(f"tool for intent {intent!r} needs an http(s) url")
        kws = cfg.get("keywords") or []
        if not isinstance(kws, list) or not all(isinstance(k, str) and k.strip() for k in kws):
            raise ToolConfigError(f"keywords of {intent!r} must be a list of words")
        budget, timeout = cfg.get("budget_ms"), cfg.get("timeout_ms")
        for name, v in (("budget_ms", budget), ("timeout_ms", timeout)):
            if v is not None and (not isinstance(v, int) or isinstance(v, bool) or v <= 0):
                raise ToolConfigError(f"{name} of {intent!r} must be a positive integer")
        out[intent] = ToolSpec(intent=intent, name=str(cfg.get("tool") or intent), url=url,
                               keywords=tuple(kws), budget_ms=budget, timeout_ms=timeout)
    return out


def tool_keywords(tools: Mapping[str, ToolSpec], inbox_keywords: Mapping[str, Any] | None) -> dict[str, Any]:
    """The inbox's intent keywords plus each tool intent's own keywords."""
    merged: dict[str, Any] = dict(inbox_keywords or {})
    for intent, spec in tools.items():
        if spec.keywords:
            cur = merged.get(intent)
            merged[intent] = list(cur or []) + list(spec.keywords) if not isinstance(cur, Mapping) else cur
    return merged


# ------------------------------------------------------ resolved request
MONTHS = {"janeiro": 1, "fevereiro": 2, "marco": 3, "abril": 4, "maio": 5, "junho": 6, "julho": 7,
          "agosto": 8, "setembro": 9, "outubro": 10, "novembro": 11, "dezembro": 12}
WEEKDAYS = {"segunda": 0, "terca": 1, "quarta": 2, "quinta": 3, "sexta": 4, "sabado": 5, "domingo": 6}
PERIODS = (("pernoite", r"pernoit\w*|dormir|noite inteira|a noite toda"),
           ("diaria", r"diaria\w*|dia inteiro|24 ?h"),
           ("periodo", r"periodo|\d+ ?(?:h|horas)\b|umas? horas?"))
DATE_DMY = re.compile(r"\b([0-3]?\d)\s*[/.-]\s*([01]?\d)(?:\s*[/.-]\s*(\d{2,4}))?\b")
DATE_WORDS = re.compile(rf"\b([0-3]?\d)\s+de\s+({'|'.join(MONTHS)})\b")
SUITE = re.compile(r"\bsuites?\s+([a-z][a-z0-9]+(?:\s+(?!para|pra|no|na|de|do|da|em|hoje|amanha|dia)"
                   r"[a-z][a-z0-9]+)?)")
NAMED_SUITE = re.compile(r"\b(luxo|master|standard|stilo|premium|presidencial|executiva|simples|"
                         r"hidro|piscina)\b")


def _next_date(day: int, month: int, today: date) -> date | None:
    for year in (today.year, today.year + 1):
        try:
            d = date(year, month, day)
        except ValueError:
            return None
        if d >= today:
            return d
    return None


def resolve_arguments(text: str, today: date) -> dict[str, str]:
    """The request behind the words: date (ISO), period and suite, when said.

    Two wordings of one request resolve to the same arguments, and so to one
    single-flight key."""
    f = fold(text)
    args: dict[str, str] = {}
    d: date | None = None
    m = DATE_DMY.search(text.casefold())  # folding would drop the "/" of 14/12
    if m:
        day, month = int(m.group(1)), int(m.group(2))
        if m.group(3):
            year = int(m.group(3))
            year += 2000 if year < 100 else 0
            try:
                d = date(year, month, day)
            except ValueError:
                d = None
        else:
            d = _next_date(day, month, today)
    elif (m := DATE_WORDS.search(f)):
        d = _next_date(int(m.group(1)), MONTHS[m.group(2)], today)
    elif re.search(r"\bhoje\b|\bhj\b", f):
        d = today
    elif re.search(r"\bdepois de amanha\b", f):
        d = today + timedelta(days=2)
    elif re.search(r"\bamanha\b", f):
        d = today + timedelta(days=1)
    else:
        for name, wd in WEEKDAYS.items():
            if re.search(rf"\b{name}\b", f):
                d = today + timedelta(days=(wd - today.weekday()) % 7)
                break
    if d is not None:
        args["date"] = d.isoformat()
    for period, rx in PERIODS:
        if re.search(rf"\b(?:{rx})", f):
            args["period"] = period
            break
    m = NAMED_SUITE.search(f) or SUITE.search(f)
    if m:
        args["suite"] = m.group(1)
    return args


def flight_key(account_id: int, contact_id: int, tool: str, arguments: Mapping[str, str]) -> str:
    canonical = json.dumps(dict(sorted(arguments.items())), ensure_ascii=False, separators=(",", ":"))
    digest = hashlib.sha256(f"{tool}|{canonical}".encode()).hexdigest()[:24]
    return f"memoria:tool:{account_id}:{contact_id}:{digest}"


# ---------------------------------------------------------- HTTP client
class ToolError(RuntimeError):
    pass


@dataclass(frozen=True)
class ToolResult:
    answer: str
    available: bool | None = None
    data: Mapping[str, Any] = field(default_factory=dict)

    def as_json(self) -> dict[str, Any]:
        return {"answer": self.answer, "available": self.available, "data": dict(self.data)}


class HttpTools:
    """Calls tools over HTTP (one shared async client)."""

    def __init__(self, client: httpx.AsyncClient | None = None):
        self._client = client

    def _http(self) -> httpx.AsyncClient:
        if self._client is None:
            self._client = httpx.AsyncClient()
        return self._client

    async def call(self, spec: ToolSpec, payload: Mapping[str, Any], timeout_s: float) -> ToolResult:
        try:
            resp = await self._http().post(spec.url, json=dict(payload), timeout=timeout_s)
        except httpx.TimeoutException as e:
            raise ToolError(f"{spec.name}: timed out after {timeout_s:.1f}s") from e
        except httpx.HTTPError as e:
            raise ToolError(f"{spec.name}: {type(e).__name__}: {e}") from e
        if resp.status_code != 200:
            raise ToolError(f"{spec.name}: HTTP {resp.status_code}: {resp.text[:200]}")
        try:
            body = resp.json()
        except ValueError as e:
            raise ToolError(f"{spec.name}: answer is not JSON") from e
        if not isinstance(body, dict) or not isinstance(body.get("answer"), str) or not body["answer"].strip():
            raise ToolError(f"{spec.name}: answer must be an object with a non-empty 'answer'")
        available = body.get("available")
        data = body.get("data") if isinstance(body.get("data"), dict) else {}
        return ToolResult(body["answer"].strip(), available if isinstance(available, bool) else None, data)


# ------------------------------------------------------ single-flight store
class FlightStore(Protocol):
    """A key per in-flight call, shared by every worker, with a TTL."""

    name: str

    def acquire(self, key: str, owner: str, ttl_ms: int) -> bool: ...

    def release(self, key: str, owner: str) -> None: ...


class RedisFlights:
    name = "redis"
    _RELEASE = "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end"

    def __init__(self, url: str, prefix: str = ""):
        import redis

        self.client = redis.Redis.from_url(url, socket_timeout=2, socket_connect_timeout=2)
        self.prefix = prefix  # the deployment's topic prefix: tenants of one Redis never share keys

    def acquire(self, key: str, owner: str, ttl_ms: int) -> bool:
        return bool(self.client.set(self.prefix + key, owner, nx=True, px=ttl_ms))

    def release(self, key: str, owner: str) -> None:
        self.client.eval(self._RELEASE, 1, self.prefix + key, owner)

    def close(self) -> None:
        self.client.close()


class FlightRepository(Protocol):
    """``uow.flights``: the ``single_flight`` keys (``streams.store.fake_uow`` implements it in memory)."""

    def acquire(self, key: str, owner: str, ttl_ms: int) -> bool:
        """Take ``key`` for ``ttl_ms`` when nobody holds it or its holder's time is over."""
    def release(self, key: str, owner: str) -> None:
        """Drop ``key`` if ``owner`` holds it."""


class PostgresFlightRepository:
    def __init__(self, uow: UnitOfWork):
        self.conn = uow.conn

    def acquire(self, key, owner, ttl_ms):
        return self.conn.execute(
            """INSERT INTO single_flight (key, owner, expires_at)
               VALUES (%s, %s, clock_timestamp() + make_interval(secs => %s))
               ON CONFLICT (key) DO UPDATE SET owner = EXCLUDED.owner, expires_at = EXCLUDED.expires_at
                   WHERE single_flight.expires_at < clock_timestamp()
               RETURNING key""", (key, owner, ttl_ms / 1000)).fetchone() is not None

    def release(self, key, owner):
        self.conn.execute("DELETE FROM single_flight WHERE key = %s AND owner = %s", (key, owner))


class PostgresFlights:
    """The single-flight keys in Postgres (when Redis is not configured): each acquire and release
    is one unit of work over ``uow.flights`` (``PostgresFlights(None, uow=db.unit_of_work)`` runs on
    the in-memory fake)."""

    name = "postgres"

    def __init__(self, pool, *, uow: UnitOfWorkFactory | None = None):
        self.unit: UnitOfWorkFactory = uow or (lambda: PostgresUnitOfWork(pool))

    def acquire(self, key: str, owner: str, ttl_ms: int) -> bool:
        with self.unit() as uow:
            taken = uow.flights.acquire(key, owner, ttl_ms)
            uow.commit()
        return taken

    def release(self, key: str, owner: str) -> None:
        with self.unit() as uow:
            uow.flights.release(key, owner)
            uow.commit()


def build_flights(settings, pool) -> FlightStore:
    """Redis when ``REDIS_URL`` is set (the design's choice), Postgres otherwise."""
    if settings.redis_url:
        return RedisFlights(settings.redis_url, prefix=settings.topic_prefix)
    return PostgresFlights(pool)


# ------------------------------------------------------------- the guard
NEGATIVE = re.compile(r"\bnao\b|indisponiv\w*|lotad\w*|esgotad\w*|sem vaga\w*|ocupad\w*|infelizmente")


def contradicts(text: str, result: ToolResult) -> bool:
    """A reply contradicts a tool that said available/unavailable when its polarity differs."""
    if result.available is None:
        return False
    negative = bool(NEGATIVE.search(fold(text)))
    return negative if result.available else not negative


async def wait_within(task: asyncio.Task, budget_s: float) -> bool:
    """True when ``task`` finished within ``budget_s`` (the task is never cancelled)."""
    done, _ = await asyncio.wait({task}, timeout=budget_s)
    return bool(done)
