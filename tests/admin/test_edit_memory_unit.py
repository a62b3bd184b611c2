"""An operator's edit of a fact over the in-memory unit of work (unit tier: no service); the SQL
of ``uow.learning.locked_memory``/``edit_content`` is tested against Postgres in tests/admin/test_admin_api.py."""

from __future__ import annotations

from datetime import timedelta

import pytest

from schemas.events import MemoryEvent
from streams.admin.memories import edit_memory
from streams.store.fake_uow import FakeDatabase
from tests.learn.seed import T0
from tests.maintain.test_forget_aging_unit import A, C, _fact
from tests.respond.fakes import BagOfWordsEmbedder


def _edit(db, mid, content, *, account=A, now=T0, by="ana"):
    with db.unit_of_work() as uow:
        edit_memory(uow, account_id=account, memory_id=mid, content=content, edited_by=by,
                    embedder=BagOfWordsEmbedder(), now=now)
        uow.commit()


def test_an_edit_replaces_the_content_reembeds_keeps_the_trail_and_announces_it():
    db = FakeDatabase()
    mid = _fact(db, C, "preferencia")
    old = db.state.memories[mid]["content"]
    _edit(db, mid, "Prefere a suíte Master")
    _edit(db, mid, "Prefere a suíte Hidro", now=T0 + timedelta(hours=1), by="bia")
    m = db.state.memories[mid]
    assert m["content"] == "Prefere a suíte Hidro" and m["embedding_model"] == "bow" and m["embedding"] is not None
    assert [(e["by"], e["previous_content"]) for e in m["metadata"]["edits"]] == [
        ("ana", old), ("bia", "Prefere a suíte Master")]
    assert db.outbox == [("memory.updated", MemoryEvent(memory_id=mid, account_id=A, contact_id=C))] * 2


def test_history_and_other_accounts_facts_are_not_edited():
    db = FakeDatabase()
    gone, old = _fact(db, C, "preferencia"), _fact(db, C, "restricao")
    db.state.memories[gone]["deleted_at"] = T0
    db.state.memories[old]["superseded_at"] = T0
    with pytest.raises(ValueError, match="deleted"):
        _edit(db, gone, "x")
    with pytest.raises(ValueError, match="superseded"):
        _edit(db, old, "x")
    live = _fact(db, C, "preferencia")
    with pytest.raises(LookupError):
        _edit(db, live, "x", account=A + 1)
    assert db.outbox == [] and db.state.memories[live]["content"] != "x"
