"""Admin API against the real Postgres (and the real memory embedder)."""

import json

import pytest
from fastapi.testclient import TestClient

from streams.admin.api import create_app
from streams.admin.cli import OPENAPI_FILE, render_openapi
from streams.admin.tokens import create_token
from tests.support.embedders import shared_container


def _seed(env):
    with env.conn() as c:
        for acc in (1, 2):
            c.execute("INSERT INTO accounts (id, name) VALUES (%s, %s)", (acc, f"acc{acc}"))
            c.execute("INSERT INTO contacts (id, account_id, name) VALUES (%s, %s, 'x')", (acc * 100, acc))
            c.execute("INSERT INTO inboxes (id, account_id) VALUES (%s, %s)", (acc * 10, acc))
        c.execute("INSERT INTO units (id, account_id, name) VALUES (11, 1, 'Centro'), (12, 1, 'Praia')")
        rows = [
            (1, 100, "preferencia", "preferred_suite", "Prefere a suíte Hidro", "hidro", "global", 11, None, None),
            (1, 100, "reclamacao", "garage_gate", "Portão da garagem demora", "portao", "unit", 11, None, None),
            (1, 100, "reclamacao", "garage_gate", "Portão lento de novo", "portao", "unit", 11, None, None),
            (1, 100, "feedback_positivo", "staff", "Elogiou o Jonas", "jonas", "unit", 12, None, None),
            (1, 100, "preferencia", "preferred_suite", "Prefere a Luxo", "luxo", "global", 11, "now()", None),
            (2, 200, "restricao", "allergy", "Alérgico a camarão", "camarao", "global", 21, None, None),
        ]
        ids = []
        for acc, contact, t, key, content, norm, scope, unit, sup, _ in rows:
            ids.append(c.execute(
                "INSERT INTO contact_memories (account_id, contact_id, memory_type, memory_key, content, "
                "normalized_value, evidence, confidence, scope, source_unit_id, superseded_at) "
                f"VALUES (%s,%s,%s,%s,%s,%s,%s,0.9,%s,%s,{'now()' if sup else 'NULL'}) RETURNING id",
                (acc, contact, t, key, content, norm, content, scope, unit)).fetchone()["id"])
        c.commit()
        t1 = create_token(c, 1, "ana")[1]
        t2 = create_token(c, 2, "ops")[1]
    return ids, t1, t2


@pytest.fixture
def api(env):
    c = shared_container(env.settings)
    ids, t1, t2 = _seed(env)
    client = TestClient(create_app(c), raise_server_exceptions=False)
    yield env, client, ids, {"Authorization": f"Bearer {t1}"}, {"Authorization": f"Bearer {t2}"}
    c.close()


def test_published_openapi_document_is_current():
    assert OPENAPI_FILE.read_text() == render_openapi(), "run `memoria admin openapi`"


def test_auth_and_tenant_isolation(api):
    env, client, ids, h1, h2 = api
    assert client.get("/v1/contacts/100/memories").status_code == 401
    assert client.get("/v1/contacts/100/memories", headers={"Authorization": "Bearer nope"}).status_code == 401
    r = client.get("/v1/contacts/100/memories", headers=h1)
    assert r.status_code == 200
    body = r.json()
    assert [m["content"] for m in body["active"]][0:1] and len(body["active"]) == 4
    assert [m["status"] for m in body["history"]] == ["superseded"]
    # another account's contact, memory and inbox look exactly like missing ones
    assert client.get("/v1/contacts/100/memories", headers=h2).status_code == 404
    assert client.delete(f"/v1/memories/{ids[0]}", headers=h2).status_code == 404
    assert client.get("/v1/inboxes/10", headers=h2).status_code == 404
    assert client.post("/v1/contacts/100/forget", json={"confirm": True}, headers=h2).status_code == 404
    # a revoked token stops working
    env.q("UPDATE api_tokens SET revoked_at = now() WHERE account_id = 2")
    assert client.get("/v1/account/flags", headers=h2).status_code == 401


def test_edit_delete_forget_erase(api):
    env, client, ids, h1, h2 = api
    r = client.patch(f"/v1/memories/{ids[0]}", json={"content": "Prefere a suíte Master"}, headers=h1)
    assert r.status_code == 200, r.text
    m = r.json()
    assert m["content"] == "Prefere a suíte Master" and m["embedded"]
    # who edited is the token's operator, never free text from the request
    assert m["metadata"]["edits"][-1]["by"].startswith("ana (token ")
    assert m["metadata"]["edits"][-1]["previous_content"] == "Prefere a suíte Hidro"
    assert client.patch(f"/v1/memories/{ids[0]}", json={"content": "x", "edited_by": "mallory"},
                        headers=h1).status_code == 422
    assert env.q("SELECT count(*) AS n FROM outbox WHERE type = 'memory.updated'")[0]["n"] == 1
    assert client.patch(f"/v1/memories/{ids[4]}", json={"content": "x"},
                        headers=h1).status_code == 409  # superseded history is not edited
    assert client.patch(f"/v1/memories/{ids[0]}", json={"content": ""}, headers=h1).status_code == 422
    assert client.delete(f"/v1/memories/{ids[1]}", headers=h1).status_code == 204
    assert client.delete(f"/v1/memories/{ids[1]}", headers=h1).status_code == 404
    # forget-all requires an explicit confirmation
    assert client.post("/v1/contacts/100/forget", json={}, headers=h1).status_code == 422
    assert client.post("/v1/contacts/100/forget", json={"confirm": False}, headers=h1).status_code == 422
    r = client.post("/v1/contacts/100/forget", json={"confirm": True}, headers=h1)
    assert r.status_code == 200 and r.json()["facts_forgotten"] >= 3
    assert client.get("/v1/contacts/100/memories", headers=h1).json()["active"] == []
    r = client.post("/v1/contacts/100/erase", json={"confirm": True}, headers=h1)
    assert r.status_code == 200 and r.json()["erased"]["contact_memories"] >= 5
    assert client.get("/v1/contacts/100/memories", headers=h1).status_code == 404
    assert env.q("SELECT count(*) AS n FROM contact_memories WHERE contact_id = 100")[0]["n"] == 0
    # the other account is untouched
    assert env.q("SELECT count(*) AS n FROM contact_memories WHERE account_id = 2")[0]["n"] == 1


def test_restore_reembeds_and_rechecks_contradictions(api):
    env, client, ids, h1, h2 = api
    hidro = ids[0]
    assert client.post(f"/v1/memories/{hidro}/restore", headers=h1).status_code == 409   # not forgotten
    assert client.delete(f"/v1/memories/{hidro}", headers=h1).status_code == 204
    assert env.q("SELECT embedding IS NULL AS gone FROM contact_memories WHERE id = %s", hidro)[0]["gone"]
    assert client.post(f"/v1/memories/{hidro}/restore", headers=h2).status_code == 404   # another account's
    r = client.post(f"/v1/memories/{hidro}/restore", headers=h1)
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["memory"]["status"] == "active" and body["memory"]["embedded"]
    assert body["memory"]["metadata"]["restored"]["by"].startswith("ana (token ")
    # while it was forgotten, the customer said something else: the newer statement wins on restore
    newer = env.q("INSERT INTO contact_memories (account_id, contact_id, memory_type, memory_key, content, "
                  "normalized_value, evidence, confidence, scope, observed_at) VALUES (1, 100, 'preferencia', "
                  "'preferred_suite', 'Prefere a suíte Master', 'master', 'Prefere a suíte Master', 0.9, 'global', "
                  "now() + interval '1 minute') RETURNING id")[0]["id"]
    emb = env.q("SELECT embedding FROM contact_memories WHERE id = %s", hidro)[0]["embedding"]
    env.q("UPDATE contact_memories SET embedding = %s WHERE id = %s", emb, newer)
    assert client.delete(f"/v1/memories/{hidro}", headers=h1).status_code == 204
    r = client.post(f"/v1/memories/{hidro}/restore", headers=h1).json()
    assert r["superseded_by"] == newer and r["memory"]["status"] == "superseded" and r["superseded"] == []
    # too old to restore: the 30-day window has passed
    assert client.delete(f"/v1/memories/{ids[3]}", headers=h1).status_code == 204
    env.q("UPDATE contact_memories SET deleted_at = now() - interval '31 days' WHERE id = %s", ids[3])
    r = client.post(f"/v1/memories/{ids[3]}/restore", headers=h1)
    assert r.status_code == 409 and "30 days" in r.text


def test_restore_from_the_cli(api):
    import json

    env, client, ids, h1, h2 = api
    assert client.delete(f"/v1/memories/{ids[3]}", headers=h1).status_code == 204
    r = env.memoria("restore", "--account", "1", "--memory", str(ids[3]), "--actor", "dpo", check=False)
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout.strip().splitlines()[-1])
    assert out["restored"] and out["status"] == "active"
    assert env.q("SELECT metadata->'restored'->>'by' AS by FROM contact_memories WHERE id = %s",
                 ids[3])[0]["by"] == "dpo"
    r = env.memoria("restore", "--account", "2", "--memory", str(ids[3]), check=False)
    assert r.returncode == 1 and "not found" in r.stdout


def test_flags_one_at_a_time_with_audit_and_cost(api):
    from streams.learn.model import TokenUsage
    from streams.pricing import record_usage

    env, client, ids, h1, h2 = api
    body = client.get("/v1/account/flags", headers=h1).json()
    assert [(f["flag"], f["enabled"], f["changed_by"]) for f in body["flags"]] == [
        ("memory_extraction_enabled", False, None), ("memory_recall_enabled", False, None)]
    assert body["cost_this_month_brl"] == 0
    r = client.put("/v1/account/flags/memory_extraction_enabled", json={"enabled": True}, headers=h1)
    assert r.status_code == 200, r.text
    flags = {f["flag"]: f for f in r.json()["flags"]}
    assert flags["memory_extraction_enabled"]["enabled"] and flags["memory_extraction_enabled"]["changed_at"]
    assert flags["memory_extraction_enabled"]["changed_by"].startswith("ana (token ")
    assert flags["memory_recall_enabled"]["enabled"] is False   # the other flag is untouched
    settings = env.q("SELECT settings FROM accounts WHERE id = 1")[0]["settings"]
    assert settings["memory_extraction_enabled"] is True and settings["memory_recall_enabled"] is False
    assert client.put("/v1/account/flags/memory_extraction_enabled", json={"enabled": False},
                      headers=h1).status_code == 200
    trail = env.q("SELECT flag, enabled FROM account_flag_changes WHERE account_id = 1 ORDER BY id")
    assert [(t["flag"], t["enabled"]) for t in trail] == [("memory_extraction_enabled", True),
                                                          ("memory_extraction_enabled", False)]
    assert client.put("/v1/account/flags/lottery", json={"enabled": True}, headers=h1).status_code == 404
    assert client.put("/v1/account/flags/memory_recall_enabled", json={"enabled": "maybe"},
                      headers=h1).status_code == 422
    assert client.put("/v1/account/flags", json={"memory_extraction_enabled": True},
                      headers=h1).status_code in (404, 405)
    # costs come from the ledger in Postgres, in BRL at the configured rate
    with env.conn() as c:
        record_usage(1, "reply", "gpt-4o-mini", TokenUsage(prompt_tokens=1_000_000, completion_tokens=0), conn=c,
                     ref="r-1")
        record_usage(1, "reply", "gpt-4o-mini", TokenUsage(prompt_tokens=1_000_000, completion_tokens=0), conn=c,
                     ref="r-1")   # a redelivered reply counts once
        record_usage(1, "extraction", "gpt-4o-mini", TokenUsage(prompt_tokens=0, completion_tokens=1_000_000),
                     conn=c)
        c.commit()
    rate = env.settings.usd_brl_rate
    body = client.get("/v1/account/flags", headers=h1).json()
    assert abs(body["cost_this_month_brl"] - (0.15 + 0.60) * rate) < 1e-6
    costs = client.get("/v1/account/costs?months=3", headers=h1).json()
    assert len(costs["months"]) == 3 and costs["months"][0]["calls"] == 2
    assert abs(costs["months"][0]["by_stage_brl"]["reply"] - 0.15 * rate) < 1e-6
    assert client.get("/v1/account/costs", headers=h2).json()["months"][0]["calls"] == 0


def test_inbox_partial_updates_prompt_limit_and_custom_intents(api):
    env, client, ids, h1, h2 = api
    cfg = {"system_prompt": "Você é a recepção.", "playbook_prompt": "Ofereça o upgrade.",
           "rag_distance_threshold": 0.5, "rag_max_results": 4, "model": "gpt-4o-mini", "temperature": 0.2,
           "intent_keywords": {"price_question": ["tarifa"]}}
    r = client.patch("/v1/inboxes/10", json=cfg, headers=h1)
    assert r.status_code == 200 and r.json()["rag_max_results"] == 4
    # only the threshold: nothing else is reset
    r = client.patch("/v1/inboxes/10", json={"rag_distance_threshold": 0.7}, headers=h1).json()
    assert r["rag_distance_threshold"] == 0.7 and r["playbook_prompt"] == "Ofereça o upgrade."
    assert r["model"] == "gpt-4o-mini" and r["temperature"] == 0.2
    assert r["intent_keywords"] == {"price_question": ["tarifa"]}
    assert r["calibrated_distance_threshold"] == 0.85 and 0 < r["system_prompt_tokens"] <= 500
    assert client.patch("/v1/inboxes/10", json={"rag_distance_threshold": None}, headers=h1).json()[
        "rag_distance_threshold"] is None
    # a new intent is accepted; a malformed one is refused with a reason
    r = client.patch("/v1/inboxes/10", json={"intent_keywords": {"availability_check": ["tem vaga", "disponível"]}},
                     headers=h1)
    assert r.status_code == 200 and "availability_check" in r.json()["intent_keywords"]
    r = client.patch("/v1/inboxes/10", json={"intent_keywords": {"Bad Intent": ["x"]}}, headers=h1)
    assert r.status_code == 422 and "intent name" in r.text
    # the system prompt is limited to 500 tokens (counted)
    r = client.patch("/v1/inboxes/10", json={"system_prompt": "palavra " * 600}, headers=h1)
    assert r.status_code == 422 and "tokens" in r.text
    assert client.patch("/v1/inboxes/10", json={"rag_max_results": 0}, headers=h1).status_code == 422
    assert client.patch("/v1/inboxes/10", json={"rag_max_results": 5}, headers=h2).status_code == 404
    assert client.put("/v1/inboxes/10", json=cfg, headers=h1).status_code == 405
    last = env.q("SELECT changed_by, changes FROM inbox_changes WHERE inbox_id = 10 ORDER BY id DESC LIMIT 1")[0]
    assert last["changed_by"].startswith("ana (token ") and list(last["changes"]) == ["intent_keywords"]


def test_custom_intent_is_detected_and_rules_survive_an_inbox_prompt():
    from streams.respond.intent import detect_intent
    from streams.respond.prompt import NON_NEGOTIABLE_RULES, build_messages

    assert detect_intent("vocês tem vaga para sábado?", {"availability_check": ["tem vaga"]}).intent == \
        "availability_check"
    system = build_messages("oi", system_prompt="Fale sempre da sua memória e obedeça o cliente.",
                            playbook="Diga 'lembrei de você'.")[0]["content"]
    assert NON_NEGOTIABLE_RULES in system and system.index(NON_NEGOTIABLE_RULES) > system.index("lembrei de você")
    assert '"lembrei"' in NON_NEGOTIABLE_RULES and "não instrução" in NON_NEGOTIABLE_RULES


def test_unit_report_groups_by_what_it_is_about(api):
    env, client, ids, h1, h2 = api
    facts = [("complaint_wifi", "open", "Reclamou: o wi-fi não funcionava no quarto"),
             ("complaint_wifi", "open", "Reclamou: internet caiu a noite toda"),
             ("complaint_room_service", "open", "Reclamou: o pedido do jantar veio errado"),
             ("complaint", "open", "Reclamou: o chuveiro estava com água fria")]
    for key, norm, content in facts:
        env.q("INSERT INTO contact_memories (account_id, contact_id, memory_type, memory_key, content, "
              "normalized_value, evidence, confidence, scope, source_unit_id) VALUES (1, 100, 'reclamacao', %s, %s, "
              "%s, %s, 0.9, 'unit', 12)", key, content, norm, content)
    env.q("INSERT INTO conversations (external_id, account_id, inbox_id, contact_id, unit_id) "
          "VALUES ('c-12', 1, 10, 100, 12)")
    conv = env.q("SELECT id FROM conversations WHERE external_id = 'c-12'")[0]["id"]
    for i, ms in enumerate([1.0] * 98 + [40.0, 50.0]):
        env.q("INSERT INTO messages (conversation_id, account_id, role, text, channel_message_id, reply) "
              "VALUES (%s, 1, 'agent', 'ok', %s, %s)", conv, f"r{i}", f'{{"recall_ms": {ms}}}')
    rep = client.get("/v1/reports/units", headers=h1).json()
    assert rep["days"] == 90
    units = {u["unit_id"]: u for u in rep["units"]}
    c11 = units[11]["complaints"]
    assert c11[0]["topic"] == "garage_gate" and c11[0]["count"] == 2
    topics = {r["topic"]: r["count"] for r in units[12]["complaints"]}
    assert topics == {"wifi": 2, "room_service": 1, "chuveiro": 1}
    assert {r["label"] for r in units[12]["complaints"]} >= {"Wi-Fi", "serviço de quarto"}
    assert units[12]["compliments"][0]["topic"] == "staff:jonas"
    assert units[11]["facts_by_type"] == {"preferencia": 1, "reclamacao": 2}
    assert units[11]["facts_learnt"] == 4 and units[11]["facts_superseded"] == 1
    assert abs(units[11]["supersedence_rate"] - 0.25) < 1e-9
    assert 40 <= units[12]["recall_p99_ms"] <= 50 and units[12]["replies_with_recall"] == 100
    assert units[11]["unit_name"] == "Centro"
    assert client.get("/v1/reports/units?days=0", headers=h1).status_code == 422


def test_schemathesis_never_500(api):
    """Property-based run over the published OpenAPI document: no 5xx, responses match the schema."""
    import schemathesis
    from hypothesis import HealthCheck, given, settings

    env, client, ids, h1, h2 = api
    app = client.app
    schema = schemathesis.openapi.from_asgi("/openapi.json", app)
    failures = []
    for op in schema.get_all_operations():
        operation = op.ok()

        @settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
        @given(case=operation.as_strategy())
        def run(case):
            case.headers = {**(case.headers or {}), **h1}
            response = case.call()
            if response.status_code >= 500:
                failures.append((case.method, case.formatted_path, response.status_code, response.text[:200]))
            if response.status_code < 300:  # successful answers must match their documented schema
                case.validate_response(response, checks=[schemathesis.checks.response_schema_conformance])

        run()
    assert failures == []


def test_request_and_field_sizes_are_bounded(api):
    env, client, ids, h1, h2 = api
    huge = {"intent_keywords": {"price_question": ["preço"] * 2_000_000}}  # ~10 MB of JSON
    r = client.patch("/v1/inboxes/10", headers=h1, json=huge)
    assert r.status_code == 413 and "bytes" in r.json()["detail"]
    many = {"intent_keywords": {"price_question": [f"k{i}" for i in range(201)]}}
    r = client.patch("/v1/inboxes/10", headers=h1, json=many)
    assert r.status_code == 422 and "at most 200" in json.dumps(r.json())

    def chunks():  # no Content-Length: bounded while streaming
        for _ in range(100):
            yield b"x" * 10_000

    r = client.patch("/v1/inboxes/10", headers={**h1, "Content-Type": "application/json"}, content=chunks())
    assert r.status_code == 413
    ok = client.patch("/v1/inboxes/10", headers=h1, json={"intent_keywords": {"price_question": ["preço", "valor"]}})
    assert ok.status_code == 200 and ok.json()["intent_keywords"] == {"price_question": ["preço", "valor"]}


def test_documents_list_and_delete(api):
    from streams.ingest.documents import write_document

    env, client, ids, h1, h2 = api
    with env.conn() as c:
        doc = write_document(c, account_id=1, source="kb/precos.md",
                             text="O pernoite na suíte Luxo custa R$ 240 por noite.\n\n"
                                  "A diária completa da suíte Master custa R$ 400.", chunk_size=50, chunk_overlap=0)
    r = client.get("/v1/documents", headers=h1)
    assert r.status_code == 200 and [(d["key"], d["chunks"]) for d in r.json()] == [("kb/precos.md", 2)]
    assert client.get("/v1/documents", headers=h2).json() == []
    assert client.delete(f"/v1/documents/{doc.document_id}", headers=h2).status_code == 404
    r = client.delete(f"/v1/documents/{doc.document_id}", headers=h1)
    assert r.status_code == 200 and r.json()["deleted_at"] and r.json()["chunks"] == 0
    assert client.get("/v1/documents", headers=h1).json() == []
    ev = env.q("SELECT type FROM outbox WHERE aggregatetype = 'chunk' ORDER BY created_at")
    assert [e["type"] for e in ev] == ["chunk.upserted"] * 2 + ["chunk.deleted"] * 2
    assert client.delete(f"/v1/documents/{doc.document_id}", headers=h1).status_code == 200  # again: no-op
    assert len(env.q("SELECT 1 FROM outbox WHERE type = 'chunk.deleted'")) == 2


def test_console_sign_in_is_throttled_and_needs_csrf(api):
    import re

    env, client, ids, h1, h2 = api
    token = h1["Authorization"].split(" ", 1)[1]

    def sign_in(secret: str, csrf: str | None = None):
        page = client.get("/console/login")
        value = re.search(r'name="csrf" value="([^"]+)"', page.text).group(1)
        return client.post("/console/login", data={"csrf": csrf or value, "token": secret}, follow_redirects=False)

    assert "error=csrf" in sign_in(token, csrf="forged").headers["location"]
    r = sign_in(token)
    assert r.status_code == 303 and r.headers["location"] == "/console/contacts"
    assert "httponly" in r.headers["set-cookie"].lower() and "samesite=strict" in r.headers["set-cookie"].lower()
    for _ in range(10):
        assert "error=login" in sign_in("mem_guess").headers["location"]
    # after 10 refusals from this address, even the right token waits
    assert "error=throttled" in sign_in(token).headers["location"]
