"""Replay tooling against the real broker, Postgres and worker."""

import json

import pytest

from streams.ingest.knowledge import chunk_alias
from streams.kafka.topics import outbox_topic, qualified
from tests.harness import consume_all, produce, wait_until


def _hdr(r):
    return dict(r.headers)


def test_replay_topic_range_dry_run_and_dlq(env):
    topic = qualified(env.settings, "channel.inbound.messages")
    produce(env.settings, topic, [(b"k", f"m{i}".encode(), [("n", str(i).encode())]) for i in range(5)])
    dry = json.loads(env.memoria("replay", "topic", "--topic", "channel.inbound.messages", "--from", "1",
                                 "--to", "4", "--dry-run").stdout)
    assert dry["read"] == 3 and dry["replayed"] == 0
    assert len(consume_all(env.settings, topic, 6, timeout=3)) == 5
    out = json.loads(env.memoria("replay", "topic", "--topic", "channel.inbound.messages", "--from", "1",
                                 "--to", "4").stdout)
    assert out["read"] == 3 and out["replayed"] == 3
    recs = consume_all(env.settings, topic, 8)
    # one key, so one partition: the replayed range follows the originals, in order
    assert [r.value for r in recs] == [b"m0", b"m1", b"m2", b"m3", b"m4", b"m1", b"m2", b"m3"]
    # a dead-letter topic goes back to the source topic, without the dlq.* headers
    produce(env.settings, topic + ".dlq", [(b"k", b"fixed", [("dlq.source_topic", topic.encode()),
                                                              ("dlq.error_class", b"X"), ("keep", b"1")])])
    out = json.loads(env.memoria("replay", "topic", "--topic", "channel.inbound.messages.dlq").stdout)
    assert out["targets"] == {topic: 1}
    recs = consume_all(env.settings, topic, 9)
    back = [r for r in recs if r.value == b"fixed"]
    assert len(back) == 1 and _hdr(back[0]) == {"keep": b"1"}
    bad = env.memoria("replay", "topic", "--topic", "channel.inbound.messages", "--from", "yesterday",
                      check=False)
    assert bad.returncode == 2 and "neither an offset nor" in bad.stderr


@pytest.mark.slow
def test_replaying_the_chunk_topic_is_a_no_op_for_the_agents(env, tmp_path):
    env.start_worker("relay,ingest")
    doc = tmp_path / "d.md"
    doc.write_text("\n\n".join(f"Parágrafo {i} sobre o horário do café da manhã." for i in range(6)))
    env.memoria("ingest", str(doc), "--account", "1", "--chunk-size", "60", "--chunk-overlap", "0")
    store = env.vector_store()
    alias = chunk_alias(env.settings.vector_domain)
    live = {r["id"] for r in env.q("SELECT id::text FROM chunks")}
    wait_until(lambda: store.alias_target(alias) and set(store.scroll(store.alias_target(alias))) == live, 60)
    embedded = env.metrics()["memoria_chunks_embedded_total"]
    dup_key = 'memoria_events_duplicate_total{topic="%s"}' % qualified(env.settings, outbox_topic("chunk"))
    out = json.loads(env.memoria("replay", "topic", "--topic", "outbox.event.chunk").stdout)
    assert out["replayed"] == len(live)
    wait_until(lambda: env.metrics().get(dup_key, 0) >= len(live), 60, what="replayed events seen as duplicates")
    assert env.metrics()["memoria_chunks_embedded_total"] == embedded
    assert set(store.scroll(store.alias_target(alias))) == live


def test_replay_embed_memories(env):
    with env.conn() as c:
        c.execute("INSERT INTO accounts (id) VALUES (1)")
        for i, text in enumerate(["Prefere a suíte Hidro", "Alérgico a camarão", "Casado com a Camila"]):
            c.execute("INSERT INTO contact_memories (account_id, contact_id, memory_type, memory_key, content, "
                      "evidence, confidence, scope, deleted_at) VALUES (1, 5, 'preferencia', 'k', %s, %s, 0.9, "
                      f"'global', {'now()' if i == 2 else 'NULL'})", (text, text))
    dry = json.loads(env.memoria("replay", "embed-memories", "--model", "use-multilingual-v3", "--dry-run").stdout)
    assert dry == {"model": "use-multilingual-v3", "to_embed": 2, "dry_run": True}
    out = json.loads(env.memoria("replay", "embed-memories", "--model", "use-multilingual-v3").stdout)
    assert out == {"model": "use-multilingual-v3", "embedded": 2, "failed": 0}
    rows = env.q("SELECT embedding_model, vector_dims(embedding) AS d, deleted_at FROM contact_memories ORDER BY id")
    assert [(r["embedding_model"], r["d"]) for r in rows] == [("use-multilingual-v3", 512)] * 2 + [(None, None)]
    again = json.loads(env.memoria("replay", "embed-memories", "--model", "use-multilingual-v3").stdout)
    assert again["embedded"] == 0
