"""Postgres stopped while customers keep writing: after it returns every message has
exactly one reply, nothing is dead-lettered, and the stall was visible meanwhile."""

from __future__ import annotations

import json
import threading
import time
from datetime import datetime, timezone

import httpx
import pytest

from schemas.events import InboundMessage
from streams.kafka.topics import INBOUND, OUTBOUND, dlq_topic, qualified
from tests.faults.conftest import record_counts, reply_counts, stack
from tests.harness import consume_all, produce, wait_until

pytestmark = [pytest.mark.slow, pytest.mark.faults]


def _msg(i: int, tag: str) -> tuple[str, bytes, bytes]:
    mid = f"wamid.{tag}.{i}"
    conv = f"c-{tag}-{i % 10}"
    body = InboundMessage(message_id=mid, account_id=1, inbox_id=10, conversation_id=conv, contact_id=100 + i % 10,
                          channel="whatsapp", text=f"Oi, qual o preço do pernoite? ({i})",
                          sent_at=datetime.now(timezone.utc)).model_dump_json().encode()
    return mid, conv.encode(), body


@pytest.mark.parametrize("down_s,during", [(20, 50), (60, 60)], ids=["20s-burst", "60s-traffic"])
def test_postgres_stopped_while_messages_arrive(env, postgres_restored, down_s, during):
    s = env.settings
    env.start_worker("respond", extra_env={"MEMORIA_DEPENDENCY_BACKOFF_MAX": "2"})
    inbound, outbound = qualified(s, INBOUND), qualified(s, OUTBOUND)
    tag = f"pg{down_s}"
    ids: list[str] = []

    def send(msgs):
        produce(s, inbound, [(k, v, []) for _, k, v in msgs])
        ids.extend(m for m, _, _ in msgs)

    send([_msg(i, tag) for i in range(10)])  # warm: answered before the fault
    wait_until(lambda: len(consume_all(s, outbound, 10, timeout=3)) >= 10, 90, what="warm-up replies")

    port = env.env["MEMORIA_WORKER_WEB_PORT"]
    seen = {"stalled": False, "ready_503": False, "polls": 0, "errors": []}

    def watch(stop: threading.Event):
        while not stop.is_set():
            try:
                h = httpx.get(f"http://127.0.0.1:{port}/health", timeout=2).json()
                seen["polls"] += 1
                if h["status"] == "stalled" and any(x["dependency"] == "postgres" for x in h["stalled"]):
                    seen["stalled"] = True
                if httpx.get(f"http://127.0.0.1:{port}/ready", timeout=2).status_code == 503:
                    seen["ready_503"] = True
            except Exception as e:  # the worker busy: the next poll
                seen["errors"] = (seen["errors"] + [repr(e)[:200]])[-5:]
            stop.wait(0.5)

    stop = threading.Event()
    watcher = threading.Thread(target=watch, args=(stop,), daemon=True)
    watcher.start()
    stack("stop-postgres")
    t0 = time.time()
    try:
        if down_s <= 20:  # a burst of messages right after the stop
            send([_msg(i, tag) for i in range(10, 10 + during)])
        else:  # steady traffic for the whole outage
            for i in range(10, 10 + during):
                send([_msg(i, tag)])
                time.sleep(down_s / during)
        time.sleep(max(0.0, down_s - (time.time() - t0)))
    finally:
        stack("start-postgres")
    outage = time.time() - t0
    send([_msg(i, tag) for i in range(10 + during, 20 + during)])  # after recovery
    total = len(ids)
    wait_until(lambda: len({json.loads(r.value)["in_reply_to"] for r in consume_all(s, outbound, total, timeout=3)})
               >= total, 240, what="every message replied")
    time.sleep(3)  # anything duplicated would show up by now
    stop.set()
    replies = consume_all(s, outbound, total + 50, timeout=5)
    dead = consume_all(s, dlq_topic(inbound), 1, timeout=3)
    counts = reply_counts(replies, ids)
    record_counts(f"postgres_stopped_{down_s}s", outage_s=round(outage, 1), dead_lettered=len(dead),
                  stall_seen=seen["stalled"], ready_503_seen=seen["ready_503"], **counts)
    assert counts["replied"] == total and counts["lost"] == 0 and counts["duplicated"] == 0
    assert len(replies) == total
    assert dead == []
    assert seen["stalled"] and seen["ready_503"], seen
    m = env.metrics()
    assert m[f'memoria_consumer_stalled{{consumer="{inbound}",dependency="postgres"}}'] == 0  # recovered
    assert m[f'memoria_dependency_retries_total{{dependency="postgres",topic="{inbound}"}}'] >= 1
    assert env.q("SELECT count(*) AS n FROM messages WHERE role = 'agent'")[0]["n"] == total
