"""Train the offline contradiction judge on the development pairs (``make train``).

    python -m streams.learn.train_contradiction [--pairs FILE ...] [--out PATH]

Trains on the development pairs (``examples/dev/contradictions.jsonl``) plus
the pairs written for the project outside the corpus
(``tests/learn/data/contradictions_written.jsonl`` and ``contradictions_written3.jsonl``:
changes of state in chat spelling — diets, health, jobs, studies, payments, partners,
addresses, pets, habits — and look-alike pairs that do not contradict: additions,
refinements, the same fact restated, instructions hidden in a fact).
``contradictions_written2.jsonl`` is never trained on: it checks the judge. Leave-one-out
cross-validation picks the L2 strength and prints its accuracy; the model is
then fitted on every pair and written to ``streams/learn/models/contradiction.json``
(deterministic: the same pairs give the same file). The held-out half is never
read here (refused if given).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from pathlib import Path

from streams.learn.contradiction import MemoryView, rules_contradicts
from streams.learn.contradiction_model import FEATURES, MODEL_FILE, LearnedJudge, Pair, features, fit_logistic
from streams.learn.fixtures import DEV_DIR, read_jsonl

L2_GRID = (0.3, 1.0, 3.0, 10.0)
#: The development pairs of the corpus, plus pairs written for the project outside
#: the corpus (never the held-out half).
TRAINING_PAIRS = [DEV_DIR / "contradictions.jsonl",
                  Path(__file__).resolve().parents[2] / "tests" / "learn" / "data" / "contradictions_written.jsonl",
                  Path(__file__).resolve().parents[2] / "tests" / "learn" / "data" / "contradictions_written3.jsonl"]


def pair_of(row: dict) -> Pair:
    old = MemoryView(memory_type=row["memory_type"], content=row["old"])
    new = MemoryView(memory_type=row.get("new_memory_type", row["memory_type"]), content=row["new"])
    return Pair(row["memory_type"], row["old"], row["new"], rules_contradicts(old, new).reason)


def loo_accuracy(rows: list[list[float]], labels: list[int], l2: float) -> float:
    right = 0
    for i in range(len(rows)):
        w, b = fit_logistic(rows[:i] + rows[i + 1:], labels[:i] + labels[i + 1:], l2=l2, steps=1500)
        right += (LearnedJudge(w, b).score(rows[i]) >= 0.5) == bool(labels[i])
    return right / len(rows)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m streams.learn.train_contradiction")
    parser.add_argument("--pairs", type=Path, nargs="+", default=TRAINING_PAIRS)
    parser.add_argument("--out", type=Path, default=MODEL_FILE)
    args = parser.parse_args(argv)
    if any("heldout" in p.resolve().parts for p in args.pairs):
        print("refusing to train on the held-out half", file=sys.stderr)
        return 2
    data = [row for p in args.pairs if p.exists() for row in read_jsonl(p)]
    rows = [features(pair_of(r)) for r in data]
    labels = [int(bool(r["contradicts"])) for r in data]
    scores = {l2: loo_accuracy(rows, labels, l2) for l2 in L2_GRID}
    best = max(L2_GRID, key=lambda l2: (scores[l2], l2))
    weights, bias = fit_logistic(rows, labels, l2=best)
    judge = LearnedJudge(weights, bias)
    train_acc = sum((judge.score(x) >= 0.5) == bool(y) for x, y in zip(rows, labels)) / len(rows)
    digest = hashlib.sha256(b"".join(p.read_bytes() for p in args.pairs if p.exists())).hexdigest()[:12]
    names = [f"{p.parent.name}/{p.name}" for p in args.pairs if p.exists()]
    model = {"version": f"contradiction-lr-{digest}", "trained_on": names, "pairs": len(rows),
             "l2": best, "loo_accuracy": round(scores[best], 4), "train_accuracy": round(train_acc, 4),
             "threshold": 0.5, "features": FEATURES, "weights": weights, "bias": bias}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(model, indent=1) + "\n")
    print(f"contradiction judge: {len(rows)} pairs ({', '.join(names)}), leave-one-out accuracy "
          + ", ".join(f"l2={k}: {v:.3f}" for k, v in scores.items()))
    print(f"chosen l2={best}; training accuracy {train_acc:.3f}; written {args.out}")
    for name, w in sorted(zip(FEATURES, weights), key=lambda x: -abs(x[1])):
        print(f"  {name:20} {w:+.3f}")
    print(f"  {'bias':20} {bias:+.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
