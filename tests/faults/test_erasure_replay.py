"""Erase, then replay every topic from the beginning: the contact never comes back
(no contact, conversation, message, fact or reply), and ``verify-erasure`` still passes."""

from __future__ import annotations

import asyncio
import json
from datetime import datetime, timedelta, timezone

import pytest

from schemas.events import InboundMessage
from streams.kafka.topics import INBOUND, OUTBOUND, base_topics, qualified
from streams.settings import get_settings
from tests.faults.conftest import record_counts
from tests.harness import consume_all, produce, wait_until

KEY = get_settings().erasure_key  # what the container hands to every erasure path

pytestmark = [pytest.mark.slow, pytest.mark.faults]

CPF = "123.456.789-09"


def _msg(mid, text, *, contact, conversation, at=None):
    return InboundMessage(message_id=mid, account_id=1, inbox_id=10, conversation_id=conversation,
                          contact_id=contact, channel="whatsapp", text=text,
                          sent_at=at or datetime.now(timezone.utc)).model_dump_json().encode()


def _replies_for(env, contact):
    out = consume_all(env.settings, qualified(env.settings, OUTBOUND), 1000, timeout=3)
    return [json.loads(r.value) for r in out if json.loads(r.value)["contact_id"] == contact]


def test_erase_then_replay_every_topic(env):
    from streams.learn.triggers import announce_silent, resolve_conversation

    s = env.settings
    env.q("INSERT INTO accounts (id, settings) VALUES (1, '{\"memory_extraction_enabled\": true, "
          "\"memory_recall_enabled\": true}')")
    env.start_worker("relay,learn,respond")
    inbound = qualified(s, INBOUND)
    texts = [f"Oi, meu CPF é {CPF}", "Sou alérgico a camarão.", "É sempre a Hidro que eu peço.",
             "Quanto custa o pernoite?"]
    produce(s, inbound, [(b"c-erase", _msg(f"wamid.e{i}", t, contact=100, conversation="c-erase"), [])
                         for i, t in enumerate(texts)])
    produce(s, inbound, [(b"c-keep", _msg("wamid.k0", "Sou alérgico a amendoim.", contact=101,
                                          conversation="c-keep"), [])])
    wait_until(lambda: len(_replies_for(env, 100)) == 4 and len(_replies_for(env, 101)) == 1, 90,
               what="replies")
    conv = env.q("SELECT id FROM conversations WHERE external_id = 'c-erase'")[0]["id"]
    keep = env.q("SELECT id FROM conversations WHERE external_id = 'c-keep'")[0]["id"]
    with env.conn() as c:
        resolve_conversation(c, conv)
        resolve_conversation(c, keep)
    wait_until(lambda: env.q("SELECT count(*) AS n FROM conversation_extractions WHERE status = 'done'")[0]["n"] == 2,
               90, what="both conversations learnt")
    facts_before = env.q("SELECT count(*) AS n FROM contact_memories WHERE contact_id = 100")[0]["n"]
    assert facts_before >= 1

    erased = json.loads(env.memoria("erase-contact", "--account", "1", "--contact", "100").stdout)
    assert erased["deleted"]["messages"] == 8 and erased["deleted"]["contact_memories"] == facts_before
    assert env.memoria("verify-erasure", "--account", "1", "--contact", "100").returncode == 0

    # replay every topic from the beginning (what a Debezium re-snapshot or an operator would do),
    # plus late events: a redelivered message sent before the erasure, the silence detector, a retry
    replayed = {}
    for t in base_topics():
        if t.endswith(".dlq"):
            continue
        r = env.memoria("replay", "topic", "--topic", t, check=False)
        assert r.returncode in (0, 2), r.stderr
        replayed[t] = json.loads(r.stdout)["replayed"] if r.returncode == 0 else 0
    late = datetime.now(timezone.utc) - timedelta(hours=1)
    produce(s, inbound, [(b"c-erase", _msg("wamid.late", f"meu CPF {CPF}", contact=100, conversation="c-erase",
                                           at=late), [])])
    with env.conn() as c:
        announce_silent(c, now=datetime.now(timezone.utc) + timedelta(days=1))
    # a sentinel from the kept contact, after all of it: once it is answered, the replays were consumed
    produce(s, inbound, [(b"c-erase", _msg("wamid.sentinel", "Oi de novo", contact=101,
                                           conversation="c-keep"), [])])
    wait_until(lambda: any(x["in_reply_to"] == "wamid.sentinel" for x in _replies_for(env, 101)), 90,
               what="sentinel reply")
    wait_until(lambda: env.metrics().get('memoria_erased_records_dropped_total{path="respond"}', 0) >= 5, 30,
               what="replayed messages of the erased contact dropped")
    import time
    time.sleep(3)

    proof = json.loads(env.memoria("verify-erasure", "--account", "1", "--contact", "100").stdout)
    recreated = env.q(
        "SELECT (SELECT count(*) FROM contacts WHERE account_id = 1 AND id = 100) "
        "+ (SELECT count(*) FROM conversations WHERE contact_id = 100) "
        "+ (SELECT count(*) FROM messages m JOIN conversations c ON c.id = m.conversation_id WHERE c.contact_id = 100) "
        "+ (SELECT count(*) FROM contact_memories WHERE contact_id = 100) AS n")[0]["n"]
    new_replies = {x["in_reply_to"] for x in _replies_for(env, 100)} - {f"wamid.e{i}" for i in range(4)}
    m = env.metrics()
    record_counts("erase_then_replay", replayed=replayed, dropped_respond=m.get(
        'memoria_erased_records_dropped_total{path="respond"}', 0), recreated_rows=recreated,
        new_replies=len(new_replies), verify_erasure="passed" if proof["erased"] else "failed")
    assert recreated == 0 and not new_replies
    assert proof["erased"] is True and proof["postgres"]["remaining"] == {}
    assert env.q("SELECT count(*) AS n FROM messages WHERE text LIKE %s", f"%{CPF}%")[0]["n"] == 0
    assert env.q("SELECT count(*) AS n FROM conversations WHERE contact_id = 100")[0]["n"] == 0
    # no new reply was generated for the erased contact (the replayed outbound topic only repeats old ones)
    assert {x["in_reply_to"] for x in _replies_for(env, 100)} == {f"wamid.e{i}" for i in range(4)}
    # the other contact is untouched, and nothing was duplicated for it
    assert env.q("SELECT count(*) AS n FROM contact_memories WHERE contact_id = 101 AND deleted_at IS NULL "
                 "AND superseded_at IS NULL")[0]["n"] >= 1
    assert env.q("SELECT count(*) AS n FROM messages m JOIN conversations c ON c.id = m.conversation_id "
                 "WHERE c.contact_id = 101 AND m.role = 'agent'")[0]["n"] == 2


def test_an_erased_phone_is_not_recreated_by_a_late_webhook(db):
    """The channel resolver consults the ledger too: a late webhook of an erased wa_id creates nothing."""
    from connectors.whatsapp.postgres_resolver import PostgresResolver
    from streams.maintain.forget import erase_contact

    db.q("INSERT INTO accounts (id) VALUES (77)")
    db.q("INSERT INTO inboxes (id, account_id, channel_address) VALUES (770, 77, 'pn-77')")
    r = PostgresResolver(db.pool, erasure_key=KEY)
    route = asyncio.run(r.route("pn-77", "5511988887777"))
    assert route is not None and route.account_id == 77
    with db.conn() as c:
        erase_contact(c, 77, route.contact_id, key=KEY)
    assert asyncio.run(r.route("pn-77", "5511988887777")) is None
    assert db.q("SELECT count(*) AS n FROM contacts WHERE account_id = 77")[0]["n"] == 0
    assert asyncio.run(r.route("pn-77", "5511900001111")) is not None  # another customer is fine
    ledger = db.q("SELECT kind, identity_hash FROM erased_identities WHERE account_id = 77 ORDER BY kind")
    assert [x["kind"] for x in ledger] == ["contact", "phone"]
    assert all("5511988887777" not in x["identity_hash"] for x in ledger)
