"""Facts arriving out of order converge: a statement, its later negation and an
unrelated fact, learnt in every order, leave the same live set."""

from __future__ import annotations

import itertools
from datetime import timedelta

import pytest

from streams.learn.learn import learn_conversation
from tests.faults.conftest import record_counts
from tests.learn import seed as S

pytestmark = [pytest.mark.faults]

STATED = [("contact", "Boa noite, queria reservar a suíte."), ("contact", "Ah, e sou alérgico a camarão.")]
NEGATED = [("contact", "Oi de novo!"), ("contact", "Fiz o tratamento e não sou mais alérgico a camarão.")]
OTHER = [("contact", "Boa tarde"), ("contact", "É sempre a Hidro que eu peço, a gente gosta muito dela.")]


def _live(db, contact):
    return sorted((f["memory_type"], f["memory_key"], f["content"])
                  for f in S.facts(db, contact, "deleted_at IS NULL AND superseded_at IS NULL"))


def test_statement_and_later_negation_converge_in_every_order(db, memory_embedder):
    a = S.account(db)
    p = S.ports(db.pool, memory_embedder)
    timeline = {"stated": (STATED, S.T0), "negated": (NEGATED, S.T0 + timedelta(days=10)),
                "other": (OTHER, S.T0 + timedelta(days=5))}
    results = {}
    for order in itertools.permutations(timeline):
        c = S.contact(db, a)
        convs = {name: S.conversation(db, a, c, msgs, at=at) for name, (msgs, at) in timeline.items()}
        for name in order:
            assert learn_conversation(p, convs[name]).status == "done"
        results[order] = _live(db, c)
    sets = set(map(tuple, results.values()))
    record_counts("facts_out_of_order", orders=len(results), distinct_live_sets=len(sets),
                  live_facts=len(next(iter(results.values()))))
    assert len(sets) == 1, results
    live = next(iter(results.values()))
    allergy = [f for f in live if "camar" in f[2].lower()]
    # the later negation wins whatever the processing order: no allergy stays live next to it
    assert len(allergy) == 1 and "não" in allergy[0][2].lower(), live
    assert any("Hidro" in f[2] for f in live)
