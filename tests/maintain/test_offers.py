"""Anniversary offers against the real Postgres: dates, proposals grounded in
the knowledge, opt-out, one offer per contact × occasion × year, the admin
preview, and publication on Kafka."""

from __future__ import annotations

import asyncio
import json
import uuid
from datetime import date, datetime, timezone

import pytest

from streams.maintain.offers import (
    next_occurrence,
    occasion_day,
    pending_offers,
    plan_offers,
    publish_offers,
    record_offers,
    run_offers,
)
from streams.settings import Settings

KNOWLEDGE = ("# Preços\n\nSuíte Luxo: período de 2 horas R$ 129; pernoite R$ 240. "
             "Suíte Master (com piscina aquecida e sauna): pernoite R$ 450.\n\n"
             "Decoração romântica para comemorações: R$ 90.")


@pytest.mark.parametrize("value,content,expected", [
    ("14-02", "Aniversário de casamento em 14/02", (14, 2)),
    ("", "Aniversário de casamento em 14/02", (14, 2)),
    (None, "Aniversário da esposa Ana em 3 de março", (3, 3)),
    ("", "Aniversário do(a) cliente em 29 de fevereiro", (29, 2)),
    ("", "Aniversário de namoro em 31/04", None),
    ("", "Gosta de vinho", None),
])
def test_occasion_day(value, content, expected):
    assert occasion_day(value, content) == expected


def test_next_occurrence_recurs_yearly_and_handles_29_february():
    assert next_occurrence(14, 2, date(2026, 2, 10)) == date(2026, 2, 14)
    assert next_occurrence(14, 2, date(2026, 2, 15)) == date(2027, 2, 14)  # passed: next year
    assert next_occurrence(3, 1, date(2026, 12, 30)) == date(2027, 1, 3)   # across the new year
    assert next_occurrence(29, 2, date(2027, 2, 20)) == date(2027, 2, 28)  # not a leap year
    assert next_occurrence(29, 2, date(2028, 2, 20)) == date(2028, 2, 29)


def _seed(env):
    env.q("INSERT INTO accounts (id) VALUES (1), (2)")
    for cid, name in ((100, "Ana"), (101, "Bruno"), (102, ""), (103, "Caio"), (104, "Duda")):
        env.q("INSERT INTO contacts (id, account_id, name) VALUES (%s, 1, %s)", cid, name)
        env.q("INSERT INTO conversations (external_id, account_id, inbox_id, contact_id, last_message_at) "
              "VALUES (%s, 1, 10, %s, now())", f"c-{cid}", cid)
    env.q("INSERT INTO contacts (id, account_id, name) VALUES (200, 2, 'Outra')")
    env.q("INSERT INTO conversations (external_id, account_id, inbox_id, contact_id) VALUES ('c-200', 2, 20, 200)")
    doc = uuid.uuid4()
    env.q("INSERT INTO documents (id, account_id, source) VALUES (%s, 1, 'precos.md')", doc)
    env.q("INSERT INTO chunks (id, account_id, document_id, seq, content, content_hash) VALUES (%s, 1, %s, 0, %s, %s)",
          uuid.uuid4(), doc, KNOWLEDGE, "0" * 64)
    facts = [  # contact, type, key, value, content
        (100, "data_comemorativa", "wedding_anniversary", "14-02", "Aniversário de casamento em 14/02"),
        (100, "preferencia", "preferred_suite", "master", "Prefere a suíte Master com piscina"),
        (101, "data_comemorativa", "birthday", "", "Aniversário do(a) cliente em 16 de fevereiro"),
        (102, "data_comemorativa", "birthday", "18-02", "Aniversário do(a) cliente em 18/02"),
        (102, "preferencia", "drink", "vinho", "Gosta de vinho tinto"),
        (103, "data_comemorativa", "birthday", "15-02", "Aniversário do(a) cliente em 15/02"),  # opted out
        (104, "data_comemorativa", "birthday", "30-03", "Aniversário do(a) cliente em 30/03"),  # not this week
        (200, "data_comemorativa", "birthday", "14-02", "Aniversário do(a) cliente em 14/02"),  # other account
    ]
    for contact, t, key, value, content in facts:
        env.q("""INSERT INTO contact_memories (account_id, contact_id, memory_type, memory_key, normalized_value,
                     content, evidence, confidence, scope) VALUES (%s, %s, %s, %s, %s, %s, %s, 0.9, 'global')""",
              2 if contact == 200 else 1, contact, t, key, value, content, content)
    # a forgotten occasion is never offered
    env.q("""INSERT INTO contact_memories (account_id, contact_id, memory_type, memory_key, normalized_value, content,
                 evidence, confidence, scope, deleted_at) VALUES (1, 104, 'data_comemorativa', 'wedding_anniversary',
                 '13-02', 'Aniversário de casamento em 13/02', 'x', 0.9, 'global', now())""")
    env.q("INSERT INTO marketing_optouts (account_id, contact_id, message_id, text) VALUES (1, 103, 'm', 'parar')")


def test_plan_record_publish_once_per_occasion_and_year(env):
    _seed(env)
    today = date(2026, 2, 12)
    with env.conn() as conn:
        plan = plan_offers(conn, 1, today, days=7, template_name="oferta_aniv")
    by_contact = {p.contact_id: p for p in plan}
    assert sorted(by_contact) == [100, 101, 102]  # 103 opted out, 104 outside the window or forgotten
    ana = by_contact[100]
    assert ana.occasion == "wedding_anniversary" and ana.occasion_date == date(2026, 2, 14)
    # personalised with the preference, priced only from the knowledge
    assert "Oi, Ana!" in ana.text and "suíte Master com piscina" in ana.text
    assert "Suíte Master (com piscina aquecida e sauna): pernoite R$ 450." in ana.text
    assert ana.chunk_ids and ana.template.name == "oferta_aniv"
    assert ana.template.parameters == ["Ana", "o seu aniversário de casamento", "14/02", ana.template.parameters[3]]
    assert "R$ 450" in ana.template.parameters[3]
    # a preference that no priced sentence matches: a generic priced suggestion, never an invented price
    bruno, anon = by_contact[101], by_contact[102]
    assert bruno.occasion_date == date(2026, 2, 16)
    for p in (bruno, anon):
        for price in [w for w in p.text.split() if w.startswith("R$")]:
            assert price in KNOWLEDGE
    assert anon.text.startswith("Oi! ") and "gosta de vinho tinto" in anon.text

    with env.conn() as conn:
        assert record_offers(conn, plan) == 3
        assert record_offers(conn, plan) == 0  # a replay of the job: nothing new
        assert plan_offers(conn, 1, today) == []  # already offered this year
        again = plan_offers(conn, 1, today, include_sent=True)
        assert {p.contact_id for p in again if p.already_sent} == {100, 101, 102}
        # next year the occasion comes back
        assert {p.contact_id for p in plan_offers(conn, 1, date(2027, 2, 12))} == {100, 101, 102}
        offers = pending_offers(conn)
    assert len(offers) == 3 and all(o.kind == "offer" and o.template and o.in_reply_to == "" for o in offers)
    assert {o.conversation_id for o in offers} == {"c-100", "c-101", "c-102"}

    # a customer who opts out after the offer was recorded is never sent it
    env.q("INSERT INTO marketing_optouts (account_id, contact_id, message_id, text) VALUES (1, 102, 'm2', 'parar')")

    class Producer:
        def __init__(self):
            self.sent = []

        async def send_and_wait(self, topic, key, value):
            self.sent.append((topic, key, json.loads(value)))

    from streams.store.db import make_pool

    pool = make_pool(env.settings, min_size=1, max_size=2)
    try:
        prod = Producer()
        assert asyncio.run(publish_offers(pool, prod, "out")) == 2
        assert asyncio.run(publish_offers(pool, prod, "out")) == 0  # published: never again
    finally:
        pool.close()
    assert sorted(k for _, k, _ in prod.sent) == [b"c-100", b"c-101"]
    value = next(v for _, k, v in prod.sent if k == b"c-100")
    assert value["template"]["name"] == "oferta_aniv" and value["template"]["parameters"][0] == "Ana"


def test_daily_job_only_for_accounts_with_the_flag(env):
    _seed(env)
    s = Settings()
    now = datetime(2026, 2, 12, 9, tzinfo=timezone.utc)
    with env.conn() as conn:
        assert run_offers(conn, s, now) == {}  # flag off by default
        conn.execute("UPDATE accounts SET settings = settings || '{\"anniversary_offers_enabled\": true}' WHERE id = 1")
        assert run_offers(conn, s, now) == {1: 3}
        assert run_offers(conn, s, now) == {1: 0}
    rows = env.q("SELECT contact_id, year, template_name FROM offers ORDER BY contact_id")
    assert [(r["contact_id"], r["year"], r["template_name"]) for r in rows] == [
        (100, 2026, s.offers_template_name), (101, 2026, s.offers_template_name), (102, 2026, s.offers_template_name)]


def test_admin_preview_settings_and_requests(env):
    from fastapi.testclient import TestClient

    from streams.admin.api import create_app
    from streams.admin.tokens import create_token
    from tests.support.embedders import shared_container

    _seed(env)
    # occasions relative to today, so the preview (which uses the real date) finds them
    today = datetime.now(timezone.utc).date()
    soon = date.fromordinal(today.toordinal() + 3)
    env.q("UPDATE contact_memories SET normalized_value = %s WHERE contact_id = 100 AND memory_type = 'data_comemorativa'",
          f"{soon.day:02d}-{soon.month:02d}")
    env.q("INSERT INTO privacy_requests (account_id, contact_id, conversation_id, message_id, kind, text, facts) "
          "VALUES (1, 100, 'c-100', 'w1', 'access', 'oq vcs sabem de mim', 2), "
          "(2, 200, 'c-200', 'w2', 'erasure', 'apaga tudo', 1)")
    with env.conn() as c:
        token = create_token(c, 1, "ops")[1]
    container = shared_container(env.settings)
    try:
        client = TestClient(create_app(container), raise_server_exceptions=False)
        h = {"Authorization": f"Bearer {token}"}
        assert client.get("/v1/account/offers", headers=h).json()["enabled"] is False
        r = client.get("/v1/offers/preview", headers=h)
        assert r.status_code == 200, r.text
        body = r.json()
        assert body["enabled"] is False and body["days"] == 7
        ana = [o for o in body["offers"] if o["contact_id"] == 100]
        assert ana and ana[0]["occasion_date"] == soon.isoformat() and "R$ 450" in ana[0]["text"]
        assert env.q("SELECT count(*) AS n FROM offers")[0]["n"] == 0  # a preview writes nothing
        r = client.put("/v1/account/offers", headers=h, json={"enabled": True, "template_name": "aniv_v2",
                                                                "template_language": "pt_BR"})
        assert r.status_code == 200 and r.json()["template_name"] == "aniv_v2"
        # turning offers on is in the flags' audit trail with the token's operator
        audit = env.q("SELECT flag, enabled, changed_by FROM account_flag_changes WHERE account_id = 1")
        assert [(a["flag"], a["enabled"]) for a in audit] == [("anniversary_offers_enabled", True)]
        assert audit[0]["changed_by"].startswith("ops")
        assert client.get("/v1/offers/preview", headers=h).json()["offers"][0]["template"]["name"] == "aniv_v2"
        assert client.put("/v1/account/offers", headers=h, json={"enabled": "maybe"}).status_code == 422
        # the operator sees customers' requests (own account only)
        reqs = client.get("/v1/privacy-requests", headers=h).json()
        assert [(x["kind"], x["contact_id"], x["facts"]) for x in reqs] == [("access", 100, 2)]
        assert client.get("/v1/privacy-requests?kind=erasure", headers=h).json() == []
        # tools per inbox: validated, scoped to the account
        env.q("INSERT INTO inboxes (id, account_id) VALUES (10, 1), (20, 2)")
        ok = {"availability_check": {"url": "http://127.0.0.1:9/a", "keywords": ["livre"], "budget_ms": 800}}
        r = client.put("/v1/inboxes/10/tools", headers=h, json=ok)
        assert r.status_code == 200 and r.json()["availability_check"]["budget_ms"] == 800
        assert client.get("/v1/inboxes/10/tools", headers=h).json()["availability_check"]["url"] == "http://127.0.0.1:9/a"
        assert client.put("/v1/inboxes/20/tools", headers=h, json=ok).status_code == 404
        assert client.put("/v1/inboxes/10/tools", headers=h,
                          json={"x": {"url": "ftp://nope"}}).status_code == 422
    finally:
        container.close()
