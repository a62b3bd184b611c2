"""Reads on autocommit (``streams.store.db.autocommit``): no BEGIN/COMMIT round trips, and the
connection goes back to the pool as it came (the next user gets its transactions)."""

from __future__ import annotations

import psycopg
import pytest
from psycopg.pq import TransactionStatus

from streams.store.db import autocommit, make_pool


@pytest.fixture
def pool(db):
    p = make_pool(db.settings, min_size=1, max_size=1, name=f"{db.tag}-autocommit")
    yield p
    p.close()


def _commands(monkeypatch) -> list:
    sent: list = []
    real = psycopg.Connection._exec_command
    monkeypatch.setattr(psycopg.Connection, "_exec_command",
                        lambda self, command, *a, **k: (sent.append(bytes(command)), real(self, command, *a, **k))[1])
    return sent


def test_reads_take_no_transaction_and_the_connection_comes_back_as_it_was(pool, monkeypatch):
    sent = _commands(monkeypatch)
    with pool.connection() as conn, autocommit(conn):
        assert conn.autocommit
        assert conn.execute("SELECT 1 AS one").fetchone()["one"] == 1
        assert conn.info.transaction_status == TransactionStatus.IDLE   # no transaction left open
    assert not any(c.startswith((b"BEGIN", b"COMMIT")) for c in sent)
    with pool.connection() as conn:   # the same (only) connection: transactions again
        assert not conn.autocommit
        conn.execute("SELECT 1")
        assert conn.info.transaction_status == TransactionStatus.INTRANS


def test_inside_a_transaction_it_changes_nothing(pool):
    with pool.connection() as conn:
        conn.execute("SELECT 1")   # a transaction is open
        with autocommit(conn):
            assert not conn.autocommit
            conn.execute("SELECT 2")
        assert conn.info.transaction_status == TransactionStatus.INTRANS


def test_a_failed_read_still_gives_the_connection_back_in_transaction_mode(pool):
    with pytest.raises(psycopg.errors.UndefinedTable):
        with pool.connection() as conn, autocommit(conn):
            conn.execute("SELECT * FROM no_such_table")
    with pool.connection() as conn:
        assert not conn.autocommit
