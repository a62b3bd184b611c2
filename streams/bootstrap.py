"""The composition root: builds real dependencies from settings, once.

The worker's roles, CLI commands, the admin API, the connectors and the tests all
get their ports from a ``Container``: the pool, the vector store, the embedders,
the fact extractor and contradiction checker (and the LLM client configuration
they share), the reply generator and the responder's ports. Flow modules take
these as parameters and never read settings or build a dependency themselves
(``tests/test_composition.py``). Flow modules are imported inside the methods,
so importing this module stays cheap (``memoria --help``).
"""

from __future__ import annotations

import functools
import logging
import threading
from functools import cached_property

from psycopg_pool import ConnectionPool

from streams.embedding import Embedder
from streams.embedding.providers import MODEL_PROVIDERS, build_embedder
from streams.settings import Settings, get_settings
from streams.vectors.port import LocalStoreBusy, VectorStore
from streams.vectors.proxy import VectorStoreClient
from streams.vectors.store import QdrantStore

log = logging.getLogger(__name__)


def open_vector_store(settings: Settings, *, prefer_proxy: bool = True) -> VectorStore:
    """The store a process should use.

    ``QDRANT_URL`` set → the server. Otherwise the local path; if the worker
    holds it, the worker's HTTP proxy (same operations).
    """
    if settings.qdrant_url:
        return QdrantStore(url=settings.qdrant_url, api_key=settings.qdrant_api_key)
    try:
        return QdrantStore(path=settings.qdrant_path)
    except LocalStoreBusy:
        if not prefer_proxy:
            raise
        url = f"http://{settings.worker_web_host}:{settings.worker_web_port}"
        log.info("local Qdrant store is held by the worker; using its proxy at %s", url)
        return VectorStoreClient(url)


def producer_config(settings: Settings, client_id: str, **overrides) -> dict:
    """Every Kafka producer's configuration (``AIOKafkaProducer(**config)``): the brokers, ``acks=all``
    without idempotence (at-least-once on Tansu, docs/architecture.md §7), the largest request the
    consumers accept plus framing, and a client id naming the process; ``overrides`` for batching."""
    config = dict(bootstrap_servers=settings.kafka_bootstrap_servers, client_id=client_id, acks="all",
                  enable_idempotence=False, max_request_size=settings.producer_max_request_size)
    config.update(overrides)
    return config


def consumer_config(settings: Settings, group_id: str | None, client_id: str, **overrides) -> dict:
    """Every Kafka consumer's configuration (``AIOKafkaConsumer(*topics, **config)``): the brokers, a
    client id naming the process, ``group_id`` (None: a consumer that assigns partitions itself and
    commits nothing), offsets committed by our code only after a record is settled (never
    auto-commit), reading from the earliest offset a group has not committed, the group timeouts
    Tansu needs (docs/architecture.md §7), the long-poll bound, and a per-partition fetch as large
    as the largest request our producers send (``producer_max_request_size``), so the largest
    record a producer accepts is one a consumer can fetch; ``overrides`` for the exceptions."""
    config = dict(bootstrap_servers=settings.kafka_bootstrap_servers, client_id=client_id, group_id=group_id,
                  enable_auto_commit=False, auto_offset_reset="earliest",
                  max_partition_fetch_bytes=settings.producer_max_request_size,
                  fetch_max_wait_ms=settings.kafka_fetch_max_wait_ms,
                  session_timeout_ms=int(settings.kafka_session_timeout * 1000),
                  heartbeat_interval_ms=int(settings.kafka_heartbeat_interval * 1000),
                  rebalance_timeout_ms=int(settings.kafka_rebalance_timeout * 1000))
    config.update(overrides)
    return config


def faust_config(settings: Settings, group_id: str, client_id: str) -> dict:
    """The worker's Faust app settings (``faust.App(group_id, **config)``), from the same consumer and
    producer configuration as every other client: Faust names the options differently, and always
    commits offsets itself."""
    consumer = consumer_config(settings, group_id, client_id)
    producer = producer_config(settings, client_id)
    return dict(broker=f"kafka://{settings.kafka_bootstrap_servers}", broker_client_id=client_id,
                broker_session_timeout=settings.kafka_session_timeout,
                broker_heartbeat_interval=settings.kafka_heartbeat_interval,
                broker_rebalance_timeout=settings.kafka_rebalance_timeout,
                consumer_auto_offset_reset=consumer["auto_offset_reset"],
                consumer_max_fetch_size=consumer["max_partition_fetch_bytes"],
                producer_acks=-1 if producer["acks"] == "all" else producer["acks"],
                producer_max_request_size=producer["max_request_size"],
                topic_partitions=settings.topic_partitions,
                topic_replication_factor=settings.topic_replication_factor)


def embedder_factories(config) -> dict:
    """The embedding service's model constructors (``ServiceConfig.models``: name → provider): the
    service is where the in-process models run, one instance in each model worker process (so these
    build a new one on every call). Each is a ``functools.partial`` of ``build_embedder``:
    the service sends it to its model worker processes (``spawn``), so it must pickle."""
    return {name: functools.partial(build_embedder, provider, name, threads=config.threads)
            for name, provider in config.models.items()}


class EmbedderCache:
    """The embedders a process has built, by provider, model, base URL and service URL.

    A model loaded in the process costs seconds and hundreds of MB, so a ``Container`` builds each
    one once, here. Every ``Container`` owns a new cache unless it is given one: containers of one
    process share loaded models only when their builder passes the same cache explicitly (the
    test suite's session fixture does); there is no process-wide cache behind anyone's back.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()   # one load per key even when threads ask together
        self._embedders: dict[tuple, Embedder] = {}

    def get(self, provider: str, model: str, *, base_url: str | None = None, api_key: str | None = None,
            batch_size: int = 64, service_url: str | None = None, service_options: dict | None = None,
            threads: int = 1) -> Embedder:
        """The embedder for this configuration, built on first use (``build_embedder``'s arguments)."""
        key = (provider, model, base_url, service_url)
        with self._lock:
            emb = self._embedders.get(key)
            if emb is None:
                emb = self._embedders[key] = build_embedder(
                    provider, model, base_url=base_url, api_key=api_key, batch_size=batch_size,
                    service_url=service_url, service_options=service_options, threads=threads)
            return emb

    def __len__(self) -> int:
        return len(self._embedders)


class Container:
    def __init__(self, settings: Settings | None = None, *, vector_store: VectorStore | None = None,
                 pool: ConnectionPool | None = None, pool_name: str = "memoria",
                 embedders: EmbedderCache | None = None):
        self.settings = settings or get_settings()
        self.pool_name = pool_name   # names the pool's connections (pg_stat_activity, logs)
        # the embedders this container built (a caller's cache when given: shared on purpose)
        self.embedders = EmbedderCache() if embedders is None else embedders
        self._store = vector_store
        self._owns_store = vector_store is None
        self._lock = threading.Lock()
        if pool is not None:  # a pool the caller owns (and closes)
            self.__dict__["pool"] = pool
        self._owns_pool = pool is None
        self._owns_recall_pool = self._owns_pool and self.settings.db_recall_pool_max > 0

    @cached_property
    def pool(self) -> ConnectionPool:
        from streams.store.db import make_pool

        return make_pool(self.settings, name=self.pool_name)

    @cached_property
    def recall_pool(self) -> ConnectionPool:
        """Recall's own connections (``db_recall_pool_max``): its statement timeout is their session
        setting, so a recall is one round trip (``PostgresMemoryRecall``). The shared pool when the
        container was given one or ``db_recall_pool_max`` is 0 (the timeout then per transaction)."""
        if not self._owns_recall_pool:
            return self.pool
        from streams.store.db import make_pool

        return make_pool(self.settings, min_size=1, max_size=self.settings.db_recall_pool_max,
                         name=f"{self.pool_name}-recall")

    @property
    def vector_store(self) -> VectorStore:
        with self._lock:
            if self._store is None:
                self._store = open_vector_store(self.settings)
            return self._store

    @property
    def embedder(self) -> Embedder:
        """The configured embedder (new collections and fact embeddings use it)."""
        s = self.settings
        return self._embedder(s.embedding_provider, s.embedding_model)

    @property
    def memory_embedder(self) -> Embedder:
        """The embedder of customer facts (pgvector column) and of recall queries."""
        s = self.settings
        return self._embedder(s.memory_embedding_provider, s.memory_embedding_model)

    def _embedder(self, provider: str, model: str, *, in_process: bool = False) -> Embedder:
        """The embedder of ``provider``/``model`` with this deployment's options: through the
        embedding service when one is configured (unless ``in_process``), from this container's cache."""
        s = self.settings
        return self.embedders.get(provider, model, base_url=s.embedding_base_url, api_key=s.embedding_api_key,
                                  batch_size=s.embedding_batch_size,
                                  service_url=None if in_process else self._service_url(provider),
                                  service_options=self._service_options(), threads=s.embedding_threads)

    def _service_url(self, provider: str) -> str | None:
        """The embedding service runs the in-process models; a remote API is called directly."""
        return self.settings.embedding_service_url if provider != "openai" else None

    def _service_options(self) -> dict:
        s = self.settings
        return {"query_timeout_s": s.embedding_service_query_timeout,
                "passage_patience_s": s.embedding_service_passage_patience}

    def embedder_for(self, model: str) -> Embedder:
        """The embedder matching a collection's model (index and query must agree)."""
        configured = self.embedder
        if model == configured.name:
            return configured
        provider = MODEL_PROVIDERS.get(model)
        if provider is None:
            if self.settings.embedding_provider == "openai":
                return self._embedder("openai", model)
            raise ValueError(f"no embedding provider known for model {model!r}")
        return self._embedder(provider, model)

    def in_process_embedder(self, provider: str | None = None, model: str | None = None) -> Embedder:
        """An embedder loaded in this process (offline evaluation and training commands): the
        configured knowledge model, or ``provider``'s default model."""
        from streams.embedding.providers import DEFAULT_MODELS

        s = self.settings
        provider = provider or s.embedding_provider
        if model is None:
            model = s.embedding_model if provider == s.embedding_provider else DEFAULT_MODELS.get(provider,
                                                                                                   s.embedding_model)
        return self._embedder(provider, model, in_process=True)

    def embedding_service(self):
        """The embedding service's app (``memoria embedding-service``), serving the configured models."""
        from streams.embedding.service import ServiceConfig, build_service

        config = ServiceConfig.from_settings(self.settings)
        return build_service(config, factories=embedder_factories(config))

    def producer_config(self, client_id: str, **overrides) -> dict:
        """The configuration of a Kafka producer of this process (see ``producer_config``)."""
        return producer_config(self.settings, client_id, **overrides)

    def consumer_config(self, group_id: str | None, client_id: str, **overrides) -> dict:
        """The configuration of a Kafka consumer of this process (see ``consumer_config``)."""
        return consumer_config(self.settings, group_id, client_id, **overrides)

    def faust_config(self, group_id: str, client_id: str) -> dict:
        """The worker's Faust app settings (see ``faust_config``)."""
        return faust_config(self.settings, group_id, client_id)

    @property
    def erasure_key(self) -> str:
        """The erasure ledger's HMAC key (``MEMORIA_ERASURE_KEY``): every path that writes or
        consults the ledger gets it from here (streams/maintain/erasure.py never reads settings)."""
        return self.settings.erasure_key

    @cached_property
    def prices(self):
        """The cost table (built-in prices with ``MEMORIA_MODEL_PRICES`` applied) every flow that
        prices a model call gets from here (streams/pricing.py never reads settings)."""
        from streams.pricing import price_table

        return price_table(self.settings.model_prices)

    # --- learning (docs/architecture.md §4B) ---------------------------------
    @cached_property
    def fewshot(self) -> dict:
        """The labelled examples the LLM prompts carry (``make train`` writes them), read once."""
        from streams.learn.fewshot import load

        return load()

    def llm_config(self):
        from streams.learn.llm import LlmConfig

        s = self.settings
        return LlmConfig(base_url=s.openai_base_url, api_key=s.openai_api_key, model=s.llm_model,
                         timeout=s.llm_timeout, max_retries=s.llm_max_retries,
                         max_tokens=s.llm_max_tokens, strict_schema=s.llm_strict_schema)

    def extractor(self, provider: str | None = None, embedder: Embedder | None = None):
        """``rules``/``offline``: the learnt offline extractor (artefact in streams/learn/models,
        built by ``make train``); ``patterns``: the hand-written rules alone; ``openai``: the chat model."""
        provider = provider or self.settings.extraction_provider
        if provider in ("rules", "offline"):
            from streams.learn.extract_learned import ARTEFACT, LearnedExtractor, LinearModel

            model = LinearModel.load(ARTEFACT)
            trained = model.meta.get("embedder", {"provider": "use", "model": "use-multilingual-v3"})
            if getattr(embedder, "name", None) != trained["model"]:  # the artefact names its embedder
                embedder = self.in_process_embedder(trained["provider"], trained["model"])
            return LearnedExtractor(embedder, model=model)
        if provider == "patterns":
            from streams.learn.extract_rules import RulesExtractor

            return RulesExtractor()
        if provider == "openai":
            from streams.learn.extract_llm import OpenAIExtractor

            return OpenAIExtractor(self.llm_config(), examples=self.fewshot)
        raise ValueError(f"unknown extraction provider {provider!r} (rules|offline|patterns|openai)")

    def checker(self, provider: str | None = None):
        from streams.learn.contradiction import OpenAIContradictionChecker, RulesContradictionChecker

        provider = provider or self.settings.contradiction_provider
        if provider == "rules":
            return RulesContradictionChecker()
        if provider == "openai":
            return OpenAIContradictionChecker(self.llm_config(), examples=self.fewshot)
        raise ValueError(f"unknown contradiction provider {provider!r} (rules|openai)")

    @property
    def checker_llm_model(self) -> str:
        """The model name the contradiction checker's calls are billed under ("" offline)."""
        s = self.settings
        return s.llm_model if s.contradiction_provider == "openai" else ""

    def learn_ports(self, **overrides):
        from streams.learn.learn import LearnPorts

        s = self.settings
        uses_model = "openai" in (s.extraction_provider, s.contradiction_provider)
        memory_embedder = self.memory_embedder
        kw = dict(pool=self.pool, extractor=self.extractor(embedder=memory_embedder), embedder=memory_embedder,
                  checker=self.checker(), llm_model=s.llm_model if uses_model else "",
                  erasure_key=self.erasure_key, prices=self.prices)
        kw.update(overrides)
        return LearnPorts(**kw)

    # --- replies (docs/architecture.md §4C) ----------------------------------
    def generator(self, provider: str | None = None, embedder: Embedder | None = None, sentences=None):
        """The generator a configuration names: ``offline`` (optionally with the
        knowledge embedder, for sentence choice, and ``sentences``: the sentence vectors stored
        with the chunks, ``ChunkKnowledgeSearch.sentence_vectors``) or ``openai``."""
        from streams.respond.generate import OfflineComposer, OpenAIChatGenerator

        s = self.settings
        provider = provider or s.reply_provider
        if provider in ("offline", "rules"):
            return OfflineComposer(embedder=embedder, sentences=sentences)
        if provider == "openai":
            return OpenAIChatGenerator(s.llm_model, base_url=s.openai_base_url, api_key=s.openai_api_key,
                                       timeout=s.llm_timeout, max_retries=s.llm_max_retries,
                                       max_tokens=s.reply_max_tokens)
        raise ValueError(f"unknown reply provider {provider!r} (offline, openai)")

    def acts(self, embedder: Embedder):
        """Rights, opt-out and tools (streams/respond/acts.py); ``emit`` is wired once the producer runs."""
        from streams.respond.acts import Acts
        from streams.respond.acts_store import PostgresActsStore
        from streams.respond.tools import build_flights

        s = self.settings
        return Acts(store=PostgresActsStore(self.pool), embedder=embedder,
                    flights=build_flights(s, self.pool), budget_ms=s.tool_budget_ms,
                    timeout_ms=s.tool_timeout_ms, flight_ttl_ms=s.tool_flight_ttl_ms,
                    acknowledgement=s.tool_acknowledgement)

    def responder(self):
        """The responder's ports over the real dependencies (the respond role, benchmarks)."""
        from streams.respond.adapters import (
            ChunkKnowledgeSearch,
            CollectionEmbedder,
            PostgresConversationStore,
            PostgresMemoryRecall,
        )
        from streams.respond.handler import Responder
        from streams.respond.intent import IntentExamples
        from streams.respond.recall_examples import RecallExamples

        s = self.settings
        memory_embedder = self.memory_embedder
        store = self.vector_store  # the worker owns the local store: never its HTTP proxy
        knowledge_embedder = CollectionEmbedder(store, s.vector_domain, self.embedder_for, self.embedder)
        knowledge = ChunkKnowledgeSearch(self.pool, store, s.vector_domain, self.embedder_for,
                                         query_model=lambda: knowledge_embedder.name)
        return Responder(
            store=PostgresConversationStore(self.pool, erasure_key=self.erasure_key, pipeline=s.db_pipeline),
            memory=PostgresMemoryRecall(self.recall_pool, memory_embedder.name,
                                        inject_delay_s=s.recall_inject_delay_s, pipeline=s.db_pipeline,
                                        own_pool=self._owns_recall_pool),
            knowledge=knowledge,
            memory_embedder=memory_embedder, knowledge_embedder=knowledge_embedder,
            intent_examples=IntentExamples(memory_embedder),
            recall_examples=RecallExamples(memory_embedder) if s.recall_examples else None,
            # the stored sentence vectors are read only where the indexer stores them: else every reply
            # with a sentence not yet cached would pay a read that finds nothing
            generator=self.generator(embedder=knowledge_embedder if s.reply_provider == "offline" else None,
                                     sentences=knowledge.sentence_vectors if s.chunk_sentence_vectors else None),
            acts=self.acts(memory_embedder), prices=self.prices)

    def close(self) -> None:
        if self._owns_pool and "pool" in self.__dict__:
            self.pool.close()
        if self._owns_recall_pool and "recall_pool" in self.__dict__:
            self.recall_pool.close()
        if self._owns_store and self._store is not None and hasattr(self._store, "close"):
            self._store.close()
