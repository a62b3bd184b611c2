"""The production resolver: routing read from (and new customers written to) Postgres.

Its writes go through a unit of work: ``uow.routes`` (``RouteRepository``, the SQL here) reads
and writes the rows; :func:`route_customer` decides (docs/architecture.md §3.1).
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Protocol

from psycopg_pool import ConnectionPool
from uuid6 import uuid7

from connectors.whatsapp.resolver import Destination, Route
from streams.store.uow import PostgresUnitOfWork, UnitOfWorkFactory

if TYPE_CHECKING:
    from streams.store.uow import UnitOfWork


class RouteRepository(Protocol):
    """``uow.routes``: the channel's numbers, customers and open conversations (``streams.store.fake_uow``
    implements it in memory)."""

    def inbox(self, phone_number_id: str) -> dict | None:
        """``id``, ``account_id``, ``unit_id`` of the inbox whose channel address is this business number."""
    def lock_customer(self, account_id: int, wa_id: str) -> None:
        """Serialise the first contact of one customer (two webhooks at once) until the unit ends."""
    def contact_by_phone(self, account_id: int, wa_id: str) -> int | None:
        """The account's contact with this phone (the lowest id), or None."""
    def phone_erased(self, account_id: int, wa_id: str, *, key: str) -> bool:
        """Whether this phone of the account is in the erasure ledger."""
    def create_contact(self, account_id: int, wa_id: str) -> int:
        """A new contact with this phone; its id."""
    def lock_contact(self, contact_id: int) -> None:
        """Lock the contact row until the unit ends (one open conversation per customer and inbox)."""
    def open_conversation(self, account_id: int, inbox_id: int, contact_id: int) -> str | None:
        """The channel id of the customer's latest open conversation in the inbox, or None."""
    def create_conversation(self, external_id: str, account_id: int, inbox_id: int, contact_id: int,
                            unit_id: int | None) -> None:
        """A new open conversation."""
    def destination(self, account_id: int, contact_id: int, conversation_id: str) -> dict | None:
        """``phone`` and ``channel_address`` of a conversation of the account's contact, or None."""


class PostgresRouteRepository:
    def __init__(self, uow: "UnitOfWork"):
        self.conn = uow.conn

    def inbox(self, phone_number_id):
        return self.conn.execute("SELECT id, account_id, unit_id FROM inboxes WHERE channel_address = %s",
                                 (phone_number_id,)).fetchone()

    def lock_customer(self, account_id, wa_id):
        self.conn.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", (f"contact:{account_id}:{wa_id}",))

    def contact_by_phone(self, account_id, wa_id):
        row = self.conn.execute("SELECT id FROM contacts WHERE account_id = %s AND phone = %s ORDER BY id LIMIT 1",
                                (account_id, wa_id)).fetchone()
        return None if row is None else row["id"]

    def phone_erased(self, account_id, wa_id, *, key):
        from streams.maintain.erasure import is_erased

        return is_erased(self.conn, account_id, phone=wa_id, key=key)

    def create_contact(self, account_id, wa_id):
        return self.conn.execute(
            "INSERT INTO contacts (id, account_id, phone) VALUES (nextval('channel_contact_ids'), %s, %s) "
            "RETURNING id", (account_id, wa_id)).fetchone()["id"]

    def lock_contact(self, contact_id):
        self.conn.execute("SELECT id FROM contacts WHERE id = %s FOR UPDATE", (contact_id,))

    def open_conversation(self, account_id, inbox_id, contact_id):
        row = self.conn.execute(
            "SELECT external_id FROM conversations WHERE account_id = %s AND inbox_id = %s AND contact_id = %s "
            "AND status = 'open' AND external_id IS NOT NULL ORDER BY id DESC LIMIT 1",
            (account_id, inbox_id, contact_id)).fetchone()
        return None if row is None else row["external_id"]

    def create_conversation(self, external_id, account_id, inbox_id, contact_id, unit_id):
        self.conn.execute("INSERT INTO conversations (external_id, account_id, inbox_id, contact_id, unit_id) "
                          "VALUES (%s, %s, %s, %s, %s)", (external_id, account_id, inbox_id, contact_id, unit_id))

    def destination(self, account_id, contact_id, conversation_id):
        return self.conn.execute(
            "SELECT ct.phone, i.channel_address FROM conversations c "
            "JOIN contacts ct ON ct.id = c.contact_id AND ct.account_id = c.account_id "
            "JOIN inboxes i ON i.id = c.inbox_id AND i.account_id = c.account_id "
            "WHERE c.external_id = %s AND c.account_id = %s AND c.contact_id = %s",
            (conversation_id, account_id, contact_id)).fetchone()


def route_customer(uow: "UnitOfWork", phone_number_id: str, wa_id: str, *, erasure_key: str) -> Route | None:
    """The route of a customer's message to a business number, in ``uow`` (the caller commits).

    ``inboxes.channel_address`` = the business ``phone_number_id``; customers are contacts matched
    by ``(account_id, phone = wa_id)`` and created on first contact, unless the phone is in the
    erasure ledger (checked under the customer's lock: an erased identity is never re-created by a
    late webhook or a retry). The customer's open conversation in that inbox is continued; otherwise
    a new one is opened (``wa-<inbox>-<uuid7>``), so messages after a conversation was resolved start
    a new one (and a new extraction). None: the number is not ours, or the customer was erased."""
    from streams.maintain.erasure import dropped

    routes = uow.routes
    inbox = routes.inbox(phone_number_id)
    if inbox is None:
        return None
    acc = inbox["account_id"]
    routes.lock_customer(acc, wa_id)
    contact = routes.contact_by_phone(acc, wa_id)
    if contact is None:
        if routes.phone_erased(acc, wa_id, key=erasure_key):
            dropped("channel", acc, "channel message of an erased phone")
            return None
        contact = routes.create_contact(acc, wa_id)
    routes.lock_contact(contact)  # one open conversation per customer and inbox
    ext = routes.open_conversation(acc, inbox["id"], contact)
    if ext is None:
        ext = f"wa-{inbox['id']}-{uuid7()}"
        routes.create_conversation(ext, acc, inbox["id"], contact, inbox["unit_id"])
    return Route(account_id=acc, inbox_id=inbox["id"], contact_id=contact, conversation_id=ext,
                 unit_id=inbox["unit_id"])


class PostgresResolver:
    """The ``Resolver`` over Postgres: each route is one unit of work (:func:`route_customer`);
    ``PostgresResolver(None, erasure_key=k, uow=db.unit_of_work)`` runs it on the in-memory fake."""

    def __init__(self, pool: ConnectionPool | None, *, erasure_key: str, uow: UnitOfWorkFactory | None = None):
        self.unit: UnitOfWorkFactory = uow or (lambda: PostgresUnitOfWork(pool))
        self.erasure_key = erasure_key  # the erasure ledger's HMAC key (settings.erasure_key)

    def _route(self, phone_number_id: str, wa_id: str) -> Route | None:
        with self.unit() as uow:
            route = route_customer(uow, phone_number_id, wa_id, erasure_key=self.erasure_key)
            uow.commit()
        return route

    def _destination(self, account_id: int, contact_id: int, conversation_id: str) -> Destination | None:
        with self.unit() as uow:
            row = uow.routes.destination(account_id, contact_id, conversation_id)
        if row is None or not row["phone"] or not row["channel_address"]:
            return None
        return Destination(phone_number_id=row["channel_address"], wa_id=row["phone"])

    async def route(self, phone_number_id: str, wa_id: str) -> Route | None:
        return await asyncio.to_thread(self._route, phone_number_id, wa_id)

    async def destination(self, account_id: int, contact_id: int, conversation_id: str) -> Destination | None:
        return await asyncio.to_thread(self._destination, account_id, contact_id, conversation_id)
