"""Knowledge ingestion (docs/architecture.md §4A): chunk → Postgres + outbox → embed → Qdrant."""
