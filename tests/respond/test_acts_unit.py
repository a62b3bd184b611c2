"""The acts step (a customer's rights, opt-out, tools) over the in-memory unit of work: what it
records, forgets and announces, redeliveries included. The SQL of ``uow.acts`` is tested against
Postgres in tests/respond/test_acts_postgres.py; request detection in test_rights_tools_unit.py."""

from __future__ import annotations

import asyncio
from datetime import datetime, timedelta, timezone

import pytest

from schemas.events import ContactEvent, MemoryEvent
from streams.learn.learn import LearnPorts, learn_conversation
from streams.learn.store import Conversation
from streams.respond.acts import Acts
from streams.respond.acts_store import FORGOTTEN_ON_REQUEST, PostgresActsStore
from streams.respond.tools import PostgresFlights, ToolError, ToolResult
from streams.store.fake_uow import FakeDatabase
from tests.respond.fakes import inbound

A, C, INBOX = 101, 5001, 1101
NOW = datetime.now(timezone.utc)


def _fact(fake: FakeDatabase, content: str, *, contact=C, verified=NOW, expires=None, memory_type="preferencia",
          **kw) -> int:
    mid = fake.state.new_id()
    fake.state.memories[mid] = dict(
        id=mid, account_id=A, contact_id=contact, memory_type=memory_type, memory_key=f"k{mid}", content=content,
        normalized_value="", evidence="", confidence=0.9, scope="global", embedding=[0.1], embedding_model="m",
        source_conversation_id=None, supporting_conversation_ids=[], expires_at=expires, last_verified_at=verified,
        metadata={}, created_at=verified, updated_at=verified, observed_at=verified, superseded_at=None,
        superseded_by_id=None, deleted_at=None, weight=1.0) | kw
    return mid


class Tools:
    def __init__(self, answer: ToolResult | ToolError):
        self.answer, self.calls = answer, []

    async def call(self, spec, payload, timeout_s):
        self.calls.append(payload)
        if isinstance(self.answer, ToolError):
            raise self.answer
        return self.answer


@pytest.fixture
def fake():
    fake = FakeDatabase()
    fake.add_conversation(Conversation(id=1, account_id=A, contact_id=C, inbox_id=INBOX, unit_id=None,
                                     status="resolved", last_message_at=NOW), [("contact", "Sou vegano", NOW)])
    fake.add_conversation(Conversation(id=2, account_id=A, contact_id=C, inbox_id=INBOX, unit_id=None,
                                     status="open", last_message_at=NOW), [])
    fake.state.extractions[1] = {"status": "done", "attempts": 1, "through_message_id": 1, "extractor": "t",
                               "next_attempt_at": None}
    return fake


def _acts(fake, embedder, tools=None) -> Acts:
    return Acts(store=PostgresActsStore(None, uow=fake.unit_of_work, tools_ttl_s=0), embedder=embedder,
                flights=PostgresFlights(None, uow=fake.unit_of_work),
                tools=tools or Tools(ToolResult("Sim, temos vaga.", True)))


def test_access_lists_live_facts_newest_first_and_records_the_request(fake, use_embedder):
    _fact(fake, "Prefere suíte com hidromassagem", verified=NOW - timedelta(days=2))
    _fact(fake, "É vegano", verified=NOW)
    _fact(fake, "Vem de carro", expires=NOW - timedelta(days=1), memory_type="restricao")  # expired
    _fact(fake, "Prefere o café sem açúcar", expires=NOW - timedelta(days=1),         # expired, but
          verified=NOW - timedelta(days=3))                                         # only loses weight
    _fact(fake, "Gosta de vinho", superseded_at=NOW)                               # superseded
    _fact(fake, "Outro cliente", contact=C + 1)
    act = asyncio.run(_acts(fake, use_embedder).before_reply(inbound("o que vocês sabem sobre mim?"), None, "general"))
    assert act.kind == "rights" and act.text.index("É vegano") < act.text.index("Prefere suíte com hidromassagem")
    assert "Vem de carro" not in act.text and "Gosta de vinho" not in act.text and "Outro cliente" not in act.text
    assert fake.state.privacy_requests[(A, "wamid.1")]["kind"] == "access"
    assert act.text.index("Prefere suíte com hidromassagem") < act.text.index("Prefere o café sem açúcar")
    assert fake.state.privacy_requests[(A, "wamid.1")]["facts"] == 3 and fake.outbox == []


def test_erasure_forgets_discards_unlearnt_conversations_and_records_once(fake, use_embedder):
    ids = [_fact(fake, "É vegano"), _fact(fake, "Prefere suíte com hidromassagem")]
    other = _fact(fake, "Outro cliente", contact=C + 1)
    acts = _acts(fake, use_embedder)
    msg = inbound("apaga tudo que vocês sabem de mim")
    act = asyncio.run(acts.before_reply(msg, None, "general"))
    assert act.kind == "rights" and "apagamos as informações" in act.text
    assert all(fake.state.memories[i]["deleted_at"] is not None for i in ids)
    assert fake.state.memories[other]["deleted_at"] is None
    assert sorted(fake.outbox, key=str) == sorted(
        [("memory.deleted", MemoryEvent(memory_id=i, account_id=A, contact_id=C)) for i in ids]
        + [("contact.forgotten", ContactEvent(account_id=A, contact_id=C))], key=str)
    # the conversation already learnt stays done; the one not learnt yet will never be
    assert fake.state.extractions[1]["status"] == "done"
    assert fake.state.extractions[2]["status"] == "discarded"
    assert fake.state.extractions[2]["last_error"] == FORGOTTEN_ON_REQUEST
    assert fake.state.privacy_requests[(A, msg.message_id)]["facts"] == 2
    # redelivered: nothing forgotten or announced again, the same answer
    events = len(fake.outbox)
    assert asyncio.run(acts.before_reply(msg, None, "general")).text == act.text and len(fake.outbox) == events
    ports = LearnPorts(pool=None, extractor=None, embedder=None, checker=None, uow=fake.unit_of_work)
    assert learn_conversation(ports, 2).status == "already"


def test_a_failed_erasure_leaves_nothing_behind(fake, monkeypatch):
    mid = _fact(fake, "É vegano")
    store = PostgresActsStore(None, uow=fake.unit_of_work)

    def broken(self, *a):
        raise RuntimeError("disk full")

    monkeypatch.setattr("streams.store.fake_uow.FakeActsRepository.record_request", broken)
    with pytest.raises(RuntimeError):
        store.forget_on_request(inbound("apaga tudo que vocês sabem de mim"))
    assert fake.state.memories[mid]["deleted_at"] is None and fake.state.privacy_requests == {}
    assert 2 not in fake.state.extractions
    assert fake.outbox == []


def test_opt_out_is_recorded_once_per_contact(fake, use_embedder):
    acts = _acts(fake, use_embedder)
    for n in (1, 2):
        act = asyncio.run(acts.before_reply(inbound("não quero mais receber promoções", message_id=f"w{n}"),
                                            None, "general"))
        assert act.kind == "rights"
    assert fake.state.optouts == {(A, C): {"message_id": "w1", "text": "não quero mais receber promoções"}}


def test_a_tool_answer_is_recorded_and_a_redelivery_calls_nothing(fake):
    fake.state.inbox_tools[(A, INBOX)] = {"availability_check": {"url": "http://tool/a", "keywords": ["tem vaga"]}}
    tools = Tools(ToolResult("Sim, temos vaga.", True))
    store = PostgresActsStore(None, uow=fake.unit_of_work, tools_ttl_s=0)
    acts = Acts(store=store, embedder=None, flights=PostgresFlights(None, uow=fake.unit_of_work), tools=tools)
    msg = inbound("tem vaga amanhã?")
    act = asyncio.run(acts._tool(msg, store.inbox_tools(A, INBOX)["availability_check"]))
    assert act.tool.answer == "Sim, temos vaga." and len(tools.calls) == 1
    row = fake.state.tool_calls[(A, msg.message_id)]
    assert (row["tool"], row["outcome"], row["finished"], row["result"]["answer"]) == \
        ("availability_check", "inline", True, "Sim, temos vaga.")
    again = asyncio.run(acts._tool(msg, store.inbox_tools(A, INBOX)["availability_check"]))
    assert again.tool.answer == "Sim, temos vaga." and len(tools.calls) == 1
    assert fake.state.single_flight == {}  # the call's key was released


def test_a_single_flight_key_has_one_holder_until_released_or_expired(fake):
    flights = PostgresFlights(None, uow=fake.unit_of_work)
    assert flights.acquire("k", "a", 60_000) and not flights.acquire("k", "b", 60_000)  # in flight: nobody else
    flights.release("k", "b")                   # not the holder: no effect
    assert not flights.acquire("k", "b", 60_000)
    flights.release("k", "a")
    assert flights.acquire("k", "b", 1)
    fake.state.single_flight["k"] = ("b", NOW - timedelta(seconds=1))  # its time is over: a stuck call
    assert flights.acquire("k", "c", 60_000) and fake.state.single_flight["k"][0] == "c"


def test_a_failing_tool_is_recorded_as_failed(fake):
    fake.state.inbox_tools[(A, INBOX)] = {"availability_check": {"url": "http://tool/a"}}
    store = PostgresActsStore(None, uow=fake.unit_of_work, tools_ttl_s=0)
    acts = Acts(store=store, embedder=None, flights=PostgresFlights(None, uow=fake.unit_of_work),
                tools=Tools(ToolError("availability_check: HTTP 500")))
    act = asyncio.run(acts._tool(inbound("tem vaga?"), store.inbox_tools(A, INBOX)["availability_check"]))
    assert act.degraded == ("tool_error",)
    assert fake.state.tool_calls[(A, "wamid.1")]["outcome"] == "failed"
    assert fake.state.tool_calls[(A, "wamid.1")]["result"] == {"error": "availability_check: HTTP 500"}


def test_a_bad_tools_config_is_ignored_and_other_accounts_see_none(fake):
    store = PostgresActsStore(None, uow=fake.unit_of_work, tools_ttl_s=0)
    fake.state.inbox_tools[(A, INBOX)] = {"x": {"url": "ftp://nope"}}
    assert store.inbox_tools(A, INBOX) == {}
    fake.state.inbox_tools[(A, INBOX)] = {"x": {"url": "http://tool/x"}}
    assert set(store.inbox_tools(A, INBOX)) == {"x"} and store.inbox_tools(A + 1, INBOX) == {}
