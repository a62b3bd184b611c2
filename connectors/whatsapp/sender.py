"""Send an ``OutboundReply`` through a WhatsApp-compatible endpoint (Graph API shape).

    sender = WhatsAppSender(base_url="https://graph.facebook.com/v21.0", token=..., resolver=...)
    result = await sender.send(reply)

``POST {base_url}/{phone_number_id}/messages`` with ``Authorization: Bearer``
and the Cloud API text body. Retries (jittered exponential backoff, or the
API's ``Retry-After``) when the connection fails or the API answers 429/5xx;
a 4xx other than 429 fails at once with the API's error; a request that may
have reached the API without an answer (read timeout) is never repeated
(``ambiguous``). The result says what happened; it never raises for HTTP outcomes.
"""

from __future__ import annotations

import asyncio
import logging
import random
import time
from dataclasses import dataclass
from datetime import timezone
from email.utils import parsedate_to_datetime

import httpx

from connectors.whatsapp.resolver import Destination, Resolver
from schemas.events import OutboundReply

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class SendResult:
    ok: bool
    status: int | None  # last HTTP status (None: never reached the server)
    attempts: int
    wa_message_id: str | None = None
    error: str | None = None
    #: the API did not take the message and asks to try again later (429, 5xx, no connection)
    retryable: bool = False
    #: seconds the API asked to wait (Retry-After), when it said so
    retry_after: float | None = None
    #: the request may have reached the API but no answer came (read timeout, broken
    #: connection): sending again could deliver the message twice
    ambiguous: bool = False


def retry_after_seconds(value: str | None, *, now: float | None = None) -> float | None:
    """``Retry-After`` as seconds: delta-seconds or an HTTP date; None when absent or unreadable."""
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when is None:
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=timezone.utc)
    return max(0.0, when.timestamp() - (now if now is not None else time.time()))


def api_error(resp: httpx.Response) -> str:
    """The Graph API's error (``error.code``, ``error.message``), else the body's start."""
    try:
        err = resp.json().get("error") or {}
        if isinstance(err, dict) and (err.get("message") or err.get("code")):
            return f"status={resp.status_code} code={err.get('code')} {str(err.get('message', ''))[:300]}"
    except (ValueError, AttributeError):
        pass
    return f"status={resp.status_code} {resp.text[:300]}"


class WhatsAppSender:
    def __init__(self, base_url: str, token: str, resolver: Resolver, *, timeout: float = 10.0,
                 max_attempts: int = 4, backoff_max: float = 8.0,
                 client: httpx.AsyncClient | None = None):
        self.base_url = base_url.rstrip("/")
        self.token = token
        self.resolver = resolver
        self.max_attempts = max_attempts
        self.backoff_max = backoff_max
        self._client = client or httpx.AsyncClient(timeout=timeout)

    async def aclose(self) -> None:
        await self._client.aclose()

    @staticmethod
    def body(dest: Destination, text: str) -> dict:
        return {"messaging_product": "whatsapp", "recipient_type": "individual", "to": dest.wa_id,
                "type": "text", "text": {"preview_url": False, "body": text}}

    @staticmethod
    def template_body(dest: Destination, template) -> dict:
        """A pre-approved template (the only thing allowed outside the 24-hour window)."""
        return {"messaging_product": "whatsapp", "recipient_type": "individual", "to": dest.wa_id,
                "type": "template",
                "template": {"name": template.name, "language": {"code": template.language},
                             "components": [{"type": "body", "parameters": [
                                 {"type": "text", "text": p} for p in template.parameters]}]}}

    async def send(self, reply: OutboundReply) -> SendResult:
        dest = await self.resolver.destination(reply.account_id, reply.contact_id, reply.conversation_id)
        if dest is None:
            return SendResult(False, None, 0, error="no WhatsApp destination for this contact")
        if reply.template is not None:
            return await self.send_text(dest, reply.text, reply_id=reply.reply_id,
                                        body=self.template_body(dest, reply.template))
        return await self.send_text(dest, reply.text, reply_id=reply.reply_id)

    def _backoff(self, attempt: int) -> float:
        return min(self.backoff_max, 0.2 * (2 ** (attempt - 1))) * (0.5 + random.random() / 2)

    async def send_text(self, dest: Destination, text: str, reply_id: str = "", body: dict | None = None) -> SendResult:
        """Up to ``max_attempts`` posts while the API answers 429/5xx or cannot be
        reached, waiting Retry-After when given (a longer wait than ``backoff_max``
        is left to the caller: the result is ``retryable`` with ``retry_after``)."""
        url = f"{self.base_url}/{dest.phone_number_id}/messages"
        headers = {"Authorization": f"Bearer {self.token}"}
        status: int | None = None
        error = ""
        wait: float | None = None
        for attempt in range(1, self.max_attempts + 1):
            try:
                resp = await self._client.post(url, json=body or self.body(dest, text), headers=headers)
            except (httpx.ConnectError, httpx.ConnectTimeout, httpx.PoolTimeout) as e:  # never sent
                status, error, wait = None, f"{type(e).__name__}: {e}", None
            except httpx.HTTPError as e:  # sent, maybe received: do not send it again
                log.error("whatsapp send outcome unknown reply_id=%s error=%r", reply_id, e)
                return SendResult(False, None, attempt, error=f"{type(e).__name__}: {e}", ambiguous=True)
            else:
                status = resp.status_code
                if status < 400:
                    wa_id = None
                    try:
                        wa_id = (resp.json().get("messages") or [{}])[0].get("id")
                    except (ValueError, AttributeError, IndexError):
                        pass
                    return SendResult(True, status, attempt, wa_message_id=wa_id)
                error = api_error(resp)
                if status != 429 and status < 500:
                    log.error("whatsapp send rejected reply_id=%s %s", reply_id, error)
                    return SendResult(False, status, attempt, error=error)
                wait = retry_after_seconds(resp.headers.get("Retry-After"))
            if attempt == self.max_attempts or (wait is not None and wait > self.backoff_max):
                break
            await asyncio.sleep(wait if wait is not None else self._backoff(attempt))
        log.warning("whatsapp send unavailable reply_id=%s attempts=%d error=%s", reply_id, attempt, error)
        return SendResult(False, status, attempt, error=error, retryable=True, retry_after=wait)
