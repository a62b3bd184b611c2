"""``python -m streams.evaluation --kinds``: answer failures counted by where they happened,
intent misses by label pair, and no sentence of the set printed (it is meant for reserved sets)."""

from streams.evaluation import failure_kind, format_kinds


def _failure(**kw):
    base = {"question_id": "q", "text": "SECRET QUESTION TEXT", "gold_intent": "policy", "intent": "policy",
            "answerable": True, "handed_over": False, "document_found": True, "expected": ["R$ 10"],
            "reply": "SECRET REPLY"}
    return {**base, **kw}


def test_each_failure_gets_the_stage_it_failed_at():
    assert failure_kind(_failure(answerable=False)) == "unanswerable answered"
    assert failure_kind(_failure(handed_over=True)) == "handed over, document retrieved"
    assert failure_kind(_failure(handed_over=True, document_found=False)) == "handed over, document not retrieved"
    assert failure_kind(_failure()) == "wrong answer, document retrieved"
    assert failure_kind(_failure(document_found=False)) == "wrong answer, document not retrieved"


def test_counts_without_any_sentence():
    col = {"answer_failure_details": [_failure(), _failure(intent="info_request"), _failure(handed_over=True)],
           "intent_misses": [{"question_id": "q", "gold": "policy", "intent": "info_request", "text": "SECRET"}]}
    out = format_kinds({"probe": col})
    assert "wrong answer, document retrieved 2 (wrong intent 1)" in out
    assert "handed over, document retrieved 1 (wrong intent 0)" in out
    assert "policy→info_request 1" in out
    assert "SECRET" not in out


def test_extraction_counted_by_memory_type():
    out = format_kinds({"probe": {"extraction_by_type": {"preferencia": (3, 1, 2), "restricao": (0, 0, 1)}}})
    assert "preferencia 3/1/2, restricao 0/0/1" in out
