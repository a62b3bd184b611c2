"""Prometheus metrics (docs/architecture.md §6). Every worker serves them on ``metrics_port``."""

from __future__ import annotations

from prometheus_client import Counter, Gauge, Histogram

_LAT = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30)

# --- outbox / events -------------------------------------------------------
OUTBOX_PUBLISHED = Counter("memoria_outbox_published_total", "Outbox rows published", ["aggregatetype"])
OUTBOX_PUBLISH_FAILURES = Counter("memoria_outbox_publish_failures_total", "Failed outbox publish attempts")
OUTBOX_LAG = Gauge("memoria_outbox_lag_seconds", "Age of the oldest pending outbox row")
OUTBOX_PENDING = Gauge("memoria_outbox_pending", "Pending outbox rows")
OUTBOX_COMMIT_TO_KAFKA = Histogram("memoria_outbox_commit_to_kafka_seconds",
                                   "Outbox row commit → acknowledged by Kafka", buckets=_LAT)
EVENTS_PROCESSED = Counter("memoria_events_processed_total", "Events processed", ["topic"])
EVENTS_DUPLICATE = Counter("memoria_events_duplicate_total", "Redelivered events skipped", ["topic"])
EVENTS_FAILED = Counter("memoria_events_failed_total", "Event processing attempts that failed", ["topic"])
EVENTS_DEAD_LETTERED = Counter("memoria_events_dead_lettered_total", "Events sent to a DLQ", ["topic", "reason"])
DEAD_LETTERS_RECORDED = Counter("memoria_dead_letters_recorded_total",
                                "Dead letters that could not be published, recorded in Postgres", ["topic"])
DEPENDENCY_RETRIES = Counter("memoria_dependency_retries_total",
                             "Retries of the same records while a dependency was down", ["topic", "dependency"])
TOPICS_RECREATED = Counter("memoria_topics_recreated_total", "Topics the worker found missing and created")
ERASED_DROPPED = Counter("memoria_erased_records_dropped_total",
                         "Records of an erased contact dropped instead of re-creating data", ["path"])
RECONCILE_REPAIRS = Counter("memoria_reconcile_repairs_total", "Projection drift re-enqueued by reconcile",
                            ["projection"])

# --- knowledge ---------------------------------------------------------------
CHUNKS_EMBEDDED = Counter("memoria_chunks_embedded_total", "Chunks embedded and upserted")
CHUNK_POINTS_DELETED = Counter("memoria_chunk_points_deleted_total", "Chunk points deleted")
EMBEDDING_LATENCY = Histogram("memoria_embedding_seconds", "Embedding call latency", ["stage"], buckets=_LAT)
EMBEDDING_FAILURES = Counter("memoria_embedding_failures_total", "Embedding failures", ["stage"])

# --- memory learning ---------------------------------------------------------
EXTRACTIONS = Counter("memoria_memory_extractions_total", "Facts extracted", ["account_id", "memory_type"])
EXTRACTION_LATENCY = Histogram("memoria_extraction_seconds", "Conversation extraction latency", buckets=_LAT)
EXTRACTION_FAILURES = Counter("memoria_extraction_failures_total", "Extractions that failed", ["reason"])
FACTS_DISCARDED = Counter("memoria_facts_discarded_total", "Extracted facts discarded", ["reason"])
SUPERSEDED = Counter("memoria_memory_superseded_total", "Facts superseded by a newer one", ["memory_type"])
ACTIVE_FACTS = Gauge("memoria_active_facts", "Live (not deleted, not superseded) facts")

# --- responder -------------------------------------------------------------
RECALL_LATENCY = Histogram("memoria_recall_seconds", "Memory recall latency", buckets=_LAT)
RECALL_REQUESTS = Counter("memoria_recall_requests_total", "Recall attempts", ["outcome"])  # hit/miss/degraded
REPLY_LATENCY = Histogram("memoria_reply_seconds", "Inbound message → reply emitted", buckets=_LAT)
DEGRADED_REPLIES = Counter("memoria_degraded_replies_total", "Replies sent degraded", ["reason"])

# --- memory that acts (issue 11) ---------------------------------------------
CUSTOMER_REQUESTS = Counter("memoria_customer_requests_total",
                            "Customers' own requests on the channel", ["kind"])  # access/erasure/opt_out
TOOL_CALLS = Counter("memoria_tool_calls_total", "Tool requests by outcome", ["tool", "outcome"])
TOOL_LATENCY = Histogram("memoria_tool_seconds", "Tool call latency", ["tool"], buckets=_LAT)
OFFERS = Counter("memoria_offers_total", "Anniversary offers", ["outcome"])  # recorded/published/skipped_*

# --- models ----------------------------------------------------------------
MODEL_TOKENS = Counter("memoria_model_tokens_total", "Model tokens", ["account_id", "stage", "kind"])
MODEL_COST = Counter("memoria_model_cost_usd_total", "Estimated model cost (USD)", ["account_id", "stage"])


def init_series(topics: list[str]) -> None:
    """Export failure series at zero from the start, so that rates and alerts see
    0 instead of an absent series until the first failure."""
    for stage in ("chunks", "memory"):
        EMBEDDING_FAILURES.labels(stage)
        EMBEDDING_LATENCY.labels(stage)
    for reason in ("ModelUnavailable", "ExtractionFailed", "unusable_output"):
        EXTRACTION_FAILURES.labels(reason)
    for path in ("respond", "learn", "channel"):
        ERASED_DROPPED.labels(path)
    for projection in ("chunks", "extractions", "replies"):
        RECONCILE_REPAIRS.labels(projection)
    for kind in ("access", "erasure", "opt_out"):
        CUSTOMER_REQUESTS.labels(kind)
    for topic in topics:
        EVENTS_PROCESSED.labels(topic)
        EVENTS_FAILED.labels(topic)
        EVENTS_DUPLICATE.labels(topic)

# --- stalls (worker agents: consumer = the topic; connectors: their name) --
CONSUMER_STALLED = Gauge("memoria_consumer_stalled",
                         "1 while a consumer retries the same records because a dependency is unavailable",
                         ["consumer", "dependency"])
REPLIES_DELIVERED = Counter("memoria_replies_delivered_total", "Replies handed to the channel API",
                            ["outcome"])  # sent | duplicate | rejected | unknown
