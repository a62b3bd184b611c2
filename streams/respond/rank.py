"""``memoria rank FILE``: what recall would inject for each recall case.

Reads recall cases (``{"case_id", "contact_facts": [{"memory_type", "content"}],
"query", ...}`` per line) and prints one JSON line per case::

    {"case_id": "dev-r01", "top": [2, 5, 1, 0, 3]}

``top`` holds 0-based indices into ``contact_facts`` of the at most 5 facts
the responder's own scoring (:func:`streams.respond.recall.score_memories`)
would inject, best first. Cases carry no unit, so their facts are treated as
compatible (scope global): the command measures relevance, not scoping. No
Kafka or Postgres is involved; the embedder is the configured one
(``MEMORIA_EMBEDDING_PROVIDER``/``MEMORIA_EMBEDDING_MODEL``) unless
``--provider``/``--model`` say otherwise.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterable, Optional

import typer

from streams.respond.recall import TOP_K, MemoryFact, fact_passage_text, message_parts, score_memories


def load_cases(path: str | Path) -> list[dict[str, Any]]:
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def rank_case(case: dict[str, Any], embedder, top_k: int = TOP_K,
              min_score: float | None = None, examples=None) -> list[int]:
    """Indices of the facts recall would inject for one case, best first. ``examples``: the
    labelled recall cases the responder votes with (``RecallExamples``; None: none)."""
    facts_in = case["contact_facts"]
    passages = embedder.embed_passages([fact_passage_text(f["memory_type"], f["content"])
                                        for f in facts_in])
    query = embedder.embed_queries([case["query"]])[0]
    parts = message_parts(case["query"])
    part_vecs = embedder.embed_queries(parts) if parts else None
    facts = [MemoryFact(id=i, memory_type=f["memory_type"], content=f["content"],
                        confidence=float(f.get("confidence", 1.0)), scope="global",
                        source_unit_id=None, weight=float(f.get("weight", 1.0)),
                        embedding=passages[i])
             for i, f in enumerate(facts_in)]
    return [s.fact.id for s in score_memories(query, facts, unit_id=None, top_k=top_k,
                                              min_score=min_score, query_text=case["query"],
                                              part_vecs=part_vecs, examples=examples)]


def rank_cases(cases: Iterable[dict[str, Any]], embedder, top_k: int = TOP_K,
               min_score: float | None = None, path: str | Path | None = None) -> list[dict[str, Any]]:
    """Each case ranked as the responder would, with the labelled recall cases it votes with;
    ``path``: the file the cases come from, whose own set is left out of them when it is one
    (``RecallExamples.leaving_out``)."""
    from streams.respond.recall_examples import RecallExamples

    examples = RecallExamples.leaving_out(embedder, path)
    return [{"case_id": c["case_id"], "top": rank_case(c, embedder, top_k, min_score, examples)}
            for c in cases]


def build_configured_embedder(provider: Optional[str] = None, model: Optional[str] = None):
    """The offline commands' embedder, from the composition root."""
    from streams.bootstrap import Container

    return Container().in_process_embedder(provider, model)


def register(app: typer.Typer) -> None:
    """Add the ``rank`` command to the CLI."""

    @app.command("rank")
    def rank(file: Path = typer.Argument(..., exists=True, dir_okay=False, help="recall cases (JSONL)"),
             provider: Optional[str] = typer.Option(None, "--provider", help="embedding provider"),
             model: Optional[str] = typer.Option(None, "--model", help="embedding model"),
             top_k: int = typer.Option(TOP_K, "--top-k")) -> None:
        """Print, per recall case, the indices of the facts recall would inject."""
        embedder = build_configured_embedder(provider, model)
        for row in rank_cases(load_cases(file), embedder, top_k=top_k, path=file):
            typer.echo(json.dumps(row, ensure_ascii=False))


if __name__ == "__main__":  # python -m streams.respond.rank FILE
    _app = typer.Typer(add_completion=False)
    register(_app)  # a single command: typer runs it directly
    _app()
