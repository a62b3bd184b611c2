"""Labelled examples from the development half for the model prompts.

    python -m streams.learn.fewshot      # (part of ``make train``) writes models/fewshot.json

Chosen by a fixed rule, never by hand and never from the held-out half:
per business, the shortest development conversation (in characters) with at
least three gold facts, plus the shortest one holding a message aimed at the
agent (``"instruction": true``), whose facts show that nothing is learnt from
that message; for contradiction, the first two true and two false pairs by id
plus the first pair with an instruction inside a fact. The file is versioned
with the code so a prompt is reproducible; ``load()`` reads it.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

from streams.learn.lexicon import ROOM_WORDS, fold, is_instruction, parse_slots

FEWSHOT_FILE = Path(__file__).parent / "models" / "fewshot.json"


def slot_of(memory_type: str, content: str) -> tuple[str, str]:
    """A slot for a gold fact (gold facts carry none): the parser's when it is sure
    of it, else the memory type with the folded content."""
    slots = [s for s in parse_slots(memory_type, content) if s.value and not s.subject]
    if slots:
        slot = slots[0]
        trusted = slot.key != "preferred_room" or re.search(ROOM_WORDS, fold(content))
        if trusted and slot.value in fold(content) or slot.key in {"visit_frequency", "arrival_time", "partner"}:
            key = "complaint" if slot.key.startswith("complaint_") else slot.key
            return key, ("not:" if slot.negated else "") + slot.value
    return memory_type, fold(content)[:60]


def build(dev_dir: Path) -> dict:
    rows = [json.loads(line) for line in open(dev_dir / "conversations.jsonl", encoding="utf-8") if line.strip()]
    size = lambda r: sum(len(m["text"]) for m in r["messages"])  # noqa: E731
    chosen: list[dict] = []
    for account in sorted({r["account_id"] for r in rows}):
        pool = [r for r in rows if r["account_id"] == account and len(r["gold_facts"]) >= 3]
        if pool:
            chosen.append(min(pool, key=lambda r: (size(r), r["conversation_id"])))
    with_instruction = [r for r in rows if any(m.get("instruction") for m in r["messages"]) and r not in chosen]
    if with_instruction:
        chosen.append(min(with_instruction, key=lambda r: (-min(len(r["gold_facts"]), 1), size(r), r["conversation_id"])))
    conversations = []
    for r in chosen:
        facts = []
        for g in r["gold_facts"]:
            key, value = slot_of(g["memory_type"], g["content"])
            facts.append({"memory_type": g["memory_type"], "memory_key": key, "content": g["content"],
                          "normalized_value": value, "evidence": g["evidence"], "confidence": 0.9})
        conversations.append({"conversation_id": r["conversation_id"],
                              "messages": [{"role": m["role"], "text": m["text"]} for m in r["messages"]],
                              "facts": facts})
    pairs = [json.loads(line) for line in open(dev_dir / "contradictions.jsonl", encoding="utf-8") if line.strip()]
    pairs.sort(key=lambda p: p["pair_id"])
    picked = [p for p in pairs if p["contradicts"]][:2] + [p for p in pairs if not p["contradicts"]][:2]
    picked += [p for p in pairs if is_instruction(p["new"]) and p not in picked][:1]
    return {"source": "examples/dev", "conversations": conversations,
            "pairs": [{k: p[k] for k in ("memory_type", "old", "new", "contradicts", "why")} for p in picked]}


def load(path: Path = FEWSHOT_FILE) -> dict:
    if not Path(path).exists():
        return {"conversations": [], "pairs": []}
    return json.loads(Path(path).read_text(encoding="utf-8"))


def main(argv: list[str] | None = None) -> int:
    from streams.learn.fixtures import DEV_DIR

    data = build(DEV_DIR)
    FEWSHOT_FILE.parent.mkdir(parents=True, exist_ok=True)
    FEWSHOT_FILE.write_text(json.dumps(data, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    print(f"few-shot examples: {len(data['conversations'])} conversations "
          f"({', '.join(c['conversation_id'] for c in data['conversations'])}), {len(data['pairs'])} pairs; "
          f"written {FEWSHOT_FILE}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
