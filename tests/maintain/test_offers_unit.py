"""Recording anniversary offers over the in-memory unit of work (unit tier: no service); the
planning (SQL reads) and the ``uow.offers`` SQL are tested against Postgres in
tests/maintain/test_offers.py."""

from __future__ import annotations

from datetime import date

from schemas.events import WhatsAppTemplate
from streams.maintain.forget import erase_contact
from streams.maintain.offers import Proposal, mark_published, record_offers
from streams.store.fake_uow import FakeDatabase


def _proposal(contact: int, on: date, occasion: str = "wedding_anniversary") -> Proposal:
    return Proposal(1, contact, occasion, on, memory_id=contact * 10, conversation_id=f"c-{contact}",
                    text="Oi! O seu aniversário está chegando.",
                    template=WhatsAppTemplate(name="oferta", language="pt_BR", parameters=["Ana"]))


def _record(db: FakeDatabase, proposals) -> int:
    with db.unit_of_work() as uow:
        n = record_offers(uow, proposals)
        uow.commit()
    return n


def test_an_offer_is_recorded_once_per_contact_occasion_and_year():
    db = FakeDatabase()
    plan = [_proposal(100, date(2026, 2, 14)), _proposal(101, date(2026, 2, 16)),
            _proposal(100, date(2026, 5, 1), "birthday")]
    assert _record(db, plan) == 3
    assert _record(db, plan) == 0                                   # a replay of the daily job: nothing new
    assert _record(db, [_proposal(100, date(2026, 2, 15))]) == 0    # same occasion, same year, another date
    assert _record(db, [_proposal(100, date(2027, 2, 14))]) == 1    # next year it comes back
    assert len(db.state.offers) == 4
    # the reply id is stable per occasion and year: a re-sent offer is the same outbound message
    assert db.state.offers[(1, 100, "wedding_anniversary", 2026)]["reply_id"] == plan[0].reply_id
    assert plan[0].reply_id != _proposal(100, date(2027, 2, 14)).reply_id


def test_offers_recorded_without_commit_are_not_kept():
    db = FakeDatabase()
    with db.unit_of_work() as uow:
        assert record_offers(uow, [_proposal(100, date(2026, 2, 14))]) == 1
    assert db.state.offers == {}


def test_publishing_marks_only_the_acknowledged_offer_and_erasure_removes_a_contacts_offers():
    db = FakeDatabase()
    a, b = _proposal(100, date(2026, 2, 14)), _proposal(101, date(2026, 2, 16))
    _record(db, [a, b])
    with db.unit_of_work() as uow:
        mark_published(uow, [a.reply_id])
        uow.commit()
    assert {k[1]: v["published"] for k, v in db.state.offers.items()} == {100: True, 101: False}
    with db.unit_of_work() as uow:
        counts = erase_contact(uow, 1, 100, key="k")
        uow.commit()
    assert counts["offers"] == 1 and [k[1] for k in db.state.offers] == [101]
