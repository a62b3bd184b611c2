import json
from pathlib import Path

import typer
from typer.testing import CliRunner

from streams.learn.cli import register
from streams.learn.fixtures import FIXTURES_DIR
from tests.support.openai_server import FakeOpenAI, Reply

HERE = Path(__file__).parent


def app() -> typer.Typer:
    a = typer.Typer()
    register(a)
    return a


def lines(output: str) -> list[dict]:
    return [json.loads(line) for line in output.splitlines() if line.strip().startswith("{")]


def test_extract_rules_on_fixture(tmp_path):
    # a slice of dev (30 conversations): the command's output contract; quality is tests/learn/test_evaluate.py's
    sample = tmp_path / "conversations.jsonl"
    sample.write_text("".join((FIXTURES_DIR / "conversations.jsonl").read_text(encoding="utf-8").splitlines(True)[:30]),
                      encoding="utf-8")
    result = CliRunner().invoke(app(), ["extract", "--provider", "rules", str(sample)])
    assert result.exit_code == 0, result.output
    facts = lines(result.stdout)
    rows = {json.loads(l)["conversation_id"]: json.loads(l) for l in open(sample)}
    assert len(facts) >= sum(len(r["gold_facts"]) for r in rows.values()) // 2
    for f in facts:
        assert set(f) == {"conversation_id", "memory_type", "memory_key", "content", "evidence", "confidence", "scope"}
        row = rows[f["conversation_id"]]
        assert any(f["evidence"] in m["text"] for m in row["messages"] if m["role"] == "contact")
        assert f["confidence"] >= 0.5
    no_facts = {cid for cid, row in rows.items() if not row["gold_facts"]}
    assert len({f["conversation_id"] for f in facts} & no_facts) <= len(no_facts) // 4


def test_contradicts_rules_on_fixture():
    result = CliRunner().invoke(app(), ["contradicts", "--provider", "rules", str(FIXTURES_DIR / "contradictions.jsonl")])
    assert result.exit_code == 0, result.output
    out = lines(result.stdout)
    gold = {json.loads(l)["pair_id"]: json.loads(l)["contradicts"] for l in open(FIXTURES_DIR / "contradictions.jsonl")}
    assert len(out) == len(gold)
    right = sum(o["contradicts"] == gold[o["pair_id"]] for o in out)
    assert right / len(gold) >= 0.85


def test_extract_openai_provider_uses_settings_from_env(tmp_path, monkeypatch):
    from streams.settings import get_settings

    conv = tmp_path / "c.jsonl"
    conv.write_text(json.dumps({
        "conversation_id": "z1", "account_id": 1, "contact_id": 1, "unit_id": 2, "inbox_id": 3,
        "messages": [{"role": "contact", "text": "Sou vegetariana, tá?", "sent_at": "2025-01-01T10:00:00-03:00"}],
    }) + "\n")
    fact = {"memory_type": "restricao", "memory_key": "diet", "content": "Vegetariana",
            "normalized_value": "vegetariana", "evidence": "Sou vegetariana", "confidence": 0.9}
    with FakeOpenAI([Reply.json({"facts": [fact]})]) as server:
        monkeypatch.setenv("MEMORIA_OPENAI_BASE_URL", server.base_url)
        monkeypatch.setenv("MEMORIA_OPENAI_API_KEY", "k")
        monkeypatch.setenv("MEMORIA_LLM_MODEL", "fake-llm")
        get_settings.cache_clear()
        try:
            result = CliRunner().invoke(app(), ["extract", "--provider", "openai", str(conv)])
        finally:
            get_settings.cache_clear()
        assert server.chat_count == 1
        assert server.chat_requests[0]["model"] == "fake-llm"
    assert result.exit_code == 0, result.output
    assert lines(result.stdout) == [{"conversation_id": "z1", **{k: fact[k] for k in ("memory_type", "memory_key", "content", "evidence", "confidence")}, "scope": "global"}]


def test_one_failed_conversation_never_aborts_the_extract_batch(tmp_path, monkeypatch):
    from streams.settings import get_settings

    def row(cid, text):
        return json.dumps({"conversation_id": cid, "account_id": 1, "contact_id": 1, "unit_id": 2, "inbox_id": 3,
                           "messages": [{"role": "contact", "text": text, "sent_at": "2025-01-01T10:00:00-03:00"}]})

    conv = tmp_path / "c.jsonl"
    conv.write_text("\n".join([row("a1", "Sou vegetariana, tá?"), row("a2", "Moro em Santos."),
                               row("a3", "Tenho um gato, o Mingau.")]) + "\n")
    fact = {"memory_type": "restricao", "memory_key": "diet", "content": "Vegetariana",
            "normalized_value": "vegetariana", "evidence": "Sou vegetariana", "confidence": 0.9}
    pet = {"memory_type": "contexto_pessoal", "memory_key": "pet", "content": "Tem o gato Mingau",
           "normalized_value": "mingau", "evidence": "Tenho um gato, o Mingau", "confidence": 0.9}
    # a2: the model stays down (HTTP 500 on every attempt); a1 and a3 answer.
    replies = [Reply.json({"facts": [fact]})] + [Reply.error(500)] * 2 + [Reply.json({"facts": [pet]})]
    with FakeOpenAI(replies) as server:
        monkeypatch.setenv("MEMORIA_OPENAI_BASE_URL", server.base_url)
        monkeypatch.setenv("MEMORIA_LLM_MAX_RETRIES", "1")
        get_settings.cache_clear()
        try:
            result = CliRunner().invoke(app(), ["extract", "--provider", "openai", str(conv)])
        finally:
            get_settings.cache_clear()
        assert server.chat_count == 4
    assert result.exit_code == 1
    assert [f["conversation_id"] for f in lines(result.stdout)] == ["a1", "a3"]
    assert "error: conversation a2: ModelUnavailable" in result.stderr
    assert "1 of 3 conversations failed" in result.stderr
