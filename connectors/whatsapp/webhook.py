"""WhatsApp Cloud API webhook (aiohttp).

    app = create_app(WebhookConfig(verify_token=..., app_secret=...), publish, resolver)
    web.run_app(app, host="127.0.0.1", port=8085)

* ``GET  <path>``: Meta's verification handshake (``hub.mode=subscribe``,
  ``hub.verify_token``, ``hub.challenge`` → the challenge as plain text).
* ``POST <path>``: ``X-Hub-Signature-256: sha256=<hex HMAC-SHA256 of the raw
  body with the app secret>`` is checked first (401 when missing, 403 when
  wrong). Every customer message becomes an ``InboundMessage`` with its
  ``message_type`` and a text form (text; caption of an image, video or
  document, else a placeholder such as ``[áudio]``; coordinates of a location;
  shared contacts; the title of an interactive list/button reply or of a
  template quick-reply button; a reaction's emoji), control characters
  removed, handed to the injected ``async publish(msg)``, which returns only
  once the broker acknowledged it. Status updates, system messages and removed
  reactions are acknowledged and ignored. A malformed message does not stop
  its batch: the others are published and it is handed to
  ``record_invalid(raw, reason)`` (the inbound DLQ) before the 200. Redelivered messages (same ``wamid``) are
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
from schemas.events import InboundMessage, clean_text

log = logging.getLogger(__name__)

Publish = Callable[[InboundMessage], Awaitable[Any]]
#: ``record_invalid(raw message, reason)``: keep a message that can never be published (the DLQ).
RecordInvalid = Callable[[Any, str], Awaitable[Any]]
MAX_TEXT = 8000
MAX_WA_ID = 64  # a customer's WhatsApp id (a phone number)


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
class IncomingMessage:
    phone_number_id: str
    wa_id: str
    message_id: str
    text: str
    sent_at: datetime
    message_type: str = "text"
    placeholder: bool = False


IncomingText = IncomingMessage  # the older name


@dataclass(frozen=True)
class InvalidMessage:
    """A message of the batch that can never become an InboundMessage: recorded
    (``channel.inbound.messages.dlq``) with its reason; the others go on."""

    where: str
    reason: str
    raw: Any


@dataclass
class Parsed:
    messages: list[IncomingMessage]
    ignored: int
    invalid: list[InvalidMessage]

    def __iter__(self):  # (messages, ignored), as before
        return iter((self.messages, self.ignored))


def _require(obj: Any, key: str, kind: type | tuple[type, ...], where: str) -> Any:
    if not isinstance(obj, dict) or key not in obj:
        raise PayloadError(f"missing {where}.{key}")
    value = obj[key]
    if not isinstance(value, kind):
        names = kind.__name__ if isinstance(kind, type) else " or ".join(k.__name__ for k in kind)
        raise PayloadError(f"{where}.{key} must be {names}")
    return value


def _str(obj: Any, key: str) -> str:
    v = obj.get(key) if isinstance(obj, dict) else None
    return clean_text(v) if isinstance(v, str) else ""


#: Placeholders of media without a caption (pt-BR, the product's customers' language).
MEDIA_NAMES = {"image": "imagem", "video": "vídeo", "audio": "áudio", "sticker": "figurinha",
               "document": "documento"}
#: Message types that are not customer messages (number changes, welcome requests): acknowledged.
SYSTEM_TYPES = {"system", "request_welcome", "ephemeral"}


def _text(m: dict, kind: str, where: str) -> tuple[str, str, bool] | None:
    body = _require(_require(m, "text", dict, where), "body", str, f"{where}.text")
    return "text", clean_text(body), False


def _media(m: dict, kind: str, where: str) -> tuple[str, str, bool] | None:
    media = _require(m, kind, dict, where)
    caption = _str(media, "caption")
    if caption:
        return kind, caption, False
    name = _str(media, "filename")
    return kind, f"[{MEDIA_NAMES[kind]}{': ' + name if name else ''}]", True


def _location(m: dict, kind: str, where: str) -> tuple[str, str, bool] | None:
    loc = _require(m, "location", dict, where)
    lat, lon = loc.get("latitude"), loc.get("longitude")
    if not isinstance(lat, (int, float)) or not isinstance(lon, (int, float)):
        raise PayloadError(f"{where}.location needs numeric latitude and longitude")
    label = ", ".join(x for x in (_str(loc, "name"), _str(loc, "address")) if x)
    return "location", f"Localização: {label + ' ' if label else ''}({lat:.6f}, {lon:.6f})", False


def _contacts(m: dict, kind: str, where: str) -> tuple[str, str, bool] | None:
    cards = _require(m, "contacts", list, where)
    parts = []
    for c in cards[:10]:
        name = _str(c.get("name") if isinstance(c, dict) else None, "formatted_name")
        phones = [_str(p, "phone") or _str(p, "wa_id") for p in (c.get("phones") or []
                                                                if isinstance(c, dict) else [])]
        parts.append(" ".join(x for x in [name, *(p for p in phones if p)] if x) or "?")
    return "contacts", "Contato compartilhado: " + "; ".join(parts), False


def _interactive(m: dict, kind: str, where: str) -> tuple[str, str, bool] | None:
    inter = _require(m, "interactive", dict, where)
    for sub in ("button_reply", "list_reply"):
        if isinstance(inter.get(sub), dict):
            title = _str(inter[sub], "title")
            desc = _str(inter[sub], "description")
            if not title:
                raise PayloadError(f"{where}.interactive.{sub}.title is missing")
            return "interactive", f"{title} — {desc}" if desc else title, False
    return "unsupported", f"[resposta interativa: {_str(inter, 'type') or '?'}]", True


def _button(m: dict, kind: str, where: str) -> tuple[str, str, bool] | None:  # a template's quick-reply button
    button = _require(m, "button", dict, where)
    title = _str(button, "text") or _str(button, "payload")
    if not title:
        raise PayloadError(f"{where}.button.text is missing")
    return "button", title, False


def _reaction(m: dict, kind: str, where: str) -> tuple[str, str, bool] | None:
    emoji = _str(_require(m, "reaction", dict, where), "emoji")
    return ("reaction", emoji, False) if emoji else None  # an empty emoji removes a reaction


_TEXT_FORMS = {"text": _text, "location": _location, "contacts": _contacts, "interactive": _interactive,
               "button": _button, "reaction": _reaction, **{kind: _media for kind in MEDIA_NAMES}}


def text_form(m: dict, where: str) -> tuple[str, str, bool] | None:
    """(message_type, text form, placeholder) of one message; None: nothing to
    answer (a removed reaction). Raises PayloadError for a malformed message."""
    kind = m.get("type")
    if isinstance(kind, str) and kind in _TEXT_FORMS:
        return _TEXT_FORMS[kind](m, kind, where)
    if isinstance(kind, str) and kind:
        return "unsupported", f"[mensagem do tipo {kind[:40]}]", True
    raise PayloadError(f"{where}.type must be a string")


def _message(m: Any, mwhere: str, phone_number_id: str) -> IncomingMessage | None:
    """One customer message, or None for what is acknowledged without an answer."""
    message_id = _require(m, "id", str, mwhere)
    wa_id = str(_require(m, "from", (str, int), mwhere))
    if m.get("type") in SYSTEM_TYPES:
        return None
    form = text_form(m, mwhere)
    if form is None:
        return None
    kind, text, placeholder = form
    ts = _require(m, "timestamp", (str, int), mwhere)
    try:
        sent_at = datetime.fromtimestamp(int(ts), tz=timezone.utc)
    except (TypeError, ValueError, OverflowError, OSError):
        raise PayloadError(f"{mwhere}.timestamp must be unix seconds") from None
    if not message_id.strip() or len(message_id) > 256:
        raise PayloadError(f"{mwhere}.id must be 1-256 characters")
    if not wa_id.strip() or len(wa_id) > MAX_WA_ID:
        raise PayloadError(f"{mwhere}.from must be 1-{MAX_WA_ID} characters")
    if not text:
        raise PayloadError(f"{mwhere} has no text once control characters are removed")
    return IncomingMessage(phone_number_id, wa_id, message_id, text[:MAX_TEXT], sent_at, kind, placeholder)


def parse_payload(body: Any) -> Parsed:
    """Every customer message of a webhook: ``Parsed(messages, ignored, invalid)``.

    Raises PayloadError only when the envelope itself is malformed; a malformed
    message is returned in ``invalid`` with its reason and the rest goes on."""
    if not isinstance(body, dict):
        raise PayloadError("body must be a JSON object")
    if body.get("object") != "whatsapp_business_account":
        raise PayloadError("object must be 'whatsapp_business_account'")
    out = Parsed([], 0, [])
    for e_i, entry in enumerate(_require(body, "entry", list, "body")):
        for c_i, change in enumerate(_require(entry, "changes", list, f"entry[{e_i}]")):
            where = f"entry[{e_i}].changes[{c_i}]"
            value = _require(change, "value", dict, where)
            if change.get("field", "messages") != "messages":
                out.ignored += 1
                continue
            messages = value.get("messages", [])
            if not isinstance(messages, list):
                raise PayloadError(f"{where}.value.messages must be list")
            out.ignored += len(value.get("statuses", []) or [])
            if not messages:
                continue
            metadata = _require(value, "metadata", dict, f"{where}.value")
            phone_number_id = str(_require(metadata, "phone_number_id", (str, int), f"{where}.value.metadata"))
            if len(phone_number_id) > 64:
                raise PayloadError(f"{where}.value.metadata.phone_number_id is longer than 64 characters")
            for m_i, m in enumerate(messages):
                mwhere = f"{where}.value.messages[{m_i}]"
                try:
                    incoming = _message(m, mwhere, phone_number_id)
                except PayloadError as e:
                    out.invalid.append(InvalidMessage(mwhere, str(e), m))
                    continue
                if incoming is None:
                    out.ignored += 1
                else:
                    out.messages.append(incoming)
    return out


def _error(status: int, reason: str) -> web.Response:
    return web.json_response({"error": reason}, status=status)


def signature_ok(secret: str, body: bytes, header: str) -> bool:
    if not header.startswith("sha256="):
        return False
    expected = hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()
    return hmac.compare_digest(expected, header[len("sha256="):].strip().lower())


async def _read_payload(request: web.Request, config: WebhookConfig) -> Parsed | web.Response:
    """The request's messages, or the error answer (size, signature, JSON, envelope)."""
    try:
        raw = await request.read()
    except web.HTTPRequestEntityTooLarge:
        return _error(413, f"body over {config.max_body_bytes} bytes")
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
        return parse_payload(body)
    except PayloadError as e:
        return _error(400, str(e))


async def _record_all(invalid: list[InvalidMessage], record_invalid: RecordInvalid | None) -> bool:
    """Log and record (dead-letter) the invalid messages; False when recording failed."""
    for bad in invalid:
        log.warning("whatsapp invalid message where=%s reason=%s", bad.where, bad.reason)
        if record_invalid is not None:
            try:
                await record_invalid(bad.raw, f"{bad.where}: {bad.reason}")
            except Exception as e:
                log.error("whatsapp could not record an invalid message error=%r", e)
                return False
    return True


def create_app(config: WebhookConfig, publish: Publish, resolver: Resolver,
               seen: SeenCheck | None = None, record_invalid: RecordInvalid | None = None) -> web.Application:
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
        parsed = await _read_payload(request, config)
        if isinstance(parsed, web.Response):
            return parsed
        published = duplicates = unrouted = 0
        invalid = list(parsed.invalid)
        for t in parsed.messages:
            try:
                route = await resolver.route(t.phone_number_id, t.wa_id)
            except Exception as e:  # Postgres unavailable: Meta retries the whole batch later
                log.error("whatsapp routing failed message_id=%s error=%r", t.message_id, e)
                return _error(503, "could not route the message, retry later")
            if route is None:
                unrouted += 1
                log.warning("whatsapp unrouted phone_number_id=%s message_id=%s", t.phone_number_id, t.message_id)
                continue
            try:
                msg = InboundMessage(message_id=t.message_id, account_id=route.account_id,
                                     inbox_id=route.inbox_id, conversation_id=route.conversation_id,
                                     contact_id=route.contact_id, unit_id=route.unit_id,
                                     channel=config.channel, message_type=t.message_type,
                                     placeholder=t.placeholder, text=t.text, sent_at=t.sent_at)
            except ValidationError as e:
                err = e.errors()[0]
                invalid.append(InvalidMessage(t.message_id, f"{'.'.join(map(str, err['loc']))}: {err['msg']}",
                                              {"id": t.message_id, "type": t.message_type}))
                continue
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
            log.info("whatsapp inbound message_id=%s type=%s account_id=%s conversation_id=%s",
                     t.message_id, t.message_type, route.account_id, route.conversation_id)
        if not await _record_all(invalid, record_invalid):
            return _error(503, "could not record an invalid message, retry later")
        return web.json_response({"published": published, "duplicates": duplicates,
                                  "ignored": parsed.ignored, "unrouted": unrouted, "invalid": len(invalid)})

    app.router.add_get(config.path, verify)
    app.router.add_post(config.path, receive)
    return app
