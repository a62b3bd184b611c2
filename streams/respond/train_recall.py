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
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from streams.respond.rank import build_configured_embedder, load_cases
from streams.respond.recall import MemoryFact, fact_passage_text, message_parts, score_parts
from streams.respond.recall_examples import READABLE, RERANK_FEATURES, RERANK_FILE, RecallExamples

C = 1.0   # inverse L2 strength (1.0 beat 0.1 and 10 on the leave-one-set-out mean recall@3, stop 31)


def case_features(case: dict, embedder, examples) -> tuple[np.ndarray, list[int]]:
    """Per fact of the case, [hand-built score, *RERANK_FEATURES]; and the fact indices, in order."""
    facts_in = case["contact_facts"]
    passages = embedder.embed_passages([fact_passage_text(f["memory_type"], f["content"]) for f in facts_in])
    query = embedder.embed_queries([case["query"]])[0]
    parts = message_parts(case["query"])
    facts = [MemoryFact(id=i, memory_type=f["memory_type"], content=f["content"], confidence=1.0,
                        scope="global", source_unit_id=None, embedding=passages[i])
             for i, f in enumerate(facts_in)]
    rows = score_parts(query, facts, None, case["query"], embedder.embed_queries(parts) if parts else None,
                       examples)
    if not rows:
        return np.zeros((0, 1 + len(RERANK_FEATURES))), []
    mean = sum(r.similarity for r in rows) / len(rows)
    X = np.array([[r.base, r.similarity - mean, r.vote, r.prior] for r in rows], dtype=np.float64)
    return X, [r.index for r in rows]


def set_features(embedder, root: Path = Path(".")) -> dict[str, list[tuple[np.ndarray, list[int], set[int]]]]:
    """Per readable set, per case: (features, fact indices, relevant indices), its own cases left out
    of the labelled memory."""
    out = {}
    for s, rel in READABLE.items():
        if not (root / rel).exists():
            continue
        ex = RecallExamples(embedder, exclude_sources={s}, rerank=None)
        out[s] = [(*case_features(c, embedder, ex), set(c.get("relevant", []))) for c in load_cases(root / rel)]
    return out


def fit(cases) -> np.ndarray:
    """Pairwise logistic weights of the parts, per unit of the hand-built score."""
    from sklearn.linear_model import LogisticRegression

    X, y = [], []
    for F, idx, rel in cases:
        pos = [n for n, k in enumerate(idx) if k in rel]
        neg = [n for n, k in enumerate(idx) if k not in rel]
        for i in pos:
            for j in neg:
                X += [F[i] - F[j], F[j] - F[i]]
                y += [1, 0]
    w = LogisticRegression(C=C, fit_intercept=False, max_iter=5000).fit(np.array(X), np.array(y)).coef_[0]
    return w[1:] / w[0]


def recall(cases, w: np.ndarray | None) -> tuple[float, float]:
    """Mean recall@3 / @5 over the cases with relevant facts, ranked by score (+ the parts × ``w``)."""
    r3, r5 = [], []
    for F, idx, rel in cases:
        if not rel:
            continue
        s = F[:, 0] + (F[:, 1:] @ w if w is not None else 0.0)
        top = [idx[n] for n in sorted(range(len(idx)), key=lambda n: (-s[n], idx[n]))]
        r3.append(len(rel & set(top[:3])) / len(rel))
        r5.append(len(rel & set(top[:5])) / len(rel))
    return (float(np.mean(r3)), float(np.mean(r5))) if r3 else (0.0, 0.0)


def train(embedder, out: Path = RERANK_FILE, root: Path = Path(".")) -> dict:
    feats = set_features(embedder, root)
    weights = {"*": fit([c for cs in feats.values() for c in cs])}
    report = {}
    for s in feats:
        weights[s] = fit([c for t, cs in feats.items() if t != s for c in cs])
        report[s] = (recall(feats[s], None), recall(feats[s], weights[s]))
    out.write_text(json.dumps({"features": list(RERANK_FEATURES), "C": C,
                               "weights": {k: [round(float(x), 5) for x in v] for k, v in weights.items()}},
                              indent=1) + "\n", encoding="utf-8")
    return report


def main() -> None:
    report = train(build_configured_embedder())
    for s, ((b3, b5), (a3, a5)) in report.items():
        print(f"{s:10s} recall@3 {b3:.3f} → {a3:.3f}   @5 {b5:.3f} → {a5:.3f}")
    n = len(report)
    print(f"{'mean':10s} recall@3 {sum(v[0][0] for v in report.values()) / n:.3f} → "
          f"{sum(v[1][0] for v in report.values()) / n:.3f}   @5 {sum(v[0][1] for v in report.values()) / n:.3f} → "
          f"{sum(v[1][1] for v in report.values()) / n:.3f}  (leave-one-set-out, {n} sets) → {RERANK_FILE}")


if __name__ == "__main__":
    main()
