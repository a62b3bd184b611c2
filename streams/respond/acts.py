"""Memory that acts: one step the responder runs before it generates.

    act = await acts.before_reply(msg, ctx, intent)

* **rights** (always, whatever the account's flags): "o que vocês sabem sobre
  mim?" → the contact's live facts and how to ask for deletion; "apaga tudo
  que vocês sabem de mim" → every fact forgotten now (``forget_contact``) and a
  confirmation; "parar" / "não quero receber promoções" → opted out of
  offers. Each is recorded for the operator and counted.
* **tools**: an intent the inbox maps to a tool runs it before generation.
  Within its budget → its result is data for the reply (``Act.tool``), with
  the standing of the knowledge. Slower → an acknowledgement now, the call
  goes on in the background and its answer is a second reply. One call per
  contact and resolved request at a time, on any worker (single-flight key in
  Redis or Postgres); a message that arrives while the call is in flight
  joins it and gets no reply of its own.

The handler asks one question at one point and acts on the answer:
``suppress`` (no reply), ``text`` (send this instead of generating) or
``tool`` (generate with this data, then ``guard`` the text).
"""

from __future__ import annotations

import asyncio
import logging
import re
import time
import uuid
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, Awaitable, Callable, Mapping, Protocol

from schemas.events import InboundMessage, OutboundReply
from streams import metrics
from streams.respond import rights
from streams.respond.intent import detect_intent
from streams.respond.model import KnowledgeChunk
from streams.respond.text import fold
from streams.respond.tools import (
    FlightStore,
    HttpTools,
    ToolError,
    ToolResult,
    ToolSpec,
    contradicts,
    flight_key,
    resolve_arguments,
    tool_keywords,
    wait_within,
)

log = logging.getLogger(__name__)

ACTS_NAMESPACE = uuid.UUID("0b6f8f5e-3f0e-4a8e-9f57-1c2d3e4f5a61")
ACCESS_INTENT, ERASURE_INTENT, OPT_OUT_INTENT = "privacy_access", "privacy_erasure", "marketing_opt_out"
TOOL_FAILED_REPLY = ("Não consegui confirmar essa informação agora. Nossa equipe vai verificar e te "
                     "responde por aqui em seguida.")


def _fallbacks() -> tuple[str, ...]:
    """The composer's fixed sentences (no information of their own)."""
    from streams.respond import generate as g

    names = ("FALLBACK_NO_KNOWLEDGE", "FALLBACK_LOOP", "GENERAL_NO_KNOWLEDGE", "GREETING_REPLY",
             "CONFIRMATION_REPLY")
    return tuple(getattr(g, n) for n in names if isinstance(getattr(g, n, None), str))


@dataclass(frozen=True)
class Act:
    """What the step decided. Nothing set: reply as usual."""

    text: str | None = None          # a complete reply: send it instead of generating
    kind: str = "reply"              # OutboundReply.kind of that reply
    intent: str | None = None        # the intent to report (rights, tool intents)
    suppress: bool = False           # no reply at all (joined a call in flight, or already handled)
    tool: ToolResult | None = None   # a tool's answer: data for generation
    tools: tuple[str, ...] = ()
    degraded: tuple[str, ...] = ()

    def chunk(self) -> KnowledgeChunk | None:
        """The tool's answer as a knowledge item (distance 0: the most relevant there is)."""
        if self.tool is None:
            return None
        cid = uuid.uuid5(ACTS_NAMESPACE, f"tool:{self.tools}:{self.tool.answer}")
        return KnowledgeChunk(cid, cid, 0.0, self.tool.answer)

    def guard(self, text: str, *, offline: bool) -> str:
        """The reply never contradicts the tool: a missing, fallback or contradicting
        text becomes the tool's answer; the offline composer's text follows it."""
        r = self.tool
        if r is None:
            return text
        if not text.strip() or text in _fallbacks() or contradicts(text, r):
            return r.answer
        if offline and r.answer not in text:
            # the composer may have copied the answer's sentences already: never say them twice
            rest = [x for x in re.split(r"(?<=[.!?])\s+", text.strip()) if x and fold(x) not in fold(r.answer)]
            return " ".join([r.answer, *rest])
        return text


class ActsStore(Protocol):
    """Postgres side of the step (``streams/respond/acts_store.py``)."""

    def live_fact_contents(self, account_id: int, contact_id: int) -> list[str]: ...
    def record_access(self, msg: InboundMessage, facts: int) -> None: ...
    def forget_on_request(self, msg: InboundMessage) -> int: ...
    def record_opt_out(self, msg: InboundMessage) -> None: ...
    def cached_inbox_tools(self, account_id: int, inbox_id: int) -> Mapping[str, ToolSpec] | None: ...
    def inbox_tools(self, account_id: int, inbox_id: int) -> Mapping[str, ToolSpec]: ...
    def tool_call_of(self, msg: InboundMessage) -> dict | None: ...
    def record_tool_call(self, msg: InboundMessage, spec: ToolSpec, key: str, arguments: Mapping[str, str],
                         outcome: str, result: Mapping[str, Any] | None = None) -> None: ...
    def save_agent_message(self, reply: OutboundReply) -> None: ...
    def is_published(self, reply_id: str) -> bool: ...


@dataclass
class Acts:
    store: ActsStore
    embedder: Any                 # the memory embedder (similarity to example requests)
    flights: FlightStore
    tools: HttpTools = field(default_factory=HttpTools)
    budget_ms: int = 1500
    timeout_ms: int = 30000
    flight_ttl_ms: int = 60000
    acknowledgement: str = "Já te trago essa informação, um instante."
    # sends a reply to the outbound topic and marks it published (set by the wiring)
    emit: Callable[[OutboundReply], Awaitable[None]] | None = None
    _background: set = field(default_factory=set)
    _examples: rights.ExampleVectors | None = None   # the rights examples' vectors, computed once

    def __post_init__(self) -> None:
        self._examples = rights.ExampleVectors(self.embedder)

    async def before_reply(self, msg: InboundMessage, ctx, intent: str) -> Act | None:
        kinds = await self._requests(msg.text)
        if kinds:
            return await self._rights(msg, kinds)
        tools = self.store.cached_inbox_tools(msg.account_id, msg.inbox_id)
        if tools is None:
            tools = await asyncio.to_thread(self.store.inbox_tools, msg.account_id, msg.inbox_id)
        if not tools:
            return None
        spec = tools.get(intent)
        if spec is None:
            detected = detect_intent(msg.text, tool_keywords(tools, ctx.inbox.intent_keywords))
            spec = tools.get(detected.intent)
        if spec is None:
            return None
        return await self._tool(msg, spec)

    # ------------------------------------------------------------ rights
    async def _requests(self, text: str) -> set[str]:
        n = rights.normalise(text)
        kinds = {rights.OPT_OUT} if rights.opt_out_in(n) else set()
        if rights.gate_in(n) is not None:  # only then is the message embedded
            kind, score = await asyncio.to_thread(rights.classify, text, self.embedder, self._examples)
            if kind:
                kinds.add(kind)
        return kinds

    async def _rights(self, msg: InboundMessage, kinds: set[str]) -> Act:
        parts: list[str] = []
        intent = OPT_OUT_INTENT
        if rights.ERASURE in kinds:
            n = await asyncio.to_thread(self.store.forget_on_request, msg)
            parts.append(rights.erasure_reply(n))
            intent = ERASURE_INTENT
            log.info("privacy request kind=erasure account_id=%d contact_id=%d facts_forgotten=%d message_id=%s",
                     msg.account_id, msg.contact_id, n, msg.message_id)
        elif rights.ACCESS in kinds:
            facts = await asyncio.to_thread(self.store.live_fact_contents, msg.account_id, msg.contact_id)
            await asyncio.to_thread(self.store.record_access, msg, len(facts))
            parts.append(rights.access_reply(facts))
            intent = ACCESS_INTENT
            log.info("privacy request kind=access account_id=%d contact_id=%d facts_listed=%d message_id=%s",
                     msg.account_id, msg.contact_id, len(facts), msg.message_id)
        if rights.OPT_OUT in kinds:
            await asyncio.to_thread(self.store.record_opt_out, msg)
            parts.append(rights.OPT_OUT_REPLY)
            log.info("marketing opt-out account_id=%d contact_id=%d message_id=%s", msg.account_id,
                     msg.contact_id, msg.message_id)
        for k in kinds:
            metrics.CUSTOMER_REQUESTS.labels(k).inc()
        return Act(text="\n\n".join(parts), kind="rights", intent=intent)

    # ------------------------------------------------------------- tools
    async def _tool(self, msg: InboundMessage, spec: ToolSpec) -> Act:
        previous = await asyncio.to_thread(self.store.tool_call_of, msg)
        if previous is not None:  # a redelivered message: nothing happens twice
            if previous.get("result") and previous["outcome"] == "inline":
                return Act(tool=ToolResult(**previous["result"]), intent=spec.intent, tools=(spec.name,))
            log.info("tool redelivery message_id=%s outcome=%s: no second call", msg.message_id,
                     previous["outcome"])
            return Act(suppress=previous["outcome"] in ("joined", "running", "background"), intent=spec.intent)
        today = msg.sent_at.astimezone(timezone.utc).date()
        arguments = resolve_arguments(msg.text, today)
        key = flight_key(msg.account_id, msg.contact_id, spec.name, arguments)
        try:
            acquired = await asyncio.to_thread(self.flights.acquire, key, msg.message_id, self.flight_ttl_ms)
        except Exception as e:  # the shared store is down: answer without the tool rather than call it twice
            log.error("single-flight store %s unavailable tool=%s message_id=%s error=%r: replying without the tool",
                      self.flights.name, spec.name, msg.message_id, e)
            metrics.TOOL_CALLS.labels(spec.name, "store_unavailable").inc()
            return Act(intent=spec.intent, degraded=("tool_store_unavailable",))
        if not acquired:
            await asyncio.to_thread(self.store.record_tool_call, msg, spec, key, arguments, "joined")
            metrics.TOOL_CALLS.labels(spec.name, "joined").inc()
            log.info("tool joined in-flight call tool=%s key=%s message_id=%s", spec.name, key, msg.message_id)
            return Act(suppress=True, intent=spec.intent)
        await asyncio.to_thread(self.store.record_tool_call, msg, spec, key, arguments, "running")
        payload = {"tool": spec.name, "request_id": key, "account_id": msg.account_id,
                   "contact_id": msg.contact_id, "arguments": arguments}
        timeout_s = (spec.timeout_ms or self.timeout_ms) / 1000
        started = time.perf_counter()
        call = asyncio.create_task(self.tools.call(spec, payload, timeout_s))
        if await wait_within(call, (spec.budget_ms or self.budget_ms) / 1000):
            await asyncio.to_thread(self.flights.release, key, msg.message_id)
            metrics.TOOL_LATENCY.labels(spec.name).observe(time.perf_counter() - started)
            try:
                result = call.result()
            except ToolError as e:
                log.warning("tool failed tool=%s message_id=%s error=%s", spec.name, msg.message_id, e)
                await asyncio.to_thread(self.store.record_tool_call, msg, spec, key, arguments, "failed",
                                        {"error": str(e)})
                metrics.TOOL_CALLS.labels(spec.name, "failed").inc()
                return Act(intent=spec.intent, degraded=("tool_error",))
            await asyncio.to_thread(self.store.record_tool_call, msg, spec, key, arguments, "inline",
                                    result.as_json())
            metrics.TOOL_CALLS.labels(spec.name, "inline").inc()
            return Act(tool=result, intent=spec.intent, tools=(spec.name,))
        # slower than its budget: acknowledge now, answer when the call ends
        task = asyncio.create_task(self._finish(msg, spec, key, arguments, call, started))
        self._background.add(task)
        task.add_done_callback(self._background.discard)
        metrics.TOOL_CALLS.labels(spec.name, "background").inc()
        log.info("tool slower than budget tool=%s key=%s message_id=%s: acknowledged, continuing in background",
                 spec.name, key, msg.message_id)
        return Act(text=self.acknowledgement, kind="acknowledgement", intent=spec.intent, tools=(spec.name,))

    async def _finish(self, msg: InboundMessage, spec: ToolSpec, key: str, arguments: Mapping[str, str],
                      call: asyncio.Task, started: float) -> None:
        try:
            try:
                result = await call
                text, outcome, stored = result.answer, "background", result.as_json()
            except ToolError as e:
                log.warning("tool failed in background tool=%s message_id=%s error=%s", spec.name,
                            msg.message_id, e)
                text, outcome, stored = TOOL_FAILED_REPLY, "failed", {"error": str(e)}
                metrics.TOOL_CALLS.labels(spec.name, "failed").inc()
            metrics.TOOL_LATENCY.labels(spec.name).observe(time.perf_counter() - started)
            reply = OutboundReply(
                reply_id=str(uuid.uuid5(ACTS_NAMESPACE, f"{msg.account_id}:{msg.message_id}:tool_result")),
                in_reply_to=msg.message_id, account_id=msg.account_id, conversation_id=msg.conversation_id,
                contact_id=msg.contact_id, text=text, intent=spec.intent, strategy="none", kind="tool_result",
                tools=[spec.name], degraded=[] if outcome == "background" else ["tool_error"],
                created_at=datetime.now(timezone.utc))
            await self._after_acknowledgement(msg)
            await self._deliver(reply)
            await asyncio.to_thread(self.store.record_tool_call, msg, spec, key, arguments, outcome, stored)
        except asyncio.CancelledError:
            raise
        except Exception:  # a background task has no caller: log it (the key's TTL frees the request)
            log.exception("tool background delivery failed tool=%s message_id=%s", spec.name, msg.message_id)
        finally:
            try:
                await asyncio.to_thread(self.flights.release, key, msg.message_id)
            except Exception as e:
                log.warning("single-flight release failed key=%s error=%r (expires with its TTL)", key, e)

    async def _after_acknowledgement(self, msg: InboundMessage, wait_s: float = 10.0) -> None:
        """The second reply never overtakes the acknowledgement (bounded wait)."""
        from streams.respond.handler import reply_id_for

        ack_id = reply_id_for(msg)
        deadline = time.monotonic() + wait_s
        while time.monotonic() < deadline:
            if await asyncio.to_thread(self.store.is_published, ack_id):
                return
            await asyncio.sleep(0.05)
        log.warning("acknowledgement %s not published after %.0fs; sending the tool result anyway", ack_id, wait_s)

    async def _deliver(self, reply: OutboundReply, attempts: int = 5) -> None:
        await asyncio.to_thread(self.store.save_agent_message, reply)
        if self.emit is None:
            raise RuntimeError("Acts.emit is not wired: the tool result cannot be sent")
        for attempt in range(attempts):
            try:
                await self.emit(reply)
                return
            except asyncio.CancelledError:
                raise
            except Exception as e:  # Kafka down: wait and retry the same reply
                if attempt == attempts - 1:
                    raise
                log.warning("tool result send failed reply_id=%s attempt=%d error=%r", reply.reply_id,
                            attempt + 1, e)
                await asyncio.sleep(0.5 * 2 ** attempt)

    async def drain(self, timeout_s: float = 30.0) -> None:
        """Wait for background tool calls (shutdown, tests)."""
        if self._background:
            await asyncio.wait(set(self._background), timeout=timeout_s)
