"""An operator's settings changes over the in-memory unit of work (unit tier: no service); the
``uow.accounts`` SQL is tested against Postgres in tests/admin/test_admin_api.py."""

from __future__ import annotations

from streams.admin.flags import change_account_settings
from streams.admin.tokens import Operator
from streams.store.fake_uow import FakeDatabase

ANA = Operator(1, 7, "ana")


def test_a_settings_change_and_its_audit_row_are_written_together():
    db = FakeDatabase()
    db.add_account(1, memory_extraction_enabled=False, other="kept")
    with db.unit_of_work() as uow:
        change_account_settings(uow, 1, {"memory_extraction_enabled": True}, flag="memory_extraction_enabled",
                                enabled=True, operator=ANA)
        uow.commit()
    assert db.state.accounts[1] == {"memory_extraction_enabled": True, "other": "kept"}
    assert db.state.flag_changes == [{"account_id": 1, "flag": "memory_extraction_enabled", "enabled": True,
                                      "changed_by": ANA.label, "token_id": 7}]
    with db.unit_of_work() as uow:  # left without commit: neither the value nor the audit row
        change_account_settings(uow, 1, {"memory_extraction_enabled": False}, flag="memory_extraction_enabled",
                                enabled=False, operator=ANA)
    assert db.state.accounts[1]["memory_extraction_enabled"] is True and len(db.state.flag_changes) == 1
    assert db.outbox == []  # settings changes announce nothing (the workers read accounts.settings)
