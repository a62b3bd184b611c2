"""The pool's connection check: a round trip only for a connection idle a while; a recently
used one whose server ended it is still never handed out."""

from __future__ import annotations

import time

import psycopg
from psycopg_pool import ConnectionPool

from streams.store.db import ConnectionCheck, make_pool


def _pool(db, idle_s: float) -> ConnectionPool:
    settings = db.settings.model_copy(update={"db_pool_check_idle_s": idle_s})
    return make_pool(settings, min_size=1, max_size=1, name=f"{db.tag}-check")


def _round_trips(monkeypatch) -> list:
    calls: list = []
    real = ConnectionPool.check_connection
    monkeypatch.setattr(ConnectionPool, "check_connection", staticmethod(lambda c: (calls.append(c), real(c))))
    return calls


def test_a_recently_used_connection_is_handed_out_without_a_round_trip(db, monkeypatch):
    pool = _pool(db, idle_s=60)
    try:
        with pool.connection() as conn:
            pid = conn.info.backend_pid
        calls = _round_trips(monkeypatch)
        for _ in range(3):
            with pool.connection() as conn:
                assert conn.info.backend_pid == pid
                assert conn.execute("SELECT 1 AS one").fetchone()["one"] == 1
        assert calls == []
    finally:
        pool.close()


def test_a_connection_idle_longer_than_the_limit_is_checked_with_a_round_trip(db, monkeypatch):
    pool = _pool(db, idle_s=0)
    try:
        with pool.connection():
            pass
        calls = _round_trips(monkeypatch)
        with pool.connection() as conn:
            assert conn.execute("SELECT 1 AS one").fetchone()["one"] == 1
        assert len(calls) == 1
    finally:
        pool.close()


def test_a_connection_the_server_ended_is_never_handed_out_even_just_after_use(db):
    """A Postgres restart (or pg_terminate_backend) ends the connection from the server's
    side: its socket has the error to read, so the check goes to the round trip, which
    fails, and the pool hands out a new connection instead."""
    pool = _pool(db, idle_s=60)
    try:
        with pool.connection() as conn:
            pid = conn.info.backend_pid
        with psycopg.connect(db.settings.database_url, autocommit=True) as admin:
            admin.execute("SELECT pg_terminate_backend(%s)", (pid,))
            # the backend is gone once it no longer shows in pg_stat_activity
            for _ in range(100):
                if not admin.execute("SELECT 1 FROM pg_stat_activity WHERE pid = %s", (pid,)).fetchone():
                    break
                time.sleep(0.05)
        with pool.connection(timeout=10) as conn:
            assert conn.info.backend_pid != pid
            assert conn.execute("SELECT 1 AS one").fetchone()["one"] == 1
    finally:
        pool.close()


def test_a_new_or_closed_connection_gets_the_round_trip():
    class Conn:
        closed = False

        def __init__(self):
            self.checked = 0

        def fileno(self):
            raise psycopg.OperationalError("no socket")

    calls = []
    check = ConnectionCheck(idle_s=60)
    orig = ConnectionPool.check_connection
    try:
        ConnectionPool.check_connection = staticmethod(calls.append)
        c = Conn()
        check(c)                 # never handed out yet: the round trip
        check(c)                 # handed out just now, but its socket cannot be read: the round trip
        assert calls == [c, c]
    finally:
        ConnectionPool.check_connection = orig
