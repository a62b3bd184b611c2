"""Aging, the cap, hard delete, forgetting and erasure against the real Postgres."""

from __future__ import annotations

import json
from datetime import timedelta

from streams.learn.learn import learn_conversation
from streams.maintain.aging import age_memories, hard_delete
from streams.maintain.forget import erase_contact, forget_contact, forget_memory, verify_erasure
from streams.settings import get_settings
from tests.learn import seed as S


def _fact(db, a, c, memory_type, *, created, key="k", deleted_at=None, last_verified=None):
    from streams.learn.taxonomy import expires_at

    return db.q(
        "INSERT INTO contact_memories (account_id, contact_id, memory_type, memory_key, content, evidence, confidence, "
        "scope, expires_at, created_at, last_verified_at, deleted_at) "
        "VALUES (%s, %s, %s, %s, %s, 'x', 0.9, 'global', %s, %s, %s, %s) RETURNING id",
        a, c, memory_type, key, f"{memory_type} {key}", expires_at(memory_type, created), created,
        last_verified or created, deleted_at)[0]["id"]


def test_aging_applies_the_ttl_table_with_an_injected_clock(db):
    a = S.account(db)
    c = S.contact(db, a)
    old = S.T0 - timedelta(days=400)
    ids = {t: _fact(db, a, c, t, created=old, key=t) for t in
           ("preferencia", "reclamacao", "restricao", "data_comemorativa", "vinculo_social", "feedback_positivo")}
    fresh = _fact(db, a, c, "reclamacao", created=S.T0 - timedelta(days=10), key="fresh")
    with db.conn() as conn:
        dry = age_memories(conn, now=S.T0, dry_run=True)
        assert dry.weight_reduced[a] == 1 and dry.deleted[a] == 2
        assert not S.facts(db, c, "deleted_at IS NOT NULL OR weight < 1")  # dry run changed nothing
        report = age_memories(conn, now=S.T0)
        assert report.as_dict()["per_account"][str(a)] == {"weight_reduced": 1, "deleted": 2, "capped": 0}
        # idempotent: the weight is reduced once, never compounded
        again = age_memories(conn, now=S.T0 + timedelta(days=7))
        assert again.weight_reduced[a] == 0 and again.deleted[a] == 0
    rows = {r["id"]: r for r in S.facts(db, c)}
    assert rows[ids["preferencia"]]["weight"] == 0.7 and rows[ids["preferencia"]]["deleted_at"] is None
    assert rows[ids["reclamacao"]]["deleted_at"] == S.T0  # 180 d: delete
    assert rows[ids["feedback_positivo"]]["deleted_at"] == S.T0  # 365 d: delete
    assert rows[ids["vinculo_social"]]["deleted_at"] is None  # 730 d not reached
    for t in ("restricao", "data_comemorativa"):  # never expire
        assert rows[ids[t]]["deleted_at"] is None and rows[ids[t]]["weight"] == 1.0
    assert rows[fresh]["deleted_at"] is None
    assert db.q("SELECT count(*) AS n FROM outbox WHERE type = 'memory.deleted' AND payload->>'contact_id' = %s",
                str(c))[0]["n"] == 2


def test_aging_enforces_the_fifty_fact_cap(db):
    a = S.account(db)
    c = S.contact(db, a)
    for i in range(55):
        _fact(db, a, c, "restricao", created=S.T0 - timedelta(days=60), key=f"k{i}",
              last_verified=S.T0 - timedelta(days=55 - i))
    with db.conn() as conn:
        assert age_memories(conn, now=S.T0).capped[a] == 5
    gone = S.facts(db, c, "deleted_at IS NOT NULL")
    assert [r["memory_key"] for r in gone] == [f"k{i}" for i in range(5)]
    assert len(S.facts(db, c, "deleted_at IS NULL")) == 50


def test_hard_delete_only_after_thirty_days(db):
    a, b = S.account(db), S.account(db)
    c, d = S.contact(db, a), S.contact(db, b)
    old = _fact(db, a, c, "restricao", created=S.T0 - timedelta(days=90), deleted_at=S.T0 - timedelta(days=31))
    old_b = _fact(db, b, d, "restricao", created=S.T0 - timedelta(days=90), deleted_at=S.T0 - timedelta(days=40))
    recent = _fact(db, a, c, "restricao", created=S.T0 - timedelta(days=90), deleted_at=S.T0 - timedelta(days=29))
    live = _fact(db, a, c, "restricao", created=S.T0 - timedelta(days=90))
    with db.conn() as conn:
        dry = hard_delete(conn, now=S.T0, dry_run=True)
        assert (dry[a], dry[b]) == (1, 1)
        assert len(S.facts(db, c)) == 3
        done = hard_delete(conn, now=S.T0)
        assert (done[a], done[b]) == (1, 1)
        assert a not in hard_delete(conn, now=S.T0)
    assert [r["id"] for r in S.facts(db, c)] == [recent, live]
    assert not db.q("SELECT 1 FROM contact_memories WHERE id IN (%s, %s)", old, old_b)


def test_forget_one_then_all_leaves_nothing_recallable(db, memory_embedder):
    a = S.account(db)
    c = S.contact(db, a)
    learn_conversation(S.ports(db.pool, memory_embedder), S.conversation(db, a, c, S.HIDRO))
    learn_conversation(S.ports(db.pool, memory_embedder, clock=lambda: S.T0 + timedelta(days=1)),
                       S.conversation(db, a, c, S.MASTER, at=S.T0 + timedelta(days=1)))
    live = S.recallable(db, c, memory_embedder.name)
    assert len(live) == 2
    with db.conn() as conn:
        assert not forget_memory(conn, a + 1, live[0]["id"])  # another account cannot touch it
        assert forget_memory(conn, a, live[0]["id"], actor="agent:42", now=S.T0 + timedelta(days=2))
        assert not forget_memory(conn, a, live[0]["id"])
    row = S.facts(db, c, "id = %s", live[0]["id"])[0]
    assert row["deleted_at"] is not None and row["embedding"] is None
    assert row["metadata"]["deleted"]["by"] == "agent:42"
    assert len(S.recallable(db, c, memory_embedder.name)) == 1
    with db.conn() as conn:
        assert forget_contact(conn, a, c, now=S.T0 + timedelta(days=2)) == 2  # the other live fact and the superseded history
    assert S.recallable(db, c, memory_embedder.name) == []
    assert S.facts(db, c, "deleted_at IS NULL") == []
    assert db.q("SELECT 1 FROM outbox WHERE type = 'contact.forgotten' AND payload->>'contact_id' = %s", str(c))
    # and 30 days later they are gone for good
    with db.conn() as conn:
        assert a not in hard_delete(conn, now=S.T0 + timedelta(days=31))  # not yet
        assert hard_delete(conn, now=S.T0 + timedelta(days=33))[a] == 3
    assert S.facts(db, c) == []


def test_erase_contact_then_verify(db, memory_embedder):
    a = S.account(db)
    c, other = S.contact(db, a), S.contact(db, a)
    p = S.ports(db.pool, memory_embedder)
    conv = S.conversation(db, a, c, S.HIDRO)
    learn_conversation(p, conv)
    learn_conversation(p, S.conversation(db, a, other, S.HIDRO))
    S.conversation(db, a, c, S.INJECTION)  # still open, never extracted: announced as silent
    with db.conn() as conn:
        from streams.learn.triggers import announce_silent

        announce_silent(conn, now=S.T0 + timedelta(days=1))
        left = verify_erasure(conn, a, c)
        assert left["contact_memories"] == 2 and left["messages"] == 6 and left["contacts"] == 1
        assert left["conversation_silences"] == 1 and left["conversation_extractions"] == 1
        counts = erase_contact(conn, a, c, key=get_settings().erasure_key)
        assert counts["messages"] == 6 and counts["conversations"] == 2 and counts["contact_memories"] == 2
        assert not any(verify_erasure(conn, a, c).values())
        assert verify_erasure(conn, a, other)["contact_memories"] == 2  # others untouched
    ev = db.q("SELECT payload FROM outbox WHERE type = 'contact.erased'")
    assert {"account_id": a, "contact_id": c, "schema_version": 1} in [e["payload"] for e in ev]
    # the CLI proves it (and fails loudly when something remains)
    ok = db.memoria("verify-erasure", "--account", str(a), "--contact", str(c))
    proof = json.loads(ok.stdout)
    assert proof["erased"] is True and proof["ledger"]["identity_hash"] and proof["ledger"]["erased_at"]
    assert proof["removed"]["messages"] == 6 and proof["removed"]["pgvector_embeddings"] == 2
    assert proof["pgvector"]["embeddings_remaining"] == 0 and proof["qdrant"]["checked"] is True
    assert proof["qdrant"]["points_of_contact"] == 0 and proof["verified_at"]
    assert str(c) not in proof["ledger"]["identity_hash"]  # a keyed hash, no identity
    bad = db.memoria("verify-erasure", "--account", str(a), "--contact", str(other), check=False)
    assert bad.returncode == 1 and json.loads(bad.stdout)["postgres"]["remaining"]["contact_memories"] == 2
    assert json.loads(bad.stdout)["ledger"] is None
    out = db.memoria("erase-contact", "--account", str(a), "--contact", str(other))
    assert json.loads(out.stdout)["deleted"]["contact_memories"] == 2
    assert db.memoria("verify-erasure", "--account", str(a), "--contact", str(other)).returncode == 0


def test_maintenance_cli_dry_run_and_forget(db):
    a = S.account(db)
    c = S.contact(db, a)
    _fact(db, a, c, "reclamacao", created=S.T0 - timedelta(days=200), key="k1")
    _fact(db, a, c, "restricao", created=S.T0 - timedelta(days=200), key="k2",
          deleted_at=S.T0 - timedelta(days=45))
    now = S.T0.isoformat()
    dry = json.loads(db.memoria("maintenance", "aging", "--dry-run", "--now", now).stdout)
    assert dry["dry_run"] and dry["per_account"][str(a)]["deleted"] == 1
    assert S.facts(db, c, "deleted_at IS NULL")
    hd = json.loads(db.memoria("maintenance", "hard-delete", "--dry-run", "--now", now).stdout)
    assert hd["per_account"][str(a)] == 1 and len(S.facts(db, c)) == 2
    hd = json.loads(db.memoria("maintenance", "hard-delete", "--now", now).stdout)
    assert hd["deleted"] >= 1 and len(S.facts(db, c)) == 1
    out = json.loads(db.memoria("forget", "--account", str(a), "--contact", str(c)).stdout)
    assert out["forgotten"] == 1 and S.facts(db, c, "deleted_at IS NULL") == []
