"""API tokens over the in-memory unit of work (unit tier); their SQL is tested against Postgres
by every admin API and console test (tests/admin/)."""

from __future__ import annotations

import pytest

from streams.admin.tokens import PREFIX, create_token, operator_for, revoke_token
from streams.store.fake_uow import FakeDatabase


def test_a_token_names_its_operator_until_it_is_revoked_and_only_its_hash_is_stored():
    db = FakeDatabase()
    db.add_account(1)
    with db.unit_of_work() as uow:
        tid, secret = create_token(uow, 1, "ana")
        uow.commit()
    assert secret.startswith(PREFIX)
    assert [r["token_hash"] for r in db.state.api_tokens.values()] != [secret]  # never the secret itself
    with db.unit_of_work() as uow:
        op = operator_for(uow, secret)
        uow.commit()
    assert (op.account_id, op.token_id, op.label) == (1, tid, f"ana (token {tid})")
    assert db.state.api_tokens[tid]["last_used_at"] is not None
    with db.unit_of_work() as uow:
        assert operator_for(uow, secret + "x") is None and operator_for(uow, "") is None
        assert revoke_token(uow, tid) and not revoke_token(uow, tid)  # once
        assert operator_for(uow, secret) is None
        uow.commit()
    assert db.state.api_tokens[tid]["revoked"]


def test_a_token_for_an_unknown_account_is_refused_and_nothing_is_written():
    db = FakeDatabase()
    with pytest.raises(LookupError), db.unit_of_work() as uow:
        create_token(uow, 9, "ops")
        uow.commit()
    assert db.state.api_tokens == {} and db.commits == 0
