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
            assert (await r1.json()) == {"published": 2, "duplicates": 0, "ignored": 0, "unrouted": 0, "invalid": 0}
            assert (await r2.json())["duplicates"] == 2
            assert len(published) == 2
            assert (published[1].message_type, published[1].text, published[1].placeholder) == \
                ("image", "[imagem]", True)
            m = published[0]
            assert (m.message_id, m.account_id, m.inbox_id, m.contact_id, m.unit_id, m.channel, m.text) == \
                ("wamid.A", 101, 1101, 5001, 11, "whatsapp", "Quanto custa o pernoite?")
            assert m.conversation_id == "wa-1101-5001"
            assert m.sent_at == datetime.fromtimestamp(1735787045, tz=timezone.utc)
            # unknown business number: acknowledged, not published
            r = await post(c, payload(text_msg("wamid.B"), phone="PN-unknown"))
            assert (await r.json())["unrouted"] == 1 and len(published) == 2
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
            r = await post(c, bad)  # one bad message does not refuse its batch: recorded, 200
            assert r.status == 200 and (await r.json())["invalid"] == 1
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


# ----------------------------------------------------- every message type
def _msg(mid, kind, **body):
    return {"from": "5511999990000", "id": mid, "timestamp": "1735787045", "type": kind, **body}


ALL_KINDS = [
    (_msg("w1", "image", image={"id": "m1", "caption": "Essa suíte tem hidro?"}),
     ("image", "Essa suíte tem hidro?", False)),
    (_msg("w2", "image", image={"id": "m2"}), ("image", "[imagem]", True)),
    (_msg("w3", "document", document={"id": "m3", "filename": "comprovante.pdf"}),
     ("document", "[documento: comprovante.pdf]", True)),
    (_msg("w4", "document", document={"id": "m4", "caption": "segue o comprovante"}),
     ("document", "segue o comprovante", False)),
    (_msg("w5", "audio", audio={"id": "m5", "voice": True}), ("audio", "[áudio]", True)),
    (_msg("w6", "location", location={"latitude": -23.5613, "longitude": -46.6565, "name": "Av. Paulista"}),
     ("location", "Localização: Av. Paulista (-23.561300, -46.656500)", False)),
    (_msg("w7", "contacts", contacts=[{"name": {"formatted_name": "João"}, "phones": [{"phone": "+55 11 98888"}]}]),
     ("contacts", "Contato compartilhado: João +55 11 98888", False)),
    (_msg("w8", "interactive", interactive={"type": "button_reply", "button_reply": {"id": "b1", "title": "Sim"}}),
     ("interactive", "Sim", False)),
    (_msg("w9", "interactive", interactive={"type": "list_reply", "list_reply": {
        "id": "l1", "title": "Suíte Luxo", "description": "até 2 pessoas"}}),
     ("interactive", "Suíte Luxo — até 2 pessoas", False)),
    (_msg("w10", "button", button={"payload": "CONFIRMAR", "text": "Confirmar reserva"}),
     ("button", "Confirmar reserva", False)),
    (_msg("w11", "reaction", reaction={"message_id": "wamid.OUT", "emoji": "👍"}), ("reaction", "👍", False)),
    (_msg("w12", "sticker", sticker={"id": "m12"}), ("sticker", "[figurinha]", True)),
    (_msg("w13", "unsupported", errors=[{"code": 131051}]), ("unsupported", "[mensagem do tipo unsupported]", True)),
    (_msg("w14", "text", text={"body": "oi\x00 tudo\x07 bem?\x1b"}), ("text", "oi tudo bem?", False)),
]


def test_every_customer_message_type_becomes_an_inbound_message():
    from connectors.whatsapp.webhook import parse_payload

    body = payload(*[m for m, _ in ALL_KINDS],
                   _msg("w15", "reaction", reaction={"message_id": "x", "emoji": ""}),  # reaction removed
                   _msg("w16", "system", system={"body": "changed number"}))
    parsed = parse_payload(body)
    assert parsed.invalid == [] and parsed.ignored == 2
    got = {m.message_id: (m.message_type, m.text, m.placeholder) for m in parsed.messages}
    assert got == {m["id"]: want for m, want in ALL_KINDS}


def test_batch_with_invalid_messages_publishes_the_valid_ones_and_records_the_rest():
    async def go():
        published, recorded = [], []

        async def publish(msg):
            published.append(msg)

        async def record(raw, reason):
            recorded.append((raw, reason))

        c = TestClient(TestServer(create_app(CFG, publish, RESOLVER, record_invalid=record)))
        await c.start_server()
        try:
            body = payload(text_msg("wamid.1", "primeira"),
                           _msg("wamid.2", "text", text={"body": "\x00\x01"}),        # nothing left once cleaned
                           _msg("wamid.3", "location", location={"latitude": "x"}),   # malformed
                           {"from": "5511999990000", "type": "text", "text": {"body": "sem id"}},
                           {**text_msg("wamid.6", "longo"), "from": "9" * 5000},
                           text_msg("wamid.5", "quinta"))
            r = await post(c, body)
            return r.status, await r.json(), published, recorded
        finally:
            await c.close()

    status, out, published, recorded = asyncio.run(go())
    assert status == 200 and out["published"] == 2 and out["invalid"] == 4
    assert [m.message_id for m in published] == ["wamid.1", "wamid.5"]
    reasons = [reason for _, reason in recorded]
    assert "no text once control characters are removed" in reasons[0]
    assert "latitude" in reasons[1] and "missing" in reasons[2] and ".id" in reasons[2]
    assert "from must be 1-64 characters" in reasons[3]
    assert recorded[1][0]["id"] == "wamid.3"


def test_routing_failure_is_503_and_oversized_body_is_413():
    class Down:
        async def route(self, *_):
            raise ConnectionError("postgres down")

        async def destination(self, *_):
            return None

    async def go():
        published = []

        async def publish(msg):
            published.append(msg)

        cfg = WebhookConfig(verify_token="tok", app_secret=SECRET, max_body_bytes=64 * 1024)
        c = TestClient(TestServer(create_app(cfg, publish, Down())))
        await c.start_server()
        try:
            r1 = await post(c, payload(text_msg()))
            big = payload(text_msg(body="x" * 100_000))
            r2 = await post(c, big)
            return r1.status, r2.status, published
        finally:
            await c.close()

    s1, s2, published = asyncio.run(go())
    assert s1 == 503 and s2 == 413 and published == []


def test_sender_reports_the_api_error_and_waits_retry_after_up_to_its_own_cap():
    async def go():
        server, calls = await _graph([])
        state = {"n": 0}

        async def handle(request):
            state["n"] += 1
            if state["n"] == 1:
                return web.json_response({"error": {"message": "rate limited", "code": 130429}}, status=429,
                                         headers={"Retry-After": "120"})
            return web.json_response({"error": {"message": "(#100) Invalid parameter", "code": 100}}, status=400)

        app = web.Application()
        app.router.add_post("/v21.0/{pn}/messages", handle)
        srv = TestServer(app, host="127.0.0.1")
        await srv.start_server()
        s = WhatsAppSender(str(srv.make_url("/v21.0")), "TOKEN", RESOLVER, backoff_max=0.05)
        try:
            first = await s.send(reply())   # Retry-After beyond the sender's cap: handed to the caller
            second = await s.send(reply())
        finally:
            await s.aclose()
            await srv.close()
            await server.close()
        return first, second

    first, second = asyncio.run(go())
    assert first.retryable and first.retry_after == 120 and first.attempts == 1 and first.status == 429
    assert not second.retryable and second.status == 400 and "code=100" in second.error \
        and "Invalid parameter" in second.error


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
