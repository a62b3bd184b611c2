"""Connection pool and the versioned SQL migration runner."""

from __future__ import annotations

import hashlib
import logging
import select
import threading
import time
import weakref
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

import psycopg
from pgvector.psycopg import register_vector
from psycopg.rows import dict_row
from psycopg_pool import ConnectionPool

from streams.settings import REPO_ROOT, Settings

log = logging.getLogger(__name__)

MIGRATIONS_DIR = REPO_ROOT / "infra" / "migrations"
_LOCK_KEY = 0x6D656D6F  # "memo": serialises concurrent migration runners


@contextmanager
def autocommit(conn: psycopg.Connection) -> Iterator[psycopg.Connection]:
    """Reads only, on a pooled connection: each statement its own transaction, so no BEGIN and
    no COMMIT round trips (two per checkout otherwise). Under READ COMMITTED a transaction of
    reads gives them nothing more: every statement takes its own snapshot. The connection goes
    back to the pool as it came (a connection left in another state is discarded by the pool)."""
    if (not isinstance(conn, psycopg.Connection) or conn.autocommit
            or conn.pgconn.transaction_status != psycopg.pq.TransactionStatus.IDLE):
        yield conn   # not a psycopg connection, already autocommit, or in a transaction: as it is
        return
    conn.autocommit = True
    try:
        yield conn
    finally:
        if not conn.closed and conn.pgconn.transaction_status == psycopg.pq.TransactionStatus.IDLE:
            conn.autocommit = False


def _configure(conn: psycopg.Connection) -> None:
    try:
        register_vector(conn)
    except psycopg.ProgrammingError:
        # the vector extension is created by the first migration
        pass
    conn.commit()


def connect(settings: Settings, **kw) -> psycopg.Connection:
    conn = psycopg.connect(settings.database_url, row_factory=dict_row, **kw)
    _configure(conn)
    return conn


class ConnectionCheck:
    """The pool's ``check`` (before a connection is handed out): a connection last handed
    out more than ``idle_s`` ago is checked with a round trip
    (``ConnectionPool.check_connection``); one used more recently only with a look at its
    socket, which costs no round trip. A server that ends a connection (a
    restart, ``pg_terminate_backend``, a crash) sends its error and closes the socket, so the
    socket of an idle connection has something to read only when the connection is gone
    (or a notice came): then the round trip decides. A connection that died silently (no
    packet back, e.g. a cut network) within ``idle_s`` is found by its first query, which
    fails as the outage it is (callers retry on another connection). ``idle_s`` 0: every
    hand-out checked with a round trip."""

    def __init__(self, idle_s: float):
        self.idle_s = idle_s
        # when each connection was last handed out (not a ``reset`` callback on return:
        # with one, psycopg_pool returns every connection through its worker threads)
        self._used: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
        self._lock = threading.Lock()

    def __call__(self, conn: psycopg.Connection) -> None:
        now = time.monotonic()
        with self._lock:
            used = self._used.get(conn)
        if used is None or now - used > self.idle_s or conn.closed or _readable(conn):
            ConnectionPool.check_connection(conn)
        with self._lock:
            self._used[conn] = now


def _readable(conn: psycopg.Connection) -> bool:
    """Something (an error, end of file) waits on the idle connection's socket, or it has none."""
    try:
        p = select.poll()
        p.register(conn.fileno(), select.POLLIN)
        return bool(p.poll(0))
    except (OSError, ValueError, psycopg.Error):
        return True


def make_pool(settings: Settings, *, min_size: int | None = None, max_size: int | None = None,
              name: str = "memoria") -> ConnectionPool:
    pool = ConnectionPool(
        settings.database_url,
        min_size=min_size if min_size is not None else settings.db_pool_min,
        max_size=max_size if max_size is not None else settings.db_pool_max,
        kwargs={"row_factory": dict_row},
        configure=_configure,
        # a connection is checked before it is handed out: after a Postgres
        # restart the pool reconnects instead of handing out dead connections
        # (a round trip only for one idle longer than db_pool_check_idle_s: ConnectionCheck)
        check=ConnectionCheck(settings.db_pool_check_idle_s),
        reconnect_timeout=settings.db_reconnect_timeout,
        timeout=settings.db_pool_timeout,
        name=name,
        open=False,
    )
    try:
        pool.open(wait=True, timeout=30)
    except Exception:
        pool.close()  # no background reconnect loop left behind: the caller retries
        raise
    return pool


def migrate(database_url: str, migrations_dir: Path = MIGRATIONS_DIR) -> list[str]:
    """Apply every ``NNNN_name.sql`` not yet applied, each in its own transaction.

    Safe to run twice and from several processes at once (advisory lock).
    Returns the versions applied by this call. An applied file whose content
    changed is reported, never re-run.
    """
    applied_now: list[str] = []
    with psycopg.connect(database_url, autocommit=True) as conn:
        conn.execute("SELECT pg_advisory_lock(%s)", (_LOCK_KEY,))
        try:
            conn.execute(
                """CREATE TABLE IF NOT EXISTS schema_migrations (
                       version text PRIMARY KEY,
                       checksum text NOT NULL,
                       applied_at timestamptz NOT NULL DEFAULT now())"""
            )
            done = dict(conn.execute("SELECT version, checksum FROM schema_migrations").fetchall())
            for path in sorted(migrations_dir.glob("[0-9][0-9][0-9][0-9]_*.sql")):
                version = path.stem
                sql = path.read_text()
                checksum = hashlib.sha256(sql.encode()).hexdigest()
                if version in done:
                    if done[version] != checksum:
                        log.warning("migration %s changed after it was applied; not re-run", version)
                    continue
                # not a unit of work: schema changes, one transaction per migration file
                with conn.transaction():
                    conn.execute(sql)
                    conn.execute(
                        "INSERT INTO schema_migrations (version, checksum) VALUES (%s, %s)",
                        (version, checksum),
                    )
                applied_now.append(version)
        finally:
            conn.execute("SELECT pg_advisory_unlock(%s)", (_LOCK_KEY,))
    return applied_now
