"""Knowledge ingestion (design §4A): chunk → Postgres + outbox → embed → Qdrant."""
