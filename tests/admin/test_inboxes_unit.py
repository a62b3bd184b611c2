"""An inbox's settings change and the console's sessions over the in-memory unit of work (unit tier:
no service); the ``uow.inboxes`` and ``uow.console_sessions`` SQL is tested against Postgres in
tests/admin/test_admin_api.py and tests/admin/test_console_browser.py."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from streams.admin.console.sessions import _hash, create_session, end_session
from streams.admin.inboxes import COLUMNS, InvalidConfig, update_inbox
from streams.admin.tokens import Operator
from streams.store.fake_uow import FakeDatabase

ANA = Operator(1, 7, "ana")


def _db() -> FakeDatabase:
    db = FakeDatabase()
    db.state.inboxes[(1, 10)] = {"id": 10, **{k: None for k in COLUMNS}, "name": "Recepção", "rag_max_results": 3,
                                 "intent_keywords": {}}
    return db


def _update(db, inbox_id, changes, account=1):
    with db.unit_of_work() as uow:
        row = update_inbox(uow, account, inbox_id, changes, operator=ANA)
        uow.commit()
    return row


def test_only_the_given_fields_change_and_only_real_changes_are_audited():
    db = _db()
    row = _update(db, 10, {"rag_max_results": 3, "system_prompt": "Seja breve.",
                           "intent_keywords": {"availability_check": [" tem vaga "]}})
    assert row["name"] == "Recepção" and row["system_prompt"] == "Seja breve."
    assert row["intent_keywords"] == {"availability_check": ["tem vaga"]}   # validated and trimmed
    assert db.state.inbox_changes == [{
        "account_id": 1, "inbox_id": 10, "changed_by": ANA.label, "token_id": 7,
        "changes": {"system_prompt": {"before": None, "after": "Seja breve."},
                    "intent_keywords": {"before": {}, "after": {"availability_check": ["tem vaga"]}}}}]
    _update(db, 10, {"system_prompt": "Seja breve."})   # the same value: nothing to audit
    assert len(db.state.inbox_changes) == 1
    assert _update(db, 10, {})["name"] == "Recepção"    # no fields: the inbox as it is


def test_another_accounts_inbox_or_a_bad_value_changes_nothing():
    db = _db()
    assert _update(db, 10, {"system_prompt": "x"}, account=2) is None
    assert _update(db, 99, {"system_prompt": "x"}) is None and _update(db, 99, {}) is None
    for bad in ({"name": "renamed"}, {"intent_keywords": {"Not An Intent": ["x"]}},
                {"intent_keywords": {"x": "not a list"}}):
        with pytest.raises(InvalidConfig):
            _update(db, 10, bad)
    assert db.state.inboxes[(1, 10)]["system_prompt"] is None and db.state.inbox_changes == []


def test_a_change_left_uncommitted_leaves_neither_value_nor_audit_row():
    db = _db()
    with db.unit_of_work() as uow:
        update_inbox(uow, 1, 10, {"system_prompt": "Seja breve."}, operator=ANA)
    assert db.state.inboxes[(1, 10)]["system_prompt"] is None and db.state.inbox_changes == []


def test_a_session_is_created_with_expired_ones_purged_and_ended():
    db = FakeDatabase()
    db.state.console_sessions["old"] = {"account_id": 1, "token_id": 7, "csrf_token": "c",
                                        "expires_at": datetime.now(timezone.utc) - timedelta(minutes=1)}
    with db.unit_of_work() as uow:
        secret, csrf = create_session(uow, ANA, hours=8)
        uow.commit()
    row = db.state.console_sessions[_hash(secret)]
    assert set(db.state.console_sessions) == {_hash(secret)} and secret not in str(db.state.console_sessions)
    assert (row["account_id"], row["token_id"], row["csrf_token"]) == (1, 7, csrf)
    assert timedelta(hours=7.9) < row["expires_at"] - datetime.now(timezone.utc) <= timedelta(hours=8)
    with db.unit_of_work() as uow:
        end_session(uow, secret)
        end_session(uow, None)   # no cookie: nothing
        uow.commit()
    assert db.state.console_sessions == {}


def test_an_inboxs_tools_are_validated_stored_and_read_by_the_acts_step():
    from streams.admin.tools import InvalidTools, set_tools
    from streams.respond.acts_store import PostgresActsStore

    db = _db()
    tools = {"availability_check": {"url": "http://tool/a", "keywords": ["tem vaga"]}}
    with db.unit_of_work() as uow:
        assert set_tools(uow, 1, 10, tools) == tools
        assert set_tools(uow, 2, 10, tools) is None       # another account's inbox
        with pytest.raises(InvalidTools):
            set_tools(uow, 1, 10, {"x": {"url": "ftp://nope"}})
        uow.commit()
    acts = PostgresActsStore(None, uow=db.unit_of_work, tools_ttl_s=0)
    assert set(acts.inbox_tools(1, 10)) == {"availability_check"} and acts.inbox_tools(2, 10) == {}
