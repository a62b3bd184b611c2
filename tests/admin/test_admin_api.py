"""Admin API against the real Postgres (and the real memory embedder)."""

import json
import pytest
from fastapi.testclient import TestClient

from streams.admin.api import create_app
from streams.admin.cli import OPENAPI_FILE, render_openapi
from streams.admin.tokens import create_token
from streams.bootstrap import Container


def _seed(env):
    with env.conn() as c:
        for acc in (1, 2):
            c.execute("INSERT INTO accounts (id, name) VALUES (%s, %s)", (acc, f"acc{acc}"))
            c.execute("INSERT INTO contacts (id, account_id, name) VALUES (%s, %s, 'x')", (acc * 100, acc))
            c.execute("INSERT INTO inboxes (id, account_id) VALUES (%s, %s)", (acc * 10, acc))
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
        t1 = create_token(c, 1, "ops")[1]
        t2 = create_token(c, 2, "ops")[1]
    return ids, t1, t2


@pytest.fixture
def api(env):
    c = Container(env.settings)
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
    r = client.patch(f"/v1/memories/{ids[0]}", json={"content": "Prefere a suíte Master", "edited_by": "ana"},
                     headers=h1)
    assert r.status_code == 200, r.text
    m = r.json()
    assert m["content"] == "Prefere a suíte Master" and m["embedded"]
    assert m["metadata"]["edits"][-1]["by"] == "ana"
    assert m["metadata"]["edits"][-1]["previous_content"] == "Prefere a suíte Hidro"
    assert env.q("SELECT count(*) AS n FROM outbox WHERE type = 'memory.updated'")[0]["n"] == 1
    assert client.patch(f"/v1/memories/{ids[4]}", json={"content": "x", "edited_by": "ana"},
                        headers=h1).status_code == 409  # superseded history is not edited
    assert client.patch(f"/v1/memories/{ids[0]}", json={"content": "", "edited_by": "ana"},
                        headers=h1).status_code == 422
    assert client.delete(f"/v1/memories/{ids[1]}", headers=h1).status_code == 204
    assert client.delete(f"/v1/memories/{ids[1]}", headers=h1).status_code == 404
    # forget-all requires an explicit confirmation
    assert client.post("/v1/contacts/100/forget", json={}, headers=h1).status_code == 422
    assert client.post("/v1/contacts/100/forget", json={"confirm": False}, headers=h1).status_code == 422
    r = client.post("/v1/contacts/100/forget", json={"confirm": True, "requested_by": "dpo"}, headers=h1)
    assert r.status_code == 200 and r.json()["facts_forgotten"] >= 3
    assert client.get("/v1/contacts/100/memories", headers=h1).json()["active"] == []
    r = client.post("/v1/contacts/100/erase", json={"confirm": True}, headers=h1)
    assert r.status_code == 200 and r.json()["erased"]["contact_memories"] >= 5
    assert client.get("/v1/contacts/100/memories", headers=h1).status_code == 404
    assert env.q("SELECT count(*) AS n FROM contact_memories WHERE contact_id = 100")[0]["n"] == 0
    # the other account is untouched
    assert env.q("SELECT count(*) AS n FROM contact_memories WHERE account_id = 2")[0]["n"] == 1


def test_inbox_flags_and_report(api):
    env, client, ids, h1, h2 = api
    assert client.get("/v1/account/flags", headers=h1).json() == {"memory_extraction_enabled": False,
                                                                 "memory_recall_enabled": False}
    r = client.put("/v1/account/flags", json={"memory_extraction_enabled": True, "memory_recall_enabled": False},
                   headers=h1)
    assert r.status_code == 200
    assert env.q("SELECT settings FROM accounts WHERE id = 1")[0]["settings"]["memory_extraction_enabled"] is True
    assert client.put("/v1/account/flags", json={"memory_recall_enabled": "maybe"}, headers=h1).status_code == 422
    cfg = {"system_prompt": "Você é a recepção.", "playbook_prompt": "", "rag_distance_threshold": 0.5,
           "rag_max_results": 4, "model": "gpt-4o-mini", "temperature": 0.2,
           "intent_keywords": {"price_question": ["tarifa"]}}
    r = client.put("/v1/inboxes/10", json=cfg, headers=h1)
    assert r.status_code == 200 and r.json()["rag_max_results"] == 4
    assert client.get("/v1/inboxes/10", headers=h1).json()["intent_keywords"] == {"price_question": ["tarifa"]}
    bad = dict(cfg, intent_keywords={"lottery": ["x"]})
    r = client.put("/v1/inboxes/10", json=bad, headers=h1)
    assert r.status_code == 422 and "unknown intents" in r.text
    assert client.put("/v1/inboxes/10", json=dict(cfg, rag_max_results=0), headers=h1).status_code == 422
    rep = client.get("/v1/reports/units?days=7", headers=h1).json()
    units = {u["unit_id"]: u for u in rep["units"]}
    assert units[11]["complaints"][0] == {"memory_type": "reclamacao", "topic": "portao",
                                          "example": "Portão da garagem demora", "count": 2}
    assert units[12]["compliments"][0]["topic"] == "jonas"
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
    r = client.put("/v1/inboxes/10", headers=h1, json=huge)
    assert r.status_code == 413 and "bytes" in r.json()["detail"]
    many = {"intent_keywords": {"price_question": [f"k{i}" for i in range(201)]}}
    r = client.put("/v1/inboxes/10", headers=h1, json=many)
    assert r.status_code == 422 and "at most 200" in json.dumps(r.json())

    def chunks():  # no Content-Length: bounded while streaming
        for _ in range(100):
            yield b"x" * 10_000

    r = client.put("/v1/inboxes/10", headers={**h1, "Content-Type": "application/json"}, content=chunks())
    assert r.status_code == 413
    ok = client.put("/v1/inboxes/10", headers=h1, json={"intent_keywords": {"price_question": ["preço", "valor"]}})
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
