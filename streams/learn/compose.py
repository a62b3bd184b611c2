"""Build the learning ports from settings (used by the worker, the CLI and the benchmark)."""

from __future__ import annotations

from streams.learn.contradiction import ContradictionChecker, OpenAIContradictionChecker, RulesContradictionChecker
from streams.learn.extract import FactExtractor
from streams.learn.learn import LearnPorts
from streams.learn.llm import LlmConfig
from streams.settings import Settings


def llm_config(settings: Settings) -> LlmConfig:
    return LlmConfig(base_url=settings.openai_base_url, api_key=settings.openai_api_key, model=settings.llm_model,
                     timeout=settings.llm_timeout, max_retries=settings.llm_max_retries)


def build_extractor(settings: Settings, provider: str | None = None, embedder=None) -> FactExtractor:
    """``rules``/``offline``: the learnt offline extractor (artefact in streams/learn/models,
    built by ``make train``); ``patterns``: the hand-written rules alone; ``openai``: the chat model."""
    provider = provider or settings.extraction_provider
    if provider in ("rules", "offline"):
        from streams.learn.extract_learned import LearnedExtractor

        if embedder is not None and getattr(embedder, "name", None) != "use-multilingual-v3":
            embedder = None  # the artefact names its own embedder
        return LearnedExtractor(embedder=embedder)
    if provider == "patterns":
        from streams.learn.extract_rules import RulesExtractor

        return RulesExtractor()
    if provider == "openai":
        from streams.learn.extract_llm import OpenAIExtractor

        return OpenAIExtractor(llm_config(settings))
    raise ValueError(f"unknown extraction provider {provider!r} (rules|offline|patterns|openai)")


def build_checker(settings: Settings, provider: str | None = None) -> ContradictionChecker:
    provider = provider or settings.contradiction_provider
    if provider == "rules":
        return RulesContradictionChecker()
    if provider == "openai":
        return OpenAIContradictionChecker(llm_config(settings))
    raise ValueError(f"unknown contradiction provider {provider!r} (rules|openai)")


def build_ports(container, **overrides) -> LearnPorts:
    s = container.settings
    uses_model = "openai" in (s.extraction_provider, s.contradiction_provider)
    kw = dict(pool=container.pool, extractor=build_extractor(s, embedder=container.memory_embedder),
              embedder=container.memory_embedder,
              checker=build_checker(s), llm_model=s.llm_model if uses_model else "")
    kw.update(overrides)
    return LearnPorts(**kw)
