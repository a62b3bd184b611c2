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

    # --- Postgres --------------------------------------------------------
    database_url: str = Field(
        "postgresql://memoria@127.0.0.1:54329/memoria",
        validation_alias=AliasChoices("MEMORIA_DATABASE_URL", "DATABASE_URL"),
    )
    db_pool_min: int = 1
    db_pool_max: int = 8

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
    # Customer facts are embedded separately from knowledge chunks (recall has
    # its own measured best model: see README "Choosing the embedders").
    memory_embedding_provider: str = "use"
    memory_embedding_model: str = "use-multilingual-v3"
    embedding_base_url: str | None = None
    embedding_api_key: str | None = None

    # --- LLM (OpenAI-compatible) ----------------------------------------
    openai_base_url: str | None = Field(
        None, validation_alias=AliasChoices("MEMORIA_OPENAI_BASE_URL", "OPENAI_BASE_URL")
    )
    openai_api_key: str | None = Field(
        None, validation_alias=AliasChoices("MEMORIA_OPENAI_API_KEY", "OPENAI_API_KEY")
    )
    llm_model: str = "gpt-4o-mini"
    llm_timeout: float = 20.0
    llm_max_retries: int = 3
    # "rules" (deterministic offline providers) or "openai".
    extraction_provider: str = "rules"
    contradiction_provider: str = "rules"
    reply_provider: str = "offline"

    # --- Knowledge ingestion --------------------------------------------
    chunk_size: int = 300          # characters (measured best for answers: README)
    chunk_overlap: int = 120       # characters of whole trailing sentences
    ingest_batch_max: int = 256
    ingest_batch_interval: float = 0.2

    # --- Outbox relay ----------------------------------------------------
    relay_batch_size: int = 500
    relay_poll_interval: float = 1.0
    relay_max_backoff: float = 30.0
    relay_max_retries: int = 20
    outbox_retention_hours: float = 24.0
    # "relay" (built-in) or "debezium" (Kafka Connect reads the WAL; rows are
    # then never marked processed, so retention deletes them by age).
    outbox_publisher: str = "relay"

    # --- WhatsApp Cloud API connector ------------------------------------
    whatsapp_verify_token: str | None = Field(
        None, validation_alias=AliasChoices("MEMORIA_WHATSAPP_VERIFY_TOKEN", "WHATSAPP_VERIFY_TOKEN"))
    whatsapp_app_secret: str | None = Field(
        None, validation_alias=AliasChoices("MEMORIA_WHATSAPP_APP_SECRET", "WHATSAPP_APP_SECRET"))
    whatsapp_access_token: str | None = Field(
        None, validation_alias=AliasChoices("MEMORIA_WHATSAPP_ACCESS_TOKEN", "WHATSAPP_ACCESS_TOKEN"))
    whatsapp_api_base_url: str = "https://graph.facebook.com/v20.0"

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


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    return Settings()
