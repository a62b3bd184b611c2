"""Train the learnt fact extractor on the development half (``make train``).

    python -m streams.learn.train_extractor [--corpus examples/dev] [--out streams/learn/models/extractor-v1]
        [--folds 5] [--check] [--errors]

Reproducible: the same corpus gives the same artefact (deterministic solver, folds
by customer in a fixed order, no random state anywhere; the solver runs in float64 on one BLAS
thread, ``deterministic``: in float32 its iterates followed the BLAS summation order, so a
machine with another number of cores trained another artefact). Steps:

1. candidates of every dev conversation (``extract_learned.transcript_spans``) and
   their features; a candidate is a positive example of a memory type when its span
   overlaps a gold evidence of that type (the evaluation's ``evidence_overlap`` ≥ 0.5).
   The conversations written for the project outside the corpus (``WRITTEN_FILES``:
   ``tests/learn/data/conversations_written.jsonl`` and ``examples/train/``, never
   taken from the held-out half) are added to the training side of every fold and never scored, so the
   cross-validated figures stay figures on dev;
2. two stages (``extract_learned.LinearModel``): a "states a durable fact" classifier
   over every type's positives, times a multinomial "which type" classifier fitted on
   the positive spans;
3. two evaluations, both scoring the whole extraction (selection, ≤ 5 facts, one-to-one
   matching): grouped cross-validation on the corpus (``--folds``, grouped by customer so a
   customer's conversations never sit on both sides; the written files always on the
   training side) and a **cross-source** evaluation (``cross_source``): each writing source
   (the corpus, each written file) is predicted by a model fit on the sources outside its group
   (``writer_groups``: the writers dealt into ``XS_GROUPS`` groups; every writer its own group until
   stop 48), with thresholds tuned on those sources' predictions. Grouped CV inside one writer's
   conversations overstates transfer (dev CV F1 0.74 against 0.65 on the held-out half);
   predicting the corpus from the other writers gives about the held-out figure, so the
   regularisation ``C`` and the selection's length penalty (the tightest span that states a
   fact beats a window around it) are chosen by the mean of the cross-source macro F1 and
   the CV F1 (either alone flips on differences within noise). Each type's threshold is then tuned on
   every writer's out-of-source predictions pooled at that setting (``pooled_thresholds``; until stop 26
   on the corpus's own out-of-fold predictions, which run more confident than any unseen writer's:
   with nine writers the pooled thresholds gave the higher F1 on every out-of-source figure measured
   (recall up, precision down); the CV figure at the shipped thresholds is recorded next to the CV-tuned one). The
   cross-source figures also count the errors by kind (``error_buckets``: gold evidence no
   candidate reaches, wrong type, span boundary, not proposed; false facts on or near a
   gold evidence, questions, negations, one-off requests, third parties, other);
4. the second-stage gate (``train_gate``, stop 28): learnt from the cross-source step's out-of-source
   proposals (at ``GATE_SCALE`` × each writer's thresholds), scored the same way (each writer judged by a
   gate fit on the others) and on the corpus's grouped CV (its out-of-fold proposals judged by a gate fit
   on the other writers); the shipped gate is fit on every writer's proposals, its threshold the one whose pooled
   out-of-source figures come nearest issue 13's targets (``pick_gate_threshold``, stop 45). ``USE_GATE = False``
   ships none;
5. the final classifiers are fit on all of dev (plus ``WRITTEN``) with the chosen ``C``; the artefact
   records the thresholds, the SHA-256 of the training file, and the cross-validated and
   cross-source metrics, which are printed. ``--check`` trains in memory and compares the metrics
   with the shipped artefact's (exit 1 when they differ). ``--errors`` prints the chosen
   setting's cross-validated misses (FN, with the best candidate's probability) and false
   facts (FP), per conversation, to read why it misses.

Never point ``--corpus`` at ``examples/heldout``: that half is only reported.
"""

from __future__ import annotations

import argparse
import functools
import hashlib
import json
import sys
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from streams.learn.evaluate import evidence_overlap
from streams.learn.extract_learned import (
    ARTEFACT,
    GATE_SCALE,
    HASH_DIM,
    MAX_FACTS,
    MAX_WINDOW,
    N_CUES,
    LinearModel,
    Span,
    combine,
    featurize,
    gate_features,
    gate_probability,
    gated_proposals,
    message_features,
    rule_hits,
    select,
    select_type,
    transcript_spans,
    two_stage_probabilities,
)
from streams.learn.fixtures import DEV_DIR, read_jsonl, transcript_of
from streams.learn.normalise import is_instruction
from streams.learn.taxonomy import MEMORY_TYPES

VERSION = "learned-v3"
#: One C: with eight writing sources the 3 × 3 grid took most of an hour on the shared 2-core machine
#: (and ``--check`` repeats it); C = 1 was chosen by every full-grid training since stop 23.
C_GRID = (1.0,)
#: The corpus's conversations weigh this much against the written ones (which outnumber them),
#: so the written data widens the model without outvoting the corpus's labelling conventions.
DEV_WEIGHT = 2.0
PENALTY_GRID = (0.0, 0.05, 0.1)
#: Conversations written for the project outside the corpus: training side only.
WRITTEN = Path(__file__).resolve().parents[2] / "tests" / "learn" / "data" / "conversations_written.jsonl"
#: More conversations written for training only (other businesses, chat slang, third parties,
#: one-off requests, instructions to the agent): ``examples/train/``, never scored.
TRAIN_MORE = Path(__file__).resolve().parents[2] / "examples" / "train" / "conversations.jsonl"
#: Conversations written blind to the code by five writers the model had never read (issue 13's
#: probe_i, j, k, l, m: tuning sets, never validation or reserved). Trained on since stop 26: with the
#: five as sources every writer's cross-source F1 rose on average (macro over dev, written, train and
#: the five 0.707 -> 0.718) and dev's grouped CV too (0.744 -> 0.758); docs/quality-log.md, "extraction
#: for new writers (branch h-ext4)". (With only i and j, at stop 23, probe_k had scored lower.)
#: probe_r (a tuning writer since stop 26) joined at stop 27: cross-source macro F1 over the eight older writers
#: 0.721 -> 0.732 and dev's grouped CV F1 0.758 -> 0.769 (docs/quality-log.md, "h-ext5"); probe_s and probe_t
#: (blind tuning writers of stop 27, scored untouched first) joined after it; probe_u and probe_v (blind
#: tuning writers of stop 28, scored untouched first) at stop 28; probe_w and probe_x (the same, stop 29) at stop 29; probe_y and probe_z (the same,
#: stop 30) at stop 30; probe_ac and probe_ad (the same, fresh at stop 32, scored untouched first) at stop 33;
#: probe_ae and probe_af (fresh at stop 33) at stop 34, with probe_ag and probe_ah (written at stop 34 and scored
#: untouched first; their validation o/p/q right/false 414/55 -> 426/61 with them, 412/55 without: docs/quality-log.md);
#: probe_ai and probe_aj (fresh at stop 35, scored untouched first) at stop 35: validation 426/61 -> 427/56, the gate's
#: threshold back to 0.4 and dev's grouped CV with the gate 0.752/0.746 -> 0.782/0.739 (docs/quality-log.md);
#: probe_ak, al (fresh at stop 35), am and an (fresh at stop 36), each scored untouched first, at stop 38: the gate's
#: macro F1 0.792 -> 0.801 (threshold 0.45), fresh probe_as/at right/false 274/54 -> 276/40, validation o/p/q
#: 427/56 -> 418/52 (docs/quality-log.md, stop 38); probe_as, at (fresh at stop 38) and au, av (fresh at stop 39), each
#: scored untouched first, at stop 40: validation o/p/q right/false 418/52 -> 419/52, fresh probe_aw/ax 282/47 -> 282/48
#: (a wash: shipped as the policy says, every tuning writer trains; docs/quality-log.md, stop 40); probe_aw and ax
#: (fresh at stop 40, scored untouched first, their first check repeated at stop 41) at stop 41; probe_ay and az
#: (fresh at stop 41; their first check repeated at stop 42; stop 42's retraining with them did not finish) at stop
#: 43. probe_ba and bb (fresh at stop 42; their first check repeated at stop 43) at stop 44. probe_bc and bd (fresh at stop
#: 43; their first check repeated at stop 44) and probe_be and bf (fresh at stop 44; first check repeated at stop 45) at
#: stop 45 (docs/quality-log.md, stop 45). probe_bg and bh (fresh at stop 45; first check at stop 46) and probe_bi and bj
#: (fresh at stop 46; first check at stop 47) at stop 48, the first retraining with the cross-source step over writer
#: groups (``XS_GROUPS``): stops 46 and 47's retrainings with them did not finish. probe_bk and bl (fresh at stop 47; first
#: check at stop 48) at stop 48, in the stop's second retraining. probe_bm and bn (fresh at stop 48; first check at stop
#: 49) at stop 49. probe_bo and bp (fresh at stop 49; first check at stop 50) at stop 50.
PROBES = tuple(Path(__file__).resolve().parents[2] / "examples" / f"probe_{x}" / "conversations.jsonl"
               for x in ("i", "j", "k", "l", "m", "r", "s", "t", "u", "v", "w", "x", "y", "z", "aa", "ab", "ac", "ad", "ae", "af", "ag", "ah", "ai", "aj",
                         "ak", "al", "am", "an", "as", "at", "au", "av", "aw", "ax", "ay", "az", "ba", "bb",
                         "bc", "bd", "be", "bf", "bg", "bh", "bi", "bj", "bk", "bl", "bm", "bn", "bo", "bp"))
WRITTEN_FILES = (WRITTEN, TRAIN_MORE) + PROBES
#: Where the shipped per-type thresholds are tuned: "cross_source" (every writer's out-of-source predictions
#: pooled; since stop 27) or "cv" (the corpus's grouped out-of-fold predictions; until stop 26). The two
#: disagree on dev's own writer: its grouped CV F1 is 0.769 at "cv" thresholds and 0.743 at "cross_source"
#: ones, while every other writer and the validation sets gain with "cross_source" (docs/quality-log.md, h-ext5).
#: With probe_s and probe_t among the writers (eleven) the validation sets no longer tell them apart (pooled
#: o/p/q F1 0.797 either way: "cv" P 0.810 R 0.784, "cross_source" P 0.824 R 0.771), while dev's grouped CV is
#: higher on both figures at "cv" thresholds (P/R 0.760/0.757 against 0.737/0.732), so "cv" ships (stop 27).
THRESHOLDS_FROM = "cv"
#: The second-stage gate over the proposals (``train_gate``; stop 28, h-ext6).
USE_GATE = True
THRESHOLD_GRID = tuple(round(x, 2) for x in np.arange(0.2, 0.96, 0.05))
MATCH = 0.5


@functools.lru_cache(maxsize=200_000)
def _overlap(a: str, b: str) -> float:
    """``evidence_overlap``, remembered: threshold tuning matches the same spans to the same gold
    evidences thousands of times."""
    return evidence_overlap(a, b)


@dataclass
class Example:
    row: dict
    spans: list[Span]
    X: np.ndarray
    Y: np.ndarray        # (n_spans, n_types) 0/1
    group: str
    weight: float = 1.0  # sample weight of its spans (the corpus's conversations: ``DEV_WEIGHT``)


def file_sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def build_examples(rows: list[dict], embedder) -> list[Example]:
    out = []
    for row in rows:
        t = transcript_of(row)
        spans = transcript_spans(t)
        X = featurize(t, spans, embedder, rule_hits(t)) if spans else np.zeros((0, 1), np.float32)
        Y = np.zeros((len(spans), len(MEMORY_TYPES)), dtype=np.int8)
        for g in row.get("gold_facts", []):
            ti = MEMORY_TYPES.index(g["memory_type"])
            for k, s in enumerate(spans):
                if evidence_overlap(s.text, g["evidence"]) >= MATCH:
                    Y[k, ti] = 1
        out.append(Example(row, spans, X, Y, f"{row['account_id']}:{row['contact_id']}"))
    return out


def folds_by_group(examples: list[Example], k: int) -> list[list[int]]:
    """Deterministic grouped folds: customers sorted by key, dealt round-robin."""
    groups = sorted({e.group for e in examples})
    fold_of = {g: i % k for i, g in enumerate(groups)}
    return [[i for i, e in enumerate(examples) if fold_of[e.group] == f] for f in range(k)]


def deterministic():
    """The context every fit runs in: one BLAS thread. With the features in float64 (``fit``)
    the solver then takes the same steps on any machine; in float32 two BLAS threads instead of
    one moved lbfgs's iterates (another iteration count, weights apart by ~0.01) and with them
    the tuned thresholds and the cross-validated counts ``--check`` compares. One thread is also
    faster here: measured on the shared 2-core machine, a type-stage fit took 2 s on one thread and
    15 s on two."""
    from threadpoolctl import threadpool_limits

    return threadpool_limits(limits=1, user_api="blas")


@dataclass
class Fitted:
    W: np.ndarray        # (n_types, n_features) the type stage's class scores
    b: np.ndarray        # (n_types,)
    fw: np.ndarray       # (n_features,) the "states a fact" stage
    fb: float


def fit(examples: list[Example], C: float) -> Fitted:
    """The two stages: "states a fact" (balanced, every type's positives) and "which type"
    (multinomial over the positive spans, a span with two types counted once per type; a
    type with no positive gets no probability)."""
    from sklearn.linear_model import LogisticRegression

    # float64: sklearn's lbfgs keeps float32 input in float32, where its steps depend on the BLAS
    # summation order (``deterministic``).
    X = np.concatenate([e.X for e in examples if len(e.spans)]).astype(np.float64)
    Y = np.concatenate([e.Y for e in examples if len(e.spans)])
    w = np.concatenate([np.full(len(e.spans), e.weight, dtype=np.float64) for e in examples if len(e.spans)])
    fact = Y.max(axis=1)
    balance = np.where(fact == 1, w[fact == 0].sum() / max(w[fact == 1].sum(), 1e-9), 1.0)   # positives weigh as much as negatives
    # A span stating two facts ("minha esposa curte mto vinho rosé": a partner and her
    # taste) is one row per type, so the type stage learns both instead of the first.
    rows, types = np.nonzero(Y)
    with deterministic():
        f = LogisticRegression(C=C, max_iter=2000, solver="lbfgs").fit(X, fact, sample_weight=w * balance)
        g = LogisticRegression(C=C, max_iter=2000, solver="lbfgs").fit(X[rows], types, sample_weight=w[rows])
    W = np.zeros((len(MEMORY_TYPES), X.shape[1]), dtype=np.float32)
    b = np.full(len(MEMORY_TYPES), -1e4, dtype=np.float32)
    for j, t in enumerate(g.classes_):
        W[t], b[t] = g.coef_[j], g.intercept_[j]
    return Fitted(W, b, f.coef_[0].astype(np.float32), float(f.intercept_[0]))


def probs_of(e: Example, m: Fitted) -> np.ndarray:
    if not len(e.spans):
        return np.zeros((0, len(MEMORY_TYPES)))
    return two_stage_probabilities(e.X @ m.fw + m.fb, e.X @ m.W.T + m.b)


def matched(chosen, gold: list[dict]) -> tuple[set[int], set[int]]:
    """One-to-one matching of chosen facts to gold facts of the same type, best evidence overlap
    first (at least ``MATCH``): the indexes of the matched chosen facts and of the matched gold."""
    pairs = sorted(((_overlap(c.span.text, g["evidence"]), i, j)
                    for i, c in enumerate(chosen) for j, g in enumerate(gold)
                    if c.memory_type == g["memory_type"]), reverse=True)
    used_i: set[int] = set()
    used_j: set[int] = set()
    for s, i, j in pairs:
        if s >= MATCH and i not in used_i and j not in used_j:
            used_i.add(i)
            used_j.add(j)
    return used_i, used_j


def score(examples: list[Example], probs: list[np.ndarray], thresholds: np.ndarray, penalty: float = 0.0,
          memo: dict | None = None) -> dict:
    """Extraction P/R/F1 with the product's selection and one-to-one evidence matching. ``memo``
    holds each type's selection per threshold, keyed by the example's probability array (``id``: the
    memo must not outlive the arrays, as in ``tune_thresholds`` and ``cross_source``), so trying one
    type's threshold recomputes only that type and ascents over overlapping examples share their work:
    the same result as ``select``, in a fraction of the time."""
    tp = fp = fn = 0
    per = Counter()
    for n, (e, P) in enumerate(zip(examples, probs)):
        if memo is None:
            chosen = select(e.spans, P, MEMORY_TYPES, thresholds, length_penalty=penalty)
        else:
            per_type = []
            for t, name in enumerate(MEMORY_TYPES):
                key = (id(P), t, float(thresholds[t]), penalty)
                if key not in memo:
                    memo[key] = select_type(e.spans, P, t, name, thresholds[t], penalty)
                per_type.append(memo[key])
            chosen = combine(per_type)
        gold = e.row.get("gold_facts", [])
        used_i, used_j = matched(chosen, gold)
        tp += len(used_i)
        fp += len(chosen) - len(used_i)
        fn += len(gold) - len(used_j)
        for i, c in enumerate(chosen):
            per[(c.memory_type, "tp" if i in used_i else "fp")] += 1
        for j, g in enumerate(gold):
            if j not in used_j:
                per[(g["memory_type"], "fn")] += 1
    p = tp / (tp + fp) if tp + fp else 1.0
    r = tp / (tp + fn) if tp + fn else 1.0
    f = 2 * p * r / (p + r) if p + r else 0.0
    return {"precision": round(p, 4), "recall": round(r, 4), "f1": round(f, 4), "tp": tp, "fp": fp, "fn": fn,
            "per_type": {t: {k: per[(t, k)] for k in ("tp", "fp", "fn")} for t in MEMORY_TYPES}}


def print_errors(examples: list[Example], probs: list[np.ndarray], thresholds: np.ndarray, penalty: float,
                 log=print) -> None:
    """The out-of-fold misses and false facts: ``FN type 'gold evidence' best=(p of its type, argmax type, p)``
    (``best=None``: no candidate reaches the evidence) and ``FP type 'span' p=… gold_here=[types]``."""
    for e, P in zip(examples, probs):
        chosen = select(e.spans, P, MEMORY_TYPES, thresholds, length_penalty=penalty)
        gold = e.row.get("gold_facts", [])
        used_c, used_g = matched(chosen, gold)
        for j, g in enumerate(gold):
            if j in used_g:
                continue
            t = MEMORY_TYPES.index(g["memory_type"])
            reach = [k for k, s in enumerate(e.spans) if evidence_overlap(s.text, g["evidence"]) >= MATCH]
            k = max(reach, key=lambda k: P[k, t], default=None)
            best = None if k is None else (round(float(P[k, t]), 2), MEMORY_TYPES[int(P[k].argmax())],
                                           round(float(P[k].max()), 2))
            log(f"{e.row['conversation_id']} FN {g['memory_type']:22s} {g['evidence'][:80]!r} best={best}")
        for i, c in enumerate(chosen):
            if i not in used_c:
                here = [g["memory_type"] for g in gold if evidence_overlap(c.span.text, g["evidence"]) >= MATCH]
                log(f"{e.row['conversation_id']} FP {c.memory_type:22s} {c.span.text[:80]!r} "
                    f"p={c.probability:.2f} gold_here={here}")


def error_buckets(examples: list[Example], probs: list[np.ndarray], thresholds: np.ndarray, penalty: float) -> dict:
    """Where the misses and false facts come from. Misses: ``unreachable`` (no candidate span
    overlaps the gold evidence: the candidate generator's ceiling), ``wrong_type`` (a false fact
    of another type sits on the evidence), ``boundary`` (a false fact of the right type shares
    words with the evidence but fails the overlap rule), ``missed`` (nothing proposed there).
    False facts: ``on_gold`` (on a gold evidence: wrong type or a second fact of it),
    ``near_gold`` (shares content words with a gold evidence), ``question``, ``negation``,
    ``one_off``, ``third_party``, ``other`` (the cue features' patterns, first that applies)."""
    from streams.learn.extract_learned import NEGATION, ONE_OFF, QUESTION_START, THIRD_PARTY
    from streams.learn.text import fold

    def words(t):
        return {w for w in fold(t).split() if len(w) > 2}

    out = Counter()
    for e, P in zip(examples, probs):
        chosen = select(e.spans, P, MEMORY_TYPES, thresholds, length_penalty=penalty)
        gold = e.row.get("gold_facts", [])
        used_c, used_g = matched(chosen, gold)
        false = [c for i, c in enumerate(chosen) if i not in used_c]
        for j, g in enumerate(gold):
            if j in used_g:
                continue
            if not any(evidence_overlap(s.text, g["evidence"]) >= MATCH for s in e.spans):
                out["miss_unreachable"] += 1
            elif any(evidence_overlap(c.span.text, g["evidence"]) >= MATCH for c in false):
                out["miss_wrong_type"] += 1
            elif any(c.memory_type == g["memory_type"] and words(c.span.text) & words(g["evidence"]) for c in false):
                out["miss_boundary"] += 1
            else:
                out["miss_not_proposed"] += 1
        for c in false:
            f = fold(c.span.text)
            msg = e.row["messages"][c.span.message_index]["text"]
            if any(evidence_overlap(c.span.text, g["evidence"]) >= MATCH for g in gold):
                kind = "on_gold"
            elif any(words(c.span.text) & words(g["evidence"]) for g in gold):
                kind = "near_gold"
            elif f.rstrip().endswith("?") or msg[c.span.end:].lstrip()[:1] == "?" or QUESTION_START.search(f):
                kind = "question"
            elif NEGATION.search(f):
                kind = "negation"
            elif ONE_OFF.search(f):
                kind = "one_off"
            elif THIRD_PARTY.search(f):
                kind = "third_party"
            else:
                kind = "other"
            out["false_" + kind] += 1
    return dict(sorted(out.items()))


def tune_thresholds(examples: list[Example], probs: list[np.ndarray], penalty: float = 0.0,
                    memo: dict | None = None) -> np.ndarray:
    """Coordinate ascent on F1: one global threshold, then each type's, twice over. ``memo``: the
    selections already made for these probability arrays (``score``), shared by the caller's ascents."""
    memo = {} if memo is None else memo
    best = max(THRESHOLD_GRID,
               key=lambda th: (score(examples, probs, np.full(len(MEMORY_TYPES), th), penalty, memo)["f1"], th))
    thr = np.full(len(MEMORY_TYPES), best, dtype=np.float32)
    for _ in range(2):
        for t in range(len(MEMORY_TYPES)):
            def f1_with(th, t=t):
                trial = thr.copy()
                trial[t] = th
                return score(examples, probs, trial, penalty, memo)["f1"], th
            thr[t] = max(THRESHOLD_GRID, key=f1_with)
    return thr


def out_of_fold(examples: list[Example], folds: list[list[int]], C: float,
                extra: list[Example] = ()) -> list[np.ndarray]:
    """Out-of-fold probabilities of ``examples``; ``extra`` is always on the training side."""
    probs: list[np.ndarray | None] = [None] * len(examples)
    for test in folds:
        train = [examples[i] for i in range(len(examples)) if i not in set(test)] + list(extra)
        m = fit(train, C)
        for i in test:
            probs[i] = probs_of(examples[i], m)
    return probs  # type: ignore[return-value]


#: The cross-source step's writer groups: the writers are dealt round-robin (in source order) into at most this
#: many groups, and each group is predicted by a model fit on the other groups, with thresholds tuned on the other
#: groups' predictions. Until stop 48 every writer was its own group: with 48 writers the 48 fits took 83 minutes on
#: one core and each length penalty's 48 threshold ascents more than 15 more, so the retraining no longer finished
#: in a session (docs/quality-log.md, stops 46-48). Eight groups fit eight models, each on 7/8 of the writers
#: instead of 47/48; every figure is still out of source (no model or threshold read the writer it scores).
XS_GROUPS = 8


def writer_groups(names: list[str], k: int = XS_GROUPS) -> list[list[str]]:
    """``names`` dealt round-robin into ``min(k, len(names))`` groups: deterministic, and every writer its own
    group when there are at most ``k``."""
    k = max(1, min(k, len(names)))
    return [names[i::k] for i in range(k)]


def cross_source(sources: dict[str, list[Example]], C: float, penalties=PENALTY_GRID,
                 log=print, groups: list[list[str]] | None = None) -> tuple[dict, dict]:
    """Leave-one-group-of-writers-out (``writer_groups``): for every group of writing sources (the corpus,
    each written file), fit on the other groups and predict it; then, per length penalty, score each source
    with thresholds tuned on the *other* groups' out-of-source predictions (so neither the model nor its
    thresholds saw that writer). Grouped CV inside one source overstates transfer to conversations written by
    someone else; this is the honest figure to tune on. Returns ``({penalty: result}, probs)``,
    a result holding each source's score, their macro F1 and the pooled score."""
    names = [n for n in sources if sources[n]]
    groups = groups if groups is not None else writer_groups(names)
    probs = {}
    for group in groups:
        m = fit([e for o in names if o not in group for e in sources[o]], C)
        for n in group:
            probs[n] = [probs_of(e, m) for e in sources[n]]
    reach = {n: f"{sum(any(evidence_overlap(s.text, g['evidence']) >= MATCH for s in e.spans) for e in sources[n] for g in e.row.get('gold_facts', []))}"
                f"/{sum(len(e.row.get('gold_facts', [])) for e in sources[n])}" for n in names}
    results = {}
    memo: dict = {}   # every ascent below reads the same probability arrays: one memo for all (``score``)
    for pen in penalties:
        thr_of = {}
        for group in groups:
            others = [o for o in names if o not in group]
            thr_of.update(dict.fromkeys(group, tune_thresholds(
                [e for o in others for e in sources[o]], [p for o in others for p in probs[o]], pen, memo)))
        per = {n: score(sources[n], probs[n], thr_of[n], pen) for n in names}
        buckets = {n: error_buckets(sources[n], probs[n], thr_of[n], pen) for n in names}
        pooled_ex = [e for n in names for e in sources[n]]
        pooled_p = [p for n in names for p in probs[n]]
        pooled_thr = tune_thresholds(pooled_ex, pooled_p, pen, memo)
        pooled = score(pooled_ex, pooled_p, pooled_thr, pen)
        macro = round(float(np.mean([per[n]["f1"] for n in names])), 4)
        results[pen] = {"C": C, "length_penalty": pen, "macro_f1": macro, "per_source": per, "reachable": reach,
                        "groups": groups,
                        "source_thresholds": {n: [float(round(x, 2)) for x in thr_of[n]] for n in names},
                        "pooled": {k: v for k, v in pooled.items() if k != "per_type"}, "buckets": buckets,
                        "pooled_thresholds": [float(round(x, 2)) for x in pooled_thr]}
        log(f"  C={C} length penalty {pen}: cross-source macro F1={macro:.3f} — " + "; ".join(
            f"{n} P={per[n]['precision']:.3f} R={per[n]['recall']:.3f} F1={per[n]['f1']:.3f}" for n in names))
    return results, probs


# ------------------------------------------------------------------ the gate
#: The gate's regularisation (0.3 and 1 measured alike; the span's embedding as gate features lowered the F1).
GATE_C = 0.3
GATE_GRID = (0.0,) + tuple(round(x, 2) for x in np.arange(0.1, 0.7, 0.05))
#: Issue 13's extraction targets (precision, recall). The gate's threshold is the one whose pooled
#: out-of-source figures come closest to meeting both (``pick_gate_threshold``). Until stop 45 it was the best
#: pooled F1, a flat criterion: stop 44's retraining moved it 0.35 -> 0.5 for a macro F1 change of 0.001, and the
#: operating point swung with it (recall 0.780 -> 0.764, precision 0.821 -> 0.842; docs/quality-log.md, stop 45).
GATE_TARGETS = (0.85, 0.75)


def target_merit(counts, targets=GATE_TARGETS) -> float:
    """How near (tp, fp, fn) comes to meeting both targets: the lower of precision/target and
    recall/target (1.0 or more meets both). Unlike F1 it does not trade a precision below its target
    for recall above its own."""
    f = _prf(counts)
    return min(f["precision"] / targets[0], f["recall"] / targets[1])


def pick_gate_threshold(counts_at: dict) -> float:
    """The gate threshold (a key of ``counts_at``, which maps each to pooled (tp, fp, fn)) with the best
    ``target_merit``; ties to the lowest threshold."""
    return max(counts_at, key=lambda g: (round(target_merit(counts_at[g]), 4), -g))


def gate_rows(examples: list[Example], probs: list[np.ndarray], thresholds, penalty: float) -> list[tuple]:
    """Per conversation: the proposals (``gated_proposals``), their gate features and whether each is a
    right fact (one-to-one matched to a gold fact)."""
    thr = np.asarray(thresholds, dtype=np.float32)
    out = []
    for e, P in zip(examples, probs):
        chosen = gated_proposals(e.spans, P, MEMORY_TYPES, thr, penalty, GATE_SCALE) if len(e.spans) else []
        F = gate_features(e.spans, P, e.X, chosen, thr * GATE_SCALE, len(e.row["messages"]))
        used_i, _ = matched(chosen, e.row.get("gold_facts", []))
        out.append((chosen, F, np.array([int(i in used_i) for i in range(len(chosen))], dtype=np.int8)))
    return out


def fit_gate(rows: list[tuple]) -> tuple[np.ndarray, float]:
    from sklearn.linear_model import LogisticRegression

    X = np.vstack([F for _, F, y in rows if len(y)])
    y = np.concatenate([y for _, F, y in rows if len(y)])
    with deterministic():
        g = LogisticRegression(C=GATE_C, max_iter=3000, solver="lbfgs").fit(X, y)
    return g.coef_[0].astype(np.float64), float(g.intercept_[0])


def gated_counts(examples: list[Example], rows: list[tuple], gate: tuple[np.ndarray, float], g: float) -> np.ndarray:
    """(tp, fp, fn) of the gated selection: proposals whose gate probability reaches ``g``, at most five."""
    tp = fp = fn = 0
    for e, (chosen, F, _) in zip(examples, rows):
        q = gate_probability(F, *gate)
        keep = [c for c, x in zip(chosen, q) if x >= g][:MAX_FACTS]
        gold = e.row.get("gold_facts", [])
        used_i, used_j = matched(keep, gold)
        tp, fp, fn = tp + len(used_i), fp + len(keep) - len(used_i), fn + len(gold) - len(used_j)
    return np.array([tp, fp, fn])


def _prf(counts) -> dict:
    tp, fp, fn = (int(x) for x in counts)
    p = tp / (tp + fp) if tp + fp else 1.0
    r = tp / (tp + fn) if tp + fn else 1.0
    return {"precision": round(p, 4), "recall": round(r, 4), "f1": round(2 * p * r / (p + r) if p + r else 0.0, 4),
            "tp": tp, "fp": fp, "fn": fn}


def train_gate(sources: dict[str, list[Example]], probs: dict[str, list[np.ndarray]],
               source_thresholds: dict[str, list[float]], penalty: float, log=print,
               groups: list[list[str]] | None = None) -> tuple[np.ndarray, float, float, dict]:
    """The second-stage gate, learnt from out-of-source predictions (each writer's proposals made by a
    model that never read that writer, at ``GATE_SCALE`` × thresholds tuned on the other writers): is
    this proposal a right fact? Scored the cross-source way: each writer's proposals judged by a gate
    fit on the other groups' proposals (``writer_groups``, as ``cross_source``), its threshold picked on theirs
    (``pick_gate_threshold``). The
    shipped gate is fit on every writer's proposals, its threshold picked the same way on those
    out-of-source gated predictions pooled. Returns (weights, bias, threshold, figures)."""
    names = [n for n in sources if sources[n]]
    groups = groups if groups is not None else writer_groups(names)
    rows = {n: gate_rows(sources[n], probs[n], source_thresholds[n], penalty) for n in names}
    gate_of: dict[str, tuple] = {}   # each writer's leave-group-out gate and its threshold
    for group in groups:
        others = [o for o in names if o not in group]
        gate = fit_gate([r for o in others for r in rows[o]])
        g = pick_gate_threshold({h: sum(gated_counts(sources[o], rows[o], gate, h) for o in others) for h in GATE_GRID})
        gate_of.update(dict.fromkeys(group, (gate, g)))
    per = {n: dict(_prf(gated_counts(sources[n], rows[n], *gate_of[n])), gate_threshold=gate_of[n][1]) for n in names}
    counts_at = {h: sum(gated_counts(sources[n], rows[n], gate_of[n][0], h) for n in names) for h in GATE_GRID}
    threshold = pick_gate_threshold(counts_at)
    weights, bias = fit_gate([r for n in names for r in rows[n]])
    macro = round(float(np.mean([per[n]["f1"] for n in names])), 4)
    pooled = _prf(sum(np.array([per[n][k] for k in ("tp", "fp", "fn")]) for n in names))
    stats = {"C": GATE_C, "scale": GATE_SCALE, "threshold": threshold, "macro_f1": macro, "pooled": pooled,
             "macro_precision": round(float(np.mean([per[n]["precision"] for n in names])), 4),
             "chosen_by": f"closest to precision {GATE_TARGETS[0]} and recall {GATE_TARGETS[1]} (pooled out-of-source)",
             "per_source": per, "pooled_at_shipped_threshold_by_leave_out_gates": _prf(counts_at[threshold]),
             "pooled_by_threshold_by_leave_out_gates": {str(h): _prf(counts_at[h]) for h in GATE_GRID}}
    log(f"gate (scale {GATE_SCALE}, threshold {threshold}): cross-source macro F1 {macro:.3f}, pooled P={pooled['precision']:.3f} "
        f"R={pooled['recall']:.3f} F1={pooled['f1']:.3f} — " + "; ".join(
            f"{n} P={r['precision']:.3f} R={r['recall']:.3f} F1={r['f1']:.3f}" for n, r in per.items()))
    return weights, bias, threshold, stats


#: Messages written for the instruction head only (``examples/train/instructions.jsonl``: instructions aimed at the
#: agent of many kinds and ordinary messages that look like them; training side only, never a scored source).
INSTRUCTION_MESSAGES = Path(__file__).resolve().parents[2] / "examples" / "train" / "instructions.jsonl"
#: How much more a missed instruction weighs than a false alarm when the head's threshold is chosen: the
#: F-beta of the leave-one-writer-out calls. A missed instruction can plant a fact (a privilege, someone
#: else's data) that every later reply trusts; a false alarm loses one message's facts.
INSTRUCTION_BETA = 2.0
INSTRUCTION_GRID = tuple(round(x, 2) for x in np.arange(0.2, 0.96, 0.05))


def pick_threshold(grid, merit) -> float:
    """The instruction head's threshold: best leave-one-writer-out F-beta (``merit``), ties to the lowest (see
    ``_train_instruction_head``)."""
    return max(grid, key=lambda t: (merit(t), -t))


def instruction_rows(path: Path = INSTRUCTION_MESSAGES) -> list[tuple[str, int]]:
    """``(text, label)`` of the instruction head's own training messages (none when the file is absent)."""
    if not Path(path).exists():
        return []
    return [(r["text"], int(bool(r["instruction"]))) for r in read_jsonl(Path(path))]


def train_instruction_head(sources: dict[str, list[dict]], embedder, log=print,
                           messages: Path = INSTRUCTION_MESSAGES):
    """``_train_instruction_head`` on one BLAS thread (``deterministic``)."""
    with deterministic():
        return _train_instruction_head(sources, embedder, log, messages)


def _contact_messages(rows: list[dict]) -> tuple[list[str], list[int], list[int]]:
    texts, labels, facts = [], [], []
    for row in rows:
        for m in row["messages"]:
            if m["role"] == "contact":
                texts.append(m["text"])
                labels.append(int(bool(m.get("instruction"))))
                facts.append(sum(1 for g in row.get("gold_facts", []) if g["evidence"] in m["text"]))
    return texts, labels, facts


def _train_instruction_head(sources: dict[str, list[dict]], embedder, log=print, messages: Path = INSTRUCTION_MESSAGES):
    """Message-level classifier of ``"instruction": true`` over every writer's contact messages plus the head's own
    training messages (``INSTRUCTION_MESSAGES``).

    The threshold is chosen where the head carries to a writer it never read: each writer's messages are scored by
    a head fit on the other writers (and the own messages), and the threshold is the best F-beta
    (``INSTRUCTION_BETA``) of those calls, ties to the lower one. The head is judged alone there, without the
    explicit guard: the guard's patterns were written after reading these writers, so on them it hides what the
    head would miss on a new one (stop 33: the guard caught 160 of 169 tuning instructions but 9 of 16 of two fresh
    writers'). Until stop 32 the threshold was the best F1 of (guard OR head) under a grouped CV within writers:
    0.65, which let 5 of those 16 through."""
    from sklearn.linear_model import LogisticRegression

    names = list(sources)
    per = {n: _contact_messages(sources[n]) for n in names}
    own = instruction_rows(messages)
    X = {n: message_features(per[n][0], embedder).astype(np.float64) for n in names}
    y = {n: np.array(per[n][1]) for n in names}
    Xo = message_features([t for t, _ in own], embedder).astype(np.float64) if own else None
    yo = np.array([lab for _, lab in own])
    if sum(int(v.sum()) for v in y.values()) + int(yo.sum()) < 2:
        return None, 0.0, 1.0, {}

    def fit(parts_X, parts_y):
        return LogisticRegression(C=1.0, class_weight="balanced", max_iter=2000).fit(np.vstack(parts_X),
                                                                                      np.concatenate(parts_y))

    extra_X, extra_y = ([Xo], [yo]) if Xo is not None else ([], [])
    oof = {}
    for n in names:   # a writer is scored only when the others (or the own messages) hold both classes
        rest = [m for m in names if m != n]
        if len({int(v) for m in rest for v in y[m]} | {int(v) for v in yo}) < 2:
            continue
        clf = fit([X[m] for m in rest] + extra_X, [y[m] for m in rest] + extra_y)
        oof[n] = clf.predict_proba(X[n])[:, 1]

    def counts(th):
        tp = fp = fn = lost = 0
        for n, p in oof.items():
            pred, lab = p >= th, y[n] == 1
            tp += int((pred & lab).sum())
            fn += int((~pred & lab).sum())
            fp += int((pred & ~lab).sum())
            lost += sum(per[n][2][i] for i in np.where(pred & ~lab)[0])
        return tp, fp, fn, lost

    def f_beta(th):
        tp, fp, fn, _ = counts(th)
        b2 = INSTRUCTION_BETA ** 2
        return (1 + b2) * tp / ((1 + b2) * tp + b2 * fn + fp) if tp else 0.0

    th = pick_threshold(INSTRUCTION_GRID, f_beta)
    log("instruction head, each writer left out: " + ", ".join(f"{t}: F{INSTRUCTION_BETA:g} {f_beta(t):.3f}"
                                                               for t in INSTRUCTION_GRID))
    tp, fp, fn, lost = counts(th)
    guard = {n: np.array([is_instruction(t) for t in per[n][0]]) for n in names}
    guard_only = {"tp": int(sum((guard[n] & (y[n] == 1)).sum() for n in oof)),
                  "fp": int(sum((guard[n] & (y[n] == 0)).sum() for n in oof))}
    both = {"tp": int(sum(((guard[n] | (oof[n] >= th)) & (y[n] == 1)).sum() for n in oof)),
            "fp": int(sum(((guard[n] | (oof[n] >= th)) & (y[n] == 0)).sum() for n in oof))}
    clf = fit([X[n] for n in names] + extra_X, [y[n] for n in names] + extra_y)
    stats = {"messages": int(sum(len(y[n]) for n in names)), "instructions": int(sum(y[n].sum() for n in names)),
             "own_messages": len(own), "own_instructions": int(yo.sum()),
             "own_messages_sha256": file_sha256(Path(messages)) if own else None,
             "threshold": th, "chosen_by": f"leave-one-writer-out F{INSTRUCTION_BETA:g}, the head alone",
             "writers_scored": len(oof),
             "leave_one_writer_out": {"tp": tp, "fp": fp, "fn": fn, "f_beta": round(f_beta(th), 4),
                                      "gold_facts_in_false_alarms": int(lost)},
             "leave_one_writer_out_with_guard": both, "guard_alone": guard_only}
    log(f"instruction messages: {stats['instructions']}/{stats['messages']} (+{len(own)} of the head's own, "
        f"{stats['own_instructions']} instructions); guard alone catches {guard_only['tp']} "
        f"({guard_only['fp']} false alarms); the head alone, each writer left out, at {th}: caught {tp}, missed {fn}, "
        f"false alarms {fp} ({lost} gold facts in them); with the guard: caught {both['tp']}, false alarms {both['fp']}")
    return clf.coef_[0].astype(np.float32), float(clf.intercept_[0]), th, stats


def _written_paths(written) -> list[Path]:
    if written is None:
        return []
    paths = [written] if isinstance(written, (str, Path)) else list(written)
    return [Path(p) for p in paths if Path(p).exists()]


def train(corpus: Path, n_folds: int = 5, *, embedder, log=print, c_grid=C_GRID,
          written=WRITTEN_FILES, errors: bool = False) -> LinearModel:
    """``embedder``: the one the artefact is trained with (``main`` gets USE from the composition root)."""
    with deterministic():
        return _train(corpus, n_folds, embedder=embedder, log=log, c_grid=c_grid, written=written, errors=errors)


def _train(corpus: Path, n_folds: int = 5, *, embedder, log=print, c_grid=C_GRID,
           written=WRITTEN_FILES, errors: bool = False) -> LinearModel:
    t0 = time.perf_counter()
    path = Path(corpus) / "conversations.jsonl"
    by_file = conversation_sources(corpus, written)   # the corpus's rows, then each written file's
    rows = by_file.pop(_relative(path))
    examples = build_examples(rows, embedder)
    for e in examples:
        e.weight = DEV_WEIGHT
    n_spans = sum(len(e.spans) for e in examples)
    gold = sum(len(e.row.get("gold_facts", [])) for e in examples)
    covered = sum(int(any(evidence_overlap(s.text, g["evidence"]) >= MATCH for s in e.spans))
                  for e in examples for g in e.row.get("gold_facts", []))
    log(f"{len(rows)} conversations, {gold} gold facts, {n_spans} candidate spans; "
        f"{covered}/{gold} gold evidences reachable by a candidate ({time.perf_counter() - t0:.0f} s)")
    written_paths = _written_paths(written)
    written_rows = [r for rs in by_file.values() for r in rs]
    # One source per writer (the corpus, each written file) for the cross-source figures.
    sources = {_relative(path): examples, **{name: build_examples(rs, embedder) for name, rs in by_file.items()}}
    extra = [e for name in by_file for e in sources[name]]
    if written_rows:
        log(f"plus {len(written_rows)} conversations written for the project "
            f"({sum(len(r.get('gold_facts', [])) for r in written_rows)} gold facts), training side only")
    folds = folds_by_group(examples, n_folds)
    results, oof, xs, xs_probs = {}, {}, {}, {}
    for C in c_grid:
        probs = oof[C] = out_of_fold(examples, folds, C, extra)
        for pen in PENALTY_GRID:
            thr = tune_thresholds(examples, probs, pen)
            results[(C, pen)] = (score(examples, probs, thr, pen), thr)
            r = results[(C, pen)][0]
            log(f"  C={C} length penalty {pen}: cross-validated P={r['precision']:.3f} R={r['recall']:.3f} "
                f"F1={r['f1']:.3f}")
        if len(sources) >= 2:
            res, xs_probs[C] = cross_source(sources, C, PENALTY_GRID, log)
            xs.update({(C, pen): v for pen, v in res.items()})
    # C and the length penalty by the mean of the cross-source macro F1 (transfer to another
    # writer) and the grouped CV F1: either alone moves on differences within noise (±0.005);
    # the thresholds by the corpus's grouped CV at that setting (tuned on the corpus's own
    # out-of-fold predictions they transferred best to another writer).
    def merit(k):
        return ((xs[k]["macro_f1"] + results[k][0]["f1"]) / 2 if k in xs else results[k][0]["f1"], -k[0], -k[1])

    C, penalty = max(results, key=merit)
    cv, cv_thresholds = results[(C, penalty)]
    # The shipped thresholds: tuned on every writer's out-of-source predictions pooled (each source
    # predicted by a fit on the others), not on the corpus's grouped CV. Probabilities on a writer the
    # model never read run lower than on a customer of a writer it did: CV thresholds (0.5–0.65) cut
    # the unseen writers' recall. Measured at stop 27 (h-ext5): on the other writers' own xs
    # predictions, thresholds tuned on the rest of the writers beat dev-CV thresholds (macro F1 0.717 ->
    # 0.732, recall 0.646 -> 0.716), and on the validation sets recall rose 0.705 -> 0.780.
    thresholds = (np.array(xs[(C, penalty)]["pooled_thresholds"], dtype=np.float32)
                  if THRESHOLDS_FROM == "cross_source" and (C, penalty) in xs else cv_thresholds)
    cv_shipped = score(examples, oof[C], thresholds, penalty)
    gate, cv_gated = (None, 0.0, 1.0, None), None
    if USE_GATE and (C, penalty) in xs:
        gate = train_gate(sources, xs_probs[C], xs[(C, penalty)]["source_thresholds"], penalty, log)
        # The corpus's grouped CV with the gate: its out-of-fold proposals at the shipped thresholds, judged by
        # the gate fit on the other writers' proposals (it never read the corpus's labels).
        corpus_name = _relative(path)
        dev_gate = fit_gate([r for n in sources if n != corpus_name
                             for r in gate_rows(sources[n], xs_probs[C][n], xs[(C, penalty)]["source_thresholds"][n], penalty)])
        cv_gated = _prf(gated_counts(examples, gate_rows(examples, oof[C], thresholds, penalty), dev_gate, gate[2]))
        log(f"cross-validated on the corpus with the gate (fit on the other writers): P={cv_gated['precision']:.3f} "
            f"R={cv_gated['recall']:.3f} F1={cv_gated['f1']:.3f}")
    if errors:
        print_errors(examples, oof[C], thresholds, penalty, log)
    m = fit(examples + extra, C)
    iw, ib, ith, istats = train_instruction_head({_relative(path): rows, **by_file}, embedder, log)
    meta = {
        "version": VERSION,
        "embedder": {"provider": "use", "model": getattr(embedder, "name", "use-multilingual-v3")},
        "features": {"embedding_dim": int(getattr(embedder, "dim", 512)), "hash_dim": HASH_DIM, "cues": N_CUES,
                     "rule_types": len(MEMORY_TYPES), "max_window": MAX_WINDOW},
        "training": {"corpus": str(Path(corpus).resolve().relative_to(Path(__file__).resolve().parents[2]))
                     if Path(corpus).resolve().is_relative_to(Path(__file__).resolve().parents[2]) else str(corpus),
                     "conversations_sha256": file_sha256(path), "conversations": len(rows), "gold_facts": gold,
                     "candidate_spans": n_spans, "reachable_gold": covered, "folds": n_folds,
                     "grouped_by": "account_id:contact_id", "C": C, "corpus_weight": DEV_WEIGHT,
                     "written": [_relative(p) for p in written_paths] or None,
                     "written_sha256": {_relative(p): file_sha256(p) for p in written_paths} or None,
                     "written_conversations": len(written_rows)},
        "stages": "fact × type",
        "length_penalty": penalty,
        "thresholds": {t: float(round(x, 2)) for t, x in zip(MEMORY_TYPES, thresholds)},
        "cross_validated": cv,
        "cross_validated_cv_thresholds": {t: float(round(x, 2)) for t, x in zip(MEMORY_TYPES, cv_thresholds)},
        "cross_validated_at_shipped_thresholds": {k: v for k, v in cv_shipped.items() if k != "per_type"},
        "cross_source": ({"sources": list(sources), "chosen": xs[(C, penalty)],
                          "macro_f1_grid": {f"C={c} penalty={p}": v["macro_f1"] for (c, p), v in xs.items()}}
                         if xs else None),
        "instruction_classifier": istats,
        "gate": gate[3],
        "cross_validated_gated": cv_gated,
    }
    log(f"chosen C={C}, length penalty {penalty}; thresholds " + ", ".join(f"{t}={x:.2f}" for t, x in zip(MEMORY_TYPES, thresholds)))
    if xs:
        ch = xs[(C, penalty)]
        log("cross-source (fit on the other writers, thresholds tuned on theirs): " + "; ".join(
            f"{n} P={r['precision']:.3f} R={r['recall']:.3f} F1={r['f1']:.3f}" for n, r in ch["per_source"].items())
            + f"; macro F1 {ch['macro_f1']:.3f}")
        for n, b in ch["buckets"].items():
            log(f"  {n} cross-source errors: " + ", ".join(f"{k} {v}" for k, v in b.items()))
    log(f"cross-validated on {corpus} (grouped by customer, {n_folds} folds): "
        f"precision {cv['precision']:.3f}, recall {cv['recall']:.3f}, F1 {cv['f1']:.3f} "
        f"(tp {cv['tp']}, fp {cv['fp']}, fn {cv['fn']}) at its own thresholds; at the shipped ({THRESHOLDS_FROM}) "
        f"thresholds precision {cv_shipped['precision']:.3f}, recall {cv_shipped['recall']:.3f}, F1 {cv_shipped['f1']:.3f}; "
        f"{time.perf_counter() - t0:.0f} s")
    return LinearModel(tuple(MEMORY_TYPES), m.W, m.b, thresholds.astype(np.float32), meta, iw, ib, ith,
                       fact_weights=m.fw, fact_bias=m.fb, gate_weights=gate[0], gate_bias=gate[1],
                       gate_threshold=gate[2], gate_scale=GATE_SCALE if gate[0] is not None else 1.0)


def conversation_sources(corpus: Path, written) -> dict[str, list[dict]]:
    """Each writer's conversations by its file (repository-relative): the corpus first, then every training-only
    file of ``written`` that exists. The writers of the cross-source figures and of the instruction head."""
    path = Path(corpus) / "conversations.jsonl"
    return {_relative(path): list(read_jsonl(path)), **{_relative(p): list(read_jsonl(p)) for p in _written_paths(written)}}


def _relative(path: Path) -> str:
    root = Path(__file__).resolve().parents[2]
    return str(path.resolve().relative_to(root)) if path.resolve().is_relative_to(root) else str(path)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m streams.learn.train_extractor", description=__doc__.split("\n\n")[0])
    ap.add_argument("--corpus", type=Path, default=DEV_DIR)
    ap.add_argument("--out", type=Path, default=ARTEFACT)
    ap.add_argument("--folds", type=int, default=5)
    ap.add_argument("--check", action="store_true", help="train in memory; compare with the shipped artefact")
    ap.add_argument("--errors", action="store_true", help="print the cross-validated misses and false facts")
    ap.add_argument("--written", type=Path, nargs="*", default=None,
                    help="the training-only conversation files (default: WRITTEN_FILES); each is a cross-source source")
    ap.add_argument("--instruction-head", action="store_true",
                    help="retrain only the instruction head into the shipped artefact (the same head a full training "
                         "fits: it reads no other stage)")
    a = ap.parse_args(argv)
    if "heldout" in Path(a.corpus).resolve().parts:
        print("error: the held-out half is for reporting only; train on examples/dev", file=sys.stderr)
        return 2
    from streams.bootstrap import Container

    embedder = Container().in_process_embedder("use", "use-multilingual-v3")
    written_files = WRITTEN_FILES if a.written is None else a.written
    if a.instruction_head:
        model = LinearModel.load(a.out)
        model.instruction_weights, model.instruction_bias, model.instruction_threshold, stats = \
            train_instruction_head(conversation_sources(a.corpus, written_files), embedder)
        model.meta["instruction_classifier"] = stats
        model.save(a.out)
        print(f"wrote the instruction head into {a.out.with_suffix('.npz')} (threshold {stats['threshold']})")
        return 0
    model = train(a.corpus, a.folds, embedder=embedder, errors=a.errors, written=written_files)
    if a.check:
        shipped = LinearModel.load(a.out)
        same = (shipped.meta.get("cross_validated") == model.meta["cross_validated"]
                and shipped.meta.get("instruction_classifier") == model.meta["instruction_classifier"]
                and all(shipped.meta["training"].get(k) == model.meta["training"].get(k)
                        for k in ("conversations_sha256", "written_sha256")))
        print("artefact is up to date" if same else "artefact differs from a fresh training: run make train")
        return 0 if same else 1
    model.save(a.out)
    size = sum(p.stat().st_size for p in (a.out.with_suffix(".npz"), a.out.with_suffix(".json")))
    print(f"wrote {a.out.with_suffix('.npz')} and .json ({size / 1024:.0f} KB)")
    xs = model.meta.get("cross_source") or {}
    print(json.dumps({"cross_validated": {k: v for k, v in model.meta["cross_validated"].items() if k != "per_type"},
                      "cross_source": {n: {k: v for k, v in r.items() if k != "per_type"}
                                       for n, r in xs.get("chosen", {}).get("per_source", {}).items()}}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
