"""The cost table is a value the container builds and passes in (no settings read in streams/pricing.py)."""

from __future__ import annotations

from streams.learn.model import TokenUsage
from streams.pricing import DEFAULT_PRICES, model_call, price_table
from streams.respond.handler import embedding_calls

MILLION = TokenUsage(prompt_tokens=1_000_000, completion_tokens=1_000_000)


def test_the_table_applies_the_overrides_it_is_given_and_nothing_else():
    table = price_table('{"gpt-4o-mini": [1, 2], "local-llm": [0.5, 0.5]}')
    assert table["gpt-4o-mini"] == (1.0, 2.0) and table["local-llm"] == (0.5, 0.5)
    assert table["gpt-4o"] == DEFAULT_PRICES["gpt-4o"]
    assert price_table("") == DEFAULT_PRICES
    assert price_table("not json") == DEFAULT_PRICES  # an invalid override is ignored (logged), not fatal


def test_a_call_is_priced_with_the_table_passed_in_else_the_built_in_one():
    table = price_table('{"gpt-4o-mini": [1, 2]}')
    assert model_call(1, "reply", "gpt-4o-mini-2024-07-18", MILLION, table=table).cost_usd == 3.0
    assert model_call(1, "reply", "gpt-4o-mini-2024-07-18", MILLION).cost_usd == 0.15 + 0.60
    [call] = embedding_calls(1, "r-1", {"text-embedding-3-small": 1_000_000},
                             price_table('{"text-embedding-3-small": [0.5, 0]}'))
    assert call.cost_usd == 0.5 and call.ref == "r-1:text-embedding-3-small"
    [default] = embedding_calls(1, "r-1", {"text-embedding-3-small": 1_000_000})
    assert default.cost_usd == DEFAULT_PRICES["text-embedding-3-small"][0]
