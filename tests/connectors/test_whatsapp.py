import asyncio
import hashlib
import hmac
import json
from datetime import datetime, timezone

from aiohttp import web
from aiohttp.test_utils import TestClient, TestServer

from connectors.whatsapp import StaticResolver, WebhookConfig, WhatsAppSender, create_app
from schemas.events import OutboundReply

SECRET = "app-secret"
CFG = WebhookConfig(verify_token="tok", app_secret=SECRET)
RESOLVER = StaticResolver(numbers={"PN1": {"account_id": 101, "inbox_id": 1101, "unit_id": 11}},
                          contacts={(101, "5511999990000"): 5001})


def payload(*messages, phone="PN1"):
    return {"object": "whatsapp_business_account", "entry": [{"id": "WABA", "changes": [{
        "field": "messages", "value": {"messaging_product": "whatsapp",
                                       "metadata": {"display_phone_number": "551100", "phone_number_id": phone},
                                       "contacts": [{"profile": {"name": "Ana"}, "wa_id": "5511999990000"}],
                                       "messages": list(messages)}}]}]}


def text_msg(mid="wamid.A", body="Quanto custa o pernoite?"):
    return {"from": "5511999990000", "id": mid, "timestamp": "1735787045", "type": "text", "text": {"body": body}}


def sign(raw: bytes, secret=SECRET) -> str:
    return "sha256=" + hmac.new(secret.encode(), raw, hashlib.sha256).hexdigest()


async def _client(published, fail=0):
    failures = [fail]

    async def publish(msg):
        if failures[0] > 0:
            failures[0] -= 1
            raise ConnectionError("kafka down")
        published.append(msg)

    client = TestClient(TestServer(create_app(CFG, publish, RESOLVER)))
    await client.start_server()
    return client


async def post(client, body, signature=None, raw=None):
    raw = raw if raw is not None else json.dumps(body).encode()
    headers = {"Content-Type": "application/json"}
    if signature is not False:
        headers["X-Hub-Signature-256"] = signature or sign(raw)
    return await client.post(CFG.path, data=raw, headers=headers)


def test_handshake_ok_and_bad_token():
    async def go():
        c = await _client([])
        try:
            r = await c.get(CFG.path, params={"hub.mode": "subscribe", "hub.verify_token": "tok", "hub.challenge": "42"})
            assert r.status == 200 and await r.text() == "42"
            r = await c.get(CFG.path, params={"hub.mode": "subscribe", "hub.verify_token": "bad", "hub.challenge": "42"})
            assert r.status == 403 and "verify_token" in (await r.json())["error"]
            r = await c.get(CFG.path)
            assert r.status == 400
        finally:
            await c.close()
    asyncio.run(go())


def test_signature_rejected():
    async def go():
        published = []
        c = await _client(published)
        try:
            body = payload(text_msg())
            r = await post(c, body, signature=False)
            assert r.status == 401 and "missing" in (await r.json())["error"]
            r = await post(c, body, signature=sign(b"other body"))
            assert r.status == 403 and "signature" in (await r.json())["error"]
            r = await post(c, body, signature=sign(json.dumps(body).encode(), secret="wrong"))
            assert r.status == 403
            assert published == []
        finally:
            await c.close()
    asyncio.run(go())


def test_text_message_published_once_even_if_posted_twice():
    async def go():
        published = []
        c = await _client(published)
        try:
            body = payload(text_msg(), {"from": "5511999990000", "id": "wamid.IMG", "timestamp": "1735787045",
                                        "type": "image", "image": {"id": "x"}})
            r1 = await post(c, body)
            r2 = await post(c, body)
            assert r1.status == r2.status == 200
            assert (await r1.json()) == {"published": 1, "duplicates": 0, "ignored": 1, "unrouted": 0}
            assert (await r2.json())["duplicates"] == 1
            assert len(published) == 1
            m = published[0]
            assert (m.message_id, m.account_id, m.inbox_id, m.contact_id, m.unit_id, m.channel, m.text) == \
                ("wamid.A", 101, 1101, 5001, 11, "whatsapp", "Quanto custa o pernoite?")
            assert m.conversation_id == "wa-1101-5001"
            assert m.sent_at == datetime.fromtimestamp(1735787045, tz=timezone.utc)
            # unknown business number: acknowledged, not published
            r = await post(c, payload(text_msg("wamid.B"), phone="PN-unknown"))
            assert (await r.json())["unrouted"] == 1 and len(published) == 1
        finally:
            await c.close()
    asyncio.run(go())


def test_malformed_payloads_get_400_with_reason():
    async def go():
        c = await _client([])
        try:
            r = await post(c, None, raw=b"{not json")
            assert r.status == 400 and "JSON" in (await r.json())["error"]
            r = await post(c, {"object": "page", "entry": []})
            assert r.status == 400 and "whatsapp_business_account" in (await r.json())["error"]
            bad = payload(text_msg())
            del bad["entry"][0]["changes"][0]["value"]["messages"][0]["id"]
            r = await post(c, bad)
            assert r.status == 400 and (await r.json())["error"] == "missing entry[0].changes[0].value.messages[0].id"
            r = await post(c, {"object": "whatsapp_business_account", "entry": "x"})
            assert r.status == 400 and "entry" in (await r.json())["error"]
        finally:
            await c.close()
    asyncio.run(go())


def test_publish_failure_is_503_and_retry_publishes():
    async def go():
        published = []
        c = await _client(published, fail=1)
        try:
            r = await post(c, payload(text_msg()))
            assert r.status == 503 and published == []
            r = await post(c, payload(text_msg()))  # Meta redelivers: not a duplicate
            assert r.status == 200 and len(published) == 1
        finally:
            await c.close()
    asyncio.run(go())


# ------------------------------------------------------------------ sender
def reply(text="Olá!"):
    return OutboundReply(reply_id="r1", in_reply_to="wamid.A", account_id=101, conversation_id="wa-1101-5001",
                         contact_id=5001, text=text, intent="greeting", strategy="none",
                         created_at=datetime(2025, 1, 1, tzinfo=timezone.utc))


async def _graph(statuses):
    calls = []

    async def handle(request: web.Request):
        calls.append((request.match_info["pn"], request.headers.get("Authorization"), await request.json()))
        status = statuses.pop(0) if statuses else 200
        if status == 200:
            return web.json_response({"messaging_product": "whatsapp", "messages": [{"id": "wamid.OUT"}]})
        return web.json_response({"error": {"message": "nope"}}, status=status)

    app = web.Application()
    app.router.add_post("/v21.0/{pn}/messages", handle)
    server = TestServer(app, host="127.0.0.1")
    await server.start_server()
    return server, calls


def test_sender_retries_500_then_succeeds():
    async def go():
        server, calls = await _graph([500, 502])
        s = WhatsAppSender(str(server.make_url("/v21.0")), "TOKEN", RESOLVER, backoff_max=0.05)
        try:
            res = await s.send(reply("Olá! Tudo bem?"))
        finally:
            await s.aclose()
            await server.close()
        assert res.ok and res.attempts == 3 and res.wa_message_id == "wamid.OUT" and res.status == 200
        pn, auth, body = calls[-1]
        assert pn == "PN1" and auth == "Bearer TOKEN"
        assert body == {"messaging_product": "whatsapp", "recipient_type": "individual", "to": "5511999990000",
                        "type": "text", "text": {"preview_url": False, "body": "Olá! Tudo bem?"}}
    asyncio.run(go())


def test_sender_gives_up_on_400_and_after_max_attempts():
    async def go():
        server, calls = await _graph([400])
        s = WhatsAppSender(str(server.make_url("/v21.0")), "TOKEN", RESOLVER, backoff_max=0.05)
        try:
            res = await s.send(reply())
            assert not res.ok and res.status == 400 and res.attempts == 1 and len(calls) == 1
            calls.clear()
            server_statuses = [503] * 10
            server2, calls2 = await _graph(server_statuses)
            s2 = WhatsAppSender(str(server2.make_url("/v21.0")), "TOKEN", RESOLVER, max_attempts=3, backoff_max=0.05)
            res = await s2.send(reply())
            await s2.aclose()
            await server2.close()
            assert not res.ok and res.status == 503 and res.attempts == 3 and len(calls2) == 3
            # connection refused is retried too, then reported
            s3 = WhatsAppSender("http://127.0.0.1:9/v21.0", "TOKEN", RESOLVER, max_attempts=2, backoff_max=0.05)
            res = await s3.send(reply())
            await s3.aclose()
            assert not res.ok and res.status is None and res.attempts == 2
        finally:
            await s.aclose()
            await server.close()
    asyncio.run(go())


def test_sender_sends_an_offer_as_its_template():
    from schemas.events import WhatsAppTemplate

    async def go():
        server, calls = await _graph([])
        s = WhatsAppSender(str(server.make_url("/v21.0")), "TOKEN", RESOLVER, backoff_max=0.05)
        offer = OutboundReply(reply_id="o1", in_reply_to="", account_id=101, conversation_id="wa-1101-5001",
                              contact_id=5001, text="Oi, Ana! ...", intent="anniversary_offer", strategy="none",
                              kind="offer", created_at=datetime(2025, 1, 1, tzinfo=timezone.utc),
                              template=WhatsAppTemplate(name="oferta_aniv", parameters=["Ana", "14/02"]))
        try:
            res = await s.send(offer)
        finally:
            await s.aclose()
            await server.close()
        assert res.ok
        body = calls[-1][2]
        assert body["type"] == "template" and body["to"] == "5511999990000"
        assert body["template"] == {"name": "oferta_aniv", "language": {"code": "pt_BR"}, "components": [
            {"type": "body", "parameters": [{"type": "text", "text": "Ana"}, {"type": "text", "text": "14/02"}]}]}
    asyncio.run(go())
