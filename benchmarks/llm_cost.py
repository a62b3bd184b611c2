"""What the language-model path costs per 1,000 conversations (README: "The language-model path").

    python -m benchmarks.llm_cost [--model gpt-4o-mini]     # make bench-llm-cost

No model runs here: every dev conversation goes through the real
``OpenAIExtractor`` (prompt with its labelled examples, schema, transcript) to
the local OpenAI-compatible server (``tests/support/openai_server.py``), which
answers with that conversation's **gold facts** (a realistic answer of a good
model) and reports usage **estimated at ~4 characters a token** from the request
it received and the answer it sent. Each dev contradiction pair goes the same way
through ``OpenAIContradictionChecker``. Costs use the configured price table
(``streams/pricing.py``, ``MEMORIA_MODEL_PRICES``).
"""

from __future__ import annotations

import argparse
import json
import sys

from streams.learn.contradiction import MemoryView, OpenAIContradictionChecker
from streams.learn.extract_llm import OpenAIExtractor
from streams.learn.fewshot import slot_of
from streams.learn.fixtures import DEV_DIR, read_jsonl, transcript_of
from streams.learn.llm import LlmConfig
from streams.pricing import price_table
from streams.settings import get_settings
from tests.support.openai_server import FakeOpenAI, Reply


def _gold_answer(row: dict) -> dict:
    facts = []
    for g in row.get("gold_facts", []):
        key, value = slot_of(g["memory_type"], g["content"])
        facts.append({"memory_type": g["memory_type"], "memory_key": key, "content": g["content"],
                      "normalized_value": value, "evidence": g["evidence"], "confidence": 0.9})
    return {"facts": facts}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.llm_cost")
    ap.add_argument("--model", default="gpt-4o-mini")
    args = ap.parse_args(argv)
    prices = price_table(get_settings().model_prices)  # what Container.prices builds
    prompt_price, completion_price = next((v for k, v in prices.items() if args.model.startswith(k)), (0.0, 0.0))
    conversations = list(read_jsonl(DEV_DIR / "conversations.jsonl"))
    pairs = list(read_jsonl(DEV_DIR / "contradictions.jsonl"))
    ext = {"prompt": 0, "completion": 0}
    con = {"prompt": 0, "completion": 0}
    with FakeOpenAI() as server:
        config = LlmConfig(base_url=server.base_url, api_key="local", model=args.model, timeout=30)
        extractor = OpenAIExtractor(config)
        for row in conversations:
            server.push(Reply.json(_gold_answer(row), prompt_tokens=None, completion_tokens=None))
            usage = extractor.propose(transcript_of(row)).usage
            ext["prompt"] += usage.prompt_tokens
            ext["completion"] += usage.completion_tokens
        checker = OpenAIContradictionChecker(config)
        for p in pairs:
            server.push(Reply.json({"contradicts": p["contradicts"], "reason": p["why"]},
                                   prompt_tokens=None, completion_tokens=None))
            usage = checker.check(MemoryView(memory_type=p["memory_type"], content=p["old"]),
                                  MemoryView(memory_type=p["memory_type"], content=p["new"])).usage
            con["prompt"] += usage.prompt_tokens
            con["completion"] += usage.completion_tokens

    def cost(t: dict, n: int) -> float:
        return 1000 / n * (t["prompt"] * prompt_price + t["completion"] * completion_price) / 1e6

    n, m = len(conversations), len(pairs)
    out = {
        "model": args.model, "prices_usd_per_million": [prompt_price, completion_price],
        "extraction": {"conversations": n, "prompt_tokens_per_conversation": round(ext["prompt"] / n),
                       "completion_tokens_per_conversation": round(ext["completion"] / n),
                       "usd_per_1000_conversations": round(cost(ext, n), 4)},
        "contradiction": {"checks": m, "prompt_tokens_per_check": round(con["prompt"] / m),
                          "completion_tokens_per_check": round(con["completion"] / m),
                          "usd_per_1000_checks": round(cost(con, m), 4)},
    }
    print(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
