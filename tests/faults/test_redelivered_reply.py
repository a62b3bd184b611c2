"""A redelivered reply reaches the channel once: the customer's message answered by the
worker, the reply then delivered again and again (inbound redelivered, the outbound
topic replayed, reconcile republishing after a broker loss, the sender restarted with
lost offsets) — the local WhatsApp Cloud API receives it exactly once."""

from __future__ import annotations

import asyncio
import json
from datetime import datetime, timezone

import pytest

from connectors.whatsapp.run import run_sender
from schemas.events import InboundMessage
from streams.kafka.topics import INBOUND, OUTBOUND, qualified
from tests.connectors.test_delivery import GraphAPI
from tests.faults.conftest import record_counts
from tests.harness import consume_all, produce, wait_until

pytestmark = [pytest.mark.slow, pytest.mark.faults]


def _inbound():
    return InboundMessage(message_id="wamid.redeliver", account_id=1, inbox_id=10, conversation_id="wa-10-r",
                          contact_id=7, channel="whatsapp", text="Oi, vocês abrem hoje?",
                          sent_at=datetime.now(timezone.utc)).model_dump_json().encode()


def test_redelivered_reply_reaches_the_channel_once(env):
    env.q("INSERT INTO accounts (id) VALUES (1)")
    env.q("INSERT INTO inboxes (id, account_id, channel_address) VALUES (10, 1, 'PNID1')")
    env.q("INSERT INTO contacts (id, account_id, phone) VALUES (7, 1, '5511977776666')")
    env.start_worker("respond")
    s = env.settings
    produce(s, qualified(s, INBOUND), [(b"wa-10-r", _inbound(), [])])
    wait_until(lambda: consume_all(s, qualified(s, OUTBOUND), 1, timeout=3), 90, what="the reply")

    async def sender_run(settings, api, until):
        stop = asyncio.Event()
        task = asyncio.create_task(run_sender(settings, stop=stop))
        for _ in range(300):
            if until():
                break
            await asyncio.sleep(0.1)
        await asyncio.sleep(2.0)  # anything sent twice would arrive by now
        stop.set()
        await task

    async def scenario():
        api = GraphAPI()
        base = await api.start()
        settings = s.model_copy(update={"whatsapp_api_base_url": base, "whatsapp_access_token": "tok"})
        await sender_run(settings, api, lambda: len(api.received) >= 1)
        # redeliveries of every kind
        await asyncio.to_thread(produce, s, qualified(s, INBOUND), [(b"wa-10-r", _inbound(), [])])
        r = await asyncio.to_thread(env.memoria, "replay", "topic", "--topic", OUTBOUND)
        assert json.loads(r.stdout)["replayed"] == 1
        env.q("INSERT INTO broker_losses (topics) VALUES ('{x}')")
        r = await asyncio.to_thread(env.memoria, "reconcile", "--only", "replies", "--repair")
        assert json.loads(r.stdout)["replies"]["unpublished_or_lost"] == 1
        copies = len(await asyncio.to_thread(consume_all, s, qualified(s, OUTBOUND), 3, 10))
        # the sender restarts with its offsets lost: it reads every copy again
        lost_offsets = settings.model_copy(update={"consumer_group": settings.consumer_group + "-again"})
        await sender_run(lost_offsets, api, lambda: len(api.times) >= 2)
        await api.stop()
        return api, copies

    api, copies = asyncio.run(scenario())
    ledger = env.q("SELECT status, attempts FROM sent_replies")
    record_counts("redelivered_reply", sent=1, replied=1, copies_in_topic=copies, api_received=len(api.received),
                  dead_lettered=len(consume_all(s, qualified(s, OUTBOUND) + ".dlq", 1, timeout=2)),
                  lost=0 if api.received else 1, duplicated=max(0, len(api.received) - 1))
    assert copies == 3
    assert len(api.received) == 1 and api.received[0]["to"] == "5511977776666"
    assert [x["status"] for x in ledger] == ["sent"]
    assert env.q("SELECT count(*) AS n FROM messages WHERE role = 'agent'")[0]["n"] == 1
