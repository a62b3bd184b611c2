"""Learn the re-weighting of recall's score parts from the labelled recall cases.

    python -m streams.respond.train_recall      # writes data/recall_rerank.json, prints leave-one-set-out

The hand-built score (``recall.score_memories``) adds the message's cosine, the word evidence, the
rules of kind, the labelled cases' vote and their type prior, each with a weight set by hand. This
fits how much more of three of those parts (``recall_examples.RERANK_FEATURES``: the cosine as its
deviation from the contact's mean, the vote, the type prior) the ranking should read, as a pairwise
logistic regression without intercept over (relevant fact − other fact of the same case) differences of
[hand-built score, parts] on the readable recall sets (``recall_examples.READABLE``), each set's parts
computed with its own cases left out of the labelled memory. The weights are divided by the score's
own, so ``score_memories`` adds them to the hand-built score. One fit per readable set without it (what
the evaluation uses when it scores that set: its figure stays out-of-sample) and one on all of them
(what the responder uses). The figures printed are leave-one-set-out: each set ranked by the fit
without it, against the hand-built score with the same labelled memory.

Each fit is made twice: the parts alone (``weights`` in the json: what an embedder other than the one fitted
with gets) and jointly with the vectors' reading (``joint`` and ``data/recall_rerank.npz``,
``recall_examples.Rerank``): message ⊙ fact per dimension (``MATCH_SCALE``) and the message's vector per memory
type of the fact (``TYPE_SCALE``), at inverse L2 strength ``C_JOINT``. Deterministic (lbfgs); ~4 min on 2 cores.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import NamedTuple

import numpy as np

from streams.respond.rank import build_configured_embedder, load_cases
from streams.respond.recall import MemoryFact, fact_passage_text, message_parts, score_parts
from streams.respond.recall_examples import READABLE, RERANK_FEATURES, RERANK_FILE, RecallExamples, rerank_weights

C = 1.0   # inverse L2 strength of the parts' own fit (1.0 beat 0.1 and 10 on the leave-one-set-out mean recall@3, stop 31)
#: The joint fit (the parts and the vectors' reading, ``recall_examples.Rerank``): its inverse L2 strength and the
#: scale of each block of vector features (a larger scale is a weaker prior on that block). Chosen at stop 35 by the
#: leave-one-set-out mean recall@3 over the 29 readable sets (docs/quality-log.md, "recall reads the vectors"); re-run
#: at stop 44 over 45 sets (C 0.1 / 0.3 / 1: 0.885 / 0.891 / 0.888; match scale 5: 0.889; type scale 0.25: 0.890).
C_JOINT = 0.3
MATCH_SCALE = 10.0    # message ⊙ fact, per dimension
TYPE_SCALE = 0.5      # the message's vector, per memory type of the fact


class CaseRows(NamedTuple):
    """One labelled case's facts, in ``score_parts`` order."""

    parts: np.ndarray      # per fact: [hand-built score, *RERANK_FEATURES]
    index: list[int]       # the facts' indices in the case
    relevant: set[int]
    query: np.ndarray      # the message's unit vector
    facts: np.ndarray      # the facts' unit vectors (rows)
    types: list[str]


def _unit(m: np.ndarray) -> np.ndarray:
    m = np.asarray(m, dtype=np.float64)
    return m / np.maximum(np.linalg.norm(m, axis=-1, keepdims=True), 1e-9)


def case_features(case: dict, embedder, examples) -> CaseRows:
    """Per fact of the case, [hand-built score, *RERANK_FEATURES], and the vectors the joint fit reads."""
    facts_in = case["contact_facts"]
    passages = embedder.embed_passages([fact_passage_text(f["memory_type"], f["content"]) for f in facts_in])
    query = embedder.embed_queries([case["query"]])[0]
    parts = message_parts(case["query"])
    facts = [MemoryFact(id=i, memory_type=f["memory_type"], content=f["content"], confidence=1.0,
                        scope="global", source_unit_id=None, embedding=passages[i])
             for i, f in enumerate(facts_in)]
    rows = score_parts(query, facts, None, case["query"], embedder.embed_queries(parts) if parts else None,
                       examples)
    rel = set(case.get("relevant", []))
    if not rows:
        return CaseRows(np.zeros((0, 1 + len(RERANK_FEATURES))), [], rel, _unit(query), np.zeros((0, len(query))), [])
    mean = sum(r.similarity for r in rows) / len(rows)
    X = np.array([[r.base, r.similarity - mean, r.vote, r.prior] for r in rows], dtype=np.float64)
    idx = [r.index for r in rows]
    return CaseRows(X, idx, rel, _unit(query), _unit(np.asarray([passages[k] for k in idx])),
                    [facts_in[k]["memory_type"] for k in idx])


def set_features(embedder, root: Path = Path(".")) -> dict[str, list[CaseRows]]:
    """Per readable set, per case, its own cases left out of the labelled memory."""
    out = {}
    for s, rel in READABLE.items():
        if not (root / rel).exists():
            continue
        ex = RecallExamples(embedder, exclude_sources={s}, rerank=None)
        out[s] = [case_features(c, embedder, ex) for c in load_cases(root / rel)]
    return out


def _design(c: CaseRows, types: list[str] | None) -> np.ndarray:
    """The fit's columns per fact: the parts, then (``types`` given) message ⊙ fact × ``MATCH_SCALE`` and
    the message's vector in its type's block × ``TYPE_SCALE``."""
    if types is None:
        return c.parts[:, 1:]
    d = c.query.shape[0]
    by_type = np.zeros((len(c.index), len(types) * d))
    for n, t in enumerate(c.types):
        if t in types:
            j = types.index(t)
            by_type[n, j * d:(j + 1) * d] = c.query * TYPE_SCALE
    return np.hstack([c.parts[:, 1:], c.facts * c.query * MATCH_SCALE, by_type])


def fit(cases: list[CaseRows], types: list[str] | None = None) -> np.ndarray:
    """Pairwise logistic weights of the design's columns (``_design``), per unit of the hand-built score:
    one (relevant − other) difference per pair of facts of the same case, both signs, no intercept."""
    from scipy import sparse
    from sklearn.linear_model import LogisticRegression

    blocks = []
    for c in cases:
        pos = [n for n, k in enumerate(c.index) if k in c.relevant]
        neg = [n for n, k in enumerate(c.index) if k not in c.relevant]
        pairs = [(i, j) for i in pos for j in neg]
        if not pairs:
            continue
        D = sparse.csr_matrix(np.hstack([c.parts[:, :1], _design(c, types)]))
        rows = np.repeat(np.arange(len(pairs)), 2)
        cols = np.array([n for pair in pairs for n in pair])
        S = sparse.csr_matrix((np.tile([1.0, -1.0], len(pairs)), (rows, cols)), shape=(len(pairs), D.shape[0]))
        blocks.append(S @ D)   # relevant − other, per pair
    X = sparse.vstack(blocks).tocsr()
    y = np.r_[np.ones(X.shape[0]), np.zeros(X.shape[0])]
    w = LogisticRegression(C=C if types is None else C_JOINT, fit_intercept=False,
                           max_iter=5000).fit(sparse.vstack([X, -X]).tocsr(), y).coef_[0]
    return w[1:] / w[0]


def recall(cases: list[CaseRows], w: np.ndarray | None, types: list[str] | None = None) -> tuple[float, float]:
    """Mean recall@3 / @5 over the cases with relevant facts, ranked by score (+ the design × ``w``)."""
    r3, r5 = [], []
    for c in cases:
        if not c.relevant:
            continue
        s = c.parts[:, 0] + (_design(c, types) @ w if w is not None else 0.0)
        top = [c.index[n] for n in sorted(range(len(c.index)), key=lambda n: (-s[n], c.index[n]))]
        r3.append(len(c.relevant & set(top[:3])) / len(c.relevant))
        r5.append(len(c.relevant & set(top[:5])) / len(c.relevant))
    return (float(np.mean(r3)), float(np.mean(r5))) if r3 else (0.0, 0.0)


def _split(w: np.ndarray, types: list[str], dim: int) -> tuple[list[float], np.ndarray, np.ndarray]:
    """A joint fit's weights as (parts, match per dimension, per-type rows), the scales folded in."""
    k = len(RERANK_FEATURES)
    return ([round(float(x), 5) for x in w[:k]], w[k:k + dim] * MATCH_SCALE,
            (w[k + dim:] * TYPE_SCALE).reshape(len(types), dim))


def train(embedder, out: Path = RERANK_FILE, root: Path = Path(".")) -> dict:
    """Fit the parts alone and jointly with the vectors, on every readable set and without each; write
    ``out`` (json: the parts' weights of both fits, the types, the embedder) and the vectors' weights beside
    it (``.npz``, float16). Returns {set: ((@3, @5) hand-built, parts alone, joint)}, leave-one-set-out."""
    feats = set_features(embedder, root)
    types = sorted({t for cs in feats.values() for c in cs for t in c.types})
    dim = next(c.query.shape[0] for cs in feats.values() for c in cs)
    names = ["*"] + list(feats)
    alone, joint, arrays, report = {}, {}, {}, {}
    for s in names:
        train_on = [c for t, cs in feats.items() if t != s for c in cs]
        alone[s] = fit(train_on)
        parts, match, by_type = _split(fit(train_on, types), types, dim)
        joint[s] = parts
        arrays[f"{s}/match"], arrays[f"{s}/by_type"] = match.astype(np.float16), by_type.astype(np.float16)
        if s != "*":
            loaded = np.concatenate([np.asarray(parts), arrays[f"{s}/match"] / MATCH_SCALE,
                                     (arrays[f"{s}/by_type"] / TYPE_SCALE).reshape(-1)]).astype(np.float64)
            report[s] = (recall(feats[s], None), recall(feats[s], alone[s]), recall(feats[s], loaded, types))
    out.write_text(json.dumps({"features": list(RERANK_FEATURES), "C": C, "C_joint": C_JOINT,
                               "match_scale": MATCH_SCALE, "type_scale": TYPE_SCALE,
                               "embedder": getattr(embedder, "name", None), "dim": dim, "types": types,
                               "weights": {k: [round(float(x), 5) for x in v] for k, v in alone.items()},
                               "joint": joint}, indent=1) + "\n", encoding="utf-8")
    np.savez_compressed(out.with_suffix(".npz"), **arrays)
    written = rerank_weights((), out, getattr(embedder, "name", None))
    if written is None or written.match is None:   # what the responder will load: read back, or fail the training
        raise RuntimeError(f"{out} was written but does not load as the joint re-weighting")
    return report


def main() -> None:
    report = train(build_configured_embedder())
    for s, (hand, alone, joint) in report.items():
        print(f"{s:10s} recall@3 {hand[0]:.3f} → {alone[0]:.3f} → {joint[0]:.3f}   "
              f"@5 {hand[1]:.3f} → {alone[1]:.3f} → {joint[1]:.3f}")
    n = len(report)
    mean = [[sum(v[k][j] for v in report.values()) / n for j in (0, 1)] for k in range(3)]
    print(f"{'mean':10s} recall@3 {mean[0][0]:.3f} → {mean[1][0]:.3f} → {mean[2][0]:.3f}   "
          f"@5 {mean[0][1]:.3f} → {mean[1][1]:.3f} → {mean[2][1]:.3f}  (hand-built → parts alone → with the vectors; "
          f"leave-one-set-out, {n} sets) → {RERANK_FILE}")


if __name__ == "__main__":
    main()
