"""SIGKILL of the worker mid-ingest and mid-learning: after a restart Postgres and
Qdrant agree, and no conversation has duplicate or missing facts."""

from __future__ import annotations

import signal
import time

import pytest

from streams.ingest.knowledge import chunk_alias
from tests.faults.conftest import record_counts
from tests.harness import wait_until
from tests.learn import seed as S

pytestmark = [pytest.mark.slow, pytest.mark.faults]

WORDS = ("suíte pernoite piscina sauna garagem café hidromassagem decoração frigobar cardápio promoção "
         "aniversário reserva checkout entrada toalha roupão climatização iluminação som").split()


def _corpus(tmp_path, files=14, paragraphs=110):
    root = tmp_path / "kb"
    root.mkdir()
    for f in range(files):
        paras = []
        for p in range(paragraphs):
            w = [WORDS[(f * 7 + p * 3 + k) % len(WORDS)] for k in range(12)]
            paras.append(f"Documento {f}, parágrafo {p}: " + " ".join(w) + f". Código {f}-{p}.")
        (root / f"doc{f:02d}.md").write_text(f"# Documento {f}\n\n" + "\n\n".join(paras))
    return root


def _points(store, env):
    target = store.alias_target(chunk_alias(env.settings.vector_domain))
    return set(store.scroll(target)) if target else set()


def test_sigkill_mid_ingest(env, tmp_path):
    root = _corpus(tmp_path)
    env.memoria("ingest", str(root), "--account", "1")
    live = {r["id"] for r in env.q("SELECT id::text FROM chunks WHERE deleted_at IS NULL")}
    assert len(live) >= 1000
    w = env.start_worker("relay,ingest")
    store = env.vector_store()  # the worker's proxy
    at_kill = wait_until(lambda: (n := len(_points(store, env))) >= 100 and n, 180, interval=0.2,
                         what="some chunks indexed")
    env.stop_worker(w, signal.SIGKILL)
    assert at_kill < len(live), "the whole ingest finished before the kill: nothing was tested"
    env.start_worker("relay,ingest")
    store = env.vector_store()
    wait_until(lambda: _points(store, env) == live, 300, what="Postgres and Qdrant agree")
    r = env.memoria("reconcile", "--only", "chunks")
    assert r.returncode == 0 and "no drift" in r.stderr
    points = _points(store, env)
    record_counts("sigkill_mid_ingest", chunks=len(live), points_at_kill=at_kill, points_after=len(points),
                  lost=len(live - points), duplicated=len(points - live))


def test_sigkill_mid_learning(env):
    env.q("INSERT INTO accounts (id, settings) VALUES (1, '{\"memory_extraction_enabled\": true}')")
    transcript = S.HIDRO
    contacts, convs = [], []
    for i in range(60):
        c = 10_000 + i
        env.q("INSERT INTO contacts (id, account_id) VALUES (%s, 1)", c)
        contacts.append(c)
        convs.append(S.conversation(env, 1, c, transcript))
    with env.conn() as conn:
        from streams.learn.triggers import resolve_conversation

        for cv in convs:
            resolve_conversation(conn, cv)
    # the reference: the same transcript learnt in-process for one more contact, with the
    # ports the worker builds (the configured extractor and checker, not the tests' defaults)
    from streams.learn.learn import learn_conversation
    from tests.support.embedders import shared_container

    ref_contact = 99_999
    env.q("INSERT INTO contacts (id, account_id) VALUES (%s, 1)", ref_contact)
    ref_conv = S.conversation(env, 1, ref_contact, transcript)
    container = shared_container(env.settings)
    try:
        assert learn_conversation(container.learn_ports(), ref_conv).status == "done"
    finally:
        container.close()
    reference = sorted((f["memory_type"], f["memory_key"], f["content"]) for f in S.facts(env, ref_contact))
    assert reference

    done = lambda: env.q("SELECT count(*) AS n FROM conversation_extractions "  # noqa: E731
                         "WHERE status = 'done' AND conversation_id = ANY(%s)", convs)[0]["n"]
    w = env.start_worker("relay,learn")
    at_kill = wait_until(lambda: (n := done()) >= 5 and n, 120, interval=0.1, what="some conversations learnt")
    env.stop_worker(w, signal.SIGKILL)
    assert at_kill < len(convs), "every conversation was learnt before the kill: nothing was tested"
    env.start_worker("relay,learn")
    wait_until(lambda: done() == len(convs), 300, what="every conversation learnt")
    time.sleep(2)
    rows = env.q("SELECT contact_id, memory_type, memory_key, content, source_conversation_id "
                 "FROM contact_memories WHERE contact_id = ANY(%s)", contacts)
    per: dict[int, list] = {c: [] for c in contacts}
    for r in rows:
        per[r["contact_id"]].append((r["memory_type"], r["memory_key"], r["content"]))
    missing = sum(1 for c in contacts if set(per[c]) < set(reference))
    duplicated = sum(len(v) - len(set(v)) for v in per.values())
    record_counts("sigkill_mid_learning", conversations=len(convs), learnt_at_kill=at_kill,
                  learnt_after=done(), facts=len(rows), lost=missing, duplicated=duplicated)
    assert missing == 0 and duplicated == 0
    differ = {c: sorted(v) for c, v in per.items() if sorted(v) != reference}
    if differ:
        print("REFERENCE", reference)
        for c, v in list(differ.items())[:3]:
            print("DIFFER", c, "extra", sorted(set(v) - set(reference)), "missing", sorted(set(reference) - set(v)))
    assert not differ, f"{len(differ)} contacts differ from the reference"


def test_sigkill_mid_replying(env):
    """200 customer messages, the worker SIGKILLed while it answers them: after a restart every
    message has exactly one reply (one reply_id, one agent message); a record the relay had
    published before the kill may be published again with the *same* reply_id, which the
    sender's ledger delivers once (tests/faults/test_redelivered_reply.py)."""
    import json
    import signal
    from collections import defaultdict
    from datetime import datetime, timezone

    from schemas.events import InboundMessage
    from streams.kafka.topics import INBOUND, OUTBOUND, qualified
    from tests.harness import consume_all, produce

    s = env.settings
    n = 200
    ids = [f"wamid.kill.{i}" for i in range(n)]
    produce(s, qualified(s, INBOUND), [
        (f"c-kill-{i % 25}".encode(), InboundMessage(
            message_id=mid, account_id=1, inbox_id=10, conversation_id=f"c-kill-{i % 25}", contact_id=300 + i % 25,
            channel="whatsapp", text=f"Oi, qual o preço do pernoite? ({i})",
            sent_at=datetime.now(timezone.utc)).model_dump_json().encode(), [])
        for i, mid in enumerate(ids)])
    agent = lambda: env.q("SELECT count(*) AS n FROM messages WHERE role = 'agent'")[0]["n"]  # noqa: E731
    w = env.start_worker("relay,respond")
    at_kill = wait_until(lambda: (k := agent()) >= 20 and k, 180, interval=0.1, what="some messages answered")
    env.stop_worker(w, signal.SIGKILL)
    assert at_kill < n, "every message was answered before the kill: nothing was tested"
    env.start_worker("relay,respond", log_name="worker2")

    def replies():
        out = consume_all(s, qualified(s, OUTBOUND), 2 * n, timeout=3)
        return [json.loads(r.value) for r in out]

    wait_until(lambda: {r["in_reply_to"] for r in replies()} >= set(ids), 300, what="every message replied")
    time.sleep(3)  # a duplicate would show up by now
    out = replies()
    reply_ids: dict[str, set] = defaultdict(set)
    for r in out:
        reply_ids[r["in_reply_to"]].add(r["reply_id"])
    stored = env.q("SELECT count(*) AS n FROM messages WHERE role = 'contact' AND channel_message_id = ANY(%s)",
                   ids)[0]["n"]
    lost = sum(1 for m in ids if not reply_ids[m])
    duplicated = sum(len(reply_ids[m]) - 1 for m in ids if len(reply_ids[m]) > 1)
    record_counts("sigkill_mid_replying", sent=n, answered_at_kill=at_kill, stored_inbound=stored,
                  agent_messages=agent(), replied=sum(1 for m in ids if reply_ids[m]),
                  records_in_topic=len(out), republished_same_reply_id=len(out) - sum(map(len, reply_ids.values())),
                  lost=lost, duplicated=duplicated)
    assert lost == 0 and duplicated == 0
    assert stored == n and agent() == n
