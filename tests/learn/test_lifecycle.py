"""Conversation lifecycle (resolve / reopen) from the channel topic, the admin API and the CLI,
against the real Postgres; learning through the real consumer of the outbox events."""

from __future__ import annotations

import json
import uuid
from datetime import timedelta

import pytest
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from streams.admin.api import create_app
from streams.admin.tokens import create_token
from streams.kafka.consume import Record
from streams.learn.learn import ConversationEventHandler
from streams.learn.lifecycle import ConversationNotFound, LifecycleEventHandler, change_status
from tests.learn import seed as S
from tests.support.embedders import shared_container


def _lifecycle(event_type: str, account: int, external_id: str, *, event_id: str | None = None,
               offset: int = 0, at=S.T0) -> Record:
    value = {"schema_version": 1, "event_id": event_id or str(uuid.uuid4()), "type": event_type,
             "account_id": account, "conversation_id": external_id, "source": "chatwoot",
             "occurred_at": at.isoformat()}
    return Record("channel.conversation.events", 0, offset, external_id.encode(), json.dumps(value).encode())


def _learn_pending(db, ports) -> list:
    """Feed every conversation outbox event not yet handled to the real learning consumer."""
    rows = db.q("SELECT id, type, aggregateid, payload FROM outbox WHERE aggregatetype = 'conversation' "
                "ORDER BY created_at")
    recs = [Record("outbox.event.conversation", 0, i, r["aggregateid"].encode(), json.dumps(r["payload"]).encode(),
                   (("id", str(r["id"]).encode()), ("type", r["type"].encode()))) for i, r in enumerate(rows)]
    return ConversationEventHandler(ports)(recs)


def _with_external_id(db, conv: int) -> str:
    ext = f"cw-{conv}"
    db.q("UPDATE conversations SET external_id = %s WHERE id = %s", ext, conv)
    return ext


def test_channel_events_resolve_once_reopen_and_learn_only_new_messages(db, memory_embedder):
    a = S.account(db)
    c = S.contact(db, a)
    conv = S.conversation(db, a, c, S.HIDRO)
    ext = _with_external_id(db, conv)
    ports = S.ports(db.pool, memory_embedder)
    handler = LifecycleEventHandler(db.pool)

    resolved = _lifecycle("resolved", a, ext, event_id="cw-1")
    assert handler([resolved, resolved]) == []  # the same event twice: applied once
    assert handler([_lifecycle("resolved", a, ext, event_id="cw-1b")]) == []  # a second "resolved": no-op
    row = db.q("SELECT status, lead_state, resolved_at FROM conversations WHERE id = %s", conv)[0]
    assert row["status"] == "resolved" and row["lead_state"] == {} and row["resolved_at"] == S.T0
    assert [e["type"] for e in db.q("SELECT type FROM outbox WHERE aggregatetype = 'conversation' AND aggregateid = %s", str(conv))] == \
        ["conversation.resolved"]
    assert _learn_pending(db, ports) == []
    first = S.facts(db, c)
    assert {f["memory_key"] for f in first} == {"allergy", "preferred_room"}

    # reopened by the channel; the customer restates a fact and says something new
    later = S.T0 + timedelta(hours=2)
    assert handler([_lifecycle("reopened", a, ext, event_id="cw-2", at=later)]) == []
    assert db.q("SELECT status FROM conversations WHERE id = %s", conv)[0]["status"] == "open"
    assert db.q("SELECT status FROM conversation_extractions WHERE conversation_id = %s", conv)[0]["status"] == \
        "reopened"
    with db.conn() as cx, cx.cursor() as cur:
        cur.executemany("INSERT INTO messages (conversation_id, account_id, role, text, sent_at) "
                        "VALUES (%s, %s, %s, %s, %s)",
                        [(conv, a, "contact", "Lembrando: sou alérgico a camarão.", later),
                         (conv, a, "contact", "Sou vegetariano, tá?", later + timedelta(minutes=1))])
    # the first "resolved" retried late by the channel: older than the reopen, ignored
    assert handler([_lifecycle("resolved", a, ext, event_id="cw-1-late", at=S.T0)]) == []
    assert db.q("SELECT status FROM conversations WHERE id = %s", conv)[0]["status"] == "open"
    assert handler([_lifecycle("resolved", a, ext, event_id="cw-3", at=later + timedelta(minutes=5))]) == []
    assert _learn_pending(db, ports) == []
    facts = S.facts(db, c)
    keys = sorted(f["memory_key"] for f in facts)
    assert len(keys) == len(set(keys)), f"duplicated facts: {keys}"
    assert set(keys) >= {"allergy", "preferred_room"} and len(facts) == len(first) + 1  # one new fact only
    new = [f for f in facts if f["id"] not in {x["id"] for x in first}]
    assert new[0]["evidence"] == "Sou vegetariano, tá?"
    ex = db.q("SELECT status, through_message_id FROM conversation_extractions WHERE conversation_id = %s", conv)[0]
    assert ex["status"] == "done"
    assert ex["through_message_id"] == db.q("SELECT max(id) AS m FROM messages WHERE conversation_id = %s",
                                            conv)[0]["m"]
    # every event delivered again (replay): nothing changes
    before = [(f["id"], f["confidence"], f["supporting_conversation_ids"]) for f in S.facts(db, c)]
    assert _learn_pending(db, ports) == []
    assert [(f["id"], f["confidence"], f["supporting_conversation_ids"]) for f in S.facts(db, c)] == before
    types = [e["type"] for e in db.q("SELECT type FROM outbox WHERE aggregatetype = 'conversation' AND aggregateid = %s "
                                                 "ORDER BY created_at", str(conv))]
    assert types == ["conversation.resolved", "conversation.reopened", "conversation.resolved"]


def test_unknown_conversation_other_account_and_bad_records_are_dead_lettered(db):
    a, b = S.account(db), S.account(db)
    conv = S.conversation(db, a, S.contact(db, a), S.MASTER)
    ext = _with_external_id(db, conv)
    handler = LifecycleEventHandler(db.pool)
    bad_json = Record("channel.conversation.events", 0, 9, b"k", b"{nope")
    bad_type = Record("channel.conversation.events", 0, 10, b"k", json.dumps(
        {"event_id": "x", "type": "archived", "account_id": a, "conversation_id": ext,
         "occurred_at": S.T0.isoformat()}).encode())
    dead = handler([_lifecycle("resolved", b, ext), _lifecycle("resolved", a, "no-such"), bad_json, bad_type])
    assert sorted(d.error_class for d in dead) == ["InvalidJSON", "SchemaValidation", "UnknownConversation",
                                                   "UnknownConversation"]
    assert db.q("SELECT status FROM conversations WHERE id = %s", conv)[0]["status"] == "open"
    with db.conn() as cx, pytest.raises(ConversationNotFound):
        change_status(cx, account_id=b, conversation_id=conv, action="resolve")


def test_admin_api_resolve_and_reopen(db):
    a, b = S.account(db), S.account(db)
    conv = S.conversation(db, a, S.contact(db, a), S.MASTER)
    with db.conn() as cx:
        ta = create_token(cx, a, "ops")[1]
        tb = create_token(cx, b, "ops")[1]
    container = shared_container(db.settings)
    try:
        client = TestClient(create_app(container), raise_server_exceptions=False)
        ha, hb = {"Authorization": f"Bearer {ta}"}, {"Authorization": f"Bearer {tb}"}
        assert client.post(f"/v1/conversations/{conv}/resolve", headers=hb).status_code == 404
        r = client.post(f"/v1/conversations/{conv}/resolve", headers=ha)
        assert r.status_code == 200 and r.json() == {"conversation_id": conv, "external_id": None,
                                                     "status": "resolved", "changed": True}
        assert client.post(f"/v1/conversations/{conv}/resolve", headers=ha).json()["changed"] is False
        r = client.post(f"/v1/conversations/{conv}/reopen", headers=ha)
        assert r.status_code == 200 and r.json()["status"] == "open" and r.json()["changed"] is True
        assert client.post("/v1/conversations/999999999/reopen", headers=ha).status_code == 404
    finally:
        container.close()
    types = [e["type"] for e in db.q("SELECT type FROM outbox WHERE aggregatetype = 'conversation' AND aggregateid = %s "
                                                 "ORDER BY created_at", str(conv))]
    assert types == ["conversation.resolved", "conversation.reopened"]


def test_cli_list_resolve_reopen(db, monkeypatch):
    from streams.cli import app
    from streams.settings import get_settings

    a = S.account(db)
    c = S.contact(db, a)
    conv = S.conversation(db, a, c, S.MASTER)
    other = S.conversation(db, a, S.contact(db, a), S.HIDRO)
    monkeypatch.setenv("MEMORIA_DATABASE_URL", db.settings.database_url)
    get_settings.cache_clear()
    try:
        runner = CliRunner()
        r = runner.invoke(app, ["conversations", "list", "--account", str(a), "--contact", str(c), "--json"])
        assert r.exit_code == 0, r.output
        rows = [json.loads(line) for line in r.stdout.splitlines()]
        assert [x["id"] for x in rows] == [conv] and rows[0]["status"] == "open" and rows[0]["messages"] == 3
        r = runner.invoke(app, ["conversations", "resolve", str(conv)])
        assert r.exit_code == 0 and "resolved" in r.output
        r = runner.invoke(app, ["conversations", "resolve", str(conv)])
        assert r.exit_code == 0 and "nothing changed" in r.output
        r = runner.invoke(app, ["conversations", "reopen", str(conv), "--account", str(a + 1)])
        assert r.exit_code == 2 and "not found" in r.output
        r = runner.invoke(app, ["conversations", "reopen", str(conv)])
        assert r.exit_code == 0 and "reopened" in r.output
        r = runner.invoke(app, ["conversations", "list", "--account", str(a)])
        assert r.exit_code == 0 and str(other) in r.stdout
    finally:
        get_settings.cache_clear()
    assert db.q("SELECT status FROM conversations WHERE id = %s", conv)[0]["status"] == "open"
