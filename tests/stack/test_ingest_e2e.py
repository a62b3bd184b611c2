"""Knowledge ingestion end to end: CLI → Postgres + outbox → relay → Kafka → Faust worker → Qdrant."""

import json
import signal
import threading
import time
import uuid

import pytest

from streams.ingest.knowledge import chunk_alias
from streams.kafka.topics import dlq_topic, outbox_topic, qualified
from tests.harness import consume_all, jl, produce, wait_until

pytestmark = pytest.mark.slow


def _doc(tmp_path, name, text):
    p = tmp_path / name
    p.write_text(text)
    return p


def _in_sync(env, store):
    live = {r["id"] for r in env.q("SELECT id::text FROM chunks WHERE deleted_at IS NULL")}
    target = store.alias_target(chunk_alias(env.settings.vector_domain))
    pts = set(store.scroll(target)) if target else set()
    return live == pts and (live, pts)


def test_ingest_search_edit_poison(env, tmp_path):
    env.start_worker("relay,ingest")
    a = _doc(tmp_path, "precos.md", "# Preços\n\nO pernoite na suíte Luxo custa R$ 240.\n\n"
                                    "A suíte Master tem piscina aquecida e custa R$ 450 o pernoite.")
    b = _doc(tmp_path, "outra.md", "# Preços\n\nO pernoite na suíte Luxo custa R$ 999.")
    env.memoria("ingest", str(a), "--account", "1")
    env.memoria("ingest", str(b), "--account", "2")
    store = env.vector_store()  # the worker's proxy
    wait_until(lambda: _in_sync(env, store) and len(store.scroll(store.alias_target(
        chunk_alias(env.settings.vector_domain)))) == 2, 60, what="chunks indexed")
    hits = jl(env.memoria("search", "--account", "1", "--json", "quanto custa o pernoite na Luxo?").stdout)
    assert hits and all("R$ 999" not in h["content"] for h in hits)
    assert "R$ 240" in hits[0]["content"] and 0 <= hits[0]["distance"] < 1
    hits2 = jl(env.memoria("search", "--account", "2", "--json", "quanto custa o pernoite na Luxo?").stdout)
    assert len(hits2) == 1 and "R$ 999" in hits2[0]["content"]
    # the human-readable form prints the distance
    assert "distance=" in env.memoria("search", "--account", "1", "pernoite").stdout

    embedded_before = env.metrics()["memoria_chunks_embedded_total"]
    # edit: one paragraph changes, one is removed
    _doc(tmp_path, "precos.md", "# Preços\n\nO pernoite na suíte Luxo custa R$ 260.")
    env.memoria("ingest", str(a), "--account", "1", "--chunk-size", "800")
    wait_until(lambda: _in_sync(env, store), 60, what="edit indexed")
    m = env.metrics()
    assert m["memoria_chunks_embedded_total"] - embedded_before == 1
    assert m["memoria_chunk_points_deleted_total"] >= 1
    hits = jl(env.memoria("search", "--account", "1", "--json", "pernoite Luxo").stdout)
    assert len(hits) == 1 and "R$ 260" in hits[0]["content"]

    # poison events: invalid JSON, unknown type, missing chunk id; then a good event still works
    topic = qualified(env.settings, outbox_topic("chunk"))
    produce(env.settings, topic, [
        (b"k1", b"{this is not json", [("id", str(uuid.uuid4()).encode()), ("type", b"chunk.upserted")]),
        (b"k2", b"{}", [("id", str(uuid.uuid4()).encode()), ("type", b"chunk.melted")]),
        (b"k3", json.dumps({"schema_version": 1, "account_id": 1,
                            "document_id": str(uuid.uuid4())}).encode(),
         [("id", str(uuid.uuid4()).encode()), ("type", b"chunk.upserted")]),
    ])
    c = _doc(tmp_path, "novo.md", "Aceitamos cachorros de pequeno porte na unidade Jardins.")
    env.memoria("ingest", str(c), "--account", "1")
    wait_until(lambda: _in_sync(env, store), 60, what="good event after poison")
    dead = consume_all(env.settings, dlq_topic(topic), 3)
    reasons = sorted(dict(r.headers)["dlq.error_class"].decode() for r in dead)
    assert reasons == ["InvalidJSON", "SchemaValidation", "UnknownEventType"]
    h = dict(dead[0].headers)
    for k in ("dlq.error_message", "dlq.source_topic", "dlq.source_partition", "dlq.source_offset",
              "dlq.first_seen"):
        assert h[k]
    assert h["dlq.source_topic"].decode() == topic
    assert {r.value for r in dead} >= {b"{this is not json"}
    assert "chunk_id" in [dict(r.headers) for r in dead if r.key == b"k3"][0]["dlq.error_message"].decode()


def test_sigkill_mid_batch_then_restart_converges(env, tmp_path):
    docs = [_doc(tmp_path, f"d{i}.md", "\n\n".join(
        f"Documento {i}, parágrafo {j}: política número {i * 100 + j} sobre reservas e horários."
        for j in range(40))) for i in range(15)]
    env.memoria("ingest", *map(str, docs), "--account", "7", "--chunk-size", "100", "--chunk-overlap", "0")
    total = env.q("SELECT count(*) AS n FROM chunks")[0]["n"]
    assert total >= 600
    w = env.start_worker("relay,ingest", extra_env={"MEMORIA_INGEST_BATCH_MAX": "32"})
    store = env.vector_store()
    alias = chunk_alias(env.settings.vector_domain)
    wait_until(lambda: store.alias_target(alias) and 0 < store.count(store.alias_target(alias)), 60,
               interval=0.05, what="first points")
    n_before = store.count(store.alias_target(alias))
    env.stop_worker(w, signal.SIGKILL)
    assert n_before < total, "worker finished before it could be killed; make the corpus larger"
    # more changes while it is down: a removal and an edit
    with env.conn() as conn:
        from streams.ingest.documents import write_document

        write_document(conn, account_id=7, source=docs[0].name, text="Só um parágrafo agora.",
                       chunk_size=100, chunk_overlap=0)
    env.start_worker("relay,ingest", log_name="worker2")
    store = env.vector_store()
    wait_until(lambda: _in_sync(env, store), 180, interval=0.5, what="convergence after SIGKILL")


def test_reindex_swaps_alias_while_searches_continue_and_reconcile_repairs(env, tmp_path):
    env.start_worker("relay,ingest")
    docs = [_doc(tmp_path, f"k{i}.md", f"# Doc {i}\n\nO check-in da unidade {i} é às {10 + i}h. "
                                       f"O estacionamento custa R$ {20 + i}.") for i in range(10)]
    env.memoria("ingest", *map(str, docs), "--account", "3")
    store = env.vector_store()
    alias = chunk_alias(env.settings.vector_domain)
    wait_until(lambda: _in_sync(env, store) and store.alias_target(alias), 60, what="indexed")
    old = store.alias_target(alias)

    from streams.ingest.knowledge import search_chunks
    from tests.support.embedders import shared_container

    c = shared_container(env.settings, vector_store=store)
    ok, errors, stop = [0], [], threading.Event()

    def loop():
        while not stop.is_set():
            try:
                hits = search_chunks("que horas é o check-in?", account_id=3, pool=c.pool, store=store,
                                     domain=env.settings.vector_domain, embedder_for=c.embedder_for, limit=3)
                assert len(hits) == 3
                ok[0] += 1
            except Exception as e:  # any failure fails the test
                errors.append(repr(e))

    t = threading.Thread(target=loop)
    t.start()
    try:
        time.sleep(0.5)
        r = env.memoria("reindex", "--model", "all-minilm-l6-v2")
        time.sleep(0.5)
    finally:
        stop.set()
        t.join()
        c.close()
    assert errors == []
    assert ok[0] > 5
    new = store.alias_target(alias)
    assert new != old and new.endswith("all-minilm-l6-v2")
    assert old not in store.list_collections()
    assert "verified" in r.stderr
    # the worker keeps indexing into the new collection with the new model
    more = _doc(tmp_path, "mais.md", "O café da manhã é servido das 7h às 10h.")
    env.memoria("ingest", str(more), "--account", "3")
    wait_until(lambda: _in_sync(env, store), 60, what="indexed after reindex")

    # reconcile --repair restores a point deleted behind the system's back
    victim = next(iter(store.scroll(new, 3)))
    store.delete(new, [victim])
    r = env.memoria("reconcile", "--account", "3", check=False)
    assert r.returncode == 1 and '"missing": 1' in r.stdout
    r = env.memoria("reconcile", "--account", "3", "--repair")
    assert '"requeued": 1' in r.stdout
    wait_until(lambda: victim in store.scroll(new, 3), 60, what="repaired point")
    assert env.memoria("reconcile").returncode == 0


def test_stable_document_keys_and_documents_delete(env, tmp_path):
    import shutil

    env.start_worker("relay,ingest")
    first = tmp_path / "kb"
    (first / "precos").mkdir(parents=True)
    _doc(first / "precos", "suites.md", "# Suítes\n\nO pernoite na suíte Luxo custa R$ 240.")
    _doc(first, "regras.md", "# Regras\n\nCancelamento com menos de 24 horas converte o sinal em crédito.")
    out = env.memoria("ingest", str(first), "--account", "5").stderr
    assert "precos/suites.md: +1 new" in out and "regras.md: +1 new" in out
    store = env.vector_store()
    wait_until(lambda: _in_sync(env, store) and len(_in_sync(env, store)[0]) == 2, 60, what="indexed")
    ids = {r["id"] for r in env.q("SELECT id::text FROM chunks")}

    # the same folder, copied elsewhere and ingested from there: nothing changes
    second = tmp_path / "elsewhere" / "copy-of-kb"
    shutil.copytree(first, second)
    out = env.memoria("ingest", str(second), "--account", "5").stderr
    assert "done: 2 documents; 0 chunks to embed, 0 to delete, 2 unchanged" in out
    assert {r["id"] for r in env.q("SELECT id::text FROM chunks")} == ids
    keys = [json.loads(line)["key"] for line in env.memoria("documents", "list", "--account", "5", "--json")
            .stdout.splitlines()]
    assert keys == ["precos/suites.md", "regras.md"]

    # a document ingested before stable keys (named by its absolute path) is adopted, not duplicated
    legacy = _doc(tmp_path, "antigo.md", "# Antigo\n\nO estacionamento custa R$ 20.")
    with env.conn() as conn:
        from streams.ingest.documents import write_document

        write_document(conn, account_id=5, source=str(legacy.resolve()), text=legacy.read_text())
    out = env.memoria("ingest", str(legacy), "--account", "5").stderr
    assert "antigo.md: +0 new" in out
    assert [r["source"] for r in env.q("SELECT source FROM documents WHERE account_id = 5 ORDER BY source")] == \
        ["antigo.md", "precos/suites.md", "regras.md"]
    out = env.memoria("ingest", str(legacy), "--account", "5", "--key", "kb/estacionamento").stderr
    assert "kb/estacionamento: +1 new" in out

    # delete by key: tombstoned, points removed by the worker; unknown key: exit 2
    r = env.memoria("documents", "delete", "precos/suites.md", "--account", "5")
    assert "deleted" in r.stderr
    wait_until(lambda: _in_sync(env, store) and len(_in_sync(env, store)[0]) == 3, 60, what="points removed")
    assert not [h for h in jl(env.memoria("search", "--account", "5", "--json", "pernoite Luxo").stdout)
                if "R$ 240" in h["content"]]
    assert env.memoria("documents", "delete", "nope.md", "--account", "5", check=False).returncode == 2
    assert env.memoria("documents", "delete", "regras.md", "--account", "6", check=False).returncode == 2
