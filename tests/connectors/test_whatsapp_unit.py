"""The WhatsApp connector's domain rules over the in-memory unit of work (unit tier: no service):
the resolver's routing and its erasure check, the sent ledger's once-only rule. The SQL of
``uow.routes`` and ``uow.sent_replies`` is tested against Postgres in tests/connectors/test_whatsapp.py,
tests/connectors/test_delivery.py and tests/faults/test_erasure_replay.py."""

from __future__ import annotations

import asyncio
from datetime import datetime, timezone

from connectors.whatsapp.delivery import PostgresSentLedger, ReplyDelivery
from connectors.whatsapp.postgres_resolver import PostgresResolver
from connectors.whatsapp.resolver import Destination
from connectors.whatsapp.sender import SendResult
from schemas.events import OutboundReply
from streams.kafka.consume import DeadLetter, Record
from streams.learn.lifecycle import change_status
from streams.maintain.forget import erase_contact
from streams.store.fake_uow import FakeDatabase

A, INBOX, NUMBER, WA = 7, 70, "1550001", "5511999990001"
KEY = "unit-test-erasure-key"


def _db() -> FakeDatabase:
    db = FakeDatabase()
    db.add_account(A)
    db.state.inboxes[(A, INBOX)] = {"name": "loja", "channel_address": NUMBER, "unit_id": 3}
    return db


def _route(resolver: PostgresResolver, number: str = NUMBER, wa_id: str = WA):
    return asyncio.run(resolver.route(number, wa_id))


def test_first_contact_creates_the_customer_and_a_conversation_that_later_messages_continue():
    db = _db()
    resolver = PostgresResolver(None, erasure_key=KEY, uow=db.unit_of_work)
    first = _route(resolver)
    assert (first.account_id, first.inbox_id, first.unit_id) == (A, INBOX, 3)
    assert first.conversation_id.startswith(f"wa-{INBOX}-")
    assert db.state.contact_phones == {first.contact_id: WA}
    assert _route(resolver) == first                       # the open conversation is continued
    other = _route(resolver, wa_id="5511999990002")
    assert other.contact_id != first.contact_id and other.conversation_id != first.conversation_id
    assert _route(resolver, number="not-ours") is None     # not our number: no route, nothing written
    assert len(db.state.contact_phones) == 2 and len(db.state.conversations) == 2
    dest = asyncio.run(resolver.destination(A, first.contact_id, first.conversation_id))
    assert dest == Destination(phone_number_id=NUMBER, wa_id=WA)
    assert asyncio.run(resolver.destination(A + 1, first.contact_id, first.conversation_id)) is None


def test_a_resolved_conversation_is_not_continued():
    db = _db()
    resolver = PostgresResolver(None, erasure_key=KEY, uow=db.unit_of_work)
    first = _route(resolver)
    with db.unit_of_work() as uow:
        change_status(uow, account_id=A, external_id=first.conversation_id, action="resolve")
        uow.commit()
    again = _route(resolver)
    assert again.contact_id == first.contact_id and again.conversation_id != first.conversation_id


def test_an_erased_phone_is_never_created_again():
    db = _db()
    resolver = PostgresResolver(None, erasure_key=KEY, uow=db.unit_of_work)
    route = _route(resolver)
    with db.unit_of_work() as uow:
        erase_contact(uow, A, route.contact_id, key=KEY)
        uow.commit()
    assert (A, WA) in db.state.erased_phones and not db.state.contact_phones
    commits = db.commits
    assert _route(resolver) is None                 # a late webhook or a retry: dropped
    assert not db.state.contact_phones and not db.state.conversations
    assert db.commits == commits + 1 and db.outbox[-1][0] == "contact.erased"  # nothing written, nothing announced
    # the ledger is per account: the same phone writing to another account's number is a new customer
    db.add_account(A + 1)
    db.state.inboxes[(A + 1, 80)] = {"channel_address": "1550002"}
    assert _route(resolver, number="1550002").account_id == A + 1


# ---------------------------------------------------------------- the sent ledger
class Sender:
    """The channel API: answers from a script, counts the calls."""

    def __init__(self, *results: SendResult):
        self.results, self.sent = list(results), []

    async def send(self, reply: OutboundReply) -> SendResult:
        self.sent.append(reply.reply_id)
        return self.results.pop(0)


OK = SendResult(ok=True, status=200, attempts=1, wa_message_id="wamid.out")


def _record(reply_id: str = "r-1") -> Record:
    reply = OutboundReply(reply_id=reply_id, in_reply_to="m-1", account_id=A, conversation_id="wa-1", contact_id=1,
                          text="oi", intent="greeting", strategy="none", created_at=datetime.now(timezone.utc))
    return Record("channel.outbound.replies", 0, 0, b"wa-1", reply.model_dump_json().encode())


def _delivery(db: FakeDatabase, sender: Sender) -> ReplyDelivery:
    return ReplyDelivery(sender, PostgresSentLedger(None, uow=db.unit_of_work), backoff_base=0.0, backoff_max=0.0)


def test_a_reply_is_sent_once_across_redeliveries():
    db, sender = FakeDatabase(), Sender(OK)
    delivery = _delivery(db, sender)
    assert asyncio.run(delivery.handle(_record())) is None
    assert asyncio.run(delivery.handle(_record())) is None       # redelivered: skipped, not sent again
    assert sender.sent == ["r-1"]
    row = db.state.sent_replies["r-1"]
    assert (row["status"], row["attempts"], row["channel_message_id"]) == ("sent", 1, "wamid.out")


def test_a_claim_left_by_a_dead_process_is_never_sent_again():
    db = FakeDatabase()
    assert PostgresSentLedger(None, uow=db.unit_of_work).claim(OutboundReply.model_validate_json(
        _record().value), "whatsapp") == "claimed"              # the process died during the API call
    sender = Sender(OK)
    dead = asyncio.run(_delivery(db, sender).handle(_record()))
    assert isinstance(dead, DeadLetter) and dead.error_class == "DeliveryUnknown"
    assert sender.sent == [] and db.state.sent_replies["r-1"]["status"] == "unknown"
    assert asyncio.run(_delivery(db, sender).handle(_record())) is None and sender.sent == []  # settled for good


def test_a_retryable_failure_releases_the_claim_and_the_same_reply_is_sent_once():
    db = FakeDatabase()
    sender = Sender(SendResult(ok=False, status=503, attempts=1, error="unavailable", retryable=True), OK)
    assert asyncio.run(_delivery(db, sender).handle(_record())) is None
    row = db.state.sent_replies["r-1"]
    assert sender.sent == ["r-1", "r-1"] and (row["status"], row["attempts"]) == ("sent", 2)


def test_a_refused_reply_is_dead_lettered_and_not_retried():
    db = FakeDatabase()
    sender = Sender(SendResult(ok=False, status=400, attempts=1, error="bad number"))
    dead = asyncio.run(_delivery(db, sender).handle(_record()))
    assert isinstance(dead, DeadLetter) and dead.error_class == "SendFailed"
    assert db.state.sent_replies["r-1"]["status"] == "rejected"
    assert asyncio.run(_delivery(db, Sender(OK)).handle(_record())) is None
    assert db.state.sent_replies["r-1"]["status"] == "rejected"
