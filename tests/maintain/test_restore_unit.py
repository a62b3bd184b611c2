"""Restoring a forgotten fact over the in-memory unit of work (unit tier: no service); the SQL
of these ``uow.learning`` methods is tested against Postgres in tests/admin/test_admin_api.py."""

from __future__ import annotations

from datetime import timedelta

import pytest

from schemas.events import MemoryEvent
from streams.learn.contradiction import Verdict
from streams.maintain.forget import RESTORE_WINDOW_DAYS, forget_memory, restore_memory
from streams.store.fake_uow import FakeDatabase
from tests.learn.seed import T0
from tests.maintain.test_forget_aging_unit import A, C, _fact
from tests.respond.fakes import BagOfWordsEmbedder


class SameKeyOtherValue:
    """A checker that is easy to reason about: same key, another value → contradiction."""
    name = "same-key"

    def check(self, old, new) -> Verdict:
        return Verdict(contradicts=old.memory_key == new.memory_key and old.normalized_value != new.normalized_value)


def _forgotten(db: FakeDatabase, *, key="suite", value="hidro", observed=T0, forgotten_at=T0) -> int:
    mid = _fact(db, C, "preferencia")
    db.state.memories[mid].update(memory_key=key, normalized_value=value, content=f"Prefere a suíte {value}",
                                  observed_at=observed)
    with db.unit_of_work() as uow:
        assert forget_memory(uow, A, mid, actor="test", now=forgotten_at)
        uow.commit()
    return mid


def _restore(db, mid, *, now, embedder=None, account=A):
    with db.unit_of_work() as uow:
        out = restore_memory(uow, account, mid, actor="ana", embedder=embedder, checker=SameKeyOtherValue(), now=now)
        uow.commit()
    return out


def _events_after(db, n):
    return db.outbox[n:]


def test_a_fact_restored_within_the_window_is_live_again_reembedded_and_announced():
    db = FakeDatabase()
    mid = _forgotten(db)
    assert db.state.memories[mid]["embedding"] is None  # forgetting dropped it
    n, now = len(db.outbox), T0 + timedelta(days=RESTORE_WINDOW_DAYS - 1)
    out = _restore(db, mid, now=now, embedder=BagOfWordsEmbedder())
    assert (out.status, out.superseded, out.superseded_by, out.embedded) == ("active", [], None, True)
    m = db.state.memories[mid]
    assert m["deleted_at"] is None and m["embedding"] is not None and m["embedding_model"] == "bow"
    assert m["metadata"]["restored"] == {"by": "ana", "at": now.isoformat()}
    assert [f["id"] for f in db.live_memories(A, C)] == [mid]
    assert _events_after(db, n) == [("memory.updated", MemoryEvent(memory_id=mid, account_id=A, contact_id=C))]


def test_a_fact_forgotten_more_than_30_days_ago_or_not_forgotten_is_refused_and_nothing_changes():
    db = FakeDatabase()
    mid = _forgotten(db)
    n = len(db.outbox)
    with pytest.raises(ValueError, match="30 days"):
        _restore(db, mid, now=T0 + timedelta(days=RESTORE_WINDOW_DAYS, seconds=1))
    assert db.state.memories[mid]["deleted_at"] == T0 and len(db.outbox) == n
    live = _fact(db, C, "restricao")
    with pytest.raises(ValueError, match="not forgotten"):
        _restore(db, live, now=T0)
    with pytest.raises(LookupError):
        _restore(db, mid, now=T0, account=A + 1)  # another account's fact
    with pytest.raises(LookupError):
        _restore(db, 10_000, now=T0)
    assert len(db.outbox) == n


def test_an_older_live_contradiction_is_superseded_by_the_restored_fact():
    db = FakeDatabase()
    mid = _forgotten(db, observed=T0)
    older = _fact(db, C, "preferencia")
    db.state.memories[older].update(memory_key="suite", normalized_value="master", observed_at=T0 - timedelta(days=1))
    n, now = len(db.outbox), T0 + timedelta(days=1)
    out = _restore(db, mid, now=now)
    assert (out.status, out.superseded, out.embedded) == ("active", [older], False)
    assert db.state.memories[older]["superseded_at"] == now and db.state.memories[older]["superseded_by_id"] == mid
    assert [t for t, _ in _events_after(db, n)] == ["memory.updated", "memory.superseded"]
    assert _events_after(db, n)[1][1].memory_id == older


def test_a_newer_live_contradiction_keeps_the_restored_fact_in_history():
    db = FakeDatabase()
    mid = _forgotten(db, observed=T0)
    newer = _fact(db, C, "preferencia")
    db.state.memories[newer].update(memory_key="suite", normalized_value="master", observed_at=T0 + timedelta(hours=1))
    n, now = len(db.outbox), T0 + timedelta(days=1)
    out = _restore(db, mid, now=now)
    assert (out.status, out.superseded_by, out.superseded) == ("superseded", newer, [])
    m = db.state.memories[mid]
    assert m["deleted_at"] is None and m["superseded_at"] == now and m["superseded_by_id"] == newer
    assert db.state.memories[newer]["superseded_at"] is None
    assert [(t, e.memory_id) for t, e in _events_after(db, n)] == [("memory.updated", mid), ("memory.superseded", mid)]
