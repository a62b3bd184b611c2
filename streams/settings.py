"""One typed settings object, read from the environment.

Defaults point at the embedded stack that ``make up`` starts; every value can
be overridden to reach real infrastructure (see README, "Real infrastructure").
Variables use the ``MEMORIA_`` prefix; the de-facto standard names
``QDRANT_URL``, ``OPENAI_BASE_URL`` and ``OPENAI_API_KEY`` are accepted too.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from pydantic import AliasChoices, Field
from pydantic_settings import BaseSettings, SettingsConfigDict

REPO_ROOT = Path(__file__).resolve().parent.parent


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="MEMORIA_", extra="ignore")

    # --- Kafka -----------------------------------------------------------
    kafka_bootstrap_servers: str = "127.0.0.1:19092"
    # Prepended to every topic name (isolates tests or tenants of one cluster).
    topic_prefix: str = ""
    topic_partitions: int = 4
    topic_replication_factor: int = 1
    # Short session timeouts: Tansu joins take ~session_timeout/2 (docs/architecture.md §7).
    kafka_session_timeout: float = 4.0
    kafka_heartbeat_interval: float = 0.5
    kafka_rebalance_timeout: float = 4.0
    # Consumer long-poll bound (Faust hard-codes 1.5 s; Tansu holds fetches that long).
    kafka_fetch_max_wait_ms: int = 100
    consumer_group: str = "memoria"
    # Size limit of one record, agreed by producers and consumers: our producers
    # refuse to send more (max_request_size), consumers dead-letter anything
    # larger by reference (topic, partition, offset, size, an excerpt, reason).
    kafka_max_record_bytes: int = 1_000_000
    dlq_excerpt_bytes: int = 1024

    @property
    def producer_max_request_size(self) -> int:
        """Every producer's ``max_request_size``: what consumers accept plus room for headers and framing."""
        return self.kafka_max_record_bytes + 64 * 1024
    # A dependency down (Postgres, Qdrant, embedder, LLM, Kafka): retry the same
    # records with backoff from ..._base up to ..._max seconds, forever.
    dependency_backoff_base: float = 0.5
    dependency_backoff_max: float = 10.0
    # The worker re-creates missing topics (broker lost its data) this often.
    topic_check_interval: float = 10.0

    # --- Postgres --------------------------------------------------------
    database_url: str = Field(
        "postgresql://memoria@127.0.0.1:54329/memoria",
        validation_alias=AliasChoices("MEMORIA_DATABASE_URL", "DATABASE_URL"),
    )
    db_pool_min: int = 1
    db_pool_max: int = 8
    # The responder's recall has a pool of its own (its statement timeout is a session setting of
    # these connections: one round trip per recall instead of four). 0: recall shares the pool above
    # (SET LOCAL in a transaction), e.g. behind PgBouncer in transaction mode, where a session
    # setting would reach other clients.
    db_recall_pool_max: int = 8
    # Seconds a pooled connection may wait for a reconnect before the pool gives up.
    db_reconnect_timeout: float = 300.0
    # Seconds to wait for a free (or re-established) connection; then the caller
    # sees Postgres as unavailable (consumers stall and retry, visibly).
    db_pool_timeout: float = 5.0
    # A pooled connection last used longer ago than this is checked with a round trip before it is
    # handed out; one used more recently only by a look at its socket (streams/store/db.py
    # ConnectionCheck). 0: a round trip every time.
    db_pool_check_idle_s: float = 2.0
    # The responder's store and recall send a transaction's statements in libpq pipeline mode
    # (fewer round trips: worth it with a distant Postgres). Off by default: in the worker every
    # statement in pipeline mode is one more GIL hand-off, and the same transaction costs more CPU
    # than in plain mode (README "Performance", issue 12).
    db_pipeline: bool = False

    # --- Qdrant ----------------------------------------------------------
    qdrant_url: str | None = Field(
        None, validation_alias=AliasChoices("MEMORIA_QDRANT_URL", "QDRANT_URL")
    )
    qdrant_api_key: str | None = Field(
        None, validation_alias=AliasChoices("MEMORIA_QDRANT_API_KEY", "QDRANT_API_KEY")
    )
    # Local mode storage path; ":memory:" keeps nothing (fast, rebuilt on start).
    qdrant_path: str = str(REPO_ROOT / ".stack" / "qdrant")
    vector_domain: str = "memoria"

    # --- Embeddings ------------------------------------------------------
    # "sentence-transformers" (in-process), "use" (USE multilingual, numpy) or
    # "openai" (an OpenAI-compatible /embeddings endpoint).
    # Default: USE multilingual v3, measured best on pt-BR for both knowledge
    # answers and recall, and ~4x faster than MiniLM here (README, "Choosing
    # the embedders"). The packaged all-MiniLM-L6-v2 is one setting away.
    embedding_provider: str = "use"
    # For sentence-transformers: "all-minilm-l6-v2" (packaged) or a local path.
    embedding_model: str = "use-multilingual-v3"
    embedding_batch_size: int = 64
    # BLAS threads per model call (USE); 1: several threads spin-wait on a busy machine
    embedding_threads: int = 1
    # Customer facts are embedded separately from knowledge chunks (recall has
    # its own measured best model: see README "Choosing the embedders").
    memory_embedding_provider: str = "use"
    memory_embedding_model: str = "use-multilingual-v3"
    embedding_base_url: str | None = None
    embedding_api_key: str | None = None

    # --- Embedding service (``memoria embedding-service``) ------------------
    # When set, the worker, the responder and the CLI embed through the service
    # instead of loading the models in-process.
    embedding_service_url: str | None = None
    embedding_service_host: str = "127.0.0.1"
    embedding_service_port: int = 6081
    embedding_service_workers: int = 1        # model worker processes (one model instance each) per model
    embedding_service_max_batch: int = 64     # texts per model call
    embedding_service_max_wait_ms: float = 2.0  # how long a batch waits for more requests
    embedding_service_max_queue: int = 2048   # texts queued per model before 429 + Retry-After
    embedding_service_models: str = ""       # extra models to serve, comma-separated
    embedding_service_query_timeout: float = 2.0   # seconds, per request (responder)
    embedding_service_passage_patience: float = 15.0  # seconds of retries before "unavailable"

    # --- LLM (OpenAI-compatible) ----------------------------------------
    openai_base_url: str | None = Field(
        None, validation_alias=AliasChoices("MEMORIA_OPENAI_BASE_URL", "OPENAI_BASE_URL")
    )
    openai_api_key: str | None = Field(
        None, validation_alias=AliasChoices("MEMORIA_OPENAI_API_KEY", "OPENAI_API_KEY")
    )
    llm_model: str = "gpt-4o-mini"
    # A CPU-served model needs minutes for a long answer (README: "The language-model path").
    llm_timeout: float = 120.0
    llm_max_retries: int = 3
    llm_max_tokens: int = 1200         # extraction / contradiction answers
    reply_max_tokens: int = 300        # generated replies
    # Send the JSON schema with "strict": true. Off by default: local servers (llama.cpp,
    # vLLM) enforce the schema's limits through their grammar anyway, and OpenAI's strict
    # mode rejects some of them (maxLength).
    llm_strict_schema: bool = False
    # "rules" (deterministic offline providers) or "openai".
    extraction_provider: str = "rules"
    contradiction_provider: str = "rules"
    reply_provider: str = "offline"

    # --- Responder ---------------------------------------------------------
    # How long the respond agent waits to fill a batch of inbound messages (seconds).
    respond_batch_within: float = 0.005
    # Fault drills and tests only: recall's query sleeps this long in Postgres (pg_sleep).
    recall_inject_delay_s: float = 0.0

    # --- Knowledge ingestion --------------------------------------------
    chunk_size: int = 300          # characters (measured best for answers: README)
    chunk_overlap: int = 120       # characters of whole trailing sentences
    ingest_batch_max: int = 256
    ingest_batch_interval: float = 0.2
    # Texts per embedding-service request when indexing: the service encodes the next parts of a
    # batch while the worker upserts the one it has (0: one request per batch). In-process
    # embedding ignores it (one call per batch: README, Performance).
    ingest_embed_part: int = 64
    # The indexer also embeds each chunk's quotable sentences for the offline composer and stores
    # them with the chunk (a reply then embeds only the question; an LLM reply provider never reads
    # them). Off by default: it doubles the indexer's CPU per chunk (bench-ingest 0.75 → 0.39 × raw,
    # lag p95 0.8 → 3.2 s at 50 chunks/s; README "Performance"); the composer embeds them at reply
    # time, once per process (its cache).
    chunk_sentence_vectors: bool = False
    # Recall: the labelled recall cases (streams/respond/data/recall_examples.jsonl) vote for the facts
    # queries like the message needed (streams.respond.recall_examples); on (default) since the vote gained
    # a 0.05 margin and no longer votes for a fact about someone else than the one asked about: leave-one-
    # set-out it is at or above the hand-built score alone on every readable set and on the validation sets
    # (docs/quality-log.md, "Issue 13, recall ranking"). MEMORIA_RECALL_EXAMPLES=0: the hand-built score
    # alone. The offline evaluation reads the same switch and leaves the scored set's own cases out.
    recall_examples: bool = True

    # --- Outbox relay ----------------------------------------------------
    relay_batch_size: int = 500
    relay_poll_interval: float = 1.0
    relay_max_backoff: float = 30.0
    relay_max_retries: int = 20
    outbox_retention_hours: float = 24.0
    # "relay" (built-in) or "debezium" (Kafka Connect reads the WAL; rows are
    # then never marked processed, so retention deletes them by age).
    outbox_publisher: str = "relay"

    # --- Reconcile (maintain role) ---------------------------------------
    reconcile_interval: float = 600.0   # seconds between periodic `reconcile --repair` runs
    reconcile_min_age: float = 120.0    # leave changes younger than this to the live pipeline
    # replies stored (and marked published) this long before a broker loss are
    # published again after it (the sender's ledger keeps delivery at most once)
    reconcile_reply_lookback: float = 3600.0

    # --- Erasure ---------------------------------------------------------
    # HMAC key of the erasure ledger (set it in production, the same on every
    # process; changing it makes earlier ledger entries unrecognisable).
    erasure_key: str = "memoria-dev-erasure-key"

    # --- WhatsApp Cloud API connector ------------------------------------
    whatsapp_verify_token: str | None = Field(
        None, validation_alias=AliasChoices("MEMORIA_WHATSAPP_VERIFY_TOKEN", "WHATSAPP_VERIFY_TOKEN"))
    whatsapp_app_secret: str | None = Field(
        None, validation_alias=AliasChoices("MEMORIA_WHATSAPP_APP_SECRET", "WHATSAPP_APP_SECRET"))
    whatsapp_access_token: str | None = Field(
        None, validation_alias=AliasChoices("MEMORIA_WHATSAPP_ACCESS_TOKEN", "WHATSAPP_ACCESS_TOKEN"))
    whatsapp_api_base_url: str = "https://graph.facebook.com/v20.0"
    # the sender retries a channel that is unavailable (429, 5xx, no connection)
    # for as long as it takes, waiting Retry-After or this backoff (capped)
    whatsapp_send_backoff_max: float = 60.0
    # the sender's health server (``/health``, ``/ready`` 503 while stalled, ``/metrics``),
    # on ``worker_web_host``; 0 serves nothing
    sender_web_port: int = 6067

    # --- Chatwoot-style conversation webhook (resolved/reopened) ---------
    # a shared token (``?token=`` or ``X-Memoria-Token``) or an HMAC secret
    # (``X-Chatwoot-Signature: sha256=HMAC(secret, "<X-Chatwoot-Timestamp>.<body>")``)
    chatwoot_webhook_token: str | None = None
    chatwoot_webhook_secret: str | None = None

    # --- Costs ------------------------------------------------------------
    # The cost ledger (model_usage) stores USD; the console shows BRL at this rate.
    usd_brl_rate: float = 5.40
    # Prices (USD per million tokens, prompt and completion) override/extend
    # streams.pricing.DEFAULT_PRICES: JSON {"model": [prompt, completion]}.
    model_prices: str = ""

    # --- Admin API and operator console ------------------------------------
    admin_host: str = "127.0.0.1"
    admin_port: int = 8080
    console_session_hours: float = 12.0
    # Secure cookies need HTTPS; set true behind TLS (a plain-HTTP localhost cannot use them).
    console_secure_cookies: bool = False

    # --- Tools and single-flight (issue 11) -------------------------------
    # The shared single-flight store: Redis when set (SET NX PX), else Postgres.
    redis_url: str | None = Field(
        None, validation_alias=AliasChoices("MEMORIA_REDIS_URL", "REDIS_URL"))
    tool_budget_ms: int = 1500          # a tool answering within this is used inline
    tool_timeout_ms: int = 30000        # a background call gives up after this
    tool_flight_ttl_ms: int = 60000     # a stuck call cannot hold its single-flight key longer
    tool_acknowledgement: str = "Já te trago essa informação, um instante."

    # --- Anniversary offers (issue 11; per-account flag, default off) -----
    offers_window_days: int = 7
    offers_template_name: str = "oferta_data_comemorativa"
    offers_template_language: str = "pt_BR"
    offers_every_s: float = 24 * 3600.0   # how often the offers job runs (when due)
    maintenance_tick_s: float = 60.0      # the leader's maintenance tick

    # --- Worker ----------------------------------------------------------
    worker_web_host: str = "127.0.0.1"
    worker_web_port: int = 6066
    metrics_port: int = 9464
    worker_switch_interval: float = 0.001   # seconds (Python's GIL switch interval; default 0.005)
    data_dir: str = str(REPO_ROOT / ".stack")
    # The CLI's log level (``memoria --log-level`` overrides it).
    log_level: str = "WARNING"


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    return Settings()
