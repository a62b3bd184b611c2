"""Memory learning end to end: resolve → outbox → relay → Kafka → learn worker → Postgres."""

from __future__ import annotations

import json
import uuid
from datetime import timedelta

import pytest

from streams.kafka.topics import dlq_topic, outbox_topic, qualified
from streams.learn.triggers import resolve_conversation
from tests.harness import consume_all, produce, wait_until
from tests.learn import seed as S
from tests.support.openai_server import FakeOpenAI, Reply

pytestmark = pytest.mark.slow

MODEL = "use-multilingual-v3"


def _resolve(env, conv: int) -> None:
    with env.conn() as conn:
        assert resolve_conversation(conn, conv)


def _status(env, conv: int):
    rows = env.q("SELECT status, attempts FROM conversation_extractions WHERE conversation_id = %s", conv)
    return rows[0] if rows else None


def _metric(env, name: str) -> float:
    return sum(v for k, v in env.metrics().items() if k.startswith(name))


def test_resolve_learn_supersede_redeliver_replay_and_poison(env):
    a = S.account(env)
    c = S.contact(env, a)
    # The mechanics (supersede, redelivery, replay, poison) are checked with the hand-written
    # rules, whose facts on these transcripts are exact; the learnt default extractor goes
    # through the worker in tests/connectors/test_chatwoot.py and tests/faults/test_sigkill.py.
    rules = {"MEMORIA_EXTRACTION_PROVIDER": "patterns"}
    env.start_worker("relay,learn,maintain", extra_env=rules)  # the maintain role's timers are wired too
    conv1 = S.conversation(env, a, c, S.HIDRO)
    _resolve(env, conv1)
    facts = wait_until(lambda: len(S.recallable(env, c, MODEL)) == 2 and S.recallable(env, c, MODEL), 60,
                       what="facts embedded and recallable")
    assert {f["memory_key"] for f in facts} == {"allergy", "preferred_room"}
    hidro = next(f for f in facts if f["memory_key"] == "preferred_room")

    # a poison record on the same topic goes to the DLQ; the worker keeps going
    topic = qualified(env.settings, outbox_topic("conversation"))
    produce(env.settings, topic, [(b"1", b"{not json", [("id", str(uuid.uuid4()).encode()),
                                                        ("type", b"conversation.resolved")])])
    conv2 = S.conversation(env, a, c, S.MASTER, at=S.T0 + timedelta(days=1))
    _resolve(env, conv2)
    wait_until(lambda: S.facts(env, c, "id = %s AND superseded_at IS NOT NULL", hidro["id"]), 60,
               what="older preference superseded")
    dead = consume_all(env.settings, dlq_topic(topic), 1)
    assert [dict(r.headers)["dlq.error_class"] for r in dead] == [b"InvalidJSON"]
    live = S.recallable(env, c, MODEL)
    assert sorted((f["memory_key"], f["normalized_value"]) for f in live) == [
        ("allergy", "camarao"), ("preferred_room", "master")]
    assert S.facts(env, c, "id = %s", hidro["id"])[0]["superseded_by_id"] == \
        next(f["id"] for f in live if f["memory_key"] == "preferred_room")

    # redelivery: the same outbox records produced again change nothing
    records = [r for r in consume_all(env.settings, topic, 3) if r.value != b"{not json"]
    assert len(records) == 2
    dup_before = _metric(env, "memoria_events_duplicate_total")
    produce(env.settings, topic, [(r.key, r.value, list(r.headers)) for r in records])
    wait_until(lambda: _metric(env, "memoria_events_duplicate_total") >= dup_before + 2, 60,
               what="redelivered events skipped")
    # replay on purpose: re-extracts, creates no duplicates
    out = json.loads(env.memoria("replay", "extract", "--conversation", str(conv1), "--force", env=rules).stdout.splitlines()[0])
    assert out["status"] == "done" and out["created"] == []
    assert len(S.facts(env, c)) == 3  # allergy, Hidro (history), Master
    assert _status(env, conv1)["status"] == "done" and _status(env, conv2)["attempts"] == 1
    m = env.metrics()
    assert m[f'memoria_memory_extractions_total{{account_id="{a}",memory_type="restricao"}}'] == 1
    assert m['memoria_memory_superseded_total{memory_type="preferencia"}'] == 1


def test_flag_off_means_zero_model_calls_through_the_worker(env):
    fact = {"memory_type": "restricao", "memory_key": "allergy", "content": "Alérgico a camarão",
            "normalized_value": "camarao", "evidence": "sou alérgico a camarão", "confidence": 0.9}
    with FakeOpenAI(default=Reply.json({"facts": [fact]}, prompt_tokens=800, completion_tokens=60)) as server:
        env.start_worker("relay,learn", extra_env={"MEMORIA_EXTRACTION_PROVIDER": "openai",
                                                   "MEMORIA_OPENAI_BASE_URL": server.base_url,
                                                   "MEMORIA_OPENAI_API_KEY": "test"})
        off, on = S.account(env, extraction=False), S.account(env, extraction=True)
        c_off, c_on = S.contact(env, off), S.contact(env, on)
        conv_off = S.conversation(env, off, c_off, S.HIDRO)
        conv_on = S.conversation(env, on, c_on, S.HIDRO)
        _resolve(env, conv_off)
        _resolve(env, conv_on)
        wait_until(lambda: (_status(env, conv_off) or {}).get("status") == "skipped"
                   and (_status(env, conv_on) or {}).get("status") == "done", 60, what="both handled")
        assert server.chat_count == 1  # the flag-on account only
        assert "Conversa:" in server.chat_requests[0]["messages"][1]["content"]
    assert S.facts(env, c_off) == []
    assert [f["memory_key"] for f in S.recallable(env, c_on, MODEL)] == ["allergy"]
    m = env.metrics()
    assert m[f'memoria_model_tokens_total{{account_id="{on}",kind="prompt",stage="extraction"}}'] == 800
    assert m[f'memoria_model_cost_usd_total{{account_id="{on}",stage="extraction"}}'] > 0
    # the same call is in the cost ledger in Postgres (survives worker restarts)
    ledger = env.q("SELECT stage, model, prompt_tokens, cost_usd FROM model_usage WHERE account_id = %s", on)
    assert [(r["stage"], r["prompt_tokens"]) for r in ledger] == [("extraction", 800)] and ledger[0]["cost_usd"] > 0
    assert env.q("SELECT count(*) AS n FROM model_usage WHERE account_id = %s", off)[0]["n"] == 0
