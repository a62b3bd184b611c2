"""End-to-end answer quality of the responder per knowledge embedder and
``rag_distance_threshold`` (cosine distance), on the dev fixtures.

    python -m streams.respond.evaluate_answers [--providers st,use,e5]
        [--thresholds 0.3,0.35,...] [--max-results 3] [--json]

Each question goes through the real ``respond()`` use-case (intent → strategy
→ retrieval → fallback or offline composer → price guard) with in-memory
ports: the knowledge documents are chunked like ``memoria ingest`` does and
searched by exact cosine distance (what Qdrant computes). Recall is off.

A question passes when:
- answerable with expected strings: the reply contains all of them (case-insensitive);
- answerable without strings (greeting, confirmation): the reply is not a fallback;
- unanswerable: the reply carries the hand-over sentence ("Vou verificar isso
  com a equipe e já retorno.").

``retr`` columns judge retrieval alone: an answerable question's expected
document is among the chunks returned; an unanswerable one gets no chunk.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
import uuid
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Sequence

import numpy as np

from schemas.events import InboundMessage
from streams.ingest.chunking import chunk_text
from streams.ingest.documents import document_body
from streams.learn.fixtures import FIXTURES_DIR, knowledge_file
from streams.respond.generate import (
    FALLBACK_LOOP,
    FALLBACK_NO_KNOWLEDGE,
    OfflineComposer,
)
from streams.respond.handler import Responder, respond
from streams.respond.intent import IntentExamples
from streams.respond.model import ConversationContext, InboxConfig, KnowledgeChunk
from streams.respond.text import fold

FIXTURES = FIXTURES_DIR
PROVIDERS = {"st": ("sentence-transformers", "all-minilm-l6-v2"), "use": ("use", "use-multilingual-v3"),
             "e5": ("e5", "multilingual-e5-small")}
DEFAULT_THRESHOLDS = (0.12, 0.15, 0.18, 0.2, 0.25, 0.35, 0.5, 0.6, 0.7, 0.8, 0.85, 0.9)
NS = uuid.UUID("4d0f4f0e-8f55-4d7e-b2b1-7f0b3b0c2a11")


class CachedEmbedder:
    """Memoises vectors by text (the grid re-embeds the same sentences many times)."""

    def __init__(self, inner):
        self.inner, self.name, self.dim = inner, inner.name, inner.dim
        self._q: dict[str, np.ndarray] = {}
        self._p: dict[str, np.ndarray] = {}

    def _get(self, cache, fn, texts):
        missing = [t for t in dict.fromkeys(texts) if t not in cache]
        if missing:
            for t, v in zip(missing, fn(missing)):
                cache[t] = np.asarray(v, dtype=np.float32)
        return np.stack([cache[t] for t in texts]) if texts else np.zeros((0, self.dim), np.float32)

    def embed_queries(self, texts):
        return self._get(self._q, self.inner.embed_queries, list(texts))

    def embed_passages(self, texts):
        return self._get(self._p, self.inner.embed_passages, list(texts))


@dataclass
class MemoryStore:
    inbox: InboxConfig

    def store_inbound(self, msg):
        return True

    def load_context(self, msg, history):
        return ConversationContext(recall_enabled=False, inbox=self.inbox)

    def receive(self, msg, history):
        return self.load_context(msg, history)

    def save_reply(self, reply, lead_state, *, model_call=None, recall_ms=None, embedding_calls=()):
        pass

class NoMemory:
    def live_facts(self, account_id, contact_id, *, timeout_s):
        return []


@dataclass
class Index:
    """Exact cosine search over the chunked fixtures (per account)."""

    rows: list[tuple[int, str, str]] = field(default_factory=list)  # (account, document_id, text)
    vecs: np.ndarray | None = None

    def search(self, query_vec, account_id: int, limit: int, max_distance: float) -> list[KnowledgeChunk]:
        d = 1.0 - self.vecs @ np.asarray(query_vec, dtype=np.float32)
        out = [KnowledgeChunk(uuid.uuid5(NS, f"{doc}:{text}"), uuid.uuid5(NS, doc), float(d[k]), text)
               for k, (acc, doc, text) in enumerate(self.rows) if acc == account_id and d[k] <= max_distance]
        return sorted(out, key=lambda c: c.distance)[:limit]

    def lexical_search(self, account_id: int, stems, limit: int) -> list[KnowledgeChunk]:
        """What ``ChunkKnowledgeSearch.lexical_search`` answers: chunks with a word
        starting with every stem (folded), distance 1.0."""
        out = []
        for acc, doc, text in self.rows:
            words = fold(text).split()
            if acc == account_id and all(any(w.startswith(s) for w in words) for s in stems):
                out.append(KnowledgeChunk(uuid.uuid5(NS, f"{doc}:{text}"), uuid.uuid5(NS, doc), 1.0, text))
        return out[:limit]


def load(path: Path) -> list[dict]:
    return [json.loads(x) for x in path.read_text().splitlines() if x.strip()]


def build_index(embedder, docs: Sequence[dict], chunk_size=800, overlap=120) -> Index:
    idx = Index()
    for d in docs:
        # chunked as the demo ingests it (``document_body``), so the figures are the product's
        for c in chunk_text(document_body(d.get("title", ""), d["text"]), chunk_size, overlap):
            idx.rows.append((d["account_id"], d["document_id"], c.content))
    idx.vecs = np.asarray(embedder.embed_passages([r[2] for r in idx.rows]), dtype=np.float32)
    return idx


def judge(q: dict, text: str) -> bool:
    fallback = FALLBACK_NO_KNOWLEDGE in text or FALLBACK_LOOP in text
    if not q["answerable"]:
        return fallback
    if q["expected_answer_contains"]:
        return all(s.lower() in text.lower() for s in q["expected_answer_contains"])
    return not fallback


async def run_grid(embedder, questions, docs, thresholds, max_results: int, chunking=(800, 120),
                   generator=None) -> list[dict]:
    """One accuracy per threshold (``None``: the cut-off calibrated for the embedder);
    ``generator`` defaults to the offline composer."""
    index = build_index(embedder, docs, *chunking)
    doc_of = {uuid.uuid5(NS, d["document_id"]): d["document_id"] for d in docs}
    out = []
    for th in thresholds:
        deps = Responder(store=MemoryStore(InboxConfig(inbox_id=1, rag_distance_threshold=th,
                                                       rag_max_results=max_results)),
                         memory=NoMemory(), knowledge=index, memory_embedder=embedder,
                         knowledge_embedder=embedder,
                         generator=generator or OfflineComposer(embedder=embedder),
                         intent_examples=IntentExamples(embedder))
        res = {"threshold": th, "ans_ok": 0, "ans_n": 0, "unans_ok": 0, "unans_n": 0,
               "retr_ans_ok": 0, "retr_ans_n": 0, "retr_unans_ok": 0, "failures": [],
               "failure_details": []}
        for q in questions:
            msg = InboundMessage(message_id=q["question_id"], account_id=q["account_id"], inbox_id=1,
                                 conversation_id=q["question_id"], contact_id=1, channel="eval",
                                 text=q["text"], sent_at=datetime.now(timezone.utc))
            o = await respond(msg, deps)
            ok = judge(q, o.reply.text)
            key = "ans" if q["answerable"] else "unans"
            res[f"{key}_ok"] += ok
            res[f"{key}_n"] += 1
            got_docs = {doc_of[c.document_id] for c in o.chunks}
            if q["answerable"] and q["expected_document_ids"]:
                res["retr_ans_n"] += 1
                res["retr_ans_ok"] += bool(got_docs & set(q["expected_document_ids"]))
            elif not q["answerable"]:
                res["retr_unans_ok"] += not o.chunks
            if not ok:
                res["failures"].append(q["question_id"])
                res["failure_details"].append(
                    {"question_id": q["question_id"], "text": q["text"], "gold_intent": q["intent"],
                     "intent": o.reply.intent, "answerable": q["answerable"],
                     "handed_over": FALLBACK_NO_KNOWLEDGE in o.reply.text or FALLBACK_LOOP in o.reply.text,
                     "document_found": bool(got_docs & set(q["expected_document_ids"])),
                     "expected": q["expected_answer_contains"] if q["answerable"] else "(hand-over)",
                     "reply": o.reply.text})
        res["accuracy"] = (res["ans_ok"] + res["unans_ok"]) / max(1, res["ans_n"] + res["unans_n"])
        out.append(res)
    return out


def answer_accuracy(folder: str | Path, embedder, *, max_results: int = 3, chunking=(300, 120)) -> dict:
    """What ``make eval`` reports for answers: every question of ``folder`` through
    ``respond()`` (intent with its example fallback, the calibrated distance cut-off
    of the embedder, the offline composer), judged by ``judge``."""
    folder = Path(folder)
    questions, docs = load(folder / "questions.jsonl"), load(knowledge_file(folder))
    res = asyncio.run(run_grid(embedder, questions, docs, [None], max_results, chunking))[0]
    n = res["ans_n"] + res["unans_n"]
    return {"accuracy": res["accuracy"], "correct": res["ans_ok"] + res["unans_ok"], "n": n,
            "failures": res["failures"]}


def distances(embedder, questions, docs, chunking=(800, 120)) -> dict:
    """Best distance of an expected document (answerable) vs of any chunk (unanswerable)."""
    index = build_index(embedder, docs, *chunking)
    ans, unans = [], []
    for q in questions:
        if q["answerable"] and not q["expected_document_ids"]:
            continue
        v = embedder.embed_queries([q["text"]])[0]
        d = 1.0 - index.vecs @ v
        mine = [k for k, r in enumerate(index.rows) if r[0] == q["account_id"]]
        if q["answerable"]:
            exp = [k for k in mine if index.rows[k][1] in q["expected_document_ids"]]
            ans.append(float(min(d[k] for k in exp)))
        else:
            unans.append(float(min(d[k] for k in mine)))
    return {"answerable_best": sorted(ans), "unanswerable_best": sorted(unans)}


def main(argv: list[str] | None = None) -> None:
    from rich.console import Console
    from rich.table import Table

    from streams.bootstrap import Container

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--providers", default="st,use,e5")
    ap.add_argument("--thresholds", default=",".join(map(str, DEFAULT_THRESHOLDS)))
    ap.add_argument("--max-results", type=int, default=3)
    ap.add_argument("--questions", type=Path, default=FIXTURES / "questions.jsonl")
    ap.add_argument("--knowledge", type=Path, default=knowledge_file(FIXTURES))
    ap.add_argument("--chunk-size", type=int, default=300)
    ap.add_argument("--chunk-overlap", type=int, default=120)
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args(argv)
    questions, docs = load(a.questions), load(a.knowledge)
    thresholds = [float(x) for x in a.thresholds.split(",")]
    report = []
    container = Container()   # the composition root loads each model, in this process
    for p in a.providers.split(","):
        provider, model = PROVIDERS[p]
        t0 = time.perf_counter()
        emb = CachedEmbedder(container.in_process_embedder(provider, model))
        grid = asyncio.run(run_grid(emb, questions, docs, thresholds, a.max_results,
                                    (a.chunk_size, a.chunk_overlap)))
        dist = distances(emb, questions, docs, (a.chunk_size, a.chunk_overlap))
        report.append({"provider": provider, "model": emb.name, "grid": grid, "distances": dist,
                       "seconds": round(time.perf_counter() - t0, 1)})
    if a.json:
        print(json.dumps(report, ensure_ascii=False))
        return
    con = Console()
    for r in report:
        t = Table(title=f"{r['model']} (max_results={a.max_results}, {r['seconds']}s)")
        for c in ("threshold", "answerable ok", "unanswerable ok", "accuracy", "retr answerable",
                  "retr unanswerable", "failures"):
            t.add_column(c)
        best = max(r["grid"], key=lambda g: (g["accuracy"], -abs(g["threshold"] - 0.5)))
        for g in r["grid"]:
            style = "bold green" if g is best else None
            t.add_row(f"{g['threshold']:.2f}", f"{g['ans_ok']}/{g['ans_n']}", f"{g['unans_ok']}/{g['unans_n']}",
                      f"{g['accuracy']:.3f}", f"{g['retr_ans_ok']}/{g['retr_ans_n']}",
                      f"{g['retr_unans_ok']}/{g['unans_n']}", " ".join(g["failures"][:8]), style=style)
        con.print(t)
        d = r["distances"]
        con.print(f"  best distance of an expected doc (answerable): "
                  f"{' '.join(f'{x:.2f}' for x in d['answerable_best'])}")
        con.print(f"  best distance of any chunk (unanswerable):     "
                  f"{' '.join(f'{x:.2f}' for x in d['unanswerable_best'])}\n")


if __name__ == "__main__":
    main()
