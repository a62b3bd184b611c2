"""The chunk collection: naming, indexing, search, re-embedding and reconciliation.

Plain functions over three ports: a Postgres connection source, a
``VectorStore`` and an embedder factory. Nothing here knows about Kafka.
"""

from __future__ import annotations

import hashlib
import logging
import time
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Callable, Iterable, Sequence

import numpy as np
from psycopg_pool import ConnectionPool

from schemas.events import ChunkEvent
from streams.embedding import Embedder
from streams.embedding import tokens as embedding_tokens
from streams.embedding.parts import PassageParts, passages_in_parts
from streams.embedding.providers import model_slug
from streams.learn.model import TokenUsage
from streams.pricing import PriceTable, count_metrics, model_call
from streams.store.db import autocommit
from streams.store.uow import PostgresUnitOfWork, UnitOfWork, joined
from streams.vectors.port import Hit, VectorStore

log = logging.getLogger(__name__)

EmbedderFor = Callable[[str], Embedder]   # model name -> embedder for that model


# ------------------------------------------------------ distance thresholds
# Cosine-distance cut-offs calibrated per embedding model on the pt-BR dev
# fixtures (``python -m streams.respond.evaluate_answers``): the scale of
# distances differs by model (e5 squeezes everything under 0.2, USE spreads
# answers up to 0.9), so one number cannot serve every model. An inbox whose
# ``rag_distance_threshold`` is NULL uses its collection model's value.
CALIBRATED_MAX_DISTANCE = {
    "use-multilingual-v3": 0.85,
    "all-minilm-l6-v2": 0.60,
    "multilingual-e5-small": 0.15,
}
DESIGN_DEFAULT_MAX_DISTANCE = 0.35   # docs/architecture.md §3, for models nobody calibrated


def default_max_distance(model: str) -> float:
    return CALIBRATED_MAX_DISTANCE.get(model, DESIGN_DEFAULT_MAX_DISTANCE)


# ------------------------------------------------------------------ naming
def chunk_alias(domain: str) -> str:
    return f"{domain}__text__chunks"


def chunk_collection(domain: str, model: str, version: int = 1) -> str:
    base = f"{domain}__text__chunks__{model_slug(model)}"
    return base if version == 1 else f"{base}__v{version}"


def model_of(collection: str) -> str:
    """The embedding model a collection is bound to (its name says it)."""
    parts = collection.split("__")
    if len(parts) < 4 or parts[1:3] != ["text", "chunks"]:
        raise ValueError(f"{collection!r} is not a chunk collection name")
    return parts[3]


def ensure_chunk_collection(store: VectorStore, domain: str, embedder: Embedder) -> str:
    """The collection behind the alias, created for ``embedder`` if there is none."""
    alias = chunk_alias(domain)
    target = store.alias_target(alias)
    if target is None:
        target = chunk_collection(domain, embedder.name)
        store.create_collection(target, embedder.dim)
        store.point_alias(alias, target)
        log.info("created chunk collection %s (alias %s, dim %d)", target, alias, embedder.dim)
    return target


# ------------------------------------------------------------------- index
@dataclass
class IndexStats:
    embedded: int = 0
    payload_updates: int = 0
    unchanged: int = 0
    deleted: int = 0
    seconds: float = 0.0
    embed_seconds: float = 0.0   # of which the embedding model
    upsert_seconds: float = 0.0  # of which writing the points
    sentences: int = 0           # the composer's sentences embedded and stored (``store_sentences``)
    sentence_seconds: float = 0.0


def _load_chunks(pool: ConnectionPool, ids: Sequence[str]) -> dict[str, dict]:
    with pool.connection() as conn:
        rows = conn.execute(
            "SELECT id::text, account_id, document_id::text, seq, content, content_hash, deleted_at "
            "FROM chunks WHERE id = ANY(%s::uuid[])", (list(ids),)).fetchall()
    return {r["id"]: r for r in rows}


def ledger_embeddings(target: "UnitOfWork | ConnectionPool", rows: Sequence[dict], used: dict[str, int],
                      prices: PriceTable | None = None) -> None:
    """Put the paid embedding tokens of an indexing batch in the cost ledger (``uow.knowledge``), per
    account: each account's share is its chunks' share of the batch's characters. The ref names the
    model and the account's chunks with their content hashes, so a redelivered batch counts once.
    ``target``: a unit of work (the caller commits) or a pool (a unit committed here)."""
    if not any(used.values()):
        return
    chars: dict[int, int] = {}
    keys: dict[int, list[str]] = {}
    for r in rows:
        account = int(r["account_id"])
        chars[account] = chars.get(account, 0) + len(r["content"])
        keys.setdefault(account, []).append(f"{r['id']}:{str(r['content_hash']).strip()}")
    total = sum(chars.values()) or 1
    calls = []
    for model, n in sorted(used.items()):
        for account, c in sorted(chars.items()):
            digest = hashlib.sha256("\n".join(sorted(keys[account])).encode()).hexdigest()[:32]
            calls.append(model_call(account, "embedding", model, TokenUsage(prompt_tokens=round(n * c / total)),
                                    ref=f"chunks:{model}:{digest}", table=prices))
    with joined(target) as uow:
        uow.knowledge.record_calls(calls)
    for call in calls:
        count_metrics(call)


def point_payload(row: dict) -> dict:
    return {"account_id": int(row["account_id"]), "document_id": row["document_id"],
            "seq": int(row["seq"]), "content_hash": row["content_hash"].strip()}


def embed_and_upsert(rows: Sequence[dict], *, embedder: Embedder, store: VectorStore, collection: str,
                     part: int = 0, parts: PassageParts | None = None) -> tuple[float, float]:
    """Embed the rows' contents and upsert their points; returns (seconds waiting for vectors,
    seconds upserting). Through the embedding service, ``part`` rows at a time: the service
    encodes the next parts while this process upserts the one it has (``PassageParts``);
    ``parts``: the rows' contents already requested."""
    t = time.perf_counter()
    upsert_s = 0.0
    for start, vecs in (parts if parts is not None else PassageParts(embedder, [r["content"] for r in rows], part)):
        some = rows[start:start + len(vecs)]
        u = time.perf_counter()
        store.upsert(collection, [r["id"] for r in some], vecs, [point_payload(r) for r in some])
        upsert_s += time.perf_counter() - u
    return time.perf_counter() - t - upsert_s, upsert_s


def store_sentences(pool: ConnectionPool, rows: Sequence[dict], embedder: Embedder, part: int = 0) -> int:
    """The offline composer's sentence vectors of these chunks, written to their rows: each
    chunk's quotable units (``compose.answer_units``, as the composer reads a chunk) embedded
    as passages by the collection's embedder, with its name (``sentence_model``). Only for the
    content they were computed from (``content_hash``); the row's ``updated_at`` and outbox are
    untouched (derived data, like the point). Returns the sentences embedded."""
    from streams.respond.compose import answer_units  # pure text reading, no responder state

    texts = [[u.text for u in answer_units(r["content"])] for r in rows]
    flat = [t for ts in texts for t in ts]
    vecs = np.zeros((0, 0), dtype=np.float32)
    if flat:
        vecs = np.concatenate([np.asarray(v, dtype=np.float32).reshape(len(v), -1)
                               for _, v in passages_in_parts(embedder, flat, part)])
    out, k = [], 0
    for r, ts in zip(rows, texts):
        out.append((embedder.name, ts, vecs[k:k + len(ts)].tobytes(), r["id"], r["content_hash"]))
        k += len(ts)
    with pool.connection() as conn, conn.transaction(), conn.cursor() as cur:
        cur.executemany("UPDATE chunks SET sentence_model = %s, sentence_texts = %s, sentence_vectors = %s "
                        "WHERE id = %s::uuid AND content_hash = %s", out)
    return len(flat)


@dataclass
class IndexPlan:
    """What ``apply_index`` will do to a collection for some chunks, decided from Postgres and the
    store as read by ``plan_index``; the embeddings of ``to_embed`` are requested already (``parts``)."""

    collection: str
    embedder: Embedder
    embed_part: int
    to_embed: list[dict] = field(default_factory=list)
    to_patch: list[tuple[str, dict]] = field(default_factory=list)
    gone: list[str] = field(default_factory=list)
    unchanged: int = 0
    used: dict[str, int] = field(default_factory=dict)   # the paid tokens of ``parts`` (``tokens.collect``)
    parts: PassageParts | None = None
    seconds: float = 0.0

    def effects(self) -> dict[str, dict | None]:
        """The store's points after this plan is applied, for the chunks it touches (None: deleted)."""
        out: dict[str, dict | None] = {r["id"]: point_payload(r) for r in self.to_embed}
        out.update(self.to_patch)
        out.update((i, None) for i in self.gone)
        return out

    def close(self) -> None:
        """Drop the embedding requests not started (a plan that will not be applied)."""
        if self.parts is not None:
            self.parts.close()


def plan_index(chunk_ids: Iterable[str], *, pool: ConnectionPool, store: VectorStore, collection: str,
               embedder: Embedder, embed_part: int = 0,
               ahead_of: dict[str, dict | None] | None = None) -> IndexPlan:
    """Read the chunks and their points and decide (``index_chunks``); the embeddings are
    requested at once. ``ahead_of``: the effects of a plan not applied yet that will be applied
    before this one (``IndexPlan.effects``): this plan is decided against the store as it will be
    then, so a batch can be read and its parts requested while the batch before it finishes."""
    t0 = time.perf_counter()
    plan = IndexPlan(collection=collection, embedder=embedder, embed_part=embed_part)
    ids = list(dict.fromkeys(str(i) for i in chunk_ids))
    if not ids:
        return plan
    rows = _load_chunks(pool, ids)
    live = [rows[i] for i in ids if i in rows and rows[i]["deleted_at"] is None]
    plan.gone = [i for i in ids if i not in rows or rows[i]["deleted_at"] is not None]
    existing = store.retrieve(collection, [r["id"] for r in live])
    for i, payload in (ahead_of or {}).items():
        if payload is None:
            existing.pop(i, None)
        else:
            existing[i] = payload
    for r in live:
        want = point_payload(r)
        have = existing.get(r["id"])
        if have is None or have.get("content_hash") != want["content_hash"]:
            plan.to_embed.append(r)
        elif have != want:
            plan.to_patch.append((r["id"], want))
        else:
            plan.unchanged += 1
    if plan.to_embed:
        plan.used = embedding_tokens.collect()
        plan.parts = PassageParts(embedder, [r["content"] for r in plan.to_embed], embed_part)
    plan.seconds = time.perf_counter() - t0
    return plan


def apply_index(plan: IndexPlan, *, pool: ConnectionPool, store: VectorStore, prices: PriceTable | None = None,
                sentences: bool = False) -> IndexStats:
    """Carry out ``plan``: upsert the embedded points as their parts arrive (and, with ``sentences``,
    their sentence vectors, ``store_sentences``), put paid tokens in the ledger, patch payloads,
    delete the points of tombstoned or missing chunks."""
    t0 = time.perf_counter()
    stats = IndexStats(unchanged=plan.unchanged)
    try:
        if plan.to_embed:
            stats.embed_seconds, stats.upsert_seconds = embed_and_upsert(
                plan.to_embed, embedder=plan.embedder, store=store, collection=plan.collection,
                part=plan.embed_part, parts=plan.parts)
            if sentences:
                s0 = time.perf_counter()
                stats.sentences = store_sentences(pool, plan.to_embed, plan.embedder, plan.embed_part)
                stats.sentence_seconds = time.perf_counter() - s0
            ledger_embeddings(pool, plan.to_embed, plan.used, prices)
            stats.embedded = len(plan.to_embed)
    finally:
        plan.close()
    if plan.to_patch:
        store.set_payloads(plan.collection, plan.to_patch)
        stats.payload_updates = len(plan.to_patch)
    if plan.gone:
        store.delete(plan.collection, plan.gone)
        stats.deleted = len(plan.gone)
    stats.seconds = plan.seconds + time.perf_counter() - t0
    return stats


def index_chunks(chunk_ids: Iterable[str], *, pool: ConnectionPool, store: VectorStore,
                 collection: str, embedder: Embedder, prices: PriceTable | None = None,
                 embed_part: int = 0, sentences: bool = False) -> IndexStats:
    """Make the collection match Postgres for these chunks (idempotent).

    Live chunk → upsert its point (embedding only when the point's
    content_hash differs) and, with ``sentences``, its sentence vectors (``store_sentences``);
    tombstoned or missing chunk → delete its point.
    ``embed_part``: texts per embedding-service request (``embed_and_upsert``; 0: one request).
    In two steps, ``plan_index`` then ``apply_index``.
    """
    plan = plan_index(chunk_ids, pool=pool, store=store, collection=collection, embedder=embedder,
                      embed_part=embed_part)
    return apply_index(plan, pool=pool, store=store, prices=prices, sentences=sentences)


# ------------------------------------------------------------------ search
@dataclass(frozen=True)
class ChunkHit:
    chunk_id: str
    document_id: str
    seq: int
    distance: float
    content: str
    source: str = ""


def search_chunks(query: str | None, *, account_id: int, pool: ConnectionPool, store: VectorStore,
                  domain: str, embedder_for: EmbedderFor, limit: int = 3,
                  max_distance: float | None = None, query_vector=None,
                  query_model: str | None = None) -> list[ChunkHit]:
    """Top chunks of one account by cosine distance; texts come from Postgres.

    A point whose chunk is no longer live in Postgres is dropped (Postgres wins).
    """
    min_score = None if max_distance is None else 1.0 - max_distance
    hits: list[Hit] = []
    for attempt in range(3):
        target = store.alias_target(chunk_alias(domain))
        if target is None:
            return []
        model = model_of(target)
        # a caller's query vector is reused only when it comes from the collection's model
        vec = query_vector if query_vector is not None and query_model == model else None
        if vec is None:
            vec = embedder_for(model).embed_queries([query])[0]
        try:
            hits = store.search(target, vec, account_id=account_id, limit=limit, min_score=min_score)
            break
        except Exception:
            # the alias moved and the old collection was dropped mid-query (reindex): re-resolve
            if attempt == 2 or store.alias_target(chunk_alias(domain)) == target:
                raise
    if not hits:
        return []
    with pool.connection() as conn, autocommit(conn):   # a read: no BEGIN/COMMIT round trips
        rows = conn.execute(
            "SELECT c.id::text, c.content, c.document_id::text, c.seq, d.source FROM chunks c "
            "JOIN documents d ON d.id = c.document_id "
            "WHERE c.id = ANY(%s::uuid[]) AND c.account_id = %s AND c.deleted_at IS NULL",
            ([h.id for h in hits], account_id)).fetchall()
    by_id = {r["id"]: r for r in rows}
    return [ChunkHit(h.id, by_id[h.id]["document_id"], by_id[h.id]["seq"], round(h.distance, 6),
                     by_id[h.id]["content"], by_id[h.id]["source"]) for h in hits if h.id in by_id]


# ----------------------------------------------------------------- reindex
@dataclass
class ReindexResult:
    old_collection: str | None
    new_collection: str
    backfilled: int
    caught_up: int
    verified: bool
    seconds: float


_CATCHUP_MARGIN = timedelta(seconds=5)   # covers transactions in flight at the swap


def _live_chunk_batches(pool: ConnectionPool, batch: int, since=None):
    last = "00000000-0000-0000-0000-000000000000"
    while True:
        with pool.connection() as conn:
            rows = conn.execute(
                "SELECT id::text, account_id, document_id::text, seq, content, content_hash "
                "FROM chunks WHERE deleted_at IS NULL AND id > %s::uuid "
                + ("AND updated_at >= %s " if since else "") +
                "ORDER BY id LIMIT %s",
                (last, since, batch) if since else (last, batch)).fetchall()
        if not rows:
            return
        yield rows
        last = rows[-1]["id"]


def _count_live(pool: ConnectionPool) -> int:
    with pool.connection() as conn:
        return conn.execute("SELECT count(*) AS n FROM chunks WHERE deleted_at IS NULL").fetchone()["n"]


def reindex(*, pool: ConnectionPool, store: VectorStore, domain: str, embedder: Embedder,
            batch: int = 128, progress: Callable[[int, int], None] | None = None,
            prices: PriceTable | None = None, embed_part: int = 0, sentences: bool = False) -> ReindexResult:
    """Blue-green re-embed: build a new collection from Postgres, verify, swap the alias, drop the old.
    With ``sentences`` every chunk's sentence vectors are re-derived with ``embedder`` too.

    Searches keep using the old collection until the atomic alias swap.
    Changes committed during the backfill are caught up before the swap.
    """
    t0 = time.perf_counter()
    alias = chunk_alias(domain)
    old = store.alias_target(alias)
    existing = set(store.list_collections())
    version = 1
    new = chunk_collection(domain, embedder.name, version)
    while new in existing or new == old:
        version += 1
        new = chunk_collection(domain, embedder.name, version)
    store.create_collection(new, embedder.dim)
    with pool.connection() as conn:
        started = conn.execute("SELECT now() AS t").fetchone()["t"]
    total = _count_live(pool)
    done = 0
    for rows in _live_chunk_batches(pool, batch):
        used = embedding_tokens.collect()
        embed_and_upsert(rows, embedder=embedder, store=store, collection=new, part=embed_part)
        if sentences:
            store_sentences(pool, rows, embedder, embed_part)
        ledger_embeddings(pool, rows, used, prices)
        done += len(rows)
        if progress:
            progress(done, total)
    # catch up with changes committed while we were backfilling (re-read state)
    with pool.connection() as conn:
        changed = [r["id"] for r in conn.execute(
            "SELECT id::text FROM chunks WHERE updated_at >= %s",
            (started - _CATCHUP_MARGIN,)).fetchall()]
    caught = index_chunks(changed, pool=pool, store=store, collection=new, embedder=embedder, prices=prices,
                          embed_part=embed_part, sentences=sentences)
    # drop points of chunks that are not live any more
    live_ids = set()
    for rows in _live_chunk_batches(pool, 5000):
        live_ids.update(r["id"] for r in rows)
    extra = [pid for pid in store.scroll(new) if pid not in live_ids]
    store.delete(new, extra)
    n_points = store.count(new)
    verified = n_points == len(live_ids)
    if not verified:
        store.drop_collection(new)
        raise RuntimeError(f"reindex verification failed: {n_points} points in {new} but "
                           f"{len(live_ids)} live chunks in Postgres; alias left on {old}")
    with pool.connection() as conn:
        swap_started = conn.execute("SELECT now() AS t").fetchone()["t"]
    store.point_alias(alias, new)
    # The indexer may have written a change to the old collection between the
    # first catch-up and the swap: re-read everything touched since then.
    with pool.connection() as conn:
        late = [r["id"] for r in conn.execute(
            "SELECT id::text FROM chunks WHERE updated_at >= %s", (swap_started - _CATCHUP_MARGIN,)
        ).fetchall()]
    late_stats = index_chunks(late, pool=pool, store=store, collection=new, embedder=embedder, prices=prices,
                              embed_part=embed_part, sentences=sentences)
    if old and old != new:
        store.drop_collection(old)
    return ReindexResult(old, new, done, caught.embedded + caught.deleted + late_stats.embedded
                         + late_stats.deleted, verified, time.perf_counter() - t0)


# --------------------------------------------------------------- reconcile
@dataclass
class Drift:
    account_id: int
    missing: list[str] = field(default_factory=list)   # live in Postgres, no point
    stale: list[str] = field(default_factory=list)     # point with another content_hash
    extra: list[str] = field(default_factory=list)     # point without a live chunk
    requeued: int = 0

    @property
    def total(self) -> int:
        return len(self.missing) + len(self.stale) + len(self.extra)


def reconcile(*, pool: ConnectionPool, store: VectorStore, domain: str, account_id: int | None = None,
              repair: bool = False, settled_before: datetime | None = None) -> list[Drift]:
    """Compare Postgres and the vector store per account; with ``repair``,
    re-enqueue an outbox event for every drifted chunk (the indexer fixes it).
    ``settled_before``: ignore chunks changed after it (still in flight)."""
    target = store.alias_target(chunk_alias(domain))
    with pool.connection() as conn:
        q = ("SELECT id::text, account_id, document_id::text, content_hash FROM chunks "
             "WHERE deleted_at IS NULL" + (" AND account_id = %s" if account_id else ""))
        live = conn.execute(q, (account_id,) if account_id else ()).fetchall()
        recent: set[str] = set()
        if settled_before is not None:
            recent = {r["id"] for r in conn.execute("SELECT id::text FROM chunks WHERE updated_at >= %s",
                                                    (settled_before,)).fetchall()}
    live = [r for r in live if r["id"] not in recent]
    points = store.scroll(target, account_id) if target else {}
    points = {pid: p for pid, p in points.items() if pid not in recent}
    drifts: dict[int, Drift] = {}

    def d(acc: int) -> Drift:
        return drifts.setdefault(acc, Drift(acc))

    live_by_id = {r["id"]: r for r in live}
    for r in live:
        p = points.get(r["id"])
        if p is None:
            d(r["account_id"]).missing.append(r["id"])
        elif p.get("content_hash") != r["content_hash"].strip() or p.get("account_id") != r["account_id"]:
            d(r["account_id"]).stale.append(r["id"])
    for pid, p in points.items():
        if pid not in live_by_id:
            d(int(p.get("account_id", 0))).extra.append(pid)
    out = sorted((x for x in drifts.values() if x.total), key=lambda x: x.account_id)
    if repair and out:
        with PostgresUnitOfWork(pool) as uow:  # only events: the projection is re-driven from Postgres
            for x in out:
                for cid in x.missing + x.stale:
                    r = live_by_id[cid]
                    uow.add_event("chunk.upserted", ChunkEvent(
                        chunk_id=cid, account_id=x.account_id, document_id=r["document_id"]))
                for cid in x.extra:
                    doc = points[cid].get("document_id") or "00000000-0000-0000-0000-000000000000"
                    uow.add_event("chunk.deleted", ChunkEvent(chunk_id=cid, account_id=x.account_id, document_id=doc))
                x.requeued = x.total
            uow.commit()
    return out
