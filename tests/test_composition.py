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

BUILDERS = {"build_embedder", "EmbedderCache", "make_pool", "ConnectionPool", "OpenAI", "QdrantClient",
            "QdrantStore", "open_vector_store", "LlmConfig", "OpenAIChatGenerator", "OpenAIExtractor",
            "OpenAIContradictionChecker", "LearnPorts", "Responder"}

# path → references to a dependency constructor allowed there, and why
BUILDS = {
    "streams/bootstrap.py": 14,          # the composition root (with its embedder cache and recall's own pool)
    "streams/store/db.py": 1,            # make_pool itself
    "streams/vectors/store.py": 3,       # the Qdrant adapter opens its client
    "streams/embedding/providers.py": 1,  # the OpenAI embeddings adapter opens its client
    "streams/learn/llm.py": 1,           # the OpenAI adapter opens its client
    "streams/respond/generate.py": 1,    # the OpenAI generator adapter opens its client
    "streams/respond/evaluate_answers.py": 1,  # offline evaluation: a responder over an in-memory index
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


# Kafka client constructor → the function whose configuration it must be given (``**config``)
KAFKA_CLIENTS = {"AIOKafkaConsumer": "consumer_config", "AIOKafkaProducer": "producer_config",
                 "FetchTunedApp": "faust_config"}
# Faust options that are not about the connection (serialisation, guarantee, the app's own store)
FAUST_OWN = {"key_serializer", "value_serializer", "processing_guarantee", "store", "web_enabled",
             "broker_commit_interval"}


def _hand_built_kafka_clients(path: Path) -> list[str]:
    """Kafka clients whose configuration is not (only) the one function's: every keyword but the
    Faust app's own options is refused, and the ``**`` mapping must be ``consumer_config(...)``
    (or ``producer_config(...)``, ``faust_config(...)``), called there or handed in under that name."""
    def name(node):
        return node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else None

    bad = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if not (isinstance(node, ast.Call) and name(node.func) in KAFKA_CLIENTS):
            continue
        wanted = KAFKA_CLIENTS[name(node.func)]
        spread = [k.value for k in node.keywords if k.arg is None]
        explicit = {k.arg for k in node.keywords if k.arg is not None} - (FAUST_OWN if wanted == "faust_config" else set())
        from_config = len(spread) == 1 and (name(spread[0].func) == wanted if isinstance(spread[0], ast.Call)
                                            else name(spread[0]) == wanted)
        if explicit or not from_config:
            bad.append(f"{path.name}:{node.lineno} {name(node.func)}")
    return bad


def test_every_kafka_client_is_configured_by_the_composition_root():
    bad = [b for _, path in _python_files() for b in _hand_built_kafka_clients(path)]
    assert not bad, "configure it with streams.bootstrap's consumer_config/producer_config:\n" + "\n".join(bad)


def test_the_kafka_scan_catches_a_hand_built_client(tmp_path):
    p = tmp_path / "m.py"
    p.write_text("from aiokafka import AIOKafkaConsumer, AIOKafkaProducer\n"
                 "from streams.bootstrap import consumer_config, producer_config\n"
                 "a = AIOKafkaConsumer('t', bootstrap_servers='b', enable_auto_commit=False)\n"
                 "b = AIOKafkaConsumer('t', **consumer_config(s, 'g', 'c'), max_poll_records=5)\n"
                 "c = AIOKafkaProducer(**consumer_config(s, 'g', 'c'))\n"
                 "d = AIOKafkaProducer(**{'bootstrap_servers': 'b'})\n"
                 "e = AIOKafkaConsumer('t', **consumer_config(s, 'g', 'c', max_poll_records=5))\n"
                 "f = AIOKafkaProducer(**c.producer_config('x'))\n")
    assert _hand_built_kafka_clients(p) == ["m.py:3 AIOKafkaConsumer", "m.py:4 AIOKafkaConsumer",
                                            "m.py:5 AIOKafkaProducer", "m.py:6 AIOKafkaProducer"]


def test_consumers_fetch_what_producers_may_send():
    from streams.bootstrap import consumer_config, faust_config, producer_config

    s = Settings(kafka_bootstrap_servers="k:1", kafka_max_record_bytes=2_000_000, kafka_session_timeout=5,
                 kafka_heartbeat_interval=1, kafka_rebalance_timeout=6, kafka_fetch_max_wait_ms=50)
    c = consumer_config(s, "g", "memoria-test", max_poll_interval_ms=9)
    assert c == {"bootstrap_servers": "k:1", "client_id": "memoria-test", "group_id": "g",
                 "enable_auto_commit": False, "auto_offset_reset": "earliest",
                 "max_partition_fetch_bytes": s.producer_max_request_size, "fetch_max_wait_ms": 50,
                 "session_timeout_ms": 5000, "heartbeat_interval_ms": 1000, "rebalance_timeout_ms": 6000,
                 "max_poll_interval_ms": 9}
    assert c["max_partition_fetch_bytes"] >= producer_config(s, "p")["max_request_size"] > s.kafka_max_record_bytes
    f = faust_config(s, "g", "memoria-worker")
    assert f["consumer_max_fetch_size"] == f["producer_max_request_size"] == s.producer_max_request_size
    assert (f["broker"], f["broker_client_id"], f["producer_acks"], f["consumer_auto_offset_reset"]) == \
        ("kafka://k:1", "memoria-worker", -1, "earliest")


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
        # the offline composer reads the indexer's sentence vectors only when the indexer stores them
        for stored in (False, True):
            offline = Container(s.model_copy(update={"reply_provider": "offline", "chunk_sentence_vectors": stored}),
                                pool=pool, vector_store=store).responder().generator
            assert isinstance(offline, OfflineComposer) and (offline.sentences is not None) is stored
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


def test_embedders_are_cached_by_the_container_not_by_the_module():
    """No process-wide cache: ``build_embedder`` builds anew; a Container keeps what it built in its
    ``EmbedderCache``, which other containers share only when it is passed to them."""
    from streams.bootstrap import Container, EmbedderCache
    from streams.embedding import build_embedder

    url = "http://127.0.0.1:9"   # the service client connects on first use only
    assert build_embedder("use", "use-multilingual-v3", service_url=url) is not \
        build_embedder("use", "use-multilingual-v3", service_url=url)
    s = Settings(embedding_service_url=url, embedding_provider="use", embedding_model="use-multilingual-v3",
                 memory_embedding_provider="use", memory_embedding_model="use-multilingual-v3")
    a, b = Container(s), Container(s)
    assert a.memory_embedder is a.memory_embedder is a.embedder   # one model, built once per container
    assert a.memory_embedder is not b.memory_embedder and len(a.embedders) == 1
    shared = EmbedderCache()
    c, d = Container(s, embedders=shared), Container(s, embedders=shared)
    assert c.memory_embedder is d.embedder_for("use-multilingual-v3") and len(shared) == 1
    assert Container(Settings(embedding_service_url=url), embedders=shared).embedders is shared
