"""Exactly one delivery per reply_id: the sent ledger in the real Postgres around a local
HTTP server speaking the WhatsApp Cloud API (429 with Retry-After, 5xx, 4xx, success)."""

import asyncio
import json
import time
import uuid
from datetime import datetime, timezone

from aiohttp import web

from connectors.whatsapp.delivery import PostgresSentLedger, ReplyDelivery, Stopped
from connectors.whatsapp.postgres_resolver import PostgresResolver
from connectors.whatsapp.run import run_sender
from connectors.whatsapp.sender import WhatsAppSender, retry_after_seconds
from schemas.events import OutboundReply
from streams import metrics
from streams.kafka.consume import Record
from streams.kafka.topics import OUTBOUND, qualified
from streams.settings import get_settings
from tests.harness import consume_all, free_port, produce

KEY = get_settings().erasure_key  # what the container hands to the erasure ledger's users


def _seed(env):
    env.q("INSERT INTO accounts (id) VALUES (1)")
    env.q("INSERT INTO inboxes (id, account_id, channel_address) VALUES (10, 1, 'PNID1')")
    env.q("INSERT INTO contacts (id, account_id, phone) VALUES (7, 1, '5511977776666'), (8, 1, '5511900000000')")
    env.q("INSERT INTO conversations (external_id, account_id, inbox_id, contact_id) VALUES "
          "('wa-10-a', 1, 10, 7), ('wa-10-b', 1, 10, 8)")


def _reply(conv="wa-10-a", contact=7, text="Olá!", reply_id=None) -> OutboundReply:
    return OutboundReply(reply_id=reply_id or str(uuid.uuid4()), in_reply_to="m", account_id=1,
                         conversation_id=conv, contact_id=contact, text=text, intent="general", strategy="none",
                         created_at=datetime.now(timezone.utc))


def _record(reply: OutboundReply, offset=0) -> Record:
    return Record("channel.outbound.replies", 0, offset, reply.conversation_id.encode(),
                  reply.model_dump_json().encode())


class GraphAPI:
    """A local Cloud API: ``script`` is a list of (status, headers) answered in turn, then 200."""

    def __init__(self, script=()):
        self.script = list(script)
        self.received: list[dict] = []
        self.times: list[float] = []
        self.runner = None
        self.port = free_port()

    async def handle(self, request: web.Request) -> web.Response:
        body = await request.json()
        self.times.append(time.monotonic())
        if self.script:
            status, headers = self.script.pop(0)
            return web.json_response({"error": {"message": f"scripted {status}", "code": 130429 if status == 429
                                                else 131000}}, status=status, headers=headers)
        if body["to"] == "5511900000000":
            return web.json_response({"error": {"message": "Recipient phone number not in allowed list",
                                                "code": 131030}}, status=400)
        self.received.append(body)
        return web.json_response({"messages": [{"id": f"wamid.out{len(self.received)}"}]})

    async def start(self):
        app = web.Application()
        app.router.add_post("/{pnid}/messages", self.handle)
        self.runner = web.AppRunner(app)
        await self.runner.setup()
        await web.TCPSite(self.runner, "127.0.0.1", self.port).start()
        return f"http://127.0.0.1:{self.port}"

    async def stop(self):
        await self.runner.cleanup()


def test_retry_after_header_forms():
    assert retry_after_seconds("3") == 3.0
    assert retry_after_seconds(None) is None and retry_after_seconds("soon") is None
    assert 9 <= retry_after_seconds("Wed, 21 Oct 2015 07:28:10 GMT", now=1445412480.0) <= 11


def test_redelivered_reply_reaches_the_api_once_and_restart_keeps_it_once(env):
    _seed(env)
    from streams.store.db import make_pool

    pool = make_pool(env.settings, min_size=1, max_size=2, name="delivery")

    async def go():
        api = GraphAPI()
        base = await api.start()
        try:
            reply = _reply(text="O pernoite custa R$ 240.")
            for _ in range(2):  # a fresh process each time: nothing in memory survives
                sender = WhatsAppSender(base, "tok", PostgresResolver(pool, erasure_key=KEY), backoff_max=0.05)
                d = ReplyDelivery(sender, PostgresSentLedger(pool), backoff_base=0.01)
                assert await d.handle(_record(reply)) is None
                assert await d.handle(_record(reply, offset=1)) is None  # redelivered
                await sender.aclose()
            return api.received
        finally:
            await api.stop()

    received = asyncio.run(go())
    assert len(received) == 1 and received[0]["text"]["body"] == "O pernoite custa R$ 240."
    row = env.q("SELECT status, channel_message_id, attempts FROM sent_replies")[0]
    assert row == {"status": "sent", "channel_message_id": "wamid.out1", "attempts": 1}
    pool.close()


def test_unavailable_api_retries_the_same_reply_honouring_retry_after_then_sends_once(env):
    _seed(env)
    from streams.store.db import make_pool

    pool = make_pool(env.settings, min_size=1, max_size=2, name="delivery")

    async def go():
        # 429 asking for 1 s (longer than the sender's own backoff: the delivery loop waits it), then 503s
        api = GraphAPI([(429, {"Retry-After": "1"}), (503, {}), (503, {}), (503, {})])
        base = await api.start()
        sender = WhatsAppSender(base, "tok", PostgresResolver(pool, erasure_key=KEY), max_attempts=2, backoff_max=0.05)
        d = ReplyDelivery(sender, PostgresSentLedger(pool), backoff_base=0.05, backoff_max=2.0)
        stalled = []

        async def watch():
            while True:
                stalled.append(metrics.CONSUMER_STALLED.labels("whatsapp-sender", "channel_api")._value.get())
                await asyncio.sleep(0.05)

        w = asyncio.create_task(watch())
        try:
            dead = await d.handle(_record(_reply(text="Oi")))
        finally:
            w.cancel()
            await sender.aclose()
            await api.stop()
        stalled.append(metrics.CONSUMER_STALLED.labels("whatsapp-sender", "channel_api")._value.get())
        return dead, api, stalled

    dead, api, stalled = asyncio.run(go())
    assert dead is None, "an unavailable API must never dead-letter the reply"
    assert len(api.received) == 1 and len(api.times) == 5
    assert api.times[1] - api.times[0] >= 0.95  # Retry-After: 1 honoured
    assert 1.0 in stalled and stalled[-1] == 0.0
    assert env.q("SELECT status, attempts FROM sent_replies")[0] == {"status": "sent", "attempts": 3}
    pool.close()


def test_refusal_is_dead_lettered_with_the_api_error_and_unknown_outcome_never_resent(env):
    _seed(env)
    from streams.store.db import make_pool

    pool = make_pool(env.settings, min_size=1, max_size=2, name="delivery")

    async def go():
        api = GraphAPI()
        base = await api.start()
        sender = WhatsAppSender(base, "tok", PostgresResolver(pool, erasure_key=KEY), backoff_max=0.05)
        d = ReplyDelivery(sender, PostgresSentLedger(pool), backoff_base=0.01)
        try:
            refused = await d.handle(_record(_reply("wa-10-b", 8)))
            # a process died during the call: the ledger still says 'sending'
            crashed = _reply(text="duplicado?")
            assert PostgresSentLedger(pool).claim(crashed, "whatsapp") == "claimed"
            unknown = await d.handle(_record(crashed))
            again = await d.handle(_record(crashed))
            bad = await d.handle(Record("channel.outbound.replies", 0, 5, b"k", b"{not json"))
            # stopping while the API is down leaves the record unsettled (not committed, not dead-lettered)
            api.script = [(503, {})] * 50
            stop = asyncio.Event()
            d2 = ReplyDelivery(sender, PostgresSentLedger(pool), stop=stop, backoff_base=0.05)
            asyncio.get_running_loop().call_later(0.3, stop.set)
            try:
                await d2.handle(_record(_reply(text="later")))
                stopped = False
            except Stopped:
                stopped = True
        finally:
            await sender.aclose()
            await api.stop()
        return refused, unknown, again, bad, stopped, api

    refused, unknown, again, bad, stopped, api = asyncio.run(go())
    assert refused.error_class == "SendFailed" and "131030" in refused.error_message \
        and "Recipient phone number not in allowed list" in refused.error_message
    assert unknown.error_class == "DeliveryUnknown" and again is None
    assert bad.error_class == "InvalidReply"
    assert stopped
    assert api.received == []  # neither the crashed reply nor the refused one reached a customer
    statuses = sorted(r["status"] for r in env.q("SELECT status FROM sent_replies"))
    assert statuses == ["rejected", "retrying", "unknown"]
    pool.close()


def test_sender_process_delivers_duplicates_in_the_topic_once(env):
    _seed(env)
    reply = _reply(text="Olá! O pernoite custa R$ 240.")
    produce(env.settings, qualified(env.settings, OUTBOUND), [
        (b"wa-10-a", reply.model_dump_json().encode(), []),
        (b"wa-10-a", reply.model_dump_json().encode(), []),  # the responder re-emitted it
        (b"wa-10-b", _reply("wa-10-b", 8, "Oi").model_dump_json().encode(), []),
    ])

    async def scenario():
        api = GraphAPI([(500, {})])
        base = await api.start()
        settings = env.settings.model_copy(update={"whatsapp_api_base_url": base, "whatsapp_access_token": "tok"})
        for _ in range(2):  # second run: a restart re-reading from the committed offset
            stop = asyncio.Event()
            task = asyncio.create_task(run_sender(settings, stop=stop))
            for _ in range(300):
                if len(api.received) >= 1 and len(api.times) >= 3:
                    break
                await asyncio.sleep(0.1)
            await asyncio.sleep(1.0)
            stop.set()
            await task
        await api.stop()
        return api

    api = asyncio.run(scenario())
    assert [b["text"]["body"] for b in api.received] == ["Olá! O pernoite custa R$ 240."]
    dead = consume_all(env.settings, qualified(env.settings, OUTBOUND) + ".dlq", 1)
    assert [dict(r.headers)["dlq.error_class"].decode() for r in dead] == ["SendFailed"]
    assert json.loads(dead[0].value)["conversation_id"] == "wa-10-b"


def test_sender_process_shows_its_stall_on_health_ready_and_metrics(env):
    """The sender stalls like every consumer: while the API is unavailable its /health says
    ``stalled`` (channel_api), /ready answers 503 and /metrics has the stall gauge at 1;
    once the API is back the reply goes out once and all three say it recovered."""
    import httpx

    _seed(env)
    reply = _reply(text="Oi, estamos abertos.")
    produce(env.settings, qualified(env.settings, OUTBOUND), [(b"wa-10-a", reply.model_dump_json().encode(), [])])
    gauge = 'memoria_consumer_stalled{consumer="whatsapp-sender",dependency="channel_api"}'

    async def scenario():
        api = GraphAPI([(503, {})] * 100_000)  # down until the test says otherwise
        base = await api.start()
        port = free_port()
        settings = env.settings.model_copy(update={"whatsapp_api_base_url": base, "whatsapp_access_token": "tok",
                                                   "whatsapp_send_backoff_max": 0.2, "sender_web_port": port})
        stop = asyncio.Event()
        task = asyncio.create_task(run_sender(settings, stop=stop))
        seen = {}
        try:
            async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=5) as http:
                async def state():
                    try:
                        h, r, m = (await http.get("/health"), await http.get("/ready"), await http.get("/metrics"))
                    except httpx.TransportError:
                        return None
                    line = [x for x in m.text.splitlines() if x.startswith(gauge)]
                    return h.json(), r.status_code, float(line[0].split()[-1]) if line else None

                for _ in range(600):
                    s = await state()
                    if s and s[0]["status"] == "stalled":
                        seen["stalled"] = s
                        break
                    await asyncio.sleep(0.1)
                api.script = []  # the API is back
                for _ in range(600):
                    s = await state()
                    if api.received and s and s[0]["status"] == "ok":
                        seen["recovered"] = s
                        break
                    await asyncio.sleep(0.1)
        finally:
            stop.set()
            await task
            await api.stop()
        return seen, api

    seen, api = asyncio.run(scenario())
    health, ready, stalled = seen["stalled"]
    assert health["roles"] == ["whatsapp-sender"]
    assert [(s["topic"], s["dependency"]) for s in health["stalled"]] == [("whatsapp-sender", "channel_api")]
    assert "503" in health["stalled"][0]["error"]
    assert ready == 503 and stalled == 1.0
    health, ready, stalled = seen["recovered"]
    assert health["stalled"] == [] and ready == 200 and stalled == 0.0
    assert [b["text"]["body"] for b in api.received] == ["Oi, estamos abertos."]
    assert env.q("SELECT status FROM sent_replies")[0]["status"] == "sent"


def test_offer_goes_through_the_ledger_as_its_template_once(env):
    """An anniversary offer (issue 11) is sent as its WhatsApp template by the same delivery loop:
    an unavailable API is retried, a redelivered offer is not sent twice."""
    from schemas.events import WhatsAppTemplate
    from streams.store.db import make_pool

    _seed(env)
    pool = make_pool(env.settings, min_size=1, max_size=2, name="delivery")
    offer = OutboundReply(reply_id=str(uuid.uuid4()), in_reply_to="", account_id=1, conversation_id="wa-10-a",
                          contact_id=7, text="Oi, Ana! O seu aniversário está chegando (14/02) ...",
                          intent="anniversary_offer", strategy="none", kind="offer",
                          created_at=datetime.now(timezone.utc),
                          template=WhatsAppTemplate(name="oferta_aniv", parameters=["Ana", "14/02"]))

    async def go():
        api = GraphAPI([(503, {})])
        base = await api.start()
        try:
            sender = WhatsAppSender(base, "tok", PostgresResolver(pool, erasure_key=KEY), max_attempts=1, backoff_max=0.05)
            d = ReplyDelivery(sender, PostgresSentLedger(pool), backoff_base=0.01, backoff_max=0.05)
            assert await d.handle(_record(offer)) is None
            assert await d.handle(_record(offer, offset=1)) is None  # redelivered
            await sender.aclose()
            return api
        finally:
            await api.stop()

    api = asyncio.run(go())
    assert len(api.times) == 2 and len(api.received) == 1      # one 503, then sent once
    body = api.received[0]
    assert body["type"] == "template" and body["to"] == "5511977776666" and "text" not in body
    assert body["template"]["name"] == "oferta_aniv"
    assert [p["text"] for p in body["template"]["components"][0]["parameters"]] == ["Ana", "14/02"]
    assert env.q("SELECT status, attempts FROM sent_replies")[0] == {"status": "sent", "attempts": 2}
    pool.close()
