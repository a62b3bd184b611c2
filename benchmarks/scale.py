"""make bench-scale: how recall, knowledge search and reply latency grow with the data.

Facts at BENCH_SCALE_FACTS (default 10k, 100k, 1M: 10 per contact on average, a
few heavy contacts with 50) and knowledge chunks at BENCH_SCALE_CHUNKS (default
2k, 50k), bulk-loaded straight into Postgres with ``INSERT … SELECT
generate_series`` (vectors of a few thousand distinct texts embedded once and
reused) and into the local Qdrant store — not through the pipeline. At each
size it measures, in this process and with the responder's own code:

  * recall: embed the message + fetch the contact's live facts + score
    (``PostgresMemoryRecall`` + ``score_memories``), random contacts and heavy ones;
  * knowledge search: embed + vector search + chunk texts from Postgres;
  * reply: the whole ``respond()`` (store, context, recall, knowledge, offline
    composer, save) without Kafka;

and prints p50/p95/p99, the growth ratio between sizes (target: recall p95 at
1M ≤ 1.5 × at 10k), the recall query's plan (``EXPLAIN ANALYZE``), the indexes,
and Postgres/Qdrant disk per million facts/chunks, next to the bare query
embedding measured in the same run and the machine's load average.
"""

from __future__ import annotations

import asyncio
import os
import random
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

from rich.console import Console

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.report import pct, print_table  # noqa: E402
from benchmarks.responder import QUESTIONS, SUITES, TYPES, chunk_texts, fact_texts  # noqa: E402
from tests.harness import Env  # noqa: E402

FACT_SIZES = [int(x) for x in os.environ.get("BENCH_SCALE_FACTS", "10000,100000,1000000").split(",") if x]
CHUNK_SIZES = [int(x) for x in os.environ.get("BENCH_SCALE_CHUNKS", "2000,50000").split(",") if x]
QUERIES = int(os.environ.get("BENCH_SCALE_QUERIES", "400"))
REPLIES = int(os.environ.get("BENCH_SCALE_REPLIES", "150"))
HNSW_MAX = int(os.environ.get("BENCH_SCALE_HNSW_MAX", "100000"))
DISTINCT = 3000
ACCOUNTS = 10
HEAVY_FACTS = 50
console = Console()


def _questions(n: int, seed: int) -> list[str]:
    rnd = random.Random(seed)
    return [rnd.choice(QUESTIONS).format(s=rnd.choice(SUITES)) for _ in range(n)]


class ScaleBench:
    def __init__(self, env: Env):
        from streams.bootstrap import Container
        from streams.store.db import make_pool

        self.env = env
        self.c = Container(env.settings)
        self.pool = make_pool(env.settings, min_size=1, max_size=8, name="bench-scale")
        self.mem = self.c.memory_embedder
        self.contacts: list[tuple[int, int]] = []        # (contact, n facts)
        self.next_contact = 1
        self.facts = 0
        self.chunks = 0
        self.chunk_vecs = None
        self.sentence_rows = None   # the composer's sentence vectors of the 2,000 chunk texts (_store_sentences)

    # ------------------------------------------------------------ loading
    def templates(self) -> None:
        import numpy as np
        from pgvector.psycopg import register_vector

        texts = fact_texts(DISTINCT)
        vecs = self.mem.embed_passages(texts)
        with self.env.conn() as conn:
            register_vector(conn)
            conn.execute("INSERT INTO accounts (id, settings) SELECT g, '{\"memory_recall_enabled\": true}' "
                         "FROM generate_series(1, %s) g ON CONFLICT DO NOTHING", (ACCOUNTS,))
            conn.execute("CREATE TABLE bench_fact_templates (k int PRIMARY KEY, memory_type text, scope text, "
                         "content text, embedding vector)")
            with conn.cursor().copy("COPY bench_fact_templates FROM STDIN WITH (FORMAT BINARY)") as cp:
                cp.set_types(["int4", "text", "text", "text", "vector"])
                for k, (t, v) in enumerate(zip(texts, vecs)):
                    mt = TYPES[k % len(TYPES)]
                    scope = "unit" if mt in ("padrao_comportamental", "reclamacao", "feedback_positivo") else "global"
                    cp.write_row((k, mt, scope, t, np.asarray(v, dtype=np.float32)))
            # the HNSW index is rebuilt after each load (row by row it would dominate the load)
            conn.execute("DROP INDEX IF EXISTS contact_memories_embedding_512")

    def grow_facts(self, target: int) -> float:
        n = target - self.facts
        if n <= 0:
            return 0.0
        heavy = max(2, n // 10 // 500)               # ~0.2 % of the new contacts hold 50 facts
        heavy_rows = heavy * HEAVY_FACTS
        normal = max(1, (n - heavy_rows) // 10)
        base = self.next_contact
        t0 = time.perf_counter()
        with self.env.conn() as conn:
            # the HNSW index is rebuilt after the load (``hnsw``): kept during it, every row
            # of the 900k-row step to 1M went into it one by one (> 25 min here)
            conn.execute("DROP INDEX IF EXISTS contact_memories_embedding_512")
            conn.execute(
                """INSERT INTO contact_memories (account_id, contact_id, memory_type, memory_key, content,
                       evidence, confidence, scope, source_unit_id, embedding, embedding_model)
                   SELECT (s.ct %% 10) + 1, s.ct, t.memory_type, 'slot', t.content, t.content, 0.8, t.scope,
                          (s.g %% 3) + 1, t.embedding, %(model)s
                   FROM (SELECT g, CASE WHEN g < %(heavy_rows)s THEN %(base)s + g / %(per_heavy)s
                                        ELSE %(base)s + %(heavy)s + (g - %(heavy_rows)s) %% %(normal)s END AS ct
                         FROM generate_series(0::bigint, %(n)s - 1) g) s
                   JOIN bench_fact_templates t ON t.k = (s.g * 7919 + s.ct) %% %(distinct)s""",
                dict(model=self.mem.name, heavy_rows=heavy_rows, base=base, per_heavy=HEAVY_FACTS, heavy=heavy,
                     normal=normal, n=n, distinct=DISTINCT))
            conn.execute("ANALYZE contact_memories")
        self.contacts += [(base + i, HEAVY_FACTS) for i in range(heavy)]
        self.contacts += [(base + heavy + i, 0) for i in range(normal)]
        self.next_contact = base + heavy + normal
        self.facts = target
        return time.perf_counter() - t0

    def hnsw(self) -> tuple[float | None, int | None]:
        """Rebuild the 512-d HNSW index (sizes ≤ BENCH_SCALE_HNSW_MAX); its build time and size."""
        with self.env.conn() as conn:
            conn.execute("DROP INDEX IF EXISTS contact_memories_embedding_512")
            if self.facts > HNSW_MAX:
                return None, None
            t0 = time.perf_counter()
            conn.execute("SET maintenance_work_mem = '512MB'")
            conn.execute("CREATE INDEX contact_memories_embedding_512 ON contact_memories USING hnsw "
                         "((embedding::vector(512)) vector_cosine_ops) WHERE vector_dims(embedding) = 512")
            dt = time.perf_counter() - t0
            size = conn.execute("SELECT pg_relation_size('contact_memories_embedding_512') AS b").fetchone()["b"]
        return dt, size

    def grow_chunks(self, target: int) -> float:
        import numpy as np

        from streams.ingest.knowledge import ensure_chunk_collection, point_payload

        n = target - self.chunks
        if n <= 0:
            return 0.0
        texts = chunk_texts(2000)
        emb = self.c.embedder
        if self.chunk_vecs is None:
            self.chunk_vecs = np.asarray(emb.embed_passages(texts), dtype=np.float32)
        store = self.c.vector_store
        collection = ensure_chunk_collection(store, self.env.settings.vector_domain, emb)
        t0 = time.perf_counter()
        per_doc = 20
        with self.env.conn() as conn:
            conn.execute("CREATE TABLE IF NOT EXISTS bench_chunk_templates (k int PRIMARY KEY, content text)")
            conn.execute("TRUNCATE bench_chunk_templates")
            with conn.cursor().copy("COPY bench_chunk_templates FROM STDIN") as cp:
                for k, t in enumerate(texts):
                    cp.write_row((k, t))
            docs = n // per_doc
            conn.execute(
                """INSERT INTO documents (id, account_id, source, title)
                   SELECT gen_random_uuid(), (d %% 10) + 1, 'scale-' || (%(first)s + d), 'doc'
                   FROM generate_series(0, %(docs)s - 1) d""", dict(first=self.chunks // per_doc, docs=docs))
            rows = conn.execute(
                """WITH d AS (SELECT id, account_id, row_number() OVER (ORDER BY source) AS r FROM documents
                              WHERE source LIKE 'scale-%%' AND NOT EXISTS (SELECT 1 FROM chunks c
                                                                           WHERE c.document_id = documents.id))
                   INSERT INTO chunks (id, account_id, document_id, seq, content, content_hash)
                   SELECT gen_random_uuid(), d.account_id, d.id, s, t.content, md5(t.content) || md5(t.content)
                   FROM d CROSS JOIN generate_series(0, %(per_doc)s - 1) s
                   JOIN bench_chunk_templates t ON t.k = ((d.r * %(per_doc)s + s) %% 2000)
                   RETURNING id::text, account_id, document_id::text, seq, content_hash""",
                dict(per_doc=per_doc)).fetchall()
        import hashlib

        k_of = {hashlib.md5(t.encode()).hexdigest() * 2: k for k, t in enumerate(texts)}
        for i in range(0, len(rows), 1000):
            part = rows[i:i + 1000]
            store.upsert(collection, [r["id"] for r in part], self.chunk_vecs[[k_of[r["content_hash"].strip()] for r in part]],
                         [point_payload(r) for r in part])
        if self.env.settings.chunk_sentence_vectors:   # as the indexer stores them (store_sentences)
            self._store_sentences(texts, emb)
        self.chunks += len(rows)
        return time.perf_counter() - t0

    def _store_sentences(self, texts: list[str], emb) -> None:
        """The composer's sentence vectors of the chunks, as the indexer stores them: embedded once
        per distinct text here (the chunks repeat 2,000 texts), written to every chunk holding it."""
        import hashlib

        import numpy as np

        from streams.respond.compose import answer_units

        if self.sentence_rows is None:
            units = [[u.text for u in answer_units(t)] for t in texts]
            flat = [u for us in units for u in us]
            vecs = np.asarray(emb.embed_passages(flat), dtype=np.float32) if flat else None
            self.sentence_rows, k = [], 0
            for t, us in zip(texts, units):
                self.sentence_rows.append((emb.name, us, vecs[k:k + len(us)].tobytes() if us else b"",
                                           hashlib.md5(t.encode()).hexdigest() * 2))
                k += len(us)
        with self.env.conn() as conn, conn.cursor() as cur:
            cur.executemany("UPDATE chunks SET sentence_model = %s, sentence_texts = %s, sentence_vectors = %s "
                            "WHERE content_hash = %s AND sentence_model IS NULL", self.sentence_rows)

    # ---------------------------------------------------------- measuring
    def recall(self, n: int, heavy_only: bool = False) -> tuple[list[float], list[float]]:
        from streams.respond.adapters import PostgresMemoryRecall
        from streams.respond.recall import score_memories

        rnd = random.Random(5 + heavy_only)
        pool = [c for c, k in self.contacts if k == HEAVY_FACTS] if heavy_only else [c for c, _ in self.contacts]
        port = PostgresMemoryRecall(self.pool, self.mem.name)
        total, fetch = [], []
        for q in _questions(n, 6):
            contact = rnd.choice(pool)
            t0 = time.perf_counter()
            vec = self.mem.embed_queries([q])[0]
            t1 = time.perf_counter()
            facts = port.live_facts(contact % 10 + 1, contact, timeout_s=0.5)
            t2 = time.perf_counter()
            score_memories(vec, facts, rnd.randint(1, 3))
            t3 = time.perf_counter()
            total.append((t3 - t0) * 1000)
            fetch.append((t2 - t1) * 1000)
        return total, fetch

    def knowledge(self, n: int) -> list[float]:
        from streams.ingest.knowledge import search_chunks

        rnd = random.Random(8)
        out = []
        emb = self.c.embedder
        for q in _questions(n, 9):
            t0 = time.perf_counter()
            vec = emb.embed_queries([q])[0]
            search_chunks(None, account_id=rnd.randint(1, ACCOUNTS), pool=self.pool, store=self.c.vector_store,
                          domain=self.env.settings.vector_domain, embedder_for=self.c.embedder_for, limit=12,
                          query_vector=vec.tolist(), query_model=emb.name)
            out.append((time.perf_counter() - t0) * 1000)
        return out

    def replies(self, n: int, tag: str) -> list[float]:
        from schemas.events import InboundMessage
        from streams.respond.handler import respond
        deps = self.c.responder()
        rnd = random.Random(11)

        async def run(tag: str, n: int) -> list[float]:
            out = []
            for i, q in enumerate(_questions(n, 12)):
                contact = rnd.choice(self.contacts)[0]
                account = contact % 10 + 1
                m = InboundMessage(message_id=f"{tag}-{i}", account_id=account, inbox_id=account,
                                   conversation_id=f"{tag}-{contact}-{i}", contact_id=contact,
                                   unit_id=rnd.randint(1, 3), channel="bench", text=q,
                                   sent_at=datetime.now(timezone.utc))
                t0 = time.perf_counter()
                if await respond(m, deps) is None:
                    raise RuntimeError(f"message {m.message_id} taken for a duplicate")
                out.append((time.perf_counter() - t0) * 1000)
            return out

        asyncio.run(run(f"{tag}w", 20))  # warm-up: the first replies fill the composer's cache
        return asyncio.run(run(tag, n))

    def explain(self) -> str:
        contact = next(c for c, k in self.contacts if k == HEAVY_FACTS)
        with self.env.conn() as conn:
            rows = conn.execute(
                """EXPLAIN (ANALYZE, BUFFERS, COSTS OFF, TIMING OFF, SUMMARY OFF)
                   SELECT id, memory_type, content, confidence, scope, source_unit_id, embedding, weight
                   FROM contact_memories
                   WHERE account_id = %s AND contact_id = %s AND deleted_at IS NULL AND superseded_at IS NULL
                     AND embedding IS NOT NULL AND embedding_model = %s
                     AND (expires_at IS NULL OR expires_at >= now() OR memory_type = ANY(%s))""",
                (contact % 10 + 1, contact, self.mem.name, ["preferencia"])).fetchall()
        return "\n".join("    " + r["QUERY PLAN"] for r in rows)

    def disk(self) -> dict[str, int]:
        with self.env.conn() as conn:
            row = conn.execute(
                "SELECT pg_relation_size('contact_memories') + pg_relation_size(reltoastrelid) AS facts_heap, "
                "pg_indexes_size('contact_memories') AS facts_idx, pg_total_relation_size('chunks') AS chunks "
                "FROM pg_class WHERE relname = 'contact_memories'").fetchone()
            idx = conn.execute("SELECT indexrelname AS name, pg_relation_size(indexrelid) AS b FROM "
                               "pg_stat_user_indexes WHERE relname = 'contact_memories' ORDER BY 2 DESC").fetchall()
        qdir = Path(self.env.settings.qdrant_path)
        q = sum(f.stat().st_size for f in qdir.rglob("*") if f.is_file()) if qdir.exists() else 0
        return {**row, "qdrant": q, "indexes": {r["name"]: r["b"] for r in idx}}


def _mb(b: float) -> str:
    return f"{b / 1e6:,.1f} MB" if b < 1e9 else f"{b / 1e9:,.2f} GB"


def main() -> int:
    tmp = Path(tempfile.mkdtemp(prefix="memoria-bench-scale-"))
    env = Env(tmp, "bench_scale")
    t_all = time.perf_counter()
    fact_rows, chunk_rows, plans = [], [], []
    try:
        b = ScaleBench(env)
        samples = _questions(120, 1)
        b.mem.embed_queries(samples[:3])
        bare = []
        for s in samples:
            t = time.perf_counter()
            b.mem.embed_queries([s])
            bare.append((time.perf_counter() - t) * 1000)
        console.print(f"bare query embedding ({b.mem.name}): p50 {pct(bare, 50):.2f} ms, p95 {pct(bare, 95):.2f} ms "
                      f"(load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores)")
        b.templates()
        b.grow_chunks(CHUNK_SIZES[0])
        for size in FACT_SIZES:
            load_s = b.grow_facts(size)
            hnsw_s, hnsw_b = b.hnsw()
            console.print(f"{size:,} facts over {len(b.contacts):,} contacts loaded in {load_s:.1f}s"
                          + (f"; HNSW rebuilt in {hnsw_s:.1f}s" if hnsw_s is not None else
                             f"; HNSW not rebuilt (> BENCH_SCALE_HNSW_MAX={HNSW_MAX})"))
            load0 = os.getloadavg()[0]
            total, fetch = b.recall(QUERIES)
            heavy, _ = b.recall(max(50, QUERIES // 4), heavy_only=True)
            replies = b.replies(REPLIES, f"r{size}")
            d = b.disk()
            fact_rows.append(dict(size=size, recall=total, fetch=fetch, heavy=heavy, replies=replies, disk=d,
                                  hnsw_s=hnsw_s, hnsw_b=hnsw_b, load=(load0 + os.getloadavg()[0]) / 2))
            console.print("  " + "; ".join(f"{k} p50/p95/p99 {pct(v, 50):.2f}/{pct(v, 95):.2f}/{pct(v, 99):.2f} ms"
                                           for k, v in (("recall", total), ("fetch", fetch), ("heavy", heavy),
                                                        ("respond()", replies)))
                          + f"; load {fact_rows[-1]['load']:.1f}")
            plans.append((size, b.explain(), d["indexes"]))
        for size in CHUNK_SIZES:
            load_s = b.grow_chunks(size)
            console.print(f"{size:,} chunks loaded in {load_s:.1f}s")
            load0 = os.getloadavg()[0]
            k = b.knowledge(QUERIES)
            replies = b.replies(REPLIES, f"k{size}")
            chunk_rows.append(dict(size=size, search=k, replies=replies, disk=b.disk(),
                                   load=(load0 + os.getloadavg()[0]) / 2))
            console.print(f"  knowledge search p50/p95/p99 {pct(k, 50):.2f}/{pct(k, 95):.2f}/{pct(k, 99):.2f} ms; "
                          f"respond() {pct(replies, 50):.2f}/{pct(replies, 95):.2f}/{pct(replies, 99):.2f} ms; "
                          f"load {chunk_rows[-1]['load']:.1f}")
        b.pool.close()
        b.c.close()
    finally:
        env.close()

    def trio(xs):
        return f"{pct(xs, 50):.2f}", f"{pct(xs, 95):.2f}", f"{pct(xs, 99):.2f}"

    rows = []
    for r in fact_rows:
        rows.append((f"{r['size']:,} facts", "recall (embed + fetch + score)", *trio(r["recall"]), f"{r['load']:.1f}"))
        rows.append(("", "  of which the Postgres fetch", *trio(r["fetch"]), ""))
        rows.append(("", "recall, heavy contacts (50 facts)", *trio(r["heavy"]), ""))
        rows.append(("", "respond() (no Kafka)", *trio(r["replies"]), ""))
    for r in chunk_rows:
        rows.append((f"{r['size']:,} chunks", "knowledge search (embed + vectors + texts)", *trio(r["search"]),
                     f"{r['load']:.1f}"))
        rows.append(("", "respond() (no Kafka)", *trio(r["replies"]), ""))
    print_table(f"memoria bench-scale (bare query embedding p50 {pct(bare, 50):.2f} / p95 {pct(bare, 95):.2f} ms)",
                ("size", "measure", "p50 ms", "p95 ms", "p99 ms", "load avg"), rows, console)

    growth = []
    for key, label in (("recall", "recall p95"), ("fetch", "fetch p95"), ("heavy", "heavy recall p95"),
                       ("replies", "respond() p95")):
        for a, c in zip(fact_rows, fact_rows[1:]):
            growth.append((label, f"{a['size']:,} → {c['size']:,} facts",
                           f"{pct(c[key], 95) / pct(a[key], 95):.2f}×"))
        if len(fact_rows) > 2:
            a, c = fact_rows[0], fact_rows[-1]
            ratio = pct(c[key], 95) / pct(a[key], 95)
            target = " (target ≤ 1.5: " + ("OK)" if ratio <= 1.5 else "MISSED)") if key == "recall" else ""
            growth.append((label, f"{a['size']:,} → {c['size']:,} facts", f"{ratio:.2f}×{target}"))
    for key, label in (("search", "knowledge search p95"), ("replies", "respond() p95")):
        for a, c in zip(chunk_rows, chunk_rows[1:]):
            growth.append((label, f"{a['size']:,} → {c['size']:,} chunks",
                           f"{pct(c[key], 95) / pct(a[key], 95):.2f}×"))
    print_table("growth between sizes (p95 ratio)", ("measure", "sizes", "ratio"), growth, console)

    disk = []
    for r in fact_rows:
        d = r["disk"]
        hn = f"{_mb(r['hnsw_b'])} (built in {r['hnsw_s']:.1f}s)" if r["hnsw_b"] else "not rebuilt"
        disk.append((f"{r['size']:,} facts", _mb(d["facts_heap"]), _mb(d["facts_idx"]), hn,
                     _mb((d["facts_heap"] + d["facts_idx"]) / r["size"] * 1e6)))
    print_table("Postgres disk, contact_memories (heap+TOAST, all indexes, of which HNSW 512)",
                ("size", "heap", "indexes", "HNSW 512", "per million facts"), disk, console)
    cd = []
    for r in chunk_rows:
        d = r["disk"]
        cd.append((f"{r['size']:,} chunks", _mb(d["chunks"]), _mb(d["chunks"] / r["size"] * 1e6),
                   _mb(d["qdrant"]), _mb(d["qdrant"] / r["size"] * 1e6)))
    print_table("knowledge disk (Postgres chunks table with indexes; Qdrant local store on disk)",
                ("size", "Postgres", "per million", "Qdrant", "per million"), cd, console)
    for size, plan, idx in plans:
        console.print(f"[bold]recall query plan at {size:,} facts[/bold] (a heavy contact; indexes: "
                      + ", ".join(f"{k} {_mb(v)}" for k, v in idx.items()) + ")")
        console.print(plan, markup=False, highlight=False)
    console.print(f"bench-scale finished in {time.perf_counter() - t_all:.0f}s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
