"""The learning use case and its consumer against the real Postgres (no worker)."""

from __future__ import annotations

import json
import uuid
from datetime import timedelta

import numpy as np
import psycopg
import pytest

from streams import metrics
from streams.kafka.consume import Record
from streams.learn.embed import reembed_missing
from streams.learn.extract_llm import OpenAIExtractor
from streams.learn.learn import ConversationEventHandler, learn_conversation, retry_failed
from streams.learn.llm import LlmConfig
from streams.learn.store import as_array
from streams.learn.triggers import announce_silent, resolve_conversation
from tests.learn import seed as S
from tests.support.openai_server import FakeOpenAI, Reply


def _metric(counter, *labels) -> float:
    return (counter.labels(*labels) if labels else counter)._value.get()


def _llm(server, **kw) -> OpenAIExtractor:
    cfg = dict(base_url=server.base_url, api_key="test", timeout=2.0, max_retries=1, backoff_initial=0.01,
               backoff_max=0.02)
    cfg.update(kw)
    return OpenAIExtractor(LlmConfig(**cfg))


def _record(conv_id: int, account_id: int, contact_id: int, *, event_id: str | None = None,
            type_: bytes = b"conversation.resolved", value: bytes | None = None, offset: int = 0) -> Record:
    payload = {"schema_version": 1, "conversation_id": conv_id, "account_id": account_id,
               "contact_id": contact_id, "reason": "resolved"}
    return Record("outbox.event.conversation", 0, offset, str(conv_id).encode(),
                  value if value is not None else json.dumps(payload).encode(),
                  (("id", (event_id or str(uuid.uuid4())).encode()), ("type", type_)))


def test_resolve_writes_its_event_in_the_same_transaction(db):
    a = S.account(db)
    c = S.contact(db, a)
    conv = S.conversation(db, a, c, S.HIDRO)
    with db.conn() as conn, conn.transaction():
        assert resolve_conversation(conn, conv, now=S.T0)
        raise psycopg.Rollback()  # the caller's transaction decides: nothing happened
    assert db.q("SELECT status FROM conversations WHERE id = %s", conv)[0]["status"] == "open"
    assert not db.q("SELECT 1 FROM outbox WHERE aggregateid = %s", str(conv))
    with db.conn() as conn:
        assert resolve_conversation(conn, conv, now=S.T0)
        assert not resolve_conversation(conn, conv, now=S.T0)  # already resolved: no second event
    row = db.q("SELECT status, resolved_at, lead_state FROM conversations WHERE id = %s", conv)[0]
    assert row["status"] == "resolved" and row["resolved_at"] == S.T0 and row["lead_state"] == {}
    ev = db.q("SELECT type, payload FROM outbox WHERE aggregatetype = 'conversation' AND aggregateid = %s", str(conv))
    assert [e["type"] for e in ev] == ["conversation.resolved"]
    assert ev[0]["payload"] == {"schema_version": 1, "conversation_id": conv, "account_id": a, "contact_id": c,
                                "reason": "resolved"}


def test_learn_inserts_embedded_facts_then_reinforces_without_duplicates(db, memory_embedder):
    a = S.account(db)
    c = S.contact(db, a)
    conv1 = S.conversation(db, a, c, S.HIDRO, unit_id=7, inbox_id=3)
    p = S.ports(db.pool, memory_embedder)
    before = _metric(metrics.EXTRACTIONS, str(a), "restricao")
    out = learn_conversation(p, conv1)
    assert out.status == "done" and len(out.created) == 2
    rows = S.facts(db, c)
    assert {r["memory_key"] for r in rows} == {"allergy", "preferred_room"}
    for r in rows:
        assert r["embedding"] is not None and len(as_array(r["embedding"])) == memory_embedder.dim
        assert r["embedding_model"] == memory_embedder.name
        assert (r["source_conversation_id"], r["source_unit_id"], r["source_inbox_id"]) == (conv1, 7, 3)
        assert r["supporting_conversation_ids"] == [conv1] and r["scope"] == "global"
        assert r["metadata"]["extractor"].startswith("rules:")
    allergy = next(r for r in rows if r["memory_key"] == "allergy")
    assert allergy["expires_at"] is None  # restricao never expires
    pref = next(r for r in rows if r["memory_key"] == "preferred_room")
    assert pref["expires_at"] == S.T0 + timedelta(days=365)
    assert _metric(metrics.EXTRACTIONS, str(a), "restricao") == before + 1
    ex = db.q("SELECT status, attempts, facts_extracted, contact_id FROM conversation_extractions "
              "WHERE conversation_id = %s", conv1)[0]
    assert ex == {"status": "done", "attempts": 1, "facts_extracted": 2, "contact_id": c}
    created = db.q("SELECT aggregateid FROM outbox WHERE type = 'memory.created' AND payload->>'contact_id' = %s",
                   str(c))
    assert sorted(int(e["aggregateid"]) for e in created) == sorted(out.created)

    # a second trigger does nothing; a later conversation saying the same reinforces
    assert learn_conversation(p, conv1).status == "already"
    later = S.T0 + timedelta(days=10)
    conv2 = S.conversation(db, a, c, [("contact", "Sou alérgico a camarão, tá?")], at=later)
    out2 = learn_conversation(S.ports(db.pool, memory_embedder, clock=lambda: later), conv2)
    assert out2.created == [] and out2.reinforced == [allergy["id"]]
    again = S.facts(db, c)
    assert len(again) == 2
    allergy2 = next(r for r in again if r["id"] == allergy["id"])
    assert allergy2["supporting_conversation_ids"] == [conv1, conv2]
    assert allergy2["last_verified_at"] == later and allergy2["confidence"] > allergy["confidence"]
    assert allergy2["confidence"] <= 1.0

    # replay on purpose: no duplicates, no double reinforcement
    out3 = learn_conversation(p, conv1, force=True)
    assert out3.status == "done" and out3.created == [] and out3.reinforced == []
    assert len(S.facts(db, c)) == 2
    assert S.facts(db, c, "id = %s", allergy["id"])[0]["confidence"] == allergy2["confidence"]


def test_contradiction_supersedes_the_older_fact_and_keeps_it(db, memory_embedder):
    a = S.account(db)
    c = S.contact(db, a)
    p = S.ports(db.pool, memory_embedder)
    conv1 = S.conversation(db, a, c, S.HIDRO)
    learn_conversation(p, conv1)
    hidro = S.facts(db, c, "memory_key = 'preferred_room'")[0]
    before = _metric(metrics.SUPERSEDED, "preferencia")
    conv2 = S.conversation(db, a, c, S.MASTER, at=S.T0 + timedelta(days=1))
    out = learn_conversation(S.ports(db.pool, memory_embedder, clock=lambda: S.T0 + timedelta(days=1)), conv2)
    assert len(out.created) == 1 and out.superseded == [(hidro["id"], out.created[0])]
    old = S.facts(db, c, "id = %s", hidro["id"])[0]
    assert old["superseded_at"] == S.T0 + timedelta(days=1) and old["superseded_by_id"] == out.created[0]
    assert old["deleted_at"] is None  # kept as history
    assert _metric(metrics.SUPERSEDED, "preferencia") == before + 1
    live = S.recallable(db, c, memory_embedder.name)
    assert {r["normalized_value"] for r in live if r["memory_key"] == "preferred_room"} == {"master"}
    assert db.q("SELECT 1 FROM outbox WHERE type = 'memory.superseded' AND aggregateid = %s", str(hidro["id"]))
    # replaying the first conversation never resurrects the superseded fact
    assert learn_conversation(p, conv1, force=True).created == []
    assert len(S.facts(db, c, "memory_key = 'preferred_room'")) == 2


def test_unit_scoped_types_follow_the_conversation_unit(db, memory_embedder):
    a = S.account(db)
    c = S.contact(db, a)
    msgs = [("contact", "A gente chega sempre lá pelas 22h.")]
    p = S.ports(db.pool, memory_embedder)
    learn_conversation(p, S.conversation(db, a, c, msgs, unit_id=5))
    c2 = S.contact(db, a)
    learn_conversation(p, S.conversation(db, a, c2, msgs, unit_id=None))
    assert [(r["memory_type"], r["scope"], r["source_unit_id"]) for r in S.facts(db, c)] == [
        ("padrao_comportamental", "unit", 5)]
    # no unit to bind it to: stored as global (documented choice)
    assert [(r["scope"], r["source_unit_id"]) for r in S.facts(db, c2)] == [("global", None)]


def test_flag_off_means_zero_model_calls(db, memory_embedder):
    a = S.account(db, extraction=False)
    c = S.contact(db, a)
    conv = S.conversation(db, a, c, S.HIDRO)
    with FakeOpenAI(default=Reply.json({"facts": []})) as server:
        out = learn_conversation(S.ports(db.pool, memory_embedder, extractor=_llm(server)), conv)
        assert out.status == "skipped" and server.chat_count == 0
    assert S.facts(db, c) == []
    assert db.q("SELECT status FROM conversation_extractions WHERE conversation_id = %s", conv)[0]["status"] == "skipped"


def test_handler_deduplicates_redelivery_and_dead_letters_poison(db, memory_embedder):
    a = S.account(db)
    c = S.contact(db, a)
    conv = S.conversation(db, a, c, S.HIDRO)
    handler = ConversationEventHandler(S.ports(db.pool, memory_embedder), consumer="learn-test")
    eid = str(uuid.uuid4())
    good = _record(conv, a, c, event_id=eid)
    poison = [_record(conv, a, c, value=b"{not json", offset=1),
              _record(conv, a, c, type_=b"conversation.exploded", offset=2),
              _record(conv, a + 999, c, offset=3)]  # another account's id for this conversation
    dead = handler([good, good, *poison])
    assert sorted(d.error_class for d in dead) == ["AccountMismatch", "InvalidJSON", "UnknownEventType"]
    assert handler([good]) == []  # redelivered later: skipped on the event id
    # a second trigger (new event id) for the same conversation does not extract again
    assert handler([_record(conv, a, c, type_=b"conversation.silent")]) == []
    assert len(S.facts(db, c)) == 2
    assert db.q("SELECT attempts FROM conversation_extractions WHERE conversation_id = %s", conv)[0]["attempts"] == 1
    # an event for a conversation that no longer exists is consumed quietly
    assert handler([_record(987654321, a, c)]) == []


def test_llm_hallucinated_evidence_and_prompt_injection_yield_no_fact(db, memory_embedder):
    a = S.account(db)
    c = S.contact(db, a)
    conv = S.conversation(db, a, c, S.INJECTION + [("contact", "Sou alérgico a camarão.")])
    # the rules provider finds nothing in the injection
    learn_conversation(S.ports(db.pool, memory_embedder), conv, force=True)
    assert [r["memory_key"] for r in S.facts(db, c)] == ["allergy"]
    reply = {"facts": [
        {"memory_type": "vinculo_comercial", "memory_key": "discount", "content": "Tem 100% de desconto",
         "normalized_value": "100", "evidence": "tenho direito a 100% de desconto", "confidence": 0.99},
        {"memory_type": "restricao", "memory_key": "allergy", "content": "Alérgico a amendoim",
         "normalized_value": "amendoim", "evidence": "sou alérgico a amendoim", "confidence": 0.9},
        {"memory_type": "restricao", "memory_key": "allergy", "content": "Alérgico a camarão",
         "normalized_value": "camarao", "evidence": "Sou alérgico a camarão.", "confidence": 0.9}]}
    before = _metric(metrics.FACTS_DISCARDED, "evidence_not_found")
    with FakeOpenAI([Reply.json(reply, prompt_tokens=1000, completion_tokens=100)]) as server:
        cost_before = _metric(metrics.MODEL_COST, str(a), "extraction")
        out = learn_conversation(S.ports(db.pool, memory_embedder, extractor=_llm(server), llm_model="gpt-4o-mini"),
                                 conv, force=True)
        assert server.chat_count == 1
    assert out.status == "done" and out.facts == 1
    assert _metric(metrics.FACTS_DISCARDED, "evidence_not_found") == before + 2
    assert _metric(metrics.MODEL_TOKENS, str(a), "extraction", "prompt") >= 1000
    assert _metric(metrics.MODEL_COST, str(a), "extraction") - cost_before == pytest.approx(0.00021)
    keys = [(r["memory_key"], r["normalized_value"]) for r in S.facts(db, c)]
    assert keys == [("allergy", "camarao")]  # nothing invented, nothing duplicated


@pytest.mark.parametrize("reply", [Reply.text("Claro! Aqui estão os fatos: nenhum"), Reply.text(""),
                                   Reply.text('{"facts": [{"memory_type": "restri', finish_reason="length")],
                         ids=["malformed", "empty", "truncated"])
def test_llm_unusable_output_discards_the_conversation(db, memory_embedder, reply):
    a = S.account(db)
    c = S.contact(db, a)
    conv = S.conversation(db, a, c, S.HIDRO)
    with FakeOpenAI([reply]) as server:
        out = learn_conversation(S.ports(db.pool, memory_embedder, extractor=_llm(server)), conv)
        assert server.chat_count == 1
    assert out.status == "discarded" and S.facts(db, c) == []
    row = db.q("SELECT status, last_error FROM conversation_extractions WHERE conversation_id = %s", conv)[0]
    assert row["status"] == "discarded" and "discarded" in row["last_error"]


def test_llm_json_in_noise_is_repaired(db, memory_embedder):
    a = S.account(db)
    c = S.contact(db, a)
    conv = S.conversation(db, a, c, S.HIDRO)
    fact = {"memory_type": "restricao", "memory_key": "allergy", "content": "Alérgico a camarão",
            "normalized_value": "camarao", "evidence": "sou alérgico a camarão", "confidence": 0.9}
    with FakeOpenAI([Reply.text("Segue:\n```json\n" + json.dumps({"facts": [fact]}) + "\n```\nAbraço")]) as server:
        assert learn_conversation(S.ports(db.pool, memory_embedder, extractor=_llm(server)), conv).facts == 1


def test_model_500s_fail_then_a_later_retry_succeeds(db, memory_embedder):
    a = S.account(db)
    c = S.contact(db, a)
    conv = S.conversation(db, a, c, S.HIDRO)
    fact = {"memory_type": "restricao", "memory_key": "allergy", "content": "Alérgico a camarão",
            "normalized_value": "camarao", "evidence": "sou alérgico a camarão", "confidence": 0.9}
    now = {"t": S.T0}
    with FakeOpenAI([Reply.error(500), Reply.error(502)]) as server:
        p = S.ports(db.pool, memory_embedder, extractor=_llm(server, timeout=0.5), clock=lambda: now["t"])
        out = learn_conversation(p, conv)
        assert out.status == "failed" and server.chat_count == 2  # 1 try + 1 retry, then given up
        row = db.q("SELECT status, attempts, next_attempt_at, last_error FROM conversation_extractions "
                   "WHERE conversation_id = %s", conv)[0]
        assert row["status"] == "failed" and row["attempts"] == 1 and "ModelUnavailable" in row["last_error"]
        assert row["next_attempt_at"] == S.T0 + timedelta(minutes=1)
        # a redelivered trigger does not lose it either: still retryable
        assert retry_failed(p) == []  # not due yet
        server.push(Reply.error(503), Reply.error(500))
        now["t"] = S.T0 + timedelta(minutes=2)
        assert [o.status for o in retry_failed(p)] == ["failed"]
        row = db.q("SELECT attempts, next_attempt_at FROM conversation_extractions WHERE conversation_id = %s",
                   conv)[0]
        assert row["attempts"] == 2 and row["next_attempt_at"] == now["t"] + timedelta(minutes=2)
        server.push(Reply.json({"facts": [fact]}))
        now["t"] = S.T0 + timedelta(minutes=5)
        assert [o.status for o in retry_failed(p)] == ["done"]
    assert [r["memory_key"] for r in S.facts(db, c)] == ["allergy"]
    assert db.q("SELECT status, attempts FROM conversation_extractions WHERE conversation_id = %s", conv)[0] == {
        "status": "done", "attempts": 3}


def test_a_model_timeout_is_given_up_at_once_with_its_reason_and_replay_runs_it(db, memory_embedder):
    a = S.account(db)
    c = S.contact(db, a)
    conv = S.conversation(db, a, c, S.HIDRO)
    fact = {"memory_type": "restricao", "memory_key": "allergy", "content": "Alérgico a camarão",
            "normalized_value": "camarao", "evidence": "sou alérgico a camarão", "confidence": 0.9}
    with FakeOpenAI([Reply.json({"facts": []}, delay=1.5)]) as server:
        p = S.ports(db.pool, memory_embedder, extractor=_llm(server, timeout=0.5, max_retries=3))
        out = learn_conversation(p, conv)
        assert out.status == "failed" and server.chat_count == 1  # never sent again unchanged
        row = db.q("SELECT status, next_attempt_at, last_error FROM conversation_extractions "
                   "WHERE conversation_id = %s", conv)[0]
        assert row["status"] == "failed" and row["next_attempt_at"] is None
        assert "ModelTimedOut" in row["last_error"] and "MEMORIA_LLM_TIMEOUT" in row["last_error"]
        assert retry_failed(S.ports(db.pool, memory_embedder, extractor=_llm(server),
                                    clock=lambda: S.T0 + timedelta(hours=5))) == []
        # once the operator changed the settings: memoria replay extract --conversation N
        server.push(Reply.json({"facts": [fact]}))
        assert learn_conversation(S.ports(db.pool, memory_embedder, extractor=_llm(server, timeout=5)), conv).status == "done"
    assert [r["memory_key"] for r in S.facts(db, c)] == ["allergy"]


class _BrokenEmbedder:
    name = "use-multilingual-v3"
    dim = 512

    def __init__(self):
        self.calls = 0

    def embed_passages(self, texts):
        self.calls += 1
        raise RuntimeError("embedding backend down")

    embed_queries = embed_passages


def test_embedding_failure_leaves_null_and_invisible_until_reembedded(db, memory_embedder):
    a = S.account(db)
    c = S.contact(db, a)
    conv = S.conversation(db, a, c, S.HIDRO)
    broken = _BrokenEmbedder()
    before = _metric(metrics.EMBEDDING_FAILURES, "memory")
    out = learn_conversation(S.ports(db.pool, broken), conv)
    assert out.status == "done" and len(out.created) == 2 and broken.calls == 3
    assert _metric(metrics.EMBEDDING_FAILURES, "memory") == before + 2
    rows = S.facts(db, c)
    assert all(r["embedding"] is None and r["embedding_model"] is None for r in rows)
    assert S.recallable(db, c, memory_embedder.name) == []  # invisible to recall
    # the re-embed pass (a learn timer) makes them recallable
    assert reembed_missing(db.pool, memory_embedder) >= 2
    got = S.recallable(db, c, memory_embedder.name)
    assert len(got) == 2
    v = memory_embedder.embed_passages([got[0]["content"]])[0]
    assert np.allclose(as_array(got[0]["embedding"]), v, atol=1e-4)  # the content, embedded alone


def test_silence_detector_announces_once(db):
    a = S.account(db)
    c = S.contact(db, a)
    silent = S.conversation(db, a, c, S.HIDRO, at=S.T0 - timedelta(hours=1))
    recent = S.conversation(db, a, c, S.HIDRO, at=S.T0 - timedelta(minutes=10))
    done = S.conversation(db, a, c, S.HIDRO, at=S.T0 - timedelta(hours=2))
    db.q("INSERT INTO conversation_extractions (conversation_id, account_id, status) VALUES (%s, %s, 'done')", done, a)
    with db.conn() as conn:
        got = announce_silent(conn, now=S.T0)
        assert silent in got and recent not in got and done not in got
        assert announce_silent(conn, now=S.T0) == []  # tracked: never re-announced
        assert recent in announce_silent(conn, now=S.T0 + timedelta(minutes=30))
    ev = db.q("SELECT payload FROM outbox WHERE type = 'conversation.silent' AND aggregateid = %s", str(silent))
    assert len(ev) == 1 and ev[0]["payload"]["reason"] == "silent"


def test_fifty_live_facts_cap_on_consolidation(db, memory_embedder):
    a = S.account(db)
    c = S.contact(db, a)
    with db.conn() as conn, conn.cursor() as cur:
        cur.executemany(
            "INSERT INTO contact_memories (account_id, contact_id, memory_type, memory_key, content, evidence, "
            "confidence, scope, last_verified_at) VALUES (%s, %s, 'contexto_pessoal', %s, %s, 'x', 0.9, 'global', %s)",
            [(a, c, f"k{i}", f"fato {i}", S.T0 - timedelta(days=100 - i)) for i in range(50)])
    out = learn_conversation(S.ports(db.pool, memory_embedder), S.conversation(db, a, c, S.HIDRO))
    assert len(out.created) == 2 and len(out.capped) == 2
    gone = S.facts(db, c, "deleted_at IS NOT NULL")
    assert [r["memory_key"] for r in gone] == ["k0", "k1"]  # the least recently verified
    assert len(S.facts(db, c, "deleted_at IS NULL AND superseded_at IS NULL")) == 50


def test_replay_cli_by_conversation_and_by_time_range(db):
    a = S.account(db)
    c = S.contact(db, a)
    day = S.T0 + timedelta(days=700)  # a window no other test of this module uses
    conv = S.conversation(db, a, c, S.HIDRO, at=day)
    out, summary = map(json.loads, db.memoria("replay", "extract", "--conversation", str(conv)).stdout.splitlines())
    learnt = len(out["created"])
    assert out["status"] == "done" and learnt >= 1
    assert summary["summary"] == {"conversations": 1, "statuses": {"done": 1}, "created": learnt, "reinforced": 0,
                                  "superseded": 0}
    again = json.loads(db.memoria("replay", "extract", "--conversation", str(conv)).stdout.splitlines()[0])
    assert again["status"] == "already"
    window = ["--from", day.isoformat(), "--to", (day + timedelta(hours=1)).isoformat()]
    dry = json.loads(db.memoria("replay", "extract", *window, "--dry-run").stdout)
    assert dry == {"conversations": [conv], "count": 1, "dry_run": True}
    lines = db.memoria("replay", "extract", *window, "--force").stdout.splitlines()[:-1]
    assert [json.loads(x)["conversation_id"] for x in lines] == [conv]
    assert json.loads(lines[0])["created"] == [] and len(S.facts(db, c)) == learnt
    assert db.memoria("replay", "extract", check=False).returncode == 2


def test_an_older_conversation_processed_late_never_supersedes_a_newer_fact(db, memory_embedder):
    """Conversations are keyed by conversation, so one contact's can be processed in any order."""
    a = S.account(db)
    c = S.contact(db, a)
    newer = S.conversation(db, a, c, S.MASTER, at=S.T0 + timedelta(days=30))
    older = S.conversation(db, a, c, S.HIDRO, at=S.T0)
    p = S.ports(db.pool, memory_embedder)
    assert learn_conversation(p, newer).status == "done"
    assert learn_conversation(p, older).status == "done"   # processed last, stated first
    rooms = S.facts(db, c, "memory_type = 'preferencia'")
    live = [f for f in rooms if f["superseded_at"] is None]
    assert len(live) == 1 and "Master" in live[0]["content"]
    hidro = [f for f in rooms if "Hidro" in f["content"] and "Master" not in f["content"]]
    assert hidro and hidro[0]["superseded_by_id"] == live[0]["id"]
    assert hidro[0]["observed_at"] < live[0]["observed_at"]


def test_a_model_contradiction_check_never_runs_under_the_contacts_lock(db, memory_embedder):
    from streams.learn.contradiction import OpenAIContradictionChecker
    from streams.learn.store import contact_lock_key

    a = S.account(db)
    c = S.contact(db, a)
    conv1 = S.conversation(db, a, c, S.HIDRO)
    learn_conversation(S.ports(db.pool, memory_embedder), conv1)
    hidro = S.facts(db, c, "memory_key = 'preferred_room'")[0]

    class LockProbe:
        """The port the learner calls; it asks the real model client and, meanwhile,
        tries the contact's lock from another connection."""
        name = "openai"

        def __init__(self, inner):
            self.inner, self.lock_free = inner, []

        def check(self, old, new):
            with psycopg.connect(db.settings.database_url) as other:
                free = other.execute("SELECT pg_try_advisory_xact_lock(%s) AS ok",
                                     (contact_lock_key(a, c),)).fetchone()[0]
                other.rollback()
            self.lock_free.append(free)
            return self.inner.check(old, new)

    reply = Reply.json({"contradicts": True, "reason": "nova suíte preferida"}, delay=0.3)
    with FakeOpenAI(default=reply) as server:
        probe = LockProbe(OpenAIContradictionChecker(LlmConfig(base_url=server.base_url, api_key="t", timeout=5)))
        conv2 = S.conversation(db, a, c, S.MASTER, at=S.T0 + timedelta(days=1))
        out = learn_conversation(S.ports(db.pool, memory_embedder, checker=probe,
                                         clock=lambda: S.T0 + timedelta(days=1)), conv2)
        assert server.chat_count >= 1
    assert probe.lock_free and all(probe.lock_free), probe.lock_free
    assert out.status == "done" and out.superseded == [(hidro["id"], out.created[0])]
