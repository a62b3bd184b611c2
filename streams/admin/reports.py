"""Unit reports: what customers complain about and praise, per unit and period.

Complaints and compliments are grouped by *what they are about*: the topic in
the fact's key (``complaint_wifi`` → ``wifi``, ``praise_staff`` + the person),
or, for a generic key, the topic found in the fact's text by the same lexicon
the rule extractor uses (``streams.learn.lexicon.TOPICS``). So Wi-Fi and room
service complaints are separate rows. Each unit also gets its live facts by type,
its supersedence rate (facts learnt in the period that were later superseded)
and the P99 of recall latency of its replies (``messages.reply->>'recall_ms'``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone

import psycopg

from streams.learn.lexicon import topic_of
from streams.learn.text import fold

GENERIC = {"", "open", "other", "outro", "geral", "general", "service", "servico", "complaint", "praise", "misc"}
TOPIC_LABELS = {
    "wifi": "Wi-Fi", "room_service": "serviço de quarto", "ar_condicionado": "ar-condicionado",
    "cafe_da_manha": "café da manhã", "portao": "portão", "cobranca": "cobrança", "tv": "TV",
}


@dataclass
class TopicRow:
    topic: str
    label: str
    count: int
    example: str


@dataclass
class UnitReport:
    unit_id: int
    unit_name: str
    complaints: list[TopicRow] = field(default_factory=list)
    compliments: list[TopicRow] = field(default_factory=list)
    facts_by_type: dict[str, int] = field(default_factory=dict)
    facts_learnt: int = 0
    facts_superseded: int = 0
    recall_p99_ms: float | None = None
    replies_with_recall: int = 0

    @property
    def supersedence_rate(self) -> float | None:
        return self.facts_superseded / self.facts_learnt if self.facts_learnt else None


def topic_for(memory_type: str, memory_key: str, normalized_value: str, content: str) -> str:
    """What a complaint or compliment is about (a stable key)."""
    key = re.sub(r"^(complaint|reclamacao|praise|elogio|feedback)_?", "", memory_key or "")
    if memory_type == "feedback_positivo" and key == "staff" and normalized_value:
        return f"staff:{fold(normalized_value)}"
    if key in GENERIC:
        found = topic_of(fold(content or ""))
        if found:
            return found
        value = fold(normalized_value or "")
        return value if value not in GENERIC else "outros"
    return key


def topic_label(topic: str) -> str:
    if topic.startswith("staff:"):
        return f"equipe: {topic[6:].title()}"
    return TOPIC_LABELS.get(topic, topic.replace("_", " "))


def unit_reports(conn: psycopg.Connection, account_id: int, *, days: int = 90, top: int = 5,
                 now: datetime | None = None) -> list[UnitReport]:
    now = now or datetime.now(timezone.utc)
    since = now - timedelta(days=days)
    names = {r["id"]: r["name"] for r in conn.execute("SELECT id, name FROM units WHERE account_id = %s",
                                                       (account_id,)).fetchall()}
    facts = conn.execute(
        """SELECT source_unit_id AS unit_id, memory_type, memory_key, normalized_value, content,
                  superseded_at IS NOT NULL AS superseded, deleted_at IS NOT NULL AS deleted
             FROM contact_memories
            WHERE account_id = %s AND source_unit_id IS NOT NULL AND created_at >= %s
            ORDER BY created_at DESC, id DESC""", (account_id, since)).fetchall()
    units: dict[int, UnitReport] = {}

    def unit(uid: int) -> UnitReport:
        if uid not in units:
            units[uid] = UnitReport(uid, names.get(uid, ""))
        return units[uid]

    groups: dict[tuple[int, str, str], list[str]] = {}
    for f in facts:
        u = unit(f["unit_id"])
        u.facts_learnt += 1
        u.facts_superseded += bool(f["superseded"])
        if f["deleted"] or f["superseded"]:
            continue
        u.facts_by_type[f["memory_type"]] = u.facts_by_type.get(f["memory_type"], 0) + 1
        if f["memory_type"] in ("reclamacao", "feedback_positivo"):
            t = topic_for(f["memory_type"], f["memory_key"], f["normalized_value"], f["content"])
            groups.setdefault((f["unit_id"], f["memory_type"], t), []).append(f["content"])
    for (uid, mtype, t), contents in groups.items():
        row = TopicRow(t, topic_label(t), len(contents), contents[0])
        (units[uid].complaints if mtype == "reclamacao" else units[uid].compliments).append(row)
    for u in units.values():
        for rows in (u.complaints, u.compliments):
            rows.sort(key=lambda r: (-r.count, r.label))
            del rows[top:]
    for r in conn.execute(
            """SELECT c.unit_id, count(*) AS n,
                      percentile_cont(0.99) WITHIN GROUP (ORDER BY (m.reply->>'recall_ms')::float8) AS p99
                 FROM messages m JOIN conversations c ON c.id = m.conversation_id
                WHERE m.account_id = %s AND m.role = 'agent' AND m.sent_at >= %s AND c.unit_id IS NOT NULL
                  AND m.reply ? 'recall_ms'
                GROUP BY c.unit_id""", (account_id, since)).fetchall():
        u = unit(r["unit_id"])
        u.recall_p99_ms, u.replies_with_recall = float(r["p99"]), int(r["n"])
    for uid in names:
        unit(uid)
    return [units[k] for k in sorted(units)]
