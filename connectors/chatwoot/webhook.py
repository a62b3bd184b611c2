"""Chatwoot-style ``conversation_status_changed`` webhook (aiohttp).

    app = create_app(ChatwootConfig(token=... or secret=...), publish)

``POST <path>`` with a Chatwoot conversation webhook body::

    {"event": "conversation_status_changed", "id": 42, "status": "resolved",
     "account": {"id": 101}, "changed_attributes": [{"status": {"previous_value": "open",
     "current_value": "resolved"}}], "updated_at": "2026-11-30T10:00:00Z", ...}

becomes a ``ConversationLifecycleEvent`` (``resolved``, or ``reopened`` when the
status goes back to ``open``) keyed by the conversation id (``str(id)``, our
``conversations.external_id``) and is acknowledged only after the broker
acknowledged it (503 otherwise, so the sender retries). Other events and
statuses (``pending``, ``snoozed``) are acknowledged and ignored.

Authentication, checked first: with a secret, ``X-Chatwoot-Signature:
sha256=<hex HMAC-SHA256 of "<X-Chatwoot-Timestamp>.<raw body>">`` (Chatwoot's
signed webhooks; timestamps older than ``max_skew_s`` are refused); with a
token, ``?token=`` or ``X-Memoria-Token`` (constant-time comparison).

The event id is derived from (account, conversation, status, updated_at), so a
redelivered webhook is applied once.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any, Awaitable, Callable

from aiohttp import web
from pydantic import ValidationError

from schemas.events import ConversationLifecycleEvent

log = logging.getLogger(__name__)

Publish = Callable[[ConversationLifecycleEvent], Awaitable[Any]]


@dataclass(frozen=True)
class ChatwootConfig:
    token: str | None = None
    secret: str | None = None
    path: str = "/webhooks/chatwoot"
    max_body_bytes: int = 256 * 1024
    max_skew_s: float = 300.0

    def __post_init__(self) -> None:
        if not self.token and not self.secret:
            raise ValueError("a webhook token or an HMAC secret is required "
                             "(MEMORIA_CHATWOOT_WEBHOOK_TOKEN or MEMORIA_CHATWOOT_WEBHOOK_SECRET)")


class PayloadError(ValueError):
    pass


def _when(body: dict) -> datetime:
    for k in ("updated_at", "timestamp", "last_activity_at"):
        v = body.get(k)
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            try:
                return datetime.fromtimestamp(float(v), tz=timezone.utc)
            except (OverflowError, OSError, ValueError):
                raise PayloadError(f"{k} is not a valid unix time") from None
        if isinstance(v, str) and v:
            try:
                d = datetime.fromisoformat(v.replace("Z", "+00:00"))
            except ValueError:
                raise PayloadError(f"{k} is not an ISO-8601 time") from None
            return d if d.tzinfo else d.replace(tzinfo=timezone.utc)
    return datetime.now(timezone.utc)


def parse_status_change(body: Any) -> ConversationLifecycleEvent | None:
    """The lifecycle event of a webhook body, or None when it is not one we act on.
    Raises PayloadError with the reason when the body is malformed."""
    if not isinstance(body, dict):
        raise PayloadError("body must be a JSON object")
    if body.get("event") != "conversation_status_changed":
        return None
    status = body.get("status")
    if not isinstance(status, str):
        raise PayloadError("status must be a string")
    previous = None
    for change in body.get("changed_attributes") or []:
        if isinstance(change, dict) and isinstance(change.get("status"), dict):
            previous = change["status"].get("previous_value")
    if status == "resolved":
        type_ = "resolved"
    elif status == "open" and previous in (None, "resolved"):
        type_ = "reopened"
    else:
        return None  # pending, snoozed, or open after pending: no lifecycle change for us
    conv = body.get("id")
    if isinstance(conv, bool) or not isinstance(conv, (int, str)) or str(conv) == "":
        raise PayloadError("id (the conversation id) must be an integer or a string")
    account = body.get("account")
    account_id = account.get("id") if isinstance(account, dict) else body.get("account_id")
    if isinstance(account_id, bool) or not isinstance(account_id, int) or account_id <= 0:
        raise PayloadError("account.id must be a positive integer")
    occurred = _when(body)
    digest = hashlib.sha256(f"{account_id}:{conv}:{type_}:{occurred.isoformat()}".encode()).hexdigest()[:32]
    try:
        return ConversationLifecycleEvent(event_id=f"chatwoot-{digest}", type=type_, account_id=account_id,
                                          conversation_id=str(conv), source="chatwoot", occurred_at=occurred)
    except ValidationError as e:
        raise PayloadError(f"invalid event: {e.errors()[0]['loc']}: {e.errors()[0]['msg']}") from None


def _error(status: int, reason: str) -> web.Response:
    return web.json_response({"error": reason}, status=status)


def _refused(request: web.Request, raw: bytes, config: ChatwootConfig) -> web.Response | None:
    """The error answer when the request is not from the configured Chatwoot (HMAC or token), else None."""
    if config.secret:
        sig = request.headers.get("X-Chatwoot-Signature", "")
        ts = request.headers.get("X-Chatwoot-Timestamp", "")
        if not sig or not ts:
            return _error(401, "missing X-Chatwoot-Signature or X-Chatwoot-Timestamp header")
        try:
            skew = abs(time.time() - int(ts))
        except ValueError:
            return _error(401, "X-Chatwoot-Timestamp must be unix seconds")
        expected = "sha256=" + hmac.new(config.secret.encode(), ts.encode() + b"." + raw,
                                        hashlib.sha256).hexdigest()
        if not hmac.compare_digest(expected, sig.strip().lower()):
            return _error(403, "invalid X-Chatwoot-Signature")
        if skew > config.max_skew_s:
            return _error(403, "X-Chatwoot-Timestamp too old")
        return None
    given = request.query.get("token") or request.headers.get("X-Memoria-Token")
    if not given:
        return _error(401, "missing token (?token= or X-Memoria-Token)")
    if not hmac.compare_digest(given.encode(), (config.token or "").encode()):
        return _error(403, "invalid token")
    return None


def create_app(config: ChatwootConfig, publish: Publish) -> web.Application:
    app = web.Application(client_max_size=config.max_body_bytes)

    async def receive(request: web.Request) -> web.Response:
        try:
            raw = await request.read()
        except web.HTTPRequestEntityTooLarge:
            return _error(413, f"body over {config.max_body_bytes} bytes")
        refused = _refused(request, raw, config)
        if refused is not None:
            return refused
        try:
            body = json.loads(raw)
        except (UnicodeDecodeError, json.JSONDecodeError):
            return _error(400, "body is not valid JSON")
        try:
            event = parse_status_change(body)
        except PayloadError as e:
            return _error(400, str(e))
        if event is None:
            return web.json_response({"published": 0, "ignored": 1})
        try:
            await publish(event)
        except Exception as e:  # the broker did not acknowledge: the sender must retry
            log.error("chatwoot publish failed conversation_id=%s error=%r", event.conversation_id, e)
            return _error(503, "could not publish the event, retry later")
        log.info("chatwoot conversation %s account_id=%d conversation_id=%s", event.type, event.account_id,
                 event.conversation_id)
        return web.json_response({"published": 1, "ignored": 0, "event_id": event.event_id, "type": event.type})

    app.router.add_post(config.path, receive)
    return app
