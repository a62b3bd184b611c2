"""Check a corpus folder (examples/dev, examples/heldout or a writer's folder).

Usage: python examples/check_corpus.py FOLDER [FOLDER...]
Every rule in examples/README.md that a machine can check: JSON Lines, required
fields, memory types, default scopes, evidence verbatim in a contact message,
question/recall shapes.  Exits 1 on the first folder with problems.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

TYPES = {"preferencia", "data_comemorativa", "vinculo_social", "padrao_comportamental",
         "reclamacao", "feedback_positivo", "restricao", "vinculo_comercial", "contexto_pessoal"}
UNIT_SCOPED = {"padrao_comportamental", "reclamacao", "feedback_positivo"}
INTENTS = {"price_question", "info_request", "policy", "greeting", "objection", "confirmation", "general"}


def rows(path: Path) -> list[dict]:
    if not path.exists():
        return []
    out = []
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if line.strip():
            try:
                out.append(json.loads(line))
            except json.JSONDecodeError as exc:
                raise SystemExit(f"{path}:{n}: not JSON: {exc}")
    return out


def check_fact(cid, c: dict, f: dict, contact_texts: list[str], instructions: list[str]) -> list[str]:
    errs = []
    if f.get("memory_type") not in TYPES:
        errs.append(f"{cid}: bad type {f.get('memory_type')}")
    want = "unit" if f.get("memory_type") in UNIT_SCOPED else "global"
    if f.get("scope") != want:
        errs.append(f"{cid}: scope of {f.get('memory_type')} must be {want}")
    if want == "unit" and c.get("unit_id") is None:
        errs.append(f"{cid}: unit-scoped fact in a conversation without unit_id")
    ev = f.get("evidence", "")
    if not ev or not any(ev in t for t in contact_texts):
        errs.append(f"{cid}: evidence not verbatim in a contact message: {ev!r}")
    if any(ev in t for t in instructions):
        errs.append(f"{cid}: evidence taken from an instruction message: {ev!r}")
    if not f.get("content"):
        errs.append(f"{cid}: empty content")
    return errs


def check_conversation(c: dict) -> list[str]:
    errs = []
    cid = c.get("conversation_id")
    for key in ("conversation_id", "account_id", "contact_id", "unit_id", "inbox_id", "messages", "gold_facts"):
        if key not in c:
            errs.append(f"{cid}: missing {key}")
    contact_texts = [m["text"] for m in c.get("messages", []) if m.get("role") == "contact"]
    instr = [m["text"] for m in c.get("messages", []) if m.get("role") == "contact" and m.get("instruction")]
    for m in c.get("messages", []):
        if m.get("role") not in ("contact", "agent") or not m.get("text") or not m.get("sent_at"):
            errs.append(f"{cid}: bad message {m}")
    if len(c.get("gold_facts", [])) > 5:
        errs.append(f"{cid}: more than 5 gold facts")
    for f in c.get("gold_facts", []):
        errs += check_fact(cid, c, f, contact_texts, instr)
    return errs


def check_question(q: dict, knowledge_ids: set[str]) -> list[str]:
    errs = []
    if q.get("intent") not in INTENTS:
        errs.append(f"{q.get('question_id')}: bad intent {q.get('intent')}")
    for d in q.get("expected_document_ids", []):
        if knowledge_ids and d not in knowledge_ids:
            errs.append(f"{q.get('question_id')}: unknown document {d}")
    if q.get("answerable") is False and (q.get("expected_document_ids") or q.get("expected_answer_contains")):
        errs.append(f"{q.get('question_id')}: unanswerable question with documents/strings")
    return errs


def check(folder: Path, knowledge_ids: set[str]) -> list[str]:
    errs: list[str] = []
    for c in rows(folder / "conversations.jsonl"):
        errs += check_conversation(c)
    for p in rows(folder / "contradictions.jsonl"):
        if p.get("memory_type") not in TYPES or not isinstance(p.get("contradicts"), bool) or not p.get("old") or not p.get("new"):
            errs.append(f"{p.get('pair_id')}: bad pair")
    for q in rows(folder / "questions.jsonl"):
        errs += check_question(q, knowledge_ids)
    for r in rows(folder / "recall.jsonl"):
        n = len(r.get("contact_facts", []))
        if not r.get("query") or any(not (0 <= i < n) for i in r.get("relevant", [])):
            errs.append(f"{r.get('case_id')}: bad recall case")
    return errs


def knowledge_ids_of(folder: Path) -> tuple[set[str], dict[str, str]]:
    ids, texts = set(), {}
    for cand in (folder / "knowledge.jsonl", folder.parent / "knowledge.jsonl"):
        for d in rows(cand):
            ids.add(d["document_id"])
            texts[d["document_id"]] = d["text"]
    return ids, texts


def main(argv: list[str]) -> int:
    bad = False
    for name in argv:
        folder = Path(name)
        ids, texts = knowledge_ids_of(folder)
        errs = check(folder, ids)
        for q in rows(folder / "questions.jsonl"):
            blob = " ".join(texts.get(d, "") for d in q.get("expected_document_ids", [])).lower()
            for s in q.get("expected_answer_contains", []):
                if blob and s.lower() not in blob:
                    errs.append(f"{q['question_id']}: {s!r} is not in its expected documents")
        convs = rows(folder / "conversations.jsonl")
        facts = sum(len(c.get("gold_facts", [])) for c in convs)
        print(f"{folder}: {len(convs)} conversations, {facts} gold facts, "
              f"{len(rows(folder / 'contradictions.jsonl'))} pairs, {len(rows(folder / 'questions.jsonl'))} questions, "
              f"{len(rows(folder / 'recall.jsonl'))} recall cases, {len(ids)} documents: {len(errs)} problems")
        for e in errs[:50]:
            print("  ", e)
        bad = bad or bool(errs)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
