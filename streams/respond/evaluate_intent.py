"""Intent accuracy on a corpus folder's questions, and the choice of the
similarity threshold of the example fallback by cross-validation.

    python -m streams.respond.evaluate_intent [FOLDER] [--folds 5]

``intent_accuracy(folder, embedder)`` is what ``make eval`` reports: the
dictionary (with chat spelling) first, then, for what it leaves open, the learnt
classifier over the message's embedding (``intent.LearntIntent``; without it,
the nearest example phrase of ``data/intent_examples.json``). ``--calibrate`` (dev only) prints, per fold, the threshold chosen on
the other folds and the accuracy it gives on the held-back fold.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

from streams.learn.fixtures import FIXTURES_DIR
from streams.respond.intent import EXAMPLE_THRESHOLD, IntentExamples, detect_intent, refine_intent

GRID = [round(x, 2) for x in np.arange(0.2, 0.8, 0.025)]


def load_questions(folder: str | Path) -> list[dict]:
    path = Path(folder) / "questions.jsonl"
    return [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines() if x.strip()]


def predictions(questions: list[dict], examples: IntentExamples | None,
                threshold: float | None = None) -> list[str]:
    out = []
    vecs = None
    if examples is not None:
        vecs = examples.embedder.embed_queries([q["text"] for q in questions])
        if threshold is not None:
            examples.threshold = threshold
    for k, q in enumerate(questions):
        d = detect_intent(q["text"])
        out.append(refine_intent(d, None if vecs is None else vecs[k], examples, q["text"]).intent)
    return out


def intent_accuracy(folder: str | Path, embedder=None) -> dict:
    """{"accuracy", "correct", "n"} of the responder's intent on ``folder``'s questions."""
    qs = load_questions(folder)
    ex = IntentExamples(embedder) if embedder is not None else None
    pred = predictions(qs, ex)
    ok = sum(p == q["intent"] for p, q in zip(pred, qs))
    misses = [{"question_id": q["question_id"], "text": q["text"], "gold": q["intent"], "intent": p}
              for p, q in zip(pred, qs) if p != q["intent"]]
    return {"accuracy": ok / len(qs) if qs else 0.0, "correct": ok, "n": len(qs), "misses": misses}


def cross_validate(questions: list[dict], embedder, folds: int = 5) -> dict:
    """The nearest-example fallback's threshold (what runs without the learnt classifier):
    chosen on k-1 folds, scored on the k-th; and the one chosen on all."""
    ex = IntentExamples(embedder, learnt=False)
    vecs = embedder.embed_queries([q["text"] for q in questions])
    base = [detect_intent(q["text"]) for q in questions]

    def acc(idx, th):
        ex.threshold = th
        return sum(refine_intent(base[k], vecs[k], ex).intent == questions[k]["intent"] for k in idx)

    order = sorted(range(len(questions)), key=lambda k: questions[k]["question_id"])
    parts = [order[f::folds] for f in range(folds)]
    rows, held_ok = [], 0
    for f, test in enumerate(parts):
        train = [k for k in order if k not in set(test)]
        best = max(GRID, key=lambda th: (acc(train, th), -abs(th - 0.5)))
        ok = acc(test, best)
        held_ok += ok
        rows.append({"fold": f, "threshold": best, "held_back_accuracy": ok / max(1, len(test))})
    chosen = max(GRID, key=lambda th: (acc(order, th), -abs(th - 0.5)))
    return {"folds": rows, "cv_accuracy": held_ok / len(questions), "chosen_on_all": chosen,
            "accuracy_at_chosen": acc(order, chosen) / len(questions)}


def main(argv: list[str] | None = None) -> None:
    from streams.respond.rank import build_configured_embedder

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("folder", nargs="?", default=str(FIXTURES_DIR))
    ap.add_argument("--calibrate", action="store_true", help="cross-validate the threshold (dev only)")
    ap.add_argument("--folds", type=int, default=5)
    a = ap.parse_args(argv)
    emb = build_configured_embedder()
    if a.calibrate:
        print(json.dumps(cross_validate(load_questions(a.folder), emb, a.folds), indent=1))
        return
    r = intent_accuracy(a.folder, emb)
    print(f"intent accuracy {r['accuracy']:.3f} ({r['correct']}/{r['n']}), threshold {EXAMPLE_THRESHOLD}")


if __name__ == "__main__":
    main()
