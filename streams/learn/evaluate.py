"""Offline evaluation of extraction and contradiction against fixture files.

    python -m streams.learn.evaluate [--conversations F] [--pairs F]
        [--provider rules|openai] [--contradiction-provider rules|openai] [--show-errors]

Extraction: a predicted fact matches a gold fact of the same type whose
evidence overlaps it (one is a substring of the other and the shorter holds at
least a third of the longer's words, or word Jaccard ≥ 0.5, after ``fold``) or
whose content says the same (Jaccard ≥ 0.5 of content words), one-to-one
(greedy on the best score). Prints precision, recall
and F1 per type and overall, plus the count of facts whose evidence is not
verbatim in a contact message; exits 1 when that count is > 0.
Contradiction: accuracy of ``contradicts`` against the gold booleans.
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from pathlib import Path

from streams.learn.contradiction import MemoryView
from streams.learn.extract import FactExtractor, extract_facts
from streams.learn.fixtures import FIXTURES_DIR, read_jsonl, transcript_of
from streams.learn.model import Fact
from streams.learn.taxonomy import MEMORY_TYPES
from streams.learn.text import fold, tokens

#: Function words left out when comparing contents ("Gosta de vinho rosé" vs "A esposa gosta de vinho rosé").
STOPWORDS = frozenset(
    "a o as os de da do das dos e em no na nos nas um uma uns umas para pra pro com por que se ao aos "
    "the of to and in".split())
MATCH_THRESHOLD = 0.5


def evidence_overlap(a: str, b: str) -> float:
    """1.0 when one folded evidence contains the other and the shorter holds at
    least a third of the longer's words (so a whole message does not "overlap"
    a short gold span), else word Jaccard."""
    fa, fb = " ".join(fold(a).split()), " ".join(fold(b).split())
    ta, tb = tokens(a), tokens(b)
    if fa and fb and (fa in fb or fb in fa):
        short, long_ = sorted((len(ta), len(tb)))
        if long_ == 0 or short * 3 >= long_:
            return 1.0
    sa, sb = set(ta), set(tb)
    return len(sa & sb) / len(sa | sb) if sa | sb else 0.0


def content_overlap(a: str, b: str) -> float:
    """Word Jaccard of two contents without function words."""
    sa = {t for t in tokens(a) if t not in STOPWORDS}
    sb = {t for t in tokens(b) if t not in STOPWORDS}
    return len(sa & sb) / len(sa | sb) if sa | sb else 0.0


def match_facts(predicted: list[Fact], gold: list[dict]) -> list[tuple[int, int]]:
    """One-to-one matching (greedy on the best score): same memory type, and the
    evidences overlap or the contents say the same (score ≥ ``MATCH_THRESHOLD``)."""
    pairs = []
    for i, p in enumerate(predicted):
        for j, g in enumerate(gold):
            if p.memory_type == g["memory_type"]:
                score = max(evidence_overlap(p.evidence, g["evidence"]),
                            content_overlap(p.content, g.get("content", "")))
                if score >= MATCH_THRESHOLD:
                    pairs.append((score, i, j))
    used_p, used_g, out = set(), set(), []
    for score, i, j in sorted(pairs, reverse=True):
        if i not in used_p and j not in used_g:
            used_p.add(i)
            used_g.add(j)
            out.append((i, j))
    return out


def is_verbatim(fact: Fact, row: dict) -> bool:
    return any(fact.evidence in m["text"] for m in row["messages"] if m["role"] == "contact")


def from_instruction(fact: Fact, row: dict) -> bool:
    """The fact's evidence lies only in messages marked ``"instruction": true``."""
    sources = [m for m in row["messages"] if m["role"] == "contact" and fact.evidence in m["text"]]
    return bool(sources) and all(m.get("instruction") for m in sources)


def evaluate_extraction(path: Path, extractor: FactExtractor, show_errors: bool = False) -> dict:
    """Counts per type; a conversation whose extraction raises counts as no facts
    (``failed``) instead of aborting the run."""
    tp, fp, fn = Counter(), Counter(), Counter()
    non_verbatim = instruction_facts = failed = 0
    for row in read_jsonl(path):
        gold = row.get("gold_facts", [])
        try:
            result = extract_facts(transcript_of(row), extractor)
        except Exception as e:  # a model that is down or broken: report, go on
            failed += 1
            print(f"  FAILED {row['conversation_id']}: {type(e).__name__}: {e}", file=sys.stderr)
            for g in gold:
                fn[g["memory_type"]] += 1
            continue
        matched = match_facts(result.facts, gold)
        mp = {i for i, _ in matched}
        mg = {j for _, j in matched}
        for i, fact in enumerate(result.facts):
            non_verbatim += 0 if is_verbatim(fact, row) else 1
            instruction_facts += from_instruction(fact, row)
            if i in mp:
                tp[fact.memory_type] += 1
            else:
                fp[fact.memory_type] += 1
                if show_errors:
                    print(f"  FP {row['conversation_id']} {fact.memory_type} | {fact.content} | {fact.evidence}")
        for j, g in enumerate(gold):
            if j not in mg:
                fn[g["memory_type"]] += 1
                if show_errors:
                    print(f"  FN {row['conversation_id']} {g['memory_type']} | {g['content']} | {g['evidence']}")
    return {"tp": tp, "fp": fp, "fn": fn, "non_verbatim": non_verbatim,
            "instruction_facts": instruction_facts, "failed": failed}


def prf(tp: int, fp: int, fn: int) -> tuple[float, float, float]:
    p = tp / (tp + fp) if tp + fp else 1.0
    r = tp / (tp + fn) if tp + fn else 1.0
    f = 2 * p * r / (p + r) if p + r else 0.0
    return p, r, f


def evaluate_contradictions(path: Path, checker, show_errors: bool = False) -> tuple[int, int]:
    """(right, total). A pair the checker cannot answer (model unavailable or timed
    out) counts as wrong, is reported on stderr, and the evaluation goes on."""
    from streams.learn.llm import ExtractionFailed

    right = total = 0
    for row in read_jsonl(path):
        total += 1
        try:
            verdict = checker.check(
                MemoryView(memory_type=row["memory_type"], content=row["old"]),
                MemoryView(memory_type=row["memory_type"], content=row["new"]),
            )
        except ExtractionFailed as e:
            print(f"  FAILED {row['pair_id']}: {type(e).__name__}: {e}", file=sys.stderr)
            continue
        if verdict.contradicts == row["contradicts"]:
            right += 1
        elif show_errors:
            print(f"  WRONG {row['pair_id']} gold={row['contradicts']} | {row['old']} || {row['new']} | {verdict.reason}")
    return right, total


def report_extraction(stats: dict) -> tuple[float, float, float]:
    tp, fp, fn = stats["tp"], stats["fp"], stats["fn"]
    print(f"{'type':24} {'P':>6} {'R':>6} {'F1':>6} {'tp':>4} {'fp':>4} {'fn':>4}")
    for t in MEMORY_TYPES:
        p, r, f = prf(tp[t], fp[t], fn[t])
        print(f"{t:24} {p:6.3f} {r:6.3f} {f:6.3f} {tp[t]:4} {fp[t]:4} {fn[t]:4}")
    T, F, N = sum(tp.values()), sum(fp.values()), sum(fn.values())
    p, r, f = prf(T, F, N)
    print(f"{'overall':24} {p:6.3f} {r:6.3f} {f:6.3f} {T:4} {F:4} {N:4}")
    print(f"non-verbatim evidence: {stats['non_verbatim']}")
    print(f"facts from instruction messages: {stats['instruction_facts']}")
    return p, r, f


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m streams.learn.evaluate")
    parser.add_argument("--conversations", type=Path, default=FIXTURES_DIR / "conversations.jsonl")
    parser.add_argument("--pairs", type=Path, default=FIXTURES_DIR / "contradictions.jsonl")
    parser.add_argument("--provider", default="rules", choices=["rules", "offline", "patterns", "openai"])
    parser.add_argument("--contradiction-provider", default="rules", choices=["rules", "openai"])
    parser.add_argument("--show-errors", action="store_true")
    args = parser.parse_args(argv)

    from streams.learn.cli import build_checker, build_extractor

    non_verbatim = 0
    if args.conversations and args.conversations.exists():
        print(f"== extraction ({args.provider}) on {args.conversations.resolve()}")
        stats = evaluate_extraction(args.conversations, build_extractor(args.provider), args.show_errors)
        report_extraction(stats)
        non_verbatim = stats["non_verbatim"]
    if args.pairs and args.pairs.is_file() and args.pairs.stat().st_size > 0:
        right, total = evaluate_contradictions(args.pairs, build_checker(args.contradiction_provider), args.show_errors)
        print(f"== contradiction ({args.contradiction_provider}) on {args.pairs.resolve()}")
        print(f"accuracy: {right / total if total else 0:.3f} ({right}/{total})")
    return 1 if non_verbatim > 0 else 0


if __name__ == "__main__":
    sys.exit(main())
