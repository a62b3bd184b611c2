"""A contradiction is read from the earlier statement to the later one, whatever the
order the conversations are processed in (the make demo customer who "fuma bastante"
in an old conversation and "parou de fumar" in a newer one processed first)."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import numpy as np

from streams.learn.consolidate import NewFact, StoredFact, plan_consolidation
from streams.learn.contradiction import MemoryView, RulesContradictionChecker, Verdict
from streams.learn.model import Fact

T0 = datetime(2026, 3, 1, tzinfo=timezone.utc)
LATER = T0 + timedelta(days=60)
# two statements about the same habit: near (a contradiction candidate), not the same fact
NEW_VEC = np.array([1.0, 0.0, 0.0, 0.0], dtype=np.float32)
LIVE_VEC = np.array([0.8, 0.6, 0.0, 0.0], dtype=np.float32)   # cosine distance 0.2


class Asymmetric:
    """Says a later "parei de fumar" ends an earlier "fumo bastante", and nothing else."""

    name = "asymmetric"

    def __init__(self):
        self.asked: list[tuple[str, str]] = []

    def check(self, old: MemoryView, new: MemoryView) -> Verdict:
        self.asked.append((old.content, new.content))
        return Verdict(contradicts=old.content == "Fumo bastante" and new.content.startswith("Parei de fumar"))


def _new(content: str) -> NewFact:
    return NewFact(Fact(memory_type="contexto_pessoal", memory_key="habito", content=content, evidence=content,
                        confidence=0.9, scope="global"), NEW_VEC)


def _live(content: str, observed: datetime) -> StoredFact:
    return StoredFact(id=7, memory_type="contexto_pessoal", memory_key="habito", content=content,
                      normalized_value="", confidence=0.9, embedding=LIVE_VEC, last_verified_at=observed,
                      source_conversation_id=1, observed_at=observed)


def _plan(new: str, live: str, *, stated: datetime, live_stated: datetime, checker):
    return plan_consolidation([_new(new)], [_live(live, live_stated)], checker, conversation_id=2, unit_id=None,
                              now=LATER + timedelta(days=1), observed_at=stated)


def test_a_later_statement_supersedes_the_live_earlier_one():
    checker = Asymmetric()
    plan = _plan("Parei de fumar, 2 meses ja", "Fumo bastante", stated=LATER, live_stated=T0, checker=checker)
    assert [s.old_id for s in plan.supersede] == [7] and plan.inserts[0].superseded_by is None
    assert checker.asked == [("Fumo bastante", "Parei de fumar, 2 meses ja")]


def test_an_earlier_statement_processed_late_is_asked_as_the_earlier_one_and_stored_as_history():
    checker = Asymmetric()
    plan = _plan("Fumo bastante", "Parei de fumar, 2 meses ja", stated=T0, live_stated=LATER, checker=checker)
    assert plan.supersede == [] and plan.inserts[0].superseded_by == 7
    assert checker.asked == [("Fumo bastante", "Parei de fumar, 2 meses ja")]


def test_the_offline_judge_gives_the_same_live_set_in_both_processing_orders():
    judge = RulesContradictionChecker()
    in_order = _plan("Parei de fumar, 2 meses ja", "Fumo bastante", stated=LATER, live_stated=T0, checker=judge)
    late = _plan("Fumo bastante", "Parei de fumar, 2 meses ja", stated=T0, live_stated=LATER, checker=judge)
    assert [s.old_id for s in in_order.supersede] == [7]        # "fumo bastante" becomes history
    assert late.inserts[0].superseded_by == 7 and late.supersede == []   # ... in either order


class Recorder:
    name = "recorder"

    def __init__(self):
        self.asked: list[str] = []

    def check(self, old: MemoryView, new: MemoryView) -> Verdict:
        self.asked.append(old.content)
        return Verdict(contradicts=False)


FAR_VEC = np.array([0.0, 0.0, 1.0, 0.0], dtype=np.float32)   # cosine distance 1.0 from NEW_VEC


def _far(id_: int, key: str, content: str) -> StoredFact:
    return StoredFact(id=id_, memory_type="contexto_pessoal", memory_key=key, content=content,
                      normalized_value="", confidence=0.9, embedding=FAR_VEC, last_verified_at=T0,
                      source_conversation_id=1, observed_at=T0)


def test_a_single_valued_slot_is_asked_beyond_the_distance_cut_off_and_a_multi_valued_one_is_not():
    new = NewFact(Fact(memory_type="contexto_pessoal", memory_key="occupation", content="Agora é motorista de app",
                       evidence="agora sou motorista de app", confidence=0.9, scope="global"), NEW_VEC)
    live = [_far(7, "occupation", "Caminhoneiro"), _far(8, "habito", "Corre de manhã")]
    checker = Recorder()
    plan_consolidation([new], live, checker, conversation_id=2, unit_id=None, now=LATER, observed_at=LATER)
    assert checker.asked == ["Caminhoneiro"]

    habit = NewFact(Fact(memory_type="contexto_pessoal", memory_key="habito", content="Nada na piscina",
                         evidence="nado toda semana", confidence=0.9, scope="global"), NEW_VEC)
    checker = Recorder()
    plan_consolidation([habit], live, checker, conversation_id=2, unit_id=None, now=LATER, observed_at=LATER)
    assert checker.asked == []
