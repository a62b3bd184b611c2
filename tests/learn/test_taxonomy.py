from datetime import datetime, timezone

from streams.learn.taxonomy import MEMORY_TYPES, default_scope, expires_at, is_known_type, ttl_policy

T0 = datetime(2025, 1, 1, tzinfo=timezone.utc)


def test_ttl_table():
    assert len(MEMORY_TYPES) == 9
    assert expires_at("restricao", T0) is None
    assert expires_at("data_comemorativa", T0) is None
    assert (expires_at("reclamacao", T0) - T0).days == 180
    assert (expires_at("vinculo_social", T0) - T0).days == 730
    assert ttl_policy("preferencia").action == "reduce_weight"
    assert ttl_policy("feedback_positivo").action == "delete"


def test_scope_and_extra_types():
    assert {t for t in MEMORY_TYPES if default_scope(t) == "unit"} == {"reclamacao", "feedback_positivo", "padrao_comportamental"}
    assert not is_known_type("hobby")
    assert is_known_type("hobby", extra=["hobby"])
    assert (expires_at("hobby", T0) - T0).days == 365
