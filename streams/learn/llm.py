"""One way to call an OpenAI-compatible chat endpoint for JSON answers.

Conventions shared by the LLM extractor and contradiction checker:
JSON-schema ``response_format``, temperature 0, bounded ``max_tokens``
(``MEMORIA_LLM_MAX_TOKENS``), a timeout (``MEMORIA_LLM_TIMEOUT``, 120 s by
default: a CPU-served model needs ~2 min for a 1,200-token answer), and
retries with exponential backoff (tenacity) on connection errors, 429 and 5xx.
The openai client's own retries are off so the policy is visible here.

A **timeout is never retried**: the request is deterministic (temperature 0),
so sending it again unchanged only times out again. It raises
``ModelTimedOut`` (a ``ModelUnavailable``) at once, with the reason and the
settings to change; the worker records the conversation as failed without a
next attempt (``memoria replay extract`` runs it again once the timeout or
``max_tokens`` is raised/lowered).

Failure semantics:
- the model stays unavailable after the retries → ``ModelUnavailable``
  (a subclass of ``ExtractionFailed``): retryable, the caller keeps the
  conversation and tries again later;
- the model answered but the content is unusable (empty, truncated, not JSON
  even after repair) → ``MalformedOutput`` is *returned* in ``ChatAnswer.error``,
  never raised: the caller discards that conversation with a warning.
"""

from __future__ import annotations

import json
import logging
import re
from dataclasses import dataclass
from typing import Any

import openai
from tenacity import Retrying, retry_if_exception, stop_after_attempt, wait_exponential

from streams.learn.model import TokenUsage

log = logging.getLogger(__name__)


class ExtractionFailed(RuntimeError):
    """Retryable: the conversation must be kept and extracted again later."""


class ModelUnavailable(ExtractionFailed):
    """The model endpoint timed out / refused / returned 5xx after all retries."""


class ModelTimedOut(ModelUnavailable):
    """One request took longer than the timeout; not retried (it would again)."""


@dataclass(frozen=True)
class LlmConfig:
    base_url: str | None = None
    api_key: str | None = None
    model: str = "gpt-4o-mini"
    timeout: float = 120.0
    max_retries: int = 3          # retries after the first attempt (never after a timeout)
    max_tokens: int = 1200
    strict_schema: bool = False   # "strict": true in response_format (see settings)
    backoff_initial: float = 0.5  # seconds; doubles per retry
    backoff_max: float = 8.0


@dataclass
class ChatAnswer:
    data: dict | None          # the parsed JSON object, or None
    usage: TokenUsage
    error: str | None = None   # why ``data`` is None ("empty", "truncated", "malformed")
    repaired: bool = False     # JSON had to be cut out of surrounding noise


def _retryable(exc: BaseException) -> bool:
    if isinstance(exc, openai.APITimeoutError):
        return False  # deterministic request: unchanged, it would time out again
    if isinstance(exc, (openai.APIConnectionError, openai.RateLimitError)):
        return True
    return isinstance(exc, openai.APIStatusError) and exc.status_code >= 500


def make_client(config: LlmConfig) -> openai.OpenAI:
    return openai.OpenAI(
        base_url=config.base_url,
        api_key=config.api_key or "not-set",
        timeout=config.timeout,
        max_retries=0,
    )


_FENCE = re.compile(r"```(?:json)?\s*(.*?)```", re.DOTALL | re.IGNORECASE)


def parse_json_lenient(text: str) -> tuple[dict | None, bool]:
    """(object, repaired): plain JSON, else JSON inside a markdown fence, else
    the outermost ``{...}`` found in surrounding prose."""
    text = (text or "").strip()
    if not text:
        return None, False
    try:
        value = json.loads(text)
        return (value, False) if isinstance(value, dict) else (None, False)
    except json.JSONDecodeError:
        pass
    candidates = [m.group(1) for m in _FENCE.finditer(text)]
    start, end = text.find("{"), text.rfind("}")
    if start != -1 and end > start:
        candidates.append(text[start:end + 1])
    for cand in candidates:
        try:
            value = json.loads(cand.strip())
        except json.JSONDecodeError:
            continue
        if isinstance(value, dict):
            return value, True
    return None, False


def chat_json(
    config: LlmConfig,
    messages: list[dict[str, str]],
    schema: dict[str, Any],
    schema_name: str,
    client: openai.OpenAI | None = None,
) -> ChatAnswer:
    """One chat completion constrained to ``schema``; see the module doc for errors."""
    client = client or make_client(config)
    retrying = Retrying(
        retry=retry_if_exception(_retryable),
        stop=stop_after_attempt(config.max_retries + 1),
        wait=wait_exponential(multiplier=config.backoff_initial, max=config.backoff_max),
        reraise=True,
        before_sleep=lambda rs: log.warning(
            'llm retry model="%s" attempt=%d error="%s"', config.model, rs.attempt_number,
            type(rs.outcome.exception()).__name__ if rs.outcome else "",
        ),
    )
    try:
        response = retrying(
            client.chat.completions.create,
            model=config.model,
            messages=messages,
            temperature=0,
            max_tokens=config.max_tokens,
            response_format={
                "type": "json_schema",
                "json_schema": {"name": schema_name, "strict": config.strict_schema, "schema": schema},
            },
        )
    except Exception as exc:
        if isinstance(exc, openai.APITimeoutError):
            raise ModelTimedOut(
                f"model {config.model!r} timed out after {config.timeout:g} s with max_tokens={config.max_tokens}; "
                "not retried (a temperature-0 request would time out again): raise MEMORIA_LLM_TIMEOUT "
                "or lower MEMORIA_LLM_MAX_TOKENS") from exc
        if _retryable(exc):
            raise ModelUnavailable(f"model {config.model!r} unavailable after {config.max_retries + 1} attempts: {exc}") from exc
        if isinstance(exc, openai.APIStatusError):
            # 4xx other than 429: a configuration problem (bad key, unknown model); retry later.
            raise ModelUnavailable(f"model {config.model!r} refused the request ({exc.status_code}): {exc}") from exc
        raise
    usage = TokenUsage(
        prompt_tokens=getattr(response.usage, "prompt_tokens", 0) or 0,
        completion_tokens=getattr(response.usage, "completion_tokens", 0) or 0,
    )
    choice = response.choices[0] if response.choices else None
    content = choice.message.content if choice and choice.message else None
    if not content or not content.strip():
        return ChatAnswer(None, usage, error="empty")
    data, repaired = parse_json_lenient(content)
    if data is None:
        truncated = choice is not None and choice.finish_reason == "length"
        return ChatAnswer(None, usage, error="truncated" if truncated else "malformed")
    return ChatAnswer(data, usage, repaired=repaired)
