"""CLI commands for the learning stage; the main app registers them with
``register(app)``. They run without Kafka or Postgres."""

from __future__ import annotations

import json
from pathlib import Path

import typer

from streams.learn.contradiction import MemoryView, build_checker
from streams.learn.extract import FactExtractor, extract_facts
from streams.learn.fixtures import read_jsonl, transcript_of


def build_extractor(provider: str) -> FactExtractor:
    if provider == "rules":
        from streams.learn.extract_rules import RulesExtractor

        return RulesExtractor()
    if provider == "openai":
        from streams.learn.extract_llm import OpenAIExtractor
        from streams.learn.llm import llm_config_from_settings

        return OpenAIExtractor(llm_config_from_settings())
    raise typer.BadParameter(f"unknown provider {provider!r} (rules|openai)")


def extract(
    file: Path = typer.Argument(..., exists=True, dir_okay=False, help="conversations, JSON Lines (fixture format)"),
    provider: str = typer.Option("rules", "--provider", help="rules | openai"),
) -> None:
    """Print the validated facts of each conversation, one JSON line per fact."""
    extractor = build_extractor(provider)
    for row in read_jsonl(file):
        result = extract_facts(transcript_of(row), extractor)
        if result.warning:
            typer.echo(f"warning: conversation {row['conversation_id']}: {result.warning}", err=True)
        for fact in result.facts:
            typer.echo(json.dumps({
                "conversation_id": row["conversation_id"],
                "memory_type": fact.memory_type,
                "memory_key": fact.memory_key,
                "content": fact.content,
                "evidence": fact.evidence,
                "confidence": fact.confidence,
                "scope": fact.scope,
            }, ensure_ascii=False))


def contradicts(
    file: Path = typer.Argument(..., exists=True, dir_okay=False, help="pairs, JSON Lines (fixture format)"),
    provider: str = typer.Option("rules", "--provider", help="rules | openai"),
) -> None:
    """Print one JSON line per pair: ``pair_id`` and ``contradicts``."""
    if provider not in {"rules", "openai"}:
        raise typer.BadParameter(f"unknown provider {provider!r} (rules|openai)")
    checker = build_checker(provider)
    for row in read_jsonl(file):
        verdict = checker.check(
            MemoryView(memory_type=row["memory_type"], content=row["old"]),
            MemoryView(memory_type=row.get("new_memory_type", row["memory_type"]), content=row["new"]),
        )
        typer.echo(json.dumps({"pair_id": row["pair_id"], "contradicts": verdict.contradicts}, ensure_ascii=False))


def register(app: typer.Typer) -> None:
    """Add the ``extract`` and ``contradicts`` commands to ``app``."""
    app.command("extract")(extract)
    app.command("contradicts")(contradicts)
