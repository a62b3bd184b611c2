"""Chatwoot-style conversation_status_changed webhook: authentication, mapping, and end to end
(webhook process → real Kafka → worker learn role → conversation resolved and learnt)."""

import asyncio
import hashlib
import hmac
import json
import time

import httpx
import pytest
from aiohttp.test_utils import TestClient, TestServer

from connectors.chatwoot import ChatwootConfig, create_app, parse_status_change
from connectors.chatwoot.cli import run_chatwoot_webhook
from streams.kafka.topics import CONVERSATION_EVENTS, qualified
from tests.harness import consume_all, free_port, wait_until
from tests.learn import seed as S


def body(status="resolved", previous="open", conv=42, account=101, updated_at="2026-11-30T10:00:00Z"):
    return {"event": "conversation_status_changed", "id": conv, "status": status, "account": {"id": account},
            "inbox_id": 1, "changed_attributes": [{"status": {"previous_value": previous, "current_value": status}}],
            "updated_at": updated_at, "meta": {"sender": {"id": 7}}}


def test_status_mapping():
    ev = parse_status_change(body())
    assert (ev.type, ev.account_id, ev.conversation_id, ev.source) == ("resolved", 101, "42", "chatwoot")
    assert ev.occurred_at.isoformat() == "2026-11-30T10:00:00+00:00"
    assert parse_status_change(body()).event_id == ev.event_id  # a redelivered webhook: same event id
    assert parse_status_change(body(updated_at="2026-11-30T11:00:00Z")).event_id != ev.event_id
    assert parse_status_change(body("open", "resolved")).type == "reopened"
    assert parse_status_change(body("open", "pending")) is None
    assert parse_status_change(body("snoozed")) is None
    assert parse_status_change({"event": "message_created"}) is None


def _client(config, published, fail=False):
    async def publish(ev):
        if fail:
            raise ConnectionError("kafka down")
        published.append(ev)

    return TestClient(TestServer(create_app(config, publish)))


def test_token_and_signature_are_checked():
    async def go():
        published = []
        out = {}
        c = _client(ChatwootConfig(token="s3cret"), published)
        await c.start_server()
        try:
            raw = json.dumps(body()).encode()
            out["none"] = (await c.post("/webhooks/chatwoot", data=raw)).status
            out["wrong"] = (await c.post("/webhooks/chatwoot?token=nope", data=raw)).status
            r = await c.post("/webhooks/chatwoot?token=s3cret", data=raw)
            out["ok"] = (r.status, await r.json())
            out["header"] = (await c.post("/webhooks/chatwoot", data=raw, headers={"X-Memoria-Token": "s3cret"})).status
            out["bad"] = (await c.post("/webhooks/chatwoot?token=s3cret", data=json.dumps(
                {"event": "conversation_status_changed", "status": "resolved", "id": 1}))).status
        finally:
            await c.close()
        c = _client(ChatwootConfig(secret="hmac-key"), published)
        await c.start_server()
        try:
            raw = json.dumps(body(conv=43)).encode()
            ts = str(int(time.time()))
            sig = "sha256=" + hmac.new(b"hmac-key", ts.encode() + b"." + raw, hashlib.sha256).hexdigest()
            out["unsigned"] = (await c.post("/webhooks/chatwoot", data=raw)).status
            out["forged"] = (await c.post("/webhooks/chatwoot", data=raw, headers={
                "X-Chatwoot-Signature": "sha256=" + "0" * 64, "X-Chatwoot-Timestamp": ts})).status
            old = str(int(time.time()) - 3600)
            old_sig = "sha256=" + hmac.new(b"hmac-key", old.encode() + b"." + raw, hashlib.sha256).hexdigest()
            out["replayed"] = (await c.post("/webhooks/chatwoot", data=raw, headers={
                "X-Chatwoot-Signature": old_sig, "X-Chatwoot-Timestamp": old})).status
            out["signed"] = (await c.post("/webhooks/chatwoot", data=raw, headers={
                "X-Chatwoot-Signature": sig, "X-Chatwoot-Timestamp": ts})).status
        finally:
            await c.close()
        c = _client(ChatwootConfig(token="t"), [], fail=True)
        await c.start_server()
        try:
            out["down"] = (await c.post("/webhooks/chatwoot?token=t", data=json.dumps(body()))).status
        finally:
            await c.close()
        return out, published

    out, published = asyncio.run(go())
    assert (out["none"], out["wrong"], out["header"]) == (401, 403, 200)
    assert out["ok"][0] == 200 and out["ok"][1]["type"] == "resolved"
    assert out["bad"] == 400
    assert (out["unsigned"], out["forged"], out["replayed"], out["signed"]) == (401, 403, 403, 200)
    assert out["down"] == 503  # acknowledged only once the broker has it
    assert [e.conversation_id for e in published] == ["42", "42", "43"]
    with pytest.raises(ValueError):
        ChatwootConfig()


@pytest.mark.slow
def test_webhook_to_worker_resolves_and_learns(env):
    a = S.account(env)
    c = S.contact(env, a)
    conv = S.conversation(env, a, c, S.HIDRO)
    env.q("UPDATE conversations SET external_id = %s WHERE id = %s", str(conv), conv)
    env.start_worker("relay,learn")
    port = free_port()
    settings = env.settings.model_copy(update={"chatwoot_webhook_token": "tok"})

    async def scenario():
        stop = asyncio.Event()
        task = asyncio.create_task(run_chatwoot_webhook(settings, "127.0.0.1", port, stop=stop))
        url = f"http://127.0.0.1:{port}/webhooks/chatwoot?token=tok"
        async with httpx.AsyncClient() as client:
            for _ in range(100):
                try:
                    r = await client.post(url, json=body(conv=conv, account=a))
                    break
                except httpx.ConnectError:
                    await asyncio.sleep(0.1)
            again = await client.post(url, json=body(conv=conv, account=a))  # Chatwoot retried it
        stop.set()
        await task
        return r, again

    r, again = asyncio.run(scenario())
    assert r.status_code == 200 and again.status_code == 200
    recs = consume_all(env.settings, qualified(env.settings, CONVERSATION_EVENTS), 2)
    assert [rec.key.decode() for rec in recs] == [str(conv), str(conv)]
    wait_until(lambda: env.q("SELECT status FROM conversation_extractions WHERE conversation_id = %s "
                             "AND status = 'done'", conv), 90, what="conversation learnt")
    assert env.q("SELECT status, lead_state FROM conversations WHERE id = %s", conv)[0] == \
        {"status": "resolved", "lead_state": {}}
    # the facts the worker's own extractor finds in this transcript (learnt in-process for another contact)
    from streams.learn.learn import learn_conversation
    from tests.support.embedders import shared_container

    ref = S.contact(env, a)
    container = shared_container(env.settings)
    try:
        assert learn_conversation(container.learn_ports(), S.conversation(env, a, ref, S.HIDRO)).status == "done"
    finally:
        container.close()
    keys = sorted(f["memory_key"] for f in S.facts(env, c))
    assert keys == sorted(f["memory_key"] for f in S.facts(env, ref))  # learnt once: no key twice
    assert {"allergy", "preferred_room"} <= set(keys)
    assert len(env.q("SELECT 1 FROM outbox WHERE aggregatetype = 'conversation' AND aggregateid = %s",
                     str(conv))) == 1
