"""Mapping port: WhatsApp ids ↔ memoria ids.

Inbound: ``phone_number_id`` (the business number that received the message)
→ account/inbox/unit, and ``wa_id`` (the customer) → contact and conversation.
Outbound: a reply's account/contact → the business number and the customer's
``wa_id``. The production resolver reads Postgres; :class:`StaticResolver`
reads a config mapping (tests, small deployments).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, Protocol


@dataclass(frozen=True)
class Route:
    account_id: int
    inbox_id: int
    contact_id: int
    conversation_id: str
    unit_id: int | None = None


@dataclass(frozen=True)
class Destination:
    phone_number_id: str
    wa_id: str


class Resolver(Protocol):
    async def route(self, phone_number_id: str, wa_id: str) -> Route | None:
        """None: this business number is not ours (the message is acknowledged and dropped)."""

    async def destination(self, account_id: int, contact_id: int, conversation_id: str) -> Destination | None: ...


class StaticResolver:
    """``numbers``: phone_number_id → {account_id, inbox_id, unit_id?};
    ``contacts``: (account_id, wa_id) → contact_id. Unknown customers get no
    route (a real resolver would create the contact). Conversation id:
    ``wa-<inbox_id>-<contact_id>`` (one open thread per contact and inbox)."""

    def __init__(self, numbers: Mapping[str, Mapping[str, int | None]],
                 contacts: Mapping[tuple[int, str], int]):
        self.numbers = {str(k): dict(v) for k, v in numbers.items()}
        self.contacts = {(int(a), str(w)): int(c) for (a, w), c in contacts.items()}
        self._by_contact = {(a, c): w for (a, w), c in self.contacts.items()}
        self._number_by_account = {int(v["account_id"]): k for k, v in self.numbers.items()}

    async def route(self, phone_number_id: str, wa_id: str) -> Route | None:
        n = self.numbers.get(str(phone_number_id))
        if n is None:
            return None
        contact = self.contacts.get((int(n["account_id"]), str(wa_id)))
        if contact is None:
            return None
        return Route(account_id=int(n["account_id"]), inbox_id=int(n["inbox_id"]), contact_id=contact,
                     conversation_id=f"wa-{n['inbox_id']}-{contact}", unit_id=n.get("unit_id"))

    async def destination(self, account_id: int, contact_id: int, conversation_id: str) -> Destination | None:
        wa_id = self._by_contact.get((account_id, contact_id))
        number = self._number_by_account.get(account_id)
        if conversation_id.startswith("wa-"):  # prefer the inbox the conversation came from
            inbox = conversation_id.split("-")[1]
            number = next((k for k, v in self.numbers.items()
                           if str(v["inbox_id"]) == inbox and int(v["account_id"]) == account_id), number)
        if wa_id is None or number is None:
            return None
        return Destination(phone_number_id=number, wa_id=wa_id)
