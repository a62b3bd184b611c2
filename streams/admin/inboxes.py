"""Inbox configuration: read and partial update (only the fields given change).

Limits: the inbox's own system prompt ≤ ``SYSTEM_PROMPT_MAX_TOKENS`` tokens
(counted with the packaged tokenizer, ``streams.respond.prompt.count_tokens``);
intent names are identifiers (a new intent such as ``availability_check`` is
accepted: the engine scores any intent the keywords name). The non-negotiable
rules are added by the prompt builder whatever the inbox prompt says.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any, Protocol, Sequence

import psycopg
from psycopg.types.json import Jsonb

from streams.admin.tokens import Operator
from streams.respond.intent import INTENTS
from streams.store.uow import joined

if TYPE_CHECKING:
    from streams.store.uow import UnitOfWork

COLUMNS = ("name", "system_prompt", "playbook_prompt", "rag_distance_threshold", "rag_max_results", "model",
           "temperature", "intent_keywords")
EDITABLE = COLUMNS[1:]
INTENT_NAME = re.compile(r"^[a-z][a-z0-9_]{0,63}$")
BUILTIN_INTENTS = tuple(i for i in INTENTS)
MAX_KEYWORDS_PER_INTENT = 200


class InvalidConfig(ValueError):
    """A value the inbox cannot take (the message says which and why)."""


def calibrated_threshold(embedding_model: str) -> float:
    """The knowledge cut-off used when an inbox's threshold is NULL (the active embedding model's)."""
    from streams.embedding.providers import model_slug
    from streams.ingest.knowledge import default_max_distance

    return default_max_distance(model_slug(embedding_model))


def system_prompt_tokens(text: str) -> int:
    from streams.respond.prompt import count_tokens

    return count_tokens(text) if text.strip() else 0


def validate_keywords(value: Any) -> dict[str, Any]:
    """intent → [keywords] or {"keywords": [..] | {kw: weight}, "replace": bool}."""
    if not isinstance(value, dict):
        raise InvalidConfig("intent_keywords must be an object: intent → keywords")
    out: dict[str, Any] = {}
    for intent, entry in value.items():
        if not isinstance(intent, str) or not INTENT_NAME.match(intent):
            raise InvalidConfig(f"intent name {intent!r} must be lowercase letters, digits and _ (max 64)")
        replace = None
        if isinstance(entry, dict):
            if set(entry) - {"keywords", "replace"} or "keywords" not in entry:
                raise InvalidConfig(f"intent {intent!r}: an object needs 'keywords' (and optional 'replace')")
            replace, entry = bool(entry.get("replace", False)), entry["keywords"]
        if isinstance(entry, dict):
            words = list(entry)
            if not all(isinstance(w, (int, float)) and 0 < w <= 10 for w in entry.values()):
                raise InvalidConfig(f"intent {intent!r}: keyword weights must be numbers in (0, 10]")
        elif isinstance(entry, list):
            words = entry
        else:
            raise InvalidConfig(f"intent {intent!r}: keywords must be a list of strings")
        if len(words) > MAX_KEYWORDS_PER_INTENT:
            raise InvalidConfig(f"intent {intent!r}: at most {MAX_KEYWORDS_PER_INTENT} keywords")
        for w in words:
            if not isinstance(w, str) or not w.strip() or len(w) > 100 or "\x00" in w:
                raise InvalidConfig(f"intent {intent!r}: each keyword is 1-100 characters of text")
        if isinstance(entry, list):
            entry = [w.strip() for w in entry]
        out[intent] = entry if replace is None else {"keywords": entry, "replace": replace}
    return out


def get_inbox(conn: psycopg.Connection, account_id: int, inbox_id: int) -> dict | None:
    return conn.execute(f"SELECT id, {', '.join(COLUMNS)} FROM inboxes WHERE id = %s AND account_id = %s",
                        (inbox_id, account_id)).fetchone()


def list_inboxes(conn: psycopg.Connection, account_id: int) -> list[dict]:
    return conn.execute(f"SELECT id, {', '.join(COLUMNS)} FROM inboxes WHERE account_id = %s ORDER BY id",
                        (account_id,)).fetchall()


def last_change(conn: psycopg.Connection, account_id: int, inbox_id: int) -> dict | None:
    return conn.execute("SELECT changed_by, changed_at, changes FROM inbox_changes WHERE account_id = %s "
                        "AND inbox_id = %s ORDER BY changed_at DESC, id DESC LIMIT 1", (account_id, inbox_id)).fetchone()


class InboxRepository(Protocol):
    """``uow.inboxes``: an inbox's settings and their audit trail (``streams.store.fake_uow`` implements
    it in memory)."""

    def locked(self, account_id: int, inbox_id: int, fields: Sequence[str]) -> dict | None:
        """``fields`` of the account's inbox, locked until the unit ends; None when it has no such inbox."""
    def update(self, account_id: int, inbox_id: int, changes: dict[str, Any]) -> dict:
        """Set ``changes``; the inbox's ``id`` and ``COLUMNS`` after the change."""
    def record_change(self, account_id: int, inbox_id: int, operator: Operator, diff: dict) -> None:
        """Who changed which fields (``{field: {"before": .., "after": ..}}``), in ``inbox_changes``."""
    def set_tools(self, account_id: int, inbox_id: int, tools: dict) -> dict | None:
        """Replace the inbox's tool map; the map stored, or None when the account has no such inbox."""


JSON_COLUMNS = ("intent_keywords",)


class PostgresInboxRepository:
    def __init__(self, uow: "UnitOfWork"):
        self.conn = uow.conn

    def locked(self, account_id, inbox_id, fields):
        return self.conn.execute(f"SELECT {', '.join(fields)} FROM inboxes WHERE id = %s AND account_id = %s "
                                 "FOR UPDATE", (inbox_id, account_id)).fetchone()

    def update(self, account_id, inbox_id, changes):
        sets = ", ".join(f"{k} = %s" for k in changes)
        values = [Jsonb(v) if k in JSON_COLUMNS else v for k, v in changes.items()]
        return self.conn.execute(f"UPDATE inboxes SET {sets} WHERE id = %s AND account_id = %s "
                                 f"RETURNING id, {', '.join(COLUMNS)}", (*values, inbox_id, account_id)).fetchone()

    def record_change(self, account_id, inbox_id, operator, diff):
        self.conn.execute("INSERT INTO inbox_changes (account_id, inbox_id, changed_by, token_id, changes) "
                          "VALUES (%s, %s, %s, %s, %s)",
                          (account_id, inbox_id, operator.label, operator.token_id, Jsonb(diff)))

    def set_tools(self, account_id, inbox_id, tools):
        row = self.conn.execute("UPDATE inboxes SET tools = %s WHERE id = %s AND account_id = %s RETURNING tools",
                                (Jsonb(tools), inbox_id, account_id)).fetchone()
        return None if row is None else row["tools"]


def update_inbox(target: "UnitOfWork | psycopg.Connection", account_id: int, inbox_id: int,
                 changes: dict[str, Any], *, operator: Operator, max_prompt_tokens: int | None = None) -> dict | None:
    """Apply the given fields only, and record who changed which (before → after, only the fields whose
    value changed) in ``inbox_changes``, in one unit of work (the caller's, or one committed here).
    None when the account has no such inbox. Raises InvalidConfig (and changes nothing)."""
    from streams.respond.prompt import SYSTEM_PROMPT_MAX_TOKENS

    limit = max_prompt_tokens or SYSTEM_PROMPT_MAX_TOKENS
    unknown = set(changes) - set(EDITABLE)
    if unknown:
        raise InvalidConfig(f"unknown fields {sorted(unknown)}")
    if "system_prompt" in changes:
        n = system_prompt_tokens(changes["system_prompt"] or "")
        if n > limit:
            raise InvalidConfig(f"system_prompt has {n} tokens; the limit is {limit}")
    if "intent_keywords" in changes:
        changes = dict(changes, intent_keywords=validate_keywords(changes["intent_keywords"]))
    with joined(target) as uow:
        if not changes:
            return uow.inboxes.locked(account_id, inbox_id, ["id", *COLUMNS])
        before = uow.inboxes.locked(account_id, inbox_id, list(changes))
        if before is None:
            return None
        row = uow.inboxes.update(account_id, inbox_id, changes)
        diff = {k: {"before": before[k], "after": row[k]} for k in changes if before[k] != row[k]}
        if diff:
            uow.inboxes.record_change(account_id, inbox_id, operator, diff)
    return row
