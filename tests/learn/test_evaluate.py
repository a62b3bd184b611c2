"""Quality guard: the rules provider on the dev fixture and on our own held-out sets."""

from pathlib import Path

import pytest

from streams.learn.contradiction import RulesContradictionChecker
from streams.learn.evaluate import evaluate_contradictions, evaluate_extraction, evidence_overlap, main, prf
from streams.learn.extract_rules import RulesExtractor
from streams.learn.fixtures import FIXTURES_DIR

DATA = Path(__file__).parent / "data"


@pytest.mark.parametrize("path", [
    FIXTURES_DIR / "conversations.jsonl", DATA / "heldout_conversations.jsonl", DATA / "heldout2_conversations.jsonl",
])
def test_extraction_targets(path):
    stats = evaluate_extraction(path, RulesExtractor())
    p, r, _ = prf(sum(stats["tp"].values()), sum(stats["fp"].values()), sum(stats["fn"].values()))
    assert stats["non_verbatim"] == 0
    assert p >= 0.85 and r >= 0.6, (p, r)


@pytest.mark.parametrize("path", [FIXTURES_DIR / "contradictions.jsonl", DATA / "heldout2_contradictions.jsonl"])
def test_contradiction_targets(path):
    right, total = evaluate_contradictions(path, RulesContradictionChecker())
    assert right / total >= 0.85


def test_overlap_definition():
    assert evidence_overlap("sou alérgico a frutos do mar", "Camarão não, sou alérgico a frutos do mar.") == 1.0
    assert evidence_overlap("a b c d", "a b c e") == 0.6
    assert evidence_overlap("x y", "z w") == 0.0


def test_main_exit_code_zero_on_dev(capsys):
    assert main([]) == 0
    assert "non-verbatim evidence: 0" in capsys.readouterr().out
