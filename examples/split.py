"""Split the corpus into a development half and a held-out half, once, before any tuning.

Usage: python examples/split.py SOURCE_FOLDER...   (each holds one business's five files)

The rule is fixed and blind to content: within each business, conversations are
grouped by customer (account_id, contact_id: a returning customer's conversations
stay together, so nothing about a held-out customer leaks into development), groups
are ordered by the SHA-256 of their key and dealt alternately to dev and held-out.
Contradiction pairs, questions and recall cases are dealt the same way by their id.
Knowledge documents are the businesses' knowledge bases: shared, not split.

Writes examples/knowledge.jsonl, examples/dev/*.jsonl and examples/heldout/*.jsonl.
Tune only on examples/dev; examples/heldout is for reporting.
"""
from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
FILES = {"contradictions.jsonl": "pair_id", "questions.jsonl": "question_id", "recall.jsonl": "case_id"}


def _rows(path: Path) -> list[dict]:
    return [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines() if x.strip()] if path.exists() else []


def _h(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


def _deal(items: list, key) -> tuple[list, list]:
    dev, held = [], []
    for i, item in enumerate(sorted(items, key=lambda x: _h(key(x)))):
        (dev if i % 2 == 0 else held).append(item)
    return dev, held


def main(sources: list[str]) -> None:
    out = {"dev": {}, "heldout": {}}
    knowledge: list[dict] = []
    for src in map(Path, sources):
        knowledge += _rows(src / "knowledge.jsonl")
        convs = _rows(src / "conversations.jsonl")
        groups: dict[str, list[dict]] = {}
        for c in convs:
            groups.setdefault(f"{c['account_id']}:{c['contact_id']}", []).append(c)
        dev_g, held_g = _deal(list(groups.items()), key=lambda g: g[0])
        out["dev"].setdefault("conversations.jsonl", []).extend(c for _, cs in dev_g for c in cs)
        out["heldout"].setdefault("conversations.jsonl", []).extend(c for _, cs in held_g for c in cs)
        for name, idkey in FILES.items():
            dev, held = _deal(_rows(src / name), key=lambda r: r[idkey])
            out["dev"].setdefault(name, []).extend(dev)
            out["heldout"].setdefault(name, []).extend(held)
    with open(HERE / "knowledge.jsonl", "w", encoding="utf-8") as fh:
        for d in knowledge:
            fh.write(json.dumps(d, ensure_ascii=False) + "\n")
    for split, files in out.items():
        (HERE / split).mkdir(exist_ok=True)
        for name, rows in files.items():
            with open(HERE / split / name, "w", encoding="utf-8") as fh:
                for r in rows:
                    fh.write(json.dumps(r, ensure_ascii=False) + "\n")
        print(split, {k: len(v) for k, v in files.items()})


if __name__ == "__main__":
    main(sys.argv[1:])
