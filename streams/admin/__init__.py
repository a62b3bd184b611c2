"""The admin HTTP API (FastAPI): memories, forgetting, inbox config, flags, reports."""
