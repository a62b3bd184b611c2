"""``make eval``: every quality figure of the product, one column per corpus half.

    python -m streams.evaluation [--provider rules|openai] [--corpus DIR ...] [--json]

Each metric family is one function that takes a corpus folder (the format of
``examples/README.md``) and returns its figures; ``main`` runs them on
``examples/dev`` and ``examples/heldout`` (plus any ``--corpus`` folder, for
example ``../shared/fixtures``) and prints one table:

| row | family | what it measures |
|---|---|---|
| extraction precision / recall | :func:`extraction_metrics` | predicted facts vs gold facts (matching rule below) |
| non-verbatim evidence | :func:`extraction_metrics` | facts whose evidence is not an exact substring of a contact message (must be 0) |
| facts from instructions | :func:`extraction_metrics` | facts whose evidence lies in a message marked ``"instruction": true`` (must be 0) |
| contradiction accuracy | :func:`contradiction_metrics` | ``contradicts`` against the gold boolean of each pair |
| intent accuracy | :func:`intent_metrics` | the responder's intent detector (default keyword dictionary on chat-normalised text, then the example-phrase fallback with the memory embedder) against each question's gold intent |
| recall@3 / recall@5 | :func:`recall_metrics` | the responder's memory scoring with the configured memory embedder, no floor |
| answer accuracy | :func:`answer_metrics` | the real ``respond()`` use-case per question (configured knowledge embedder and cut-off, offline composer or the chat model), judged as in ``streams.respond.evaluate_answers`` |

Fact matching (``streams.learn.evaluate.match_facts``): a predicted fact matches a
gold fact when the memory types agree **and** either their evidences overlap (one
contains the other while the shorter holds at least a third of the longer's
words, or word Jaccard ≥ 0.5, accent- and case-insensitive) or their contents say
the same (Jaccard ≥ 0.5 of the contents' content words); each gold fact matches at
most one prediction and each prediction at most one gold fact (greedy, best first).

``--provider openai`` sends extraction, contradiction and replies to the
OpenAI-compatible endpoint of ``OPENAI_BASE_URL``/``OPENAI_API_KEY``/``MEMORIA_LLM_MODEL``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Callable

from streams.learn.fixtures import DEV_DIR, HELDOUT_DIR, knowledge_file, read_jsonl

ROWS = (
    ("extraction precision", "extraction_precision", "{:.3f}"),
    ("extraction recall", "extraction_recall", "{:.3f}"),
    ("gold facts / predicted", "extraction_counts", "{}"),
    ("non-verbatim evidence", "non_verbatim", "{}"),
    ("facts from instructions", "instruction_facts", "{}"),
    ("contradiction accuracy", "contradiction_accuracy", "{:.3f}"),
    ("intent accuracy", "intent_accuracy", "{:.3f}"),
    ("recall@3", "recall_at_3", "{:.3f}"),
    ("recall@5", "recall_at_5", "{:.3f}"),
    ("answer accuracy", "answer_accuracy", "{:.3f}"),
)


# --------------------------------------------------------------- extraction
def extraction_metrics(folder: Path, extractor) -> dict:
    """Precision, recall, non-verbatim evidence and facts taken from instruction messages."""
    from streams.learn.evaluate import evaluate_extraction, prf

    path = Path(folder) / "conversations.jsonl"
    stats = evaluate_extraction(path, extractor)
    tp, fp, fn = (sum(stats[k].values()) for k in ("tp", "fp", "fn"))
    p, r, _ = prf(tp, fp, fn)
    return {"extraction_precision": p, "extraction_recall": r, "extraction_counts": f"{tp + fn}/{tp + fp}",
            "non_verbatim": stats["non_verbatim"], "instruction_facts": stats["instruction_facts"],
            "extraction_failed": stats["failed"],
            "extraction_by_type": {t: (stats["tp"].get(t, 0), stats["fp"].get(t, 0), stats["fn"].get(t, 0))
                                   for t in sorted(set(stats["tp"]) | set(stats["fp"]) | set(stats["fn"]))}}


# ------------------------------------------------------------ contradiction
def contradiction_metrics(folder: Path, checker) -> dict:
    from streams.learn.evaluate import evaluate_contradictions

    right, total = evaluate_contradictions(Path(folder) / "contradictions.jsonl", checker)
    return {"contradiction_accuracy": right / total if total else float("nan")}


# ------------------------------------------------------------------- intent
def intent_metrics(folder: Path, embedder=None) -> dict:
    """The responder's intent detector against the gold intents: the default keyword
    dictionary (chat spelling normalised), then, for what it leaves ``general``, the
    nearest example phrase by the message's embedding (``embedder``: the one the
    responder embeds messages with)."""
    from streams.respond.evaluate_intent import intent_accuracy

    r = intent_accuracy(folder, embedder)
    return {"intent_accuracy": r["accuracy"], "intent_misses": r["misses"]}


# ------------------------------------------------------------------- recall
def recall_metrics(folder: Path, embedder) -> dict:
    """recall@3 / recall@5 of the responder's memory scoring (``memoria rank``)."""
    from streams.respond.evaluate_recall import recall_metrics as recall_of

    m = recall_of(folder, embedder)
    return {"recall_at_3": m["recall@3"], "recall_at_5": m["recall@5"], "recall_misses": m["misses"]}


# ------------------------------------------------------------------ answers
def answer_metrics(folder: Path, embedder, generator_factory: Callable | None = None) -> dict:
    """Answer accuracy through ``respond()`` with the settings' chunking and cut-off."""
    from streams.respond.evaluate_answers import run_grid
    from streams.respond.model import DEFAULT_RAG_MAX_RESULTS
    from streams.settings import get_settings

    s = get_settings()
    questions = list(read_jsonl(Path(folder) / "questions.jsonl"))
    docs = list(read_jsonl(knowledge_file(folder)))
    generator = generator_factory() if generator_factory else None
    grid = asyncio.run(run_grid(embedder, questions, docs, [None], DEFAULT_RAG_MAX_RESULTS,
                                (s.chunk_size, s.chunk_overlap), generator=generator))
    return {"answer_accuracy": grid[0]["accuracy"], "answer_failures": grid[0]["failures"],
            "answer_failure_details": grid[0]["failure_details"]}


# --------------------------------------------------------------------- main
def evaluate_folder(folder: Path, provider: str, ports: dict) -> dict:
    out: dict = {}
    folder = Path(folder)
    if (folder / "conversations.jsonl").exists():
        out.update(extraction_metrics(folder, ports["extractor"]))
    if (folder / "contradictions.jsonl").exists():
        out.update(contradiction_metrics(folder, ports["checker"]))
    if (folder / "questions.jsonl").exists():
        out.update(intent_metrics(folder, ports["memory_embedder"]))
        out.update(answer_metrics(folder, ports["knowledge_embedder"], ports.get("generator_factory")))
    if (folder / "recall.jsonl").exists():
        out.update(recall_metrics(folder, ports["memory_embedder"]))
    return out


def build_ports(provider: str) -> dict:
    from streams.bootstrap import Container
    from streams.respond.evaluate_answers import CachedEmbedder

    c = Container()
    s = c.settings
    kemb = CachedEmbedder(c.in_process_embedder(s.embedding_provider, s.embedding_model))
    if (s.memory_embedding_provider, s.memory_embedding_model) == (s.embedding_provider, s.embedding_model):
        memb = kemb
    else:
        memb = CachedEmbedder(c.in_process_embedder(s.memory_embedding_provider, s.memory_embedding_model))
    ports = {"extractor": c.extractor(provider), "checker": c.checker(provider),
             "knowledge_embedder": kemb, "memory_embedder": memb}
    if provider == "openai":
        ports["generator_factory"] = lambda: c.generator("openai")
    return ports


def format_table(columns: dict[str, dict]) -> str:
    names = list(columns)
    width = max(12, *(len(n) for n in names))
    lines = [f"| {'metric':26} | " + " | ".join(f"{n:>{width}}" for n in names) + " |",
             f"|{'-' * 28}|" + "|".join("-" * (width + 2) for _ in names) + "|"]
    for label, key, fmt in ROWS:
        cells = []
        for n in names:
            v = columns[n].get(key)
            cells.append(f"{'—' if v is None else fmt.format(v):>{width}}")
        lines.append(f"| {label:26} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def format_misses(columns: dict[str, dict]) -> str:
    """Per folder: the questions whose intent is wrong, the questions answered wrongly (gold and
    detected intent, expected, reply) and
    the recall cases with a relevant fact outside the top 3 (the missing facts, what ranked instead)."""
    lines = []
    for name, col in columns.items():
        for m in col.get("intent_misses", []):
            lines.append(f"[{name}] intent {m['question_id']} ({m['gold']} → {m['intent']}): {m['text']!r}")
        for f in col.get("answer_failure_details", []):
            lines.append(f"[{name}] answer {f['question_id']} ({f['gold_intent']} → {f['intent']}): {f['text']!r}\n"
                         f"    expected {f['expected']}\n    reply    {f['reply']!r}")
        for m in col.get("recall_misses", []):
            lines.append(f"[{name}] recall {m['case_id']}: {m['query']!r}\n    missing {m['missing']}\n"
                         f"    top3    {m['top3']}")
    return "\n".join(lines)


def failure_kind(f: dict) -> str:
    """Where an answer failure happened, for counting (``--kinds``): an unanswerable question
    answered; an answerable one handed over or answered wrongly, each split by whether the
    expected document was among the retrieved chunks (retrieval or composition)."""
    if not f["answerable"]:
        return "unanswerable answered"
    where = "document retrieved" if f["document_found"] else "document not retrieved"
    return f"{'handed over' if f['handed_over'] else 'wrong answer'}, {where}"


def format_kinds(columns: dict[str, dict]) -> str:
    """Counts only, no sentence: extraction by memory type, answer failures by kind (and how many
    of them also have the wrong intent), intent misses by (gold → detected) pair. Safe to print for
    a reserved set."""
    lines = []
    for name, col in columns.items():
        by_type = col.get("extraction_by_type")
        if by_type:
            lines.append(f"[{name}] extraction by memory type (right / false / missed): " + ", ".join(
                f"{t} {tp}/{fp}/{fn}" for t, (tp, fp, fn) in by_type.items()))
        details = col.get("answer_failure_details", [])
        if details:
            kinds = Counter(failure_kind(f) for f in details)
            wrong_intent = Counter(failure_kind(f) for f in details if f["intent"] != f["gold_intent"])
            lines.append(f"[{name}] answer failures by kind ({len(details)}): " + "; ".join(
                f"{k} {n} (wrong intent {wrong_intent[k]})" for k, n in kinds.most_common()))
        misses = col.get("intent_misses", [])
        if misses:
            pairs = Counter(f"{m['gold']}→{m['intent']}" for m in misses)
            lines.append(f"[{name}] intent misses ({len(misses)}): " + ", ".join(
                f"{k} {n}" for k, n in pairs.most_common()))
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m streams.evaluation", description=__doc__.split("\n\n")[0])
    ap.add_argument("--provider", default="rules", help="rules (offline) | openai: extraction, contradiction, replies")
    ap.add_argument("--corpus", action="append", type=Path, default=None,
                    help="a corpus folder (repeatable); default: examples/dev and examples/heldout")
    ap.add_argument("--json", action="store_true", help="print the figures as one JSON object too")
    ap.add_argument("--misses", action="store_true",
                    help="list each folder's answer failures and recall@3 misses (for tuning folders: never "
                         "read held-out's)")
    ap.add_argument("--kinds", action="store_true",
                    help="count each folder's answer failures by kind and its intent misses by label pair "
                         "(counts only, no sentence: fit for reserved sets)")
    a = ap.parse_args(argv)
    folders = a.corpus or [DEV_DIR, HELDOUT_DIR]
    t0 = time.perf_counter()
    ports = build_ports(a.provider)
    columns: dict[str, dict] = {}
    for folder in folders:
        if not Path(folder).is_dir():
            print(f"error: corpus folder {folder} does not exist", file=sys.stderr)
            return 2
        name = Path(folder).name if Path(folder).name not in columns else str(folder)
        columns[name] = evaluate_folder(Path(folder), a.provider, ports)
    print(f"memoria evaluation — provider {a.provider}, {time.perf_counter() - t0:.0f} s")
    print(format_table(columns))
    names = list(columns)
    if len(names) >= 2:
        gaps = {label: columns[names[0]].get(key) - columns[names[1]].get(key)
                for label, key, fmt in ROWS if fmt != "{}"
                and isinstance(columns[names[0]].get(key), float) and isinstance(columns[names[1]].get(key), float)}
        print(f"gap {names[0]} − {names[1]}: " + ", ".join(f"{k} {v:+.3f}" for k, v in gaps.items()))
    extractor = ports["extractor"]
    meta = getattr(getattr(extractor, "model", None), "meta", None)
    if meta:
        cv = meta["cross_validated"]
        print(f"extractor {meta['version']} was trained on {meta['training']['corpus']}: that column is in-sample; "
              f"its grouped {meta['training']['folds']}-fold cross-validation there: precision {cv['precision']:.3f}, "
              f"recall {cv['recall']:.3f}")
        xs = (meta.get("cross_source") or {}).get("chosen", {}).get("per_source", {})
        gate = meta.get("gate") or {}
        if gate.get("per_source"):   # the shipped selection is gated (stop 28): its figures, not the ungated ones
            xs, gated_cv = gate["per_source"], meta.get("cross_validated_gated") or {}
            if gated_cv:
                print(f"  with the gate over the proposals, that cross-validation: precision {gated_cv['precision']:.3f}, "
                      f"recall {gated_cv['recall']:.3f}")
        if xs:
            print("  cross-source (fit on the other writers; about what an unseen writer gets): " + "; ".join(
                f"{n} P {r['precision']:.3f} R {r['recall']:.3f}" for n, r in xs.items()))
    failed = sum(c.get("extraction_failed", 0) for c in columns.values())
    if failed:
        print(f"warning: {failed} conversation(s) failed extraction (counted as no facts)", file=sys.stderr)
    if a.kinds:
        print(format_kinds(columns))
    if a.misses:
        print(format_misses(columns))
    if a.json:
        print(json.dumps(columns, ensure_ascii=False, default=str))
    bad = sum(c.get("non_verbatim", 0) + c.get("instruction_facts", 0) for c in columns.values())
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
