"""Train the offline contradiction judge (``make train``).

    python -m streams.learn.train_contradiction [--pairs FILE ...] [--out PATH] [--check] [--no-report]

Trains on the development pairs (``examples/dev/contradictions.jsonl``), the
pairs written for the project outside the corpus
(``tests/learn/data/contradictions_written.jsonl`` and ``contradictions_written3.jsonl``:
changes of state in chat spelling — diets, health, jobs, studies, payments, partners,
addresses, pets, habits — and look-alike pairs that do not contradict: additions,
refinements, the same fact restated, instructions hidden in a fact) and the tuning
sets of blind writers (``examples/probe_n/contradictions.jsonl``: 120 pairs, ten
with an instruction hidden in a fact; probe_l, probe_m, probe_r, probe_s … probe_z: 40 each). ``contradictions_written2.jsonl`` is never
trained on: it checks the judge; nor are the validation and reserved sets.

Every figure counts the verdict the checker gives: the slot floor
(``contradiction_model.slot_floor``) where it holds, the weights elsewhere.
Leave-one-out cross-validation picks the L2 strength and prints its accuracy;
the model is then fitted on every pair and written to
``streams/learn/models/contradiction.json`` (deterministic: the same pairs give
the same file). Before that it prints the nested leave-one-source-out accuracy:
each training file in turn is predicted by a judge fitted on the others, whose
L2 strength was itself chosen by leave-one-out on those others only — the figure
that says how the judge carries to a writer it has not read.

The cut on the judge's score is then calibrated (``calibrate``) on the pairs of the later tuning writers
(``CALIBRATION_PAIRS``: probe_aa … probe_bp), which the weights never read: the threshold with the most right
verdicts there (the middle of those tying), recorded in the artefact with its count against 0.5.

``--check`` retrains in memory and compares with the artefact instead of writing
it (exit 1 when they differ: the data or the features changed without a retrain).
The held-out half is never read here (refused if given).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from pathlib import Path

from streams.learn.contradiction import MemoryView, rules_contradicts
from streams.learn.contradiction_model import (
    FEATURES,
    MODEL_FILE,
    LearnedJudge,
    Pair,
    features,
    fit_logistic,
    loo_scores,
    slot_floor,
)
from streams.learn.fixtures import DEV_DIR, EXAMPLES_DIR, read_jsonl
from streams.learn.lexicon import factual

L2_GRID = (0.3, 1.0, 3.0, 10.0)
_DATA = Path(__file__).resolve().parents[2] / "tests" / "learn" / "data"
#: The development pairs of the corpus, pairs written for the project outside the
#: corpus, and the tuning sets of blind writers probe_n, probe_l and probe_m (tuning sets
#: since stop 26), probe_r (a tuning set since stop 26, trained on since stop 27) and probe_s, probe_t
#: (blind tuning sets of stop 27, scored untouched first), probe_u, probe_v (the same, stop 28), probe_w,
#: probe_x (the same, stop 29), probe_y, probe_z (the same, stop 30); never
#: the held-out half nor a validation set (probe_o, probe_p, probe_q).
TRAINING_PAIRS = [DEV_DIR / "contradictions.jsonl",
                  _DATA / "contradictions_written.jsonl",
                  _DATA / "contradictions_written3.jsonl",
                  EXAMPLES_DIR / "probe_n" / "contradictions.jsonl",
                  EXAMPLES_DIR / "probe_l" / "contradictions.jsonl",
                  EXAMPLES_DIR / "probe_m" / "contradictions.jsonl",
                  EXAMPLES_DIR / "probe_r" / "contradictions.jsonl",
                  EXAMPLES_DIR / "probe_s" / "contradictions.jsonl",
                  EXAMPLES_DIR / "probe_t" / "contradictions.jsonl",
                  EXAMPLES_DIR / "probe_u" / "contradictions.jsonl",
                  EXAMPLES_DIR / "probe_v" / "contradictions.jsonl",
                  EXAMPLES_DIR / "probe_w" / "contradictions.jsonl",
                  EXAMPLES_DIR / "probe_x" / "contradictions.jsonl",
                  EXAMPLES_DIR / "probe_y" / "contradictions.jsonl",
                  EXAMPLES_DIR / "probe_z" / "contradictions.jsonl"]
#: The pairs the threshold is calibrated on (``calibrate``): every later tuning writer's pairs (probe_aa … probe_bp),
#: which the weights never read. Training the weights on them too was flat twice (docs/quality-log.md, stops 40 and
#: 45: the features, not the data, bound the weights); where the judge's score is cut is what they can still tell.
#: Never a validation, reserved or fresh set.
CALIBRATION_PAIRS = [EXAMPLES_DIR / f"probe_{x}" / "contradictions.jsonl"
                     for x in ("aa", "ab", "ac", "ad", "ae", "af", "ag", "ah", "ai", "aj", "ak", "al", "am", "an", "as",
                               "at", "au", "av", "aw", "ax", "ay", "az", "ba", "bb", "bc", "bd", "be", "bf", "bg", "bh",
                               "bi", "bj", "bk", "bl", "bm", "bn", "bo", "bp")]
#: The thresholds tried (0.30 … 0.70); the score is a probability, so the search stays around its middle.
THRESHOLD_GRID = tuple(round(0.30 + 0.01 * k, 2) for k in range(41))


def pair_of(row: dict) -> Pair:
    """The pair as the checker sees it: instructions and counterfactual clauses removed
    before the slot parser reads it (``RulesContradictionChecker.check``)."""
    old = MemoryView(memory_type=row["memory_type"], content=factual(row["old"]))
    new = MemoryView(memory_type=row.get("new_memory_type", row["memory_type"]), content=factual(row["new"]))
    return Pair(row["memory_type"], row["old"], row["new"], rules_contradicts(old, new).reason)


def _right(weights: list[float], bias: float, row: list[float], label: int, floored: bool) -> bool:
    """The verdict the checker gives (the slot floor, else the weights at 0.5) against the label."""
    return (floored or LearnedJudge(weights, bias).score(row) >= 0.5) == bool(label)


def loo_accuracy(rows: list[list[float]], labels: list[int], floors: list[bool], l2: float) -> float:
    """Leave-one-out accuracy of the checker's verdict: a floored pair is decided by the floor,
    whatever the weights; every other pair by the judge fitted on the rest (``loo_scores``)."""
    held = [i for i, floored in enumerate(floors) if not floored]
    right = sum(bool(labels[i]) for i, floored in enumerate(floors) if floored)
    right += sum((p >= 0.5) == bool(labels[i]) for i, p in zip(held, loo_scores(rows, labels, held, l2=l2, steps=1500)))
    return right / len(rows)


def choose_l2(rows: list[list[float]], labels: list[int], floors: list[bool]) -> tuple[float, dict[float, float]]:
    """The L2 strength with the best leave-one-out accuracy (ties: the stronger)."""
    scores = {l2: loo_accuracy(rows, labels, floors, l2) for l2 in L2_GRID}
    return max(L2_GRID, key=lambda l2: (scores[l2], l2)), scores


def nested_loso(rows: list[list[float]], labels: list[int], floors: list[bool],
                sources: list[str]) -> dict[str, tuple[int, int]]:
    """Per source: (right, total) of a judge fitted on the other sources, its L2 chosen
    by leave-one-out on those other sources only."""
    out = {}
    for held in dict.fromkeys(sources):
        train = [i for i, s in enumerate(sources) if s != held]
        test = [i for i, s in enumerate(sources) if s == held]
        tr_rows, tr_labels = [rows[i] for i in train], [labels[i] for i in train]
        l2, _ = choose_l2(tr_rows, tr_labels, [floors[i] for i in train])
        w, b = fit_logistic(tr_rows, tr_labels, l2=l2)
        out[held] = (sum(_right(w, b, rows[i], labels[i], floors[i]) for i in test), len(test))
    return out


def calibrate(weights: list[float], bias: float, paths: list[Path]) -> tuple[float, dict]:
    """The threshold on the judge's score with the best accuracy of the checker's verdict over ``paths`` (pairs the
    weights never read; a floored pair counts as the floor decides it, whatever the threshold), the middle of the
    thresholds tying for it; and what it gives there against 0.5."""
    judge = LearnedJudge(weights, bias)
    scored = []
    for p in paths:
        for r in read_jsonl(p):
            pair = pair_of(r)
            row = features(pair)
            scored.append((judge.score(row), slot_floor(pair, row), bool(r["contradicts"])))
    if not scored:
        return 0.5, {}

    def right(th: float) -> int:
        return sum((floored or p >= th) == label for p, floored, label in scored)

    counts = {th: right(th) for th in THRESHOLD_GRID}
    best = max(counts.values())
    tied = [th for th in THRESHOLD_GRID if counts[th] == best]
    threshold = tied[len(tied) // 2]
    return threshold, {"pairs": len(scored), "right_at_0.5": right(0.5), "right": counts[threshold],
                       "files": len(paths)}


def train(paths: list[Path], calibration: list[Path] | None = None
          ) -> tuple[dict, dict[float, float], list[list[float]], list[int], list[bool], list[str]]:
    """The artefact (as a dict) trained on ``paths``, the leave-one-out scores, and the data
    (rows, labels, whether the slot floor decides each pair, sources). The weights are fitted on
    every pair, floored or not: a slot update is evidence of what the slot feature means in the
    pairs the floor leaves to the judge (a count changed, a complaint resolved, a one-off)."""
    rows, labels, floors, sources = [], [], [], []
    for p in paths:
        for r in read_jsonl(p):
            pair = pair_of(r)
            rows.append(features(pair))
            floors.append(slot_floor(pair, rows[-1]))
            labels.append(int(bool(r["contradicts"])))
            sources.append(f"{p.parent.name}/{p.name}")
    best, scores = choose_l2(rows, labels, floors)
    weights, bias = fit_logistic(rows, labels, l2=best)
    train_acc = sum(_right(weights, bias, x, y, f) for x, y, f in zip(rows, labels, floors)) / len(rows)
    calibration = [p for p in (calibration or []) if p.exists() and p not in paths]
    threshold, calibrated = calibrate(weights, bias, calibration)
    digest = hashlib.sha256(b"".join(p.read_bytes() for p in paths + calibration)).hexdigest()[:12]
    names = [f"{p.parent.name}/{p.name}" for p in paths]
    model = {"version": f"contradiction-lr-{digest}", "trained_on": names, "pairs": len(rows),
             "l2": best, "loo_accuracy": round(scores[best], 4), "train_accuracy": round(train_acc, 4),
             "threshold": threshold, "calibrated_on": [p.parent.name for p in calibration],
             "calibration": calibrated, "features": FEATURES, "weights": weights, "bias": bias}
    return model, scores, rows, labels, floors, sources


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m streams.learn.train_contradiction")
    parser.add_argument("--pairs", type=Path, nargs="+", default=TRAINING_PAIRS)
    parser.add_argument("--calibrate", type=Path, nargs="*", default=CALIBRATION_PAIRS,
                        help="pair files the threshold is chosen on (never trained on; none: 0.5)")
    parser.add_argument("--out", type=Path, default=MODEL_FILE)
    parser.add_argument("--check", action="store_true",
                        help="retrain in memory and compare with --out instead of writing it (exit 1 if they differ)")
    parser.add_argument("--no-report", action="store_true",
                        help="skip the nested leave-one-source-out report (the artefact is the same; ~10x faster)")
    args = parser.parse_args(argv)
    if any("heldout" in p.resolve().parts for p in args.pairs + args.calibrate):
        print("refusing to train on the held-out half", file=sys.stderr)
        return 2
    paths = [p for p in args.pairs if p.exists()]
    model, scores, rows, labels, floors, sources = train(paths, args.calibrate)
    text = json.dumps(model, indent=1) + "\n"
    if args.check:
        current = args.out.read_text() if args.out.exists() else ""
        if current != text:
            print(f"{args.out} differs from what the training pairs give: retrain "
                  "(python -m streams.learn.train_contradiction)", file=sys.stderr)
            return 1
        print(f"{args.out} is what {len(rows)} pairs ({', '.join(model['trained_on'])}) give")
        return 0
    if len(set(sources)) > 1 and not args.no_report:
        per = nested_loso(rows, labels, floors, sources)
        right, total = sum(r for r, _ in per.values()), sum(t for _, t in per.values())
        print(f"nested leave-one-source-out accuracy {right / total:.3f} ({right}/{total}): "
              + ", ".join(f"{s} {r}/{t}" for s, (r, t) in per.items()))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text)
    print(f"contradiction judge: {len(rows)} pairs ({', '.join(model['trained_on'])}), leave-one-out accuracy "
          + ", ".join(f"l2={k}: {v:.3f}" for k, v in scores.items()))
    print(f"chosen l2={model['l2']}; training accuracy {model['train_accuracy']:.3f}; written {args.out}")
    if model["calibration"]:
        c = model["calibration"]
        print(f"threshold {model['threshold']:.2f}, calibrated on {c['pairs']} pairs of {c['files']} files the weights "
              f"never read: {c['right']} right (at 0.5: {c['right_at_0.5']})")
    for name, w in sorted(zip(FEATURES, model["weights"]), key=lambda x: -abs(x[1])):
        print(f"  {name:20} {w:+.3f}")
    print(f"  {'bias':20} {model['bias']:+.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
