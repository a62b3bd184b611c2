"""Anniversary offers for the operator (issue 11): the account's offer settings
(flag, WhatsApp template) with the flag's audit trail (``account_flag_changes``,
like the memory flags), a preview of what the daily job would send, the offers
already recorded and how many contacts opted out. The planning itself is
``streams.maintain.offers``."""

from __future__ import annotations

from datetime import date

import psycopg

from streams.admin.flags import change_account_settings
from streams.admin.tokens import Operator
from streams.maintain import offers as offer_service

FLAG = offer_service.FLAG
LABEL = "Ofertas de datas comemorativas"


def occasion_label(occasion: str) -> str:
    """"birthday" → "Aniversário" (the offer's own wording, capitalised); unknown keys as written."""
    label = offer_service.LABELS.get(occasion, occasion.replace("_", " ")).removeprefix("o seu ")
    return label[:1].upper() + label[1:]


def offer_settings(conn: psycopg.Connection, account_id: int, defaults) -> tuple[bool, str, str]:
    """(enabled, template name, template language); ``defaults`` is the Settings (deployment defaults)."""
    row = conn.execute("SELECT settings FROM accounts WHERE id = %s", (account_id,)).fetchone()
    return offer_service.account_offer_settings((row or {}).get("settings"), defaults)


def last_change(conn: psycopg.Connection, account_id: int) -> dict | None:
    """The flag's last change: {enabled, changed_by, changed_at}, or None when never changed."""
    return conn.execute("SELECT enabled, changed_by, changed_at FROM account_flag_changes "
                        "WHERE account_id = %s AND flag = %s ORDER BY changed_at DESC, id DESC LIMIT 1",
                        (account_id, FLAG)).fetchone()


def set_offer_settings(conn: psycopg.Connection, account_id: int, defaults, *, enabled: bool,
                       template_name: str | None = None, template_language: str | None = None,
                       operator: Operator) -> tuple[bool, str, str]:
    """Set the flag (recorded with the operator) and, when given, the template (empty = the deployment's default)."""
    new: dict = {FLAG: bool(enabled)}
    if template_name is not None:
        new["offers_template_name"] = template_name
    if template_language is not None:
        new["offers_template_language"] = template_language
    change_account_settings(conn, account_id, new, flag=FLAG, enabled=enabled, operator=operator)
    return offer_settings(conn, account_id, defaults)


def preview(conn: psycopg.Connection, account_id: int, defaults, today: date, days: int = 7):
    """(enabled, proposals) for the next ``days`` days, already-sent ones marked; nothing is written."""
    enabled, name, language = offer_settings(conn, account_id, defaults)
    return enabled, offer_service.plan_offers(conn, account_id, today, days=days, template_name=name,
                                              language=language, include_sent=True)


def recorded_offers(conn: psycopg.Connection, account_id: int, limit: int = 100) -> list[dict]:
    """Offers recorded by the daily job, newest first (``published_at`` None = not yet sent to Kafka)."""
    return conn.execute(
        """SELECT contact_id, occasion, occasion_date, conversation_id, text, template_name,
                  template_params, chunk_ids, created_at, published_at FROM offers WHERE account_id = %s
           ORDER BY created_at DESC, id DESC LIMIT %s""", (account_id, limit)).fetchall()


def optouts(conn: psycopg.Connection, account_id: int) -> int:
    """Contacts who asked for no promotions (they get no offer)."""
    return conn.execute("SELECT count(*) AS n FROM marketing_optouts WHERE account_id = %s",
                        (account_id,)).fetchone()["n"]
