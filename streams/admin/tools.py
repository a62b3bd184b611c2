"""Per-inbox tools (issue 11): intent → HTTP tool with a JSON contract. The
configuration is validated by the responder's own parser
(``streams.respond.tools.parse_tools``) before it is stored."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import psycopg

from streams.respond.tools import ToolConfigError, parse_tools
from streams.store.uow import joined

if TYPE_CHECKING:
    from streams.store.uow import UnitOfWork


class InvalidTools(ValueError):
    """The tool map cannot be used (the message says why)."""


def get_tools(conn: psycopg.Connection, account_id: int, inbox_id: int) -> dict[str, Any] | None:
    """The inbox's tool map, or None when the inbox is not this account's."""
    row = conn.execute("SELECT tools FROM inboxes WHERE id = %s AND account_id = %s",
                       (inbox_id, account_id)).fetchone()
    return None if row is None else (row["tools"] or {})


def set_tools(target: "UnitOfWork | psycopg.Connection", account_id: int, inbox_id: int,
              tools: Mapping[str, Mapping[str, Any]]) -> dict[str, Any] | None:
    """Replace the inbox's tool map (``{}`` removes them) through ``uow.inboxes``, in one unit of work
    (the caller's, or one committed here); None when the inbox is not this account's."""
    raw = {k: dict(v) for k, v in tools.items()}
    try:
        parse_tools(raw)
    except ToolConfigError as e:
        raise InvalidTools(str(e)) from None
    with joined(target) as uow:
        return uow.inboxes.set_tools(account_id, inbox_id, raw)
