"""WhatsApp Cloud API webhook (aiohttp).

    app = create_app(WebhookConfig(verify_token=..., app_secret=...), publish, resolver)
    web.run_app(app, host="127.0.0.1", port=8085)

* ``GET  <path>``: Meta's verification handshake (``hub.mode=subscribe``,
  ``hub.verify_token``, ``hub.challenge`` → the challenge as plain text).
* ``POST <path>``: ``X-Hub-Signature-256: sha256=<hex HMAC-SHA256 of the raw
  body with the app secret>`` is checked first (401 when missing, 403 when
  wrong). Text messages become ``InboundMessage`` and are handed to the
  injected ``async publish(msg)``; other message types and status updates are
  acknowledged and ignored. Redelivered messages (same ``wamid``) are
  published once (an injected seen-check, by default a bounded in-process
  LRU: use a shared store when several webhook replicas run). A publish
  failure answers 503 so Meta redelivers, and the message is unmarked.
* Bad payloads get a 4xx with ``{"error": "<reason>"}``.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
from collections import OrderedDict
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any, Awaitable, Callable, Protocol

from aiohttp import web
from pydantic import ValidationError

from connectors.whatsapp.resolver import Resolver
from schemas.events import InboundMessage

log = logging.getLogger(__name__)

Publish = Callable[[InboundMessage], Awaitable[Any]]
MAX_TEXT = 8000


@dataclass(frozen=True)
class WebhookConfig:
    verify_token: str
    app_secret: str | None  # None disables the signature check (local development only)
    path: str = "/webhooks/whatsapp"
    channel: str = "whatsapp"
    max_body_bytes: int = 1024 * 1024


class SeenCheck(Protocol):
    async def mark(self, message_id: str) -> bool:
        """True when the id was not seen before (and is now marked)."""

    async def forget(self, message_id: str) -> None: ...


class SeenCache:
    """Bounded in-process LRU of channel message ids."""

    def __init__(self, maxsize: int = 50_000):
        self.maxsize = maxsize
        self._ids: OrderedDict[str, None] = OrderedDict()

    async def mark(self, message_id: str) -> bool:
        if message_id in self._ids:
            self._ids.move_to_end(message_id)
            return False
        self._ids[message_id] = None
        if len(self._ids) > self.maxsize:
            self._ids.popitem(last=False)
        return True

    async def forget(self, message_id: str) -> None:
        self._ids.pop(message_id, None)


class PayloadError(ValueError):
    """The payload is not a WhatsApp Cloud API webhook we understand."""


@dataclass(frozen=True)
class IncomingText:
    phone_number_id: str
    wa_id: str
    message_id: str
    text: str
    sent_at: datetime


def _require(obj: Any, key: str, kind: type | tuple[type, ...], where: str) -> Any:
    if not isinstance(obj, dict) or key not in obj:
        raise PayloadError(f"missing {where}.{key}")
    value = obj[key]
    if not isinstance(value, kind):
        names = kind.__name__ if isinstance(kind, type) else " or ".join(k.__name__ for k in kind)
        raise PayloadError(f"{where}.{key} must be {names}")
    return value


def parse_payload(body: Any) -> tuple[list[IncomingText], int]:
    """(text messages, number of ignored non-text items). Raises PayloadError."""
    if not isinstance(body, dict):
        raise PayloadError("body must be a JSON object")
    if body.get("object") != "whatsapp_business_account":
        raise PayloadError("object must be 'whatsapp_business_account'")
    texts: list[IncomingText] = []
    ignored = 0
    for e_i, entry in enumerate(_require(body, "entry", list, "body")):
        for c_i, change in enumerate(_require(entry, "changes", list, f"entry[{e_i}]")):
            where = f"entry[{e_i}].changes[{c_i}]"
            value = _require(change, "value", dict, where)
            if change.get("field", "messages") != "messages":
                ignored += 1
                continue
            messages = value.get("messages", [])
            if not isinstance(messages, list):
                raise PayloadError(f"{where}.value.messages must be list")
            ignored += len(value.get("statuses", []) or [])
            if not messages:
                continue
            metadata = _require(value, "metadata", dict, f"{where}.value")
            phone_number_id = str(_require(metadata, "phone_number_id", (str, int), f"{where}.value.metadata"))
            for m_i, m in enumerate(messages):
                mwhere = f"{where}.value.messages[{m_i}]"
                message_id = _require(m, "id", str, mwhere)
                wa_id = str(_require(m, "from", (str, int), mwhere))
                if m.get("type") != "text":
                    ignored += 1
                    continue
                text = _require(_require(m, "text", dict, mwhere), "body", str, f"{mwhere}.text")
                ts = _require(m, "timestamp", (str, int), mwhere)
                try:
                    sent_at = datetime.fromtimestamp(int(ts), tz=timezone.utc)
                except (TypeError, ValueError, OverflowError):
                    raise PayloadError(f"{mwhere}.timestamp must be unix seconds") from None
                if not message_id or not text.strip():
                    ignored += 1
                    continue
                texts.append(IncomingText(phone_number_id, wa_id, message_id, text[:MAX_TEXT], sent_at))
    return texts, ignored


def _error(status: int, reason: str) -> web.Response:
    return web.json_response({"error": reason}, status=status)


def signature_ok(secret: str, body: bytes, header: str) -> bool:
    if not header.startswith("sha256="):
        return False
    expected = hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()
    return hmac.compare_digest(expected, header[len("sha256="):].strip().lower())


def create_app(config: WebhookConfig, publish: Publish, resolver: Resolver,
               seen: SeenCheck | None = None) -> web.Application:
    seen_check: SeenCheck = seen or SeenCache()
    app = web.Application(client_max_size=config.max_body_bytes)

    async def verify(request: web.Request) -> web.Response:
        q = request.query
        mode, token, challenge = q.get("hub.mode"), q.get("hub.verify_token"), q.get("hub.challenge")
        if not mode or token is None or challenge is None:
            return _error(400, "hub.mode, hub.verify_token and hub.challenge are required")
        if mode != "subscribe" or not hmac.compare_digest(token, config.verify_token):
            return _error(403, "verification failed: wrong hub.mode or hub.verify_token")
        return web.Response(text=challenge, content_type="text/plain")

    async def receive(request: web.Request) -> web.Response:
        raw = await request.read()
        if config.app_secret is not None:
            header = request.headers.get("X-Hub-Signature-256")
            if not header:
                return _error(401, "missing X-Hub-Signature-256 header")
            if not signature_ok(config.app_secret, raw, header):
                return _error(403, "invalid X-Hub-Signature-256 signature")
        try:
            body = json.loads(raw)
        except (UnicodeDecodeError, json.JSONDecodeError):
            return _error(400, "body is not valid JSON")
        try:
            texts, ignored = parse_payload(body)
        except PayloadError as e:
            return _error(400, str(e))
        published = duplicates = unrouted = 0
        for t in texts:
            route = await resolver.route(t.phone_number_id, t.wa_id)
            if route is None:
                unrouted += 1
                log.warning("whatsapp unrouted phone_number_id=%s message_id=%s", t.phone_number_id, t.message_id)
                continue
            try:
                msg = InboundMessage(message_id=t.message_id, account_id=route.account_id,
                                     inbox_id=route.inbox_id, conversation_id=route.conversation_id,
                                     contact_id=route.contact_id, unit_id=route.unit_id,
                                     channel=config.channel, text=t.text, sent_at=t.sent_at)
            except ValidationError as e:
                return _error(422, f"message {t.message_id} is invalid: {e.errors()[0]['msg']}")
            if not await seen_check.mark(t.message_id):
                duplicates += 1
                continue
            try:
                await publish(msg)
            except Exception as e:
                await seen_check.forget(t.message_id)
                log.error("whatsapp publish failed message_id=%s error=%r", t.message_id, e)
                return _error(503, "could not publish the message, retry later")
            published += 1
            log.info("whatsapp inbound message_id=%s account_id=%s conversation_id=%s",
                     t.message_id, route.account_id, route.conversation_id)
        return web.json_response({"published": published, "duplicates": duplicates,
                                  "ignored": ignored, "unrouted": unrouted})

    app.router.add_get(config.path, verify)
    app.router.add_post(config.path, receive)
    return app
