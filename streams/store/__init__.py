"""Postgres: connection pool, migrations and repositories (the source of truth)."""
