"""Send an ``OutboundReply`` through a WhatsApp-compatible endpoint (Graph API shape).

    sender = WhatsAppSender(base_url="https://graph.facebook.com/v21.0", token=..., resolver=...)
    result = await sender.send(reply)

``POST {base_url}/{phone_number_id}/messages`` with ``Authorization: Bearer``
and the Cloud API text body. Retries (tenacity, jittered exponential backoff)
on connection errors, timeouts, 429 and 5xx; a 4xx other than 429 fails at
once. The result says what happened; it never raises for HTTP outcomes.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import httpx
from tenacity import (AsyncRetrying, RetryError, retry_if_exception_type, stop_after_attempt,
                      wait_exponential_jitter)

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


class _Retryable(Exception):
    def __init__(self, status: int | None, detail: str):
        super().__init__(detail)
        self.status = status


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

    async def send_text(self, dest: Destination, text: str, reply_id: str = "", body: dict | None = None) -> SendResult:
        url = f"{self.base_url}/{dest.phone_number_id}/messages"
        headers = {"Authorization": f"Bearer {self.token}"}
        attempts = 0
        last_status: int | None = None
        try:
            async for attempt in AsyncRetrying(
                    stop=stop_after_attempt(self.max_attempts),
                    wait=wait_exponential_jitter(multiplier=0.2, max=self.backoff_max),
                    retry=retry_if_exception_type(_Retryable), reraise=False):
                with attempt:
                    attempts += 1
                    try:
                        resp = await self._client.post(url, json=body or self.body(dest, text), headers=headers)
                    except httpx.HTTPError as e:  # connection refused, reset, timeout
                        raise _Retryable(None, f"{type(e).__name__}: {e}") from e
                    last_status = resp.status_code
                    if resp.status_code == 429 or resp.status_code >= 500:
                        raise _Retryable(resp.status_code, resp.text[:300])
        except RetryError as e:
            exc = e.last_attempt.exception()
            log.error("whatsapp send gave up reply_id=%s attempts=%d error=%s", reply_id, attempts, exc)
            return SendResult(False, last_status, attempts, error=str(exc))
        if resp.status_code >= 400:
            log.error("whatsapp send rejected reply_id=%s status=%d body=%s", reply_id, resp.status_code,
                      resp.text[:300])
            return SendResult(False, resp.status_code, attempts, error=resp.text[:300])
        wa_id = None
        try:
            wa_id = (resp.json().get("messages") or [{}])[0].get("id")
        except (ValueError, AttributeError, IndexError):
            pass
        return SendResult(True, resp.status_code, attempts, wa_message_id=wa_id)
