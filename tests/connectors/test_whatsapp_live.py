"""WhatsApp connectors as processes would run them: real Postgres routing, real Kafka."""

import asyncio
import hashlib
import hmac
import json
import time
import uuid
from datetime import datetime, timezone

import httpx
from aiohttp import web

from connectors.whatsapp.run import run_sender, run_webhook
from schemas.events import OutboundReply
from streams.kafka.topics import INBOUND, OUTBOUND, qualified
from tests.harness import consume_all, free_port, produce

SECRET = "app-secret"


def _payload(msg_id: str, text: str, wa_id: str = "5511988887777", pnid: str = "PNID1") -> bytes:
    return json.dumps({"object": "whatsapp_business_account", "entry": [{"id": "WABA", "changes": [{
        "field": "messages", "value": {
            "messaging_product": "whatsapp", "metadata": {"phone_number_id": pnid, "display_phone_number": "1"},
            "contacts": [{"wa_id": wa_id, "profile": {"name": "Ana"}}],
            "messages": [{"from": wa_id, "id": msg_id, "timestamp": str(int(time.time())), "type": "text",
                          "text": {"body": text}}]}}]}]}).encode()


def _sign(body: bytes) -> str:
    return "sha256=" + hmac.new(SECRET.encode(), body, hashlib.sha256).hexdigest()


def _seed(env):
    env.q("INSERT INTO accounts (id) VALUES (1)")
    env.q("INSERT INTO inboxes (id, account_id, channel_address, unit_id) VALUES (10, 1, 'PNID1', 11)")


def test_webhook_routes_through_postgres_and_publishes_once(env):
    _seed(env)
    port = free_port()
    settings = env.settings.model_copy(update={"whatsapp_verify_token": "vt", "whatsapp_app_secret": SECRET})

    async def scenario():
        stop = asyncio.Event()
        task = asyncio.create_task(run_webhook(settings, "127.0.0.1", port, stop=stop))
        url = f"http://127.0.0.1:{port}/webhooks/whatsapp"
        async with httpx.AsyncClient() as c:
            for _ in range(100):
                try:
                    r = await c.get(url, params={"hub.mode": "subscribe", "hub.verify_token": "vt",
                                                 "hub.challenge": "42"})
                    break
                except httpx.ConnectError:
                    await asyncio.sleep(0.1)
            assert r.status_code == 200 and r.text == "42"
            out = []
            for mid, text in (("wamid.1", "Oi, quanto custa o pernoite?"), ("wamid.1", "Oi, quanto custa o pernoite?"),
                              ("wamid.2", "E tem garagem?")):
                body = _payload(mid, text)
                out.append(await c.post(url, content=body, headers={"X-Hub-Signature-256": _sign(body),
                                                                     "Content-Type": "application/json"}))
            bad = _payload("wamid.3", "x")
            forged = await c.post(url, content=bad, headers={"X-Hub-Signature-256": _sign(b"other")})
            unknown = _payload("wamid.4", "oi", pnid="NOT-OURS")
            unrouted = await c.post(url, content=unknown, headers={"X-Hub-Signature-256": _sign(unknown)})
            mixed = json.loads(_payload("wamid.5", "\x00"))  # nothing left once cleaned: recorded, not published
            mixed["entry"][0]["changes"][0]["value"]["messages"].append(json.loads(_payload("wamid.6", "Tem wifi?"))[
                "entry"][0]["changes"][0]["value"]["messages"][0])
            mixed = json.dumps(mixed).encode()
            out.append(await c.post(url, content=mixed, headers={"X-Hub-Signature-256": _sign(mixed),
                                                                  "Content-Type": "application/json"}))
        stop.set()
        await task
        return out, forged, unrouted

    out, forged, unrouted = asyncio.run(scenario())
    assert [r.json()["published"] for r in out] == [1, 0, 1, 1] and out[3].json()["invalid"] == 1
    assert out[1].json()["duplicates"] == 1
    assert forged.status_code == 403 and "signature" in forged.json()["error"]
    assert unrouted.status_code == 200 and unrouted.json()["unrouted"] == 1
    recs = consume_all(env.settings, qualified(env.settings, INBOUND), 3)
    msgs = [json.loads(r.value) for r in recs]
    assert sorted(m["message_id"] for m in msgs) == ["wamid.1", "wamid.2", "wamid.6"]
    dead = consume_all(env.settings, qualified(env.settings, INBOUND) + ".dlq", 1)
    h = dict(dead[0].headers)
    assert h["dlq.error_class"] == b"InvalidChannelMessage" and b"control characters" in h["dlq.error_message"]
    assert h["dlq.source_topic"].decode() == qualified(env.settings, INBOUND)
    assert json.loads(dead[0].value)["id"] == "wamid.5"
    assert len({m["conversation_id"] for m in msgs}) == 1 and msgs[0]["conversation_id"].startswith("wa-10-")
    assert {m["unit_id"] for m in msgs} == {11}
    contact = env.q("SELECT id FROM contacts WHERE account_id = 1 AND phone = '5511988887777'")
    assert len(contact) == 1 and {m["contact_id"] for m in msgs} == {contact[0]["id"]}
    assert all(r.key.decode() == msgs[0]["conversation_id"] for r in recs)


def test_sender_posts_replies_and_dead_letters_refusals(env):
    _seed(env)
    env.q("INSERT INTO contacts (id, account_id, phone) VALUES (7, 1, '5511977776666'), (8, 1, '5511900000000')")
    env.q("INSERT INTO conversations (external_id, account_id, inbox_id, contact_id) VALUES "
          "('wa-10-a', 1, 10, 7), ('wa-10-b', 1, 10, 8)")
    received = []

    async def graph(request: web.Request) -> web.Response:
        body = await request.json()
        received.append((request.match_info["pnid"], request.headers.get("Authorization"), body))
        if body["to"] == "5511900000000":
            return web.json_response({"error": {"message": "recipient not allowed"}}, status=400)
        return web.json_response({"messages": [{"id": f"wamid.out{len(received)}"}]})

    def reply(conv, contact, text):
        return OutboundReply(reply_id=str(uuid.uuid4()), in_reply_to="m", account_id=1, conversation_id=conv,
                             contact_id=contact, text=text, intent="general", strategy="none",
                             created_at=datetime.now(timezone.utc)).model_dump_json().encode()

    produce(env.settings, qualified(env.settings, OUTBOUND), [
        (b"wa-10-a", reply("wa-10-a", 7, "Olá! O pernoite custa R$ 240."), []),
        (b"wa-10-b", reply("wa-10-b", 8, "Oi"), []),
        (b"x", b"{not json", []),
    ])
    port = free_port()

    async def scenario():
        app = web.Application()
        app.router.add_post("/{pnid}/messages", graph)
        runner = web.AppRunner(app)
        await runner.setup()
        await web.TCPSite(runner, "127.0.0.1", port).start()
        settings = env.settings.model_copy(update={"whatsapp_api_base_url": f"http://127.0.0.1:{port}",
                                                   "whatsapp_access_token": "tok"})
        stop = asyncio.Event()
        task = asyncio.create_task(run_sender(settings, stop=stop))
        for _ in range(300):
            if len(received) >= 2:
                break
            await asyncio.sleep(0.1)
        await asyncio.sleep(1.0)
        stop.set()
        await task
        await runner.cleanup()

    asyncio.run(scenario())
    ok = [r for r in received if r[2]["to"] == "5511977776666"]
    assert len(ok) == 1 and ok[0][0] == "PNID1" and ok[0][1] == "Bearer tok"
    assert ok[0][2]["text"]["body"] == "Olá! O pernoite custa R$ 240."
    dead = consume_all(env.settings, qualified(env.settings, OUTBOUND) + ".dlq", 2)
    assert sorted(dict(r.headers)["dlq.error_class"].decode() for r in dead) == ["InvalidReply", "SendFailed"]
