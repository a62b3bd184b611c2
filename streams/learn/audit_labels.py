"""Audit the extractor's gold labels for consistency across writing sources.

Every gold fact of the three sources the extractor learns from (``examples/dev``, the
reference convention, and ``train_extractor.WRITTEN_FILES``) is embedded by its evidence
with the extractor's embedder (USE); two facts from different sources conflict when their
evidences are near duplicates (cosine ≥ ``--threshold``, or ≥ ``--slot-threshold`` and one
slot in common by ``lexicon.parse_slots``) and their memory types differ. Conflicts are
printed grouped by type pair, the reference's type first when one side is dev (see
``examples/README.md``, "Labelling guideline").

Usage: python -m streams.learn.audit_labels [--threshold 0.85] [--slot-threshold 0.7]
"""

from __future__ import annotations

import argparse
import sys
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from streams.learn.fixtures import DEV_DIR, read_jsonl
from streams.learn.lexicon import parse_slots

ROOT = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class GoldFact:
    source: str
    conversation_id: str
    memory_type: str
    evidence: str


@dataclass(frozen=True)
class Conflict:
    a: GoldFact
    b: GoldFact
    similarity: float
    slot: str | None


def gold_facts(paths: dict[str, Path]) -> list[GoldFact]:
    out = []
    for name, path in paths.items():
        for row in read_jsonl(path):
            for f in row.get("gold_facts", []):
                out.append(GoldFact(name, row["conversation_id"], f["memory_type"], f["evidence"]))
    return out


def _slot_keys(memory_type: str, text: str) -> set[tuple[str, str | None]]:
    try:
        return {(s.key, s.value) for s in parse_slots(memory_type, text)}
    except Exception:  # noqa: BLE001 - an unparsable evidence has no slot
        return set()


def shared_slot(a: GoldFact, b: GoldFact) -> str | None:
    """A slot both evidences state when read as either fact's type (None: none)."""
    for t in (a.memory_type, b.memory_type):
        common = _slot_keys(t, a.evidence) & _slot_keys(t, b.evidence)
        if common:
            key, value = sorted(common, key=str)[0]
            return f"{key}={value}" if value else key
    return None


def conflicts(facts: list[GoldFact], vectors: np.ndarray, threshold: float = 0.85,
              slot_threshold: float = 0.7) -> list[Conflict]:
    """Pairs from different sources, near-duplicate evidences, different types."""
    v = np.asarray(vectors, dtype=np.float32)
    v = v / np.maximum(np.linalg.norm(v, axis=1, keepdims=True), 1e-9)
    sim = v @ v.T
    # an evidence gold-labelled with both types somewhere (dev's "minha mulher é professora" is
    # vinculo_social and contexto_pessoal) is a double fact, not a conflict
    both = {(f.conversation_id, f.evidence.casefold(), f.memory_type) for f in facts}
    out = []
    for i in range(len(facts)):
        for j in np.nonzero(sim[i, i + 1:] >= min(threshold, slot_threshold))[0] + i + 1:
            a, b = facts[i], facts[int(j)]
            if a.source == b.source or a.memory_type == b.memory_type:
                continue
            if ((a.conversation_id, a.evidence.casefold(), b.memory_type) in both
                    or (b.conversation_id, b.evidence.casefold(), a.memory_type) in both):
                continue
            s = float(sim[i, j])
            slot = shared_slot(a, b)
            if s >= threshold or slot:
                if b.source == "dev" or (a.source != "dev" and b.memory_type < a.memory_type):
                    a, b = b, a  # the reference first; otherwise the pair in a fixed order
                out.append(Conflict(a, b, s, slot))
    return out


def report(found: list[Conflict], out=sys.stdout) -> None:
    groups: dict[tuple[str, str], list[Conflict]] = defaultdict(list)
    for c in found:
        groups[(c.a.memory_type, c.b.memory_type)].append(c)
    print(f"{len(found)} conflicts in {len(groups)} type pairs", file=out)
    for (ta, tb), cs in sorted(groups.items(), key=lambda kv: -len(kv[1])):
        print(f"\n== {ta} vs {tb}: {len(cs)}", file=out)
        for c in sorted(cs, key=lambda c: -c.similarity):
            slot = f" slot {c.slot}" if c.slot else ""
            print(f"  {c.similarity:.2f}{slot}\n    [{c.a.source} {c.a.conversation_id}] {ta}: {c.a.evidence!r}"
                  f"\n    [{c.b.source} {c.b.conversation_id}] {tb}: {c.b.evidence!r}", file=out)


def main(argv: list[str] | None = None) -> int:
    from streams.learn.train_extractor import TRAIN_MORE, WRITTEN

    ap = argparse.ArgumentParser(prog="python -m streams.learn.audit_labels", description=__doc__.split("\n\n")[0])
    ap.add_argument("--threshold", type=float, default=0.85)
    ap.add_argument("--slot-threshold", type=float, default=0.7)
    a = ap.parse_args(argv)
    paths = {"dev": DEV_DIR / "conversations.jsonl", "written": WRITTEN, "train": TRAIN_MORE}
    facts = gold_facts(paths)
    from streams.bootstrap import Container

    embedder = Container().in_process_embedder("use", "use-multilingual-v3")
    vectors = np.asarray(embedder.embed_passages([f.evidence for f in facts]), dtype=np.float32)
    report(conflicts(facts, vectors, a.threshold, a.slot_threshold))
    return 0


if __name__ == "__main__":
    sys.exit(main())
