"""The label audit (streams/learn/audit_labels.py) on hand-made vectors: no embedder."""

import io

import numpy as np

from streams.learn.audit_labels import GoldFact, conflicts, report


def test_conflicts_cross_source_different_type_only():
    facts = [
        GoldFact("dev", "d1", "restricao", "voltei a comer carne"),
        GoldFact("written", "w1", "preferencia", "voltei a comer carne"),
        GoldFact("train", "t1", "restricao", "voltei a comer carne kkk"),    # same type: no conflict
        GoldFact("dev", "d2", "preferencia", "ODEIO CEBOLA"),               # same source as d1
        GoldFact("train", "t2", "contexto_pessoal", "sou caminhoneiro"),    # far away
    ]
    v = np.array([[1, 0, 0], [1, 0, 0], [0.99, 0.1, 0], [0.95, 0.3, 0], [0, 0, 1]], dtype=np.float32)
    found = conflicts(facts, v, threshold=0.85, slot_threshold=0.99)
    pairs = {(c.a.conversation_id, c.b.conversation_id) for c in found}
    assert ("d1", "w1") in pairs               # the reference comes first
    assert ("d2", "t1") in pairs               # cosine ~0.97, different type, different source
    assert not any("t2" in p for p in pairs)
    assert ("d1", "t1") not in pairs and ("d1", "d2") not in pairs
    out = io.StringIO()
    report(found, out)
    assert "restricao vs preferencia" in out.getvalue()


def test_double_labelled_evidence_is_not_a_conflict():
    facts = [
        GoldFact("dev", "d1", "vinculo_social", "minha mulher é professora"),
        GoldFact("dev", "d1", "contexto_pessoal", "minha mulher é professora"),
        GoldFact("train", "t1", "contexto_pessoal", "minha mulher é professora"),
    ]
    v = np.ones((3, 4), dtype=np.float32)
    assert conflicts(facts, v) == []
