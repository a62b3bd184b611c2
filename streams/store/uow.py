"""The unit of work: the one way a flow changes Postgres (docs/architecture.md, "Unit of work").

A ``UnitOfWork`` is a context manager around one atomic change:

* the flow reads and writes through the repositories it exposes (``uow.learning``,
  ...) and announces what changed with ``uow.add_event(type_, event)``, where
  ``event`` is one of the typed outbox contracts of ``schemas/events.py``
  (``ChunkEvent``, ``ConversationEvent``, ``MemoryEvent``, ``ContactEvent``);
* ``uow.commit()`` validates every pending event again (a model built with
  ``model_construct`` or mutated is caught here), writes them to the outbox and
  commits them **with** the change, in one transaction;
* leaving the block without ``commit()`` (an exception, an early return)
  rolls back the change and drops the pending events: nothing is announced
  that did not happen, nothing happens unannounced.

``PostgresUnitOfWork`` holds one pooled connection and one transaction for the
block. ``streams.store.fake_uow.FakeUnitOfWork`` implements the same port in
memory, so the domain logic is unit-tested without any service.
"""

from __future__ import annotations

import importlib
from abc import ABC, abstractmethod
from contextlib import contextmanager
from functools import lru_cache
from typing import TYPE_CHECKING, Any, Callable, Iterator

import psycopg

from streams.outbox.write import OutboxEvent, add_events, checked_aggregate, outbox_row

if TYPE_CHECKING:
    from psycopg_pool import ConnectionPool


def validated(type_: str, event: OutboxEvent) -> OutboxEvent:
    """``event`` re-validated against its contract, or TypeError/ValueError."""
    checked_aggregate(type_, event)
    return type(event).model_validate(event.model_dump(warnings=False))


class UnitOfWork(ABC):
    """Port: one atomic change of the source of truth and the events announcing it."""

    def __init__(self) -> None:
        self._pending: list[tuple[str, OutboxEvent]] = []
        self._open = False

    # -------------------------------------------------------------- protocol
    def __enter__(self) -> "UnitOfWork":
        if self._open:
            raise RuntimeError("a unit of work is not re-entrant: open a new one")
        self._pending = []
        self._begin()
        self._open = True
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        try:
            self.rollback()  # a no-op after commit(): nothing is pending any more
        finally:
            self._open = False
            self._end(exc_type is not None)

    def add_event(self, type_: str, event: OutboxEvent) -> None:
        """Announce ``event`` as ``type_`` when (and only if) the unit commits."""
        if not self._open:
            raise RuntimeError("add_event outside a unit of work block")
        self._check_writable()
        validated(type_, event)  # fail at the call site, not at commit
        self._pending.append((type_, event))

    @property
    def pending_events(self) -> list[tuple[str, OutboxEvent]]:
        return list(self._pending)

    def commit(self) -> int:
        """Write the pending events with the change and commit both; returns the number of events."""
        if not self._open:
            raise RuntimeError("commit outside a unit of work block")
        events = [(t, validated(t, e)) for t, e in self._pending]
        self._commit(events)
        self._pending = []
        return len(events)

    def rollback(self) -> None:
        self._pending = []
        self._rollback()

    # ------------------------------------------------------- implementations
    @abstractmethod
    def _begin(self) -> None: ...

    @abstractmethod
    def _commit(self, events: list[tuple[str, OutboxEvent]]) -> None: ...

    @abstractmethod
    def _rollback(self) -> None: ...

    def _end(self, failed: bool) -> None:  # optional hook
        pass

    def _check_writable(self) -> None:  # optional hook
        pass


class PostgresUnitOfWork(UnitOfWork):
    """One connection, one transaction; the outbox rows are inserted in it at commit.

    Over a pool: a connection of its own, a transaction committed by ``commit()``.
    Over a caller's connection (CLI, admin API, tests): a transaction when the
    connection has none open, else a savepoint of the caller's transaction, which
    then decides (psycopg's ``Connection.transaction`` semantics).

    ``conn`` is there for the flows' SQL repositories; nothing else should
    commit or roll it back. ``commit()`` ends the unit: open a new one for more.
    """

    def __init__(self, pool: "ConnectionPool | None" = None, *, conn: psycopg.Connection | None = None):
        super().__init__()
        if (pool is None) == (conn is None):
            raise ValueError("PostgresUnitOfWork needs a pool or a connection")
        self._pool, self._given = pool, conn
        self._cm = None
        self._tx: psycopg.Transaction | None = None
        self.conn: psycopg.Connection | None = None

    def _begin(self) -> None:
        if self._given is not None:
            self.conn = self._given
        else:
            self._cm = self._pool.connection()
            self.conn = self._cm.__enter__()
        try:
            self._tx = self.conn.transaction()
            self._tx.__enter__()
        except BaseException:
            self._tx = None
            self._end(True)  # the pooled connection goes back
            raise

    def _check_writable(self) -> None:
        if self._tx is None:
            raise RuntimeError("this unit of work is already committed: open a new one")

    def _commit(self, events: list[tuple[str, OutboxEvent]]) -> None:
        if self._tx is None:
            raise RuntimeError("this unit of work is already committed: open a new one")
        add_events(self.conn, [outbox_row(t, e) for t, e in events])
        tx, self._tx = self._tx, None
        tx.__exit__(None, None, None)

    def _rollback(self) -> None:
        tx, self._tx = self._tx, None
        if tx is not None:
            rollback = psycopg.Rollback(tx)
            tx.__exit__(type(rollback), rollback, None)

    def _end(self, failed: bool) -> None:
        cm, self._cm = self._cm, None
        if cm is not None:
            cm.__exit__(None, None, None)  # committed or rolled back: the pool gets an idle connection
        self.conn = None

    def __getattr__(self, name: str) -> Any:
        """A repository on this unit's connection (``uow.learning``, ``uow.knowledge``, ...)."""
        path = REPOSITORIES.get(name)
        if path is None:
            raise AttributeError(f"no repository {name!r} (known: {sorted(REPOSITORIES)}; add it to "
                                 "streams.store.uow.REPOSITORIES)")
        return repository_class(name)(self)


#: The Postgres repository behind each attribute of a unit (``uow.learning``, ...), as
#: "module:Class". Each lives with its flow's SQL (``streams/learn/store.py``, ...) and
#: imports this module, so the table names them instead of importing them; a name is
#: resolved on first use, whatever the calling flow happened to import before.
REPOSITORIES: dict[str, str] = {
    "learning": "streams.learn.store:PostgresLearningRepository",
    "knowledge": "streams.ingest.store:PostgresKnowledgeRepository",
    "conversations": "streams.respond.store:PostgresConversationRepository",
    "erasure": "streams.maintain.erasure:PostgresErasureRepository",
    "offers": "streams.maintain.offers:PostgresOfferRepository",
    "accounts": "streams.admin.flags:PostgresAccountSettingsRepository",
    "lifecycle": "streams.learn.lifecycle:PostgresLifecycleRepository",
    "acts": "streams.respond.acts_store:PostgresActsRepository",
    "inboxes": "streams.admin.inboxes:PostgresInboxRepository",
    "console_sessions": "streams.admin.console.sessions:PostgresConsoleSessionRepository",
    "reconcile": "streams.maintain.reconcile:PostgresReconcileRepository",
    "routes": "connectors.whatsapp.postgres_resolver:PostgresRouteRepository",
    "sent_replies": "connectors.whatsapp.delivery:PostgresSentReplyRepository",
    "tokens": "streams.admin.tokens:PostgresTokenRepository",
    "flights": "streams.respond.tools:PostgresFlightRepository",
    "processed": "streams.store.events:PostgresProcessedEventsRepository",
}


@lru_cache(maxsize=None)
def repository_class(name: str) -> Callable[[PostgresUnitOfWork], Any]:
    """The class of repository ``name`` (imported once)."""
    module, _, cls = REPOSITORIES[name].partition(":")
    return getattr(importlib.import_module(module), cls)


UnitOfWorkFactory = Callable[[], UnitOfWork]


def postgres_uow_factory(pool: "ConnectionPool") -> UnitOfWorkFactory:
    """A factory of Postgres units of work over ``pool`` (what the wiring hands to a flow)."""
    return lambda: PostgresUnitOfWork(pool)



@contextmanager
def joined(target: "UnitOfWork | psycopg.Connection | ConnectionPool") -> Iterator[UnitOfWork]:
    """The unit a service function works in: the caller's open unit (the caller
    commits it, with its own changes), or a new one over the caller's connection
    or a pool, committed when the block ends normally (a ``return`` inside it
    included) and rolled back on an exception."""
    if isinstance(target, UnitOfWork):
        yield target
        return
    uow = PostgresUnitOfWork(conn=target) if isinstance(target, psycopg.Connection) else PostgresUnitOfWork(target)
    with uow:
        yield uow
        uow.commit()
