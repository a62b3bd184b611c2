"""Account flags (learn from conversations; use memory in replies) with their audit trail.

The current value lives in ``accounts.settings`` (the workers read it there);
every change is also a row of ``account_flag_changes`` (who, when), written in
the same transaction. One flag changes at a time.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Protocol

import psycopg
from psycopg.types.json import Jsonb

from streams.admin.tokens import Operator
from streams.store.uow import joined

if TYPE_CHECKING:
    from streams.store.uow import UnitOfWork

FLAGS = {
    "memory_extraction_enabled": "Aprender com as conversas",
    "memory_recall_enabled": "Usar a memória nas respostas",
}


@dataclass
class FlagState:
    flag: str
    label: str
    enabled: bool
    changed_at: datetime | None
    changed_by: str | None


def flag_states(conn: psycopg.Connection, account_id: int) -> list[FlagState]:
    settings = conn.execute("SELECT settings FROM accounts WHERE id = %s", (account_id,)).fetchone()
    settings = (settings or {}).get("settings") or {}
    last = {r["flag"]: r for r in conn.execute(
        "SELECT DISTINCT ON (flag) flag, changed_by, changed_at FROM account_flag_changes WHERE account_id = %s "
        "ORDER BY flag, changed_at DESC, id DESC", (account_id,)).fetchall()}
    return [FlagState(f, label, bool(settings.get(f, False)), last.get(f, {}).get("changed_at"),
                      last.get(f, {}).get("changed_by")) for f, label in FLAGS.items()]


def flag_history(conn: psycopg.Connection, account_id: int, limit: int = 50) -> list[dict]:
    return conn.execute("SELECT flag, enabled, changed_by, changed_at FROM account_flag_changes "
                        "WHERE account_id = %s ORDER BY changed_at DESC, id DESC LIMIT %s",
                        (account_id, limit)).fetchall()


class AccountSettingsRepository(Protocol):
    """``uow.accounts``: an account's settings changes (``streams.store.fake_uow`` implements it in memory)."""

    def change_settings(self, account_id: int, values: dict, *, flag: str, enabled: bool,
                        operator: Operator) -> None:
        """Merge ``values`` into the account's settings and record who set ``flag`` to ``enabled``
        (``account_flag_changes``), together."""


class PostgresAccountSettingsRepository:
    def __init__(self, uow: "UnitOfWork"):
        self.conn = uow.conn

    def change_settings(self, account_id, values, *, flag, enabled, operator):
        self.conn.execute("UPDATE accounts SET settings = settings || %s WHERE id = %s", (Jsonb(values), account_id))
        self.conn.execute("INSERT INTO account_flag_changes (account_id, flag, enabled, changed_by, token_id) "
                          "VALUES (%s, %s, %s, %s, %s)", (account_id, flag, bool(enabled), operator.label,
                                                          operator.token_id))




def change_account_settings(target: "UnitOfWork | psycopg.Connection", account_id: int, values: dict, *,
                            flag: str, enabled: bool, operator: Operator) -> None:
    """An operator's settings change and its audit row, in one unit of work (the caller's, or one
    committed here): the memory flags and the offers' settings both change through it."""
    with joined(target) as uow:
        uow.accounts.change_settings(account_id, values, flag=flag, enabled=enabled, operator=operator)


def set_flag(conn: psycopg.Connection, account_id: int, flag: str, enabled: bool, operator: Operator) -> FlagState:
    """Set one flag and record who changed it (a no-op change is recorded too: it is what the operator did)."""
    if flag not in FLAGS:
        raise KeyError(flag)
    change_account_settings(conn, account_id, {flag: bool(enabled)}, flag=flag, enabled=enabled, operator=operator)
    return next(s for s in flag_states(conn, account_id) if s.flag == flag)
