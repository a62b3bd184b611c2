"""Anniversary offers (proactive outbound on ``data_comemorativa`` × ``preferencia``).

A daily maintenance job, per account behind the ``anniversary_offers_enabled``
flag (default off):

1. find live ``data_comemorativa`` facts whose date falls in the next
   ``days`` days (``dd-mm`` values, ``dd/mm`` and written dates such as
   "14 de fevereiro" in the content; yearly recurrence; 29/02 falls on 28/02
   in other years);
2. skip contacts who opted out ("parar", "não quero receber promoções") and
   occasions already offered this year (unique key contact × occasion × year
   in ``offers``, so restarts and replays never offer twice);
3. build a proposal from the customer's ``preferencia`` facts and a sentence
   copied verbatim from the account's knowledge, so every price it quotes is
   one the knowledge contains (the price guard checks it again); without a
   matching priced sentence the proposal quotes no price at all;
4. record it, then publish it on ``channel.outbound.replies`` as an
   ``OutboundReply`` with ``kind="offer"`` and a WhatsApp template (name and
   body parameters: outside the 24-hour window only templates may be sent),
   and mark it published.

``plan_offers`` is also the operator's preview (admin API), with nothing written.
"""

from __future__ import annotations

import logging
import re
import uuid
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta, timezone
from typing import TYPE_CHECKING, Any, Protocol, Sequence

import psycopg
from psycopg.types.json import Jsonb

from schemas.events import OutboundReply, WhatsAppTemplate
from streams.respond.text import content_tokens, fold, stem
from streams.store.uow import joined

if TYPE_CHECKING:
    from streams.store.uow import UnitOfWork

log = logging.getLogger(__name__)

FLAG = "anniversary_offers_enabled"
OFFER_NAMESPACE = uuid.UUID("a3d2c1b0-5e4f-4a7b-8c9d-0e1f2a3b4c5d")
MONTHS = {"janeiro": 1, "fevereiro": 2, "marco": 3, "abril": 4, "maio": 5, "junho": 6, "julho": 7,
          "agosto": 8, "setembro": 9, "outubro": 10, "novembro": 11, "dezembro": 12,
          "jan": 1, "fev": 2, "mar": 3, "abr": 4, "mai": 5, "jun": 6, "jul": 7, "ago": 8, "set": 9,
          "out": 10, "nov": 11, "dez": 12}
_DM = re.compile(r"\b([0-3]?\d)\s*[/.-]\s*([01]?\d)\b")
_WRITTEN = re.compile(rf"\b([0-3]?\d)\s+(?:de\s+)?({'|'.join(sorted(MONTHS, key=len, reverse=True))})\b")
OCCASION_WORDS = "comemorar comemoracao aniversario casal romantico especial decoracao pernoite"
PRICE = re.compile(r"R\$\s*\d")
LABELS = {"birthday": "o seu aniversário", "wedding_anniversary": "o seu aniversário de casamento",
          "dating_anniversary": "o seu aniversário de namoro"}


# ------------------------------------------------------------------ dates
def occasion_day(normalized_value: str | None, content: str) -> tuple[int, int] | None:
    """(day, month) of a data_comemorativa fact: its ``dd-mm`` value, or a
    ``dd/mm`` or written date ("14 de fevereiro") in its content."""
    for text in (normalized_value or "", content.casefold(), fold(content)):
        m = _DM.search(text) or _WRITTEN.search(text)
        if not m:
            continue
        day = int(m.group(1))
        month = int(m.group(2)) if m.group(2).isdigit() else MONTHS[m.group(2)]
        if 1 <= month <= 12 and 1 <= day <= (29 if month == 2 else 30 if month in (4, 6, 9, 11) else 31):
            return day, month
    return None


def on_year(day: int, month: int, year: int) -> date:
    """The occasion in ``year`` (29/02 is celebrated on 28/02 outside leap years)."""
    try:
        return date(year, month, day)
    except ValueError:
        return date(year, month, day - 1)


def next_occurrence(day: int, month: int, today: date) -> date:
    d = on_year(day, month, today.year)
    return d if d >= today else on_year(day, month, today.year + 1)


# --------------------------------------------------------------- proposal
@dataclass(frozen=True)
class Proposal:
    account_id: int
    contact_id: int
    occasion: str
    occasion_date: date
    memory_id: int
    conversation_id: str
    text: str
    template: WhatsAppTemplate
    chunk_ids: tuple[uuid.UUID, ...] = ()
    preferences: tuple[str, ...] = ()
    already_sent: bool = False

    @property
    def year(self) -> int:
        return self.occasion_date.year

    @property
    def reply_id(self) -> str:
        return str(uuid.uuid5(OFFER_NAMESPACE, f"{self.account_id}:{self.contact_id}:{self.occasion}:{self.year}"))


@dataclass(frozen=True)
class PricedSentence:
    chunk_id: uuid.UUID
    text: str
    stems: frozenset[str] = field(default_factory=frozenset)


def priced_sentences(conn: psycopg.Connection, account_id: int) -> list[PricedSentence]:
    """Sentences of the account's live knowledge that quote a price (R$)."""
    rows = conn.execute("SELECT id, content FROM chunks WHERE account_id = %s AND deleted_at IS NULL "
                        "AND content LIKE '%%R$%%' ORDER BY document_id, seq", (account_id,)).fetchall()
    out, seen = [], set()
    for r in rows:
        for s in re.split(r"(?<=[.!?])\s+|\n+", r["content"]):
            s = s.strip().lstrip("#-* ").strip()
            if PRICE.search(s) and s not in seen:
                seen.add(s)
                out.append(PricedSentence(r["id"], s, frozenset(stem(t) for t in content_tokens(s))))
    return out


def pick_sentence(preferences: Sequence[str], sentences: Sequence[PricedSentence]) -> tuple[PricedSentence | None, str | None]:
    """The priced sentence sharing most words with a preference (and the preference),
    else the one nearest the occasion words; None when nothing is priced."""
    best, best_pref, best_score = None, None, 0.0
    for pref in preferences:
        want = {stem(t) for t in content_tokens(pref)} - {stem("prefere")}
        for s in sentences:
            score = len(want & s.stems)
            if score > best_score:
                best, best_pref, best_score = s, pref, score
    if best is not None:
        return best, best_pref
    occasion = {stem(t) for t in OCCASION_WORDS.split()}
    ranked = sorted(sentences, key=lambda s: -len(occasion & s.stems))
    if ranked and occasion & ranked[0].stems:
        return ranked[0], None
    return None, None


def _lower_first(s: str) -> str:
    return s[:1].lower() + s[1:] if s else s


def compose(name: str, occasion: str, content: str, on: date, preference: str | None,
            sentence: PricedSentence | None) -> tuple[str, list[str]]:
    """(text, template parameters [name, occasion, date, suggestion])."""
    label = LABELS.get(occasion) or _lower_first(re.split(r"\s+em\s+\d", content)[0]).replace(
        "aniversário", "o aniversário", 1)
    when = f"{on.day:02d}/{on.month:02d}"
    if sentence is not None and preference:
        suggestion = f"Como você {_lower_first(preference)}, separamos uma sugestão: {sentence.text}"
    elif sentence is not None:
        suggestion = f"Uma sugestão para comemorar: {sentence.text}"
    elif preference:
        suggestion = f"Como você {_lower_first(preference)}, podemos preparar tudo do seu jeito."
    else:
        suggestion = "Podemos preparar algo especial para você."
    greeting = f"Oi, {name}!" if name else "Oi!"
    text = (f"{greeting} {label[:1].upper() + label[1:]} está chegando ({when}) e queremos comemorar com você. "
            f"{suggestion} Quer que a gente reserve? (Se não quiser receber ofertas, responda PARAR.)")
    return text, [name or "cliente", label, when, suggestion]


def plan_offers(conn: psycopg.Connection, account_id: int, today: date, *, days: int = 7,
                template_name: str = "oferta_data_comemorativa", language: str = "pt_BR",
                include_sent: bool = False) -> list[Proposal]:
    """The offers due in the next ``days`` days (nothing written: also the preview)."""
    from streams.respond.adapters import REDUCE_WEIGHT_TYPES  # noqa: F401  (same liveness as recall)
    from streams.respond.generate import unsupported_prices
    from streams.respond.model import KnowledgeChunk

    rows = conn.execute(
        """SELECT m.id, m.contact_id, m.memory_key, m.normalized_value, m.content, ct.name,
                  (SELECT external_id FROM conversations c WHERE c.account_id = m.account_id
                     AND c.contact_id = m.contact_id AND c.external_id IS NOT NULL
                   ORDER BY c.last_message_at DESC NULLS LAST, c.id DESC LIMIT 1) AS conversation_id
           FROM contact_memories m JOIN contacts ct ON ct.id = m.contact_id AND ct.account_id = m.account_id
           WHERE m.account_id = %s AND m.memory_type = 'data_comemorativa'
             AND m.deleted_at IS NULL AND m.superseded_at IS NULL
             AND NOT EXISTS (SELECT 1 FROM marketing_optouts o WHERE o.account_id = m.account_id
                             AND o.contact_id = m.contact_id)
           ORDER BY m.contact_id, m.id""", (account_id,)).fetchall()
    due = []
    for r in rows:
        dm = occasion_day(r["normalized_value"], r["content"])
        if dm is None or r["conversation_id"] is None:
            continue
        on = next_occurrence(dm[0], dm[1], today)
        if on <= today + timedelta(days=days):
            due.append((r, on))
    if not due:
        return []
    sent = {(s["contact_id"], s["occasion"], s["year"]) for s in conn.execute(
        "SELECT contact_id, occasion, year FROM offers WHERE account_id = %s", (account_id,)).fetchall()}
    contacts = sorted({r["contact_id"] for r, _ in due})
    prefs: dict[int, list[str]] = {}
    for p in conn.execute(
            """SELECT contact_id, content FROM contact_memories WHERE account_id = %s AND contact_id = ANY(%s)
               AND memory_type = 'preferencia' AND deleted_at IS NULL AND superseded_at IS NULL
               AND content NOT ILIKE 'Não quer%%' ORDER BY weight DESC, last_verified_at DESC""",
            (account_id, contacts)).fetchall():
        prefs.setdefault(p["contact_id"], []).append(p["content"])
    sentences = priced_sentences(conn, account_id)
    out: list[Proposal] = []
    seen: set[tuple[int, str, int]] = set()
    for r, on in due:
        key = (r["contact_id"], r["memory_key"], on.year)
        if key in seen:  # two facts for one occasion: one offer
            continue
        seen.add(key)
        already = key in sent
        if already and not include_sent:
            continue
        my_prefs = prefs.get(r["contact_id"], [])
        sentence, pref = pick_sentence(my_prefs, sentences)
        pref = pref or (my_prefs[0] if my_prefs else None)
        text, params = compose((r["name"] or "").strip(), r["memory_key"], r["content"], on, pref, sentence)
        chunks = [KnowledgeChunk(sentence.chunk_id, sentence.chunk_id, 0.0, sentence.text)] if sentence else []
        if unsupported_prices(text, chunks):  # never a price the knowledge does not contain
            log.error("offer dropped: ungrounded price account_id=%d contact_id=%d text=%r", account_id,
                      r["contact_id"], text)
            continue
        out.append(Proposal(account_id, r["contact_id"], r["memory_key"], on, r["id"], r["conversation_id"], text,
                            WhatsAppTemplate(name=template_name, language=language, parameters=params),
                            tuple(c.chunk_id for c in chunks), tuple(my_prefs), already))
    return out


class OfferRepository(Protocol):
    """``uow.offers``: the offers' writes (``streams.store.fake_uow`` implements it in memory)."""

    def record(self, proposals: Sequence[Proposal]) -> int:
        """Insert the offers not recorded yet (one per account × contact × occasion × year); how many were new."""
    def mark_published(self, reply_ids: Sequence[str]) -> None:
        """The offers Kafka acknowledged (the first acknowledgement's time is kept)."""


class PostgresOfferRepository:
    def __init__(self, uow: "UnitOfWork"):
        self.conn = uow.conn

    def record(self, proposals):
        n = 0
        for p in proposals:
            n += self.conn.execute(
                """INSERT INTO offers (account_id, contact_id, occasion, year, occasion_date, memory_id,
                                       conversation_id, reply_id, text, template_name, template_params, chunk_ids)
                   VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)
                   ON CONFLICT (account_id, contact_id, occasion, year) DO NOTHING""",
                (p.account_id, p.contact_id, p.occasion, p.year, p.occasion_date, p.memory_id, p.conversation_id,
                 p.reply_id, p.text, p.template.name,
                 Jsonb({"language": p.template.language, "parameters": p.template.parameters}),
                 list(p.chunk_ids))).rowcount
        return n

    def mark_published(self, reply_ids):
        self.conn.execute("UPDATE offers SET published_at = now() WHERE reply_id = ANY(%s) AND published_at IS NULL",
                          (list(reply_ids),))




def record_offers(target: "UnitOfWork | psycopg.Connection", proposals: Sequence[Proposal]) -> int:
    """Insert the offers; one per contact × occasion × year whatever runs twice."""
    with joined(target) as uow:  # one unit of work (the caller's, or committed at the end)
        return uow.offers.record(proposals)


def account_offer_settings(settings_json: dict[str, Any] | None, defaults) -> tuple[bool, str, str]:
    s = settings_json or {}
    return (bool(s.get(FLAG, False)), str(s.get("offers_template_name") or defaults.offers_template_name),
            str(s.get("offers_template_language") or defaults.offers_template_language))


def run_offers(conn: psycopg.Connection, settings, now: datetime) -> dict[int, int]:
    """The daily job: record the due offers of every account whose flag is on."""
    from streams import metrics

    recorded: dict[int, int] = {}
    accounts = conn.execute("SELECT id, settings FROM accounts WHERE (settings->>%s)::boolean IS TRUE ORDER BY id",
                            (FLAG,)).fetchall()
    for a in accounts:
        _, template, language = account_offer_settings(a["settings"], settings)
        proposals = plan_offers(conn, a["id"], now.date(), days=settings.offers_window_days,
                                template_name=template, language=language)
        recorded[a["id"]] = record_offers(conn, proposals)
        metrics.OFFERS.labels("recorded").inc(recorded[a["id"]])
        log.info("offers account_id=%d due=%d recorded=%d", a["id"], len(proposals), recorded[a["id"]])
    return recorded


def pending_offers(conn: psycopg.Connection, limit: int = 500) -> list[OutboundReply]:
    """Recorded offers not yet acknowledged by Kafka, as outbound events."""
    rows = conn.execute(
        """SELECT o.* FROM offers o WHERE published_at IS NULL
             -- opted out after the offer was recorded: never sent
             AND NOT EXISTS (SELECT 1 FROM marketing_optouts x WHERE x.account_id = o.account_id
                             AND x.contact_id = o.contact_id)
           ORDER BY created_at LIMIT %s""", (limit,)).fetchall()
    out = []
    for r in rows:
        params = r["template_params"] or {}
        out.append(OutboundReply(
            reply_id=r["reply_id"], in_reply_to="", account_id=r["account_id"], conversation_id=r["conversation_id"],
            contact_id=r["contact_id"], text=r["text"], intent="anniversary_offer", strategy="none",
            chunk_ids=list(r["chunk_ids"] or []), created_at=r["created_at"], kind="offer",
            template=WhatsAppTemplate(name=r["template_name"], language=params.get("language", "pt_BR"),
                                      parameters=list(params.get("parameters", [])))))
    return out


def mark_published(target: "UnitOfWork | psycopg.Connection", reply_ids: Sequence[str]) -> None:
    with joined(target) as uow:
        uow.offers.mark_published(reply_ids)


async def publish_offers(pool, producer, topic: str) -> int:
    """Send recorded offers (key = conversation id), then mark them published.
    At-least-once: a crash in between re-sends the same ``reply_id``."""
    import asyncio

    from streams import metrics

    def pending():
        with pool.connection() as conn:
            return pending_offers(conn)

    offers = await asyncio.to_thread(pending)
    for o in offers:
        await producer.send_and_wait(topic, key=o.conversation_id.encode(), value=o.model_dump_json().encode())

        def mark(o=o):
            with pool.connection() as conn:
                mark_published(conn, [o.reply_id])
        await asyncio.to_thread(mark)
        metrics.OFFERS.labels("published").inc()
        log.info("offer published reply_id=%s account_id=%d contact_id=%d template=%s", o.reply_id, o.account_id,
                 o.contact_id, o.template.name if o.template else None)
    return len(offers)


def today_utc() -> date:
    return datetime.now(timezone.utc).date()
