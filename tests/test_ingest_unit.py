"""Writing knowledge documents over the in-memory unit of work (unit tier: no service)."""

from __future__ import annotations

from schemas.events import ChunkEvent
from streams.ingest.documents import adopt_legacy_source, tombstone_document, write_document
from streams.store.fake_uow import FakeDatabase

PARAS = [f"Seção {i}. " + ("O pernoite na suíte custa R$ 200 e inclui café da manhã. " * 4) for i in range(4)]
TEXT = "\n\n".join(PARAS)


def _write(db: FakeDatabase, text: str, *, account: int = 1, source: str = "kb/precos.md"):
    with db.unit_of_work() as uow:
        r = write_document(uow, account_id=account, source=source, text=text, chunk_size=300, chunk_overlap=0)
        uow.commit()
    return r


def _live(db: FakeDatabase) -> dict[str, dict]:
    return {cid: c for cid, c in db.state.chunks.items() if not c["deleted"]}


def test_a_document_becomes_chunks_and_one_event_per_chunk():
    db = FakeDatabase()
    r = _write(db, TEXT)
    live = _live(db)
    assert r.inserted == len(live) >= 2 and r.events == len(live)
    assert sorted(c["seq"] for c in live.values()) == list(range(len(live)))
    assert sorted((t, str(e.chunk_id)) for t, e in db.outbox) == sorted(("chunk.upserted", cid) for cid in live)
    assert all(isinstance(e, ChunkEvent) and e.account_id == 1 and str(e.document_id) == r.document_id
               for _, e in db.outbox)


def test_unchanged_document_writes_nothing_new_and_an_edit_touches_only_what_changed():
    db = FakeDatabase()
    first = _write(db, TEXT)
    again = _write(db, TEXT)
    assert (again.inserted, again.moved, again.tombstoned, again.events) == (0, 0, 0, 0)
    assert again.unchanged == first.inserted and again.document_id == first.document_id
    n = len(db.outbox)
    edited = _write(db, "\n\n".join(PARAS[1:]))  # the first section removed: everything after it moves up
    assert edited.inserted == 0 and edited.tombstoned >= 1 and edited.moved >= 1
    new_events = db.outbox[n:]
    assert {t for t, _ in new_events} == {"chunk.deleted", "chunk.upserted"}
    assert sorted(str(e.chunk_id) for _, e in new_events) == sorted(edited.touched_chunk_ids)


def test_tombstoning_a_document_announces_each_chunk_once():
    db = FakeDatabase()
    r = _write(db, TEXT)
    with db.unit_of_work() as uow:
        assert tombstone_document(uow, 2, key="kb/precos.md") is None  # another account's: not found
        assert tombstone_document(uow, 1, key="kb/precos.md") == r.document_id
        uow.commit()
    assert _live(db) == {} and db.state.documents[r.document_id]["deleted"]
    deleted = [str(e.chunk_id) for t, e in db.outbox if t == "chunk.deleted"]
    assert sorted(deleted) == sorted(db.state.chunks)
    with db.unit_of_work() as uow:  # twice: a no-op
        tombstone_document(uow, 1, document_id=r.document_id)
        uow.commit()
    assert [str(e.chunk_id) for t, e in db.outbox if t == "chunk.deleted"] == deleted


def test_a_legacy_absolute_source_is_adopted_not_duplicated():
    db = FakeDatabase()
    old = _write(db, TEXT, source="/home/x/docs/kb/precos.md")
    with db.unit_of_work() as uow:
        assert adopt_legacy_source(uow, 1, "kb/precos.md", "/home/x/docs/kb/precos.md")
        r = write_document(uow, account_id=1, source="kb/precos.md", text=TEXT, chunk_size=300, chunk_overlap=0)
        uow.commit()
    assert r.document_id == old.document_id and r.inserted == 0 and len(db.state.documents) == 1


def test_paid_embedding_tokens_are_shared_by_characters_and_a_redelivered_batch_counts_once():
    from streams.ingest.knowledge import ledger_embeddings

    db = FakeDatabase()
    rows = [{"id": "a1", "account_id": 1, "content": "x" * 300, "content_hash": "h1"},
            {"id": "b1", "account_id": 2, "content": "y" * 100, "content_hash": "h2"}]
    prices = {"emb-paid": (0.5, 0.0)}
    for _ in range(2):  # the same batch redelivered
        with db.unit_of_work() as uow:
            ledger_embeddings(uow, rows, {"emb-paid": 1000}, prices)
            uow.commit()
    ledger = sorted(db.state.ledger, key=lambda c: c.account_id)
    assert [(c.account_id, c.stage, c.model, c.prompt_tokens) for c in ledger] == \
        [(1, "embedding", "emb-paid", 750), (2, "embedding", "emb-paid", 250)]
    assert ledger[0].cost_usd > ledger[1].cost_usd > 0 and ledger[0].ref.startswith("chunks:emb-paid:")
    rows[1]["content_hash"] = "h2-changed"   # account 2's chunk changed: its share counts again
    with db.unit_of_work() as uow:
        ledger_embeddings(uow, rows, {"emb-paid": 1000}, prices)
        uow.commit()
    assert [c.account_id for c in db.state.ledger[2:]] == [2]
    with db.unit_of_work() as uow:  # free models put nothing in the ledger
        ledger_embeddings(uow, rows, {"use-multilingual-v3": 0}, prices)
        uow.commit()
    assert len(db.state.ledger) == 3
