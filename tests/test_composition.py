"""One composition root (docs/architecture.md §1.8): ``streams/bootstrap.py`` builds every flow's
ports from the one settings object; flow modules take them as parameters.

The scans fail when a module outside the list below reads the settings object itself
(``get_settings()``) or constructs an infrastructure dependency (a pool, a vector store, an
embedder, an LLM client); the container test fails when a role's ports can no longer be built
from a ``Settings`` given to it.
"""

from __future__ import annotations

import ast
from collections import Counter
from pathlib import Path

from psycopg_pool import ConnectionPool

from streams.settings import REPO_ROOT, Settings

PACKAGES = ("streams", "connectors")

# Entry points: they turn command-line options into a Settings/Container and start a flow.
ENTRY_POINTS = ("cli.py", "_cli.py", "streams/demo.py", "streams/evaluation.py")

# path → get_settings() calls allowed outside the entry points, and why
SETTINGS_READS = {
    "streams/bootstrap.py": 1,   # Container() without settings: the process's settings
}

BUILDERS = {"build_embedder", "build_embedder_uncached", "make_pool", "ConnectionPool", "OpenAI", "QdrantClient",
            "QdrantStore", "open_vector_store", "LlmConfig", "OpenAIChatGenerator", "OpenAIExtractor",
            "OpenAIContradictionChecker", "LearnPorts", "Responder"}

# path → references to a dependency constructor allowed there, and why
BUILDS = {
    "streams/bootstrap.py": 16,          # the composition root
    "streams/store/db.py": 1,            # make_pool itself
    "streams/vectors/store.py": 3,       # the Qdrant adapter opens its client
    "streams/embedding/providers.py": 2,  # the embedder adapters and the per-process model cache
    "streams/learn/llm.py": 1,           # the OpenAI adapter opens its client
    "streams/respond/generate.py": 1,    # the OpenAI generator adapter opens its client
    "streams/learn/extract_learned.py": 1,  # the trained artefact names the embedder it was trained with
    "streams/learn/train_extractor.py": 1,  # offline training command
    "streams/respond/evaluate_answers.py": 2,  # offline evaluation: an in-memory index and composer
    "streams/maintain/cli.py": 1,        # `memoria maintain` reads the store without the proxy
}


def _python_files():
    for package in PACKAGES:
        for path in sorted((REPO_ROOT / package).rglob("*.py")):
            yield path.relative_to(REPO_ROOT).as_posix(), path


def _names(path: Path):
    """Every name a module calls, or passes to a call (``asyncio.to_thread(make_pool, ...)`` counts)."""
    def name(node):
        return node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else None

    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Call):
            for n in (name(node.func), *map(name, node.args)):
                if n:
                    yield node.lineno, n


def _scan(wanted: set[str], skip) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for rel, path in _python_files():
        if skip(rel):
            continue
        for lineno, name in _names(path):
            if name in wanted:
                found.setdefault(rel, []).append(f"{rel}:{lineno} {name}")
    return found


def _over(found: dict[str, list[str]], allowed: dict[str, int]) -> list[str]:
    return [r for rel, hits in found.items() if len(hits) > allowed.get(rel, 0) for r in hits]


def test_flow_modules_do_not_read_the_settings_object():
    found = _scan({"get_settings"}, lambda rel: rel == "streams/settings.py" or rel.endswith(ENTRY_POINTS))
    assert not _over(found, SETTINGS_READS), "take the settings (or the port) as a parameter:\n" + \
        "\n".join(_over(found, SETTINGS_READS))
    assert Counter({k: len(v) for k, v in found.items()}) == Counter(SETTINGS_READS), "shrink SETTINGS_READS"


def test_dependencies_are_built_by_the_composition_root():
    found = _scan(BUILDERS, lambda rel: rel.endswith(ENTRY_POINTS) and rel != "streams/maintain/cli.py")
    over = _over(found, BUILDS)
    assert not over, "build it in streams/bootstrap.py and pass it in:\n" + "\n".join(over)
    assert Counter({k: len(v) for k, v in found.items()}) == Counter(BUILDS), "shrink BUILDS"


def test_the_scan_sees_a_constructor_passed_as_a_value(tmp_path):
    p = tmp_path / "m.py"
    p.write_text("import asyncio\nfrom streams.store.db import make_pool\n"
                 "async def f(s):\n    return await asyncio.to_thread(make_pool, s)\n")
    assert [n for _, n in _names(p) if n in BUILDERS] == ["make_pool"]


def test_the_container_builds_every_roles_ports_from_the_settings_it_is_given(tmp_path):
    from streams.bootstrap import Container
    from streams.learn.contradiction import OpenAIContradictionChecker, RulesContradictionChecker
    from streams.learn.extract_llm import OpenAIExtractor
    from streams.learn.extract_rules import RulesExtractor
    from streams.learn.learn import LearnPorts
    from streams.respond.generate import OfflineComposer, OpenAIChatGenerator
    from streams.respond.handler import Responder
    from streams.vectors.store import QdrantStore

    s = Settings(openai_base_url="http://127.0.0.1:9/v1", openai_api_key="k", llm_model="m-test",
                 llm_timeout=7, extraction_provider="patterns", contradiction_provider="openai",
                 reply_provider="openai", embedding_provider="sentence-transformers",
                 embedding_model="all-minilm-l6-v2", memory_embedding_provider="sentence-transformers",
                 memory_embedding_model="all-minilm-l6-v2", embedding_service_url="http://127.0.0.1:9",
                 redis_url="", database_url="postgresql://nobody@127.0.0.1:9/none",
                 erasure_key="k-erasure-test", model_prices='{"m-test": [1.5, 3.0]}')
    pool = ConnectionPool(s.database_url, open=False)   # never opened: building ports connects nothing
    store = QdrantStore(path=str(tmp_path / "qdrant"))
    c = Container(s, pool=pool, vector_store=store)
    try:
        assert c.llm_config().model == "m-test" and c.llm_config().timeout == 7
        assert isinstance(c.extractor(), RulesExtractor) and isinstance(c.extractor("openai"), OpenAIExtractor)
        assert isinstance(c.checker(), OpenAIContradictionChecker)
        assert isinstance(c.checker("rules"), RulesContradictionChecker)
        assert isinstance(c.generator(), OpenAIChatGenerator) and isinstance(c.generator("offline"), OfflineComposer)
        ports = c.learn_ports()
        assert isinstance(ports, LearnPorts) and ports.pool is pool and ports.llm_model == "m-test"
        responder = c.responder()
        assert isinstance(responder, Responder) and responder.acts is not None
        assert isinstance(responder.generator, OpenAIChatGenerator)
        assert responder.memory_embedder.name == ports.embedder.name == "all-minilm-l6-v2"
        # the erasure ledger's key reaches both paths that consult it (inbound and learning)
        assert c.erasure_key == ports.erasure_key == responder.store.erasure_key == "k-erasure-test"
        # every producer of a process is configured alike: brokers, at-least-once, request size, client id
        assert c.producer_config("memoria-test", linger_ms=2) == {
            "bootstrap_servers": s.kafka_bootstrap_servers, "client_id": "memoria-test", "acks": "all",
            "enable_idempotence": False, "max_request_size": s.producer_max_request_size, "linger_ms": 2}
        # the cost table with the deployment's prices reaches the learning and the replies
        assert ports.prices is responder.prices is c.prices and c.prices["m-test"] == (1.5, 3.0)
        for provider, build in (("nope", c.extractor), ("nope", c.checker), ("nope", c.generator)):
            try:
                build(provider)
            except ValueError:
                continue
            raise AssertionError(f"{build.__name__} accepted an unknown provider")
    finally:
        c.close()
        store.close()
