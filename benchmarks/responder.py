"""make bench-responder: recall and inbound→reply latency on the embedded stack.

Loads 100k facts over 10k contacts (COPY, vectors computed in batch for a few
thousand distinct fact texts and reused) and 2k knowledge chunks, starts a
worker (relay, ingest, respond; offline composer), then sends a steady 20
messages/s for BENCH_SECONDS (default 60) and prints p50/p95/p99 of

  * recall latency (the worker's own measurement, from its log: embed the
    message + fetch the contact's facts + score, under the 500 ms budget),
  * inbound→reply latency (produce to channel.inbound.messages → the reply
    read back from channel.outbound.replies, as a client sees it),

next to the bare query-embedding time of the memory embedder measured in the
same run. Targets: recall p95 ≤ 2 × bare embedding + 10 ms; inbound→reply
p95 ≤ 250 ms.
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import re
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

from rich.console import Console

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.report import pct, print_table  # noqa: E402
from tests.harness import Env, wait_until  # noqa: E402

N_FACTS = int(os.environ.get("BENCH_FACTS", "100000"))
N_CONTACTS = int(os.environ.get("BENCH_CONTACTS", "10000"))
N_CHUNKS = int(os.environ.get("BENCH_CHUNKS", "2000"))
N_ACCOUNTS = 10
DISTINCT_FACTS = int(os.environ.get("BENCH_DISTINCT_FACTS", "3000"))
RATE = float(os.environ.get("BENCH_RATE", "20"))
SECONDS = float(os.environ.get("BENCH_SECONDS", "60"))
console = Console()

TYPES = ("preferencia", "restricao", "data_comemorativa", "vinculo_social", "contexto_pessoal",
         "padrao_comportamental", "reclamacao", "feedback_positivo", "vinculo_comercial")
THINGS = ("suíte com hidromassagem", "suíte Master", "café da manhã no quarto", "vinho tinto seco",
          "quarto no térreo", "travesseiro de pena", "check-in tardio", "estacionamento coberto",
          "decoração de aniversário", "pagamento via Pix", "quarto silencioso", "cerveja artesanal",
          "vista para a serra", "cama king", "late checkout", "jantar vegetariano", "frigobar abastecido")
SUITES = ("Standard", "Luxo", "Hidro", "Master", "Stilo", "Premium", "Família", "Executiva")
QUESTIONS = ("Quanto custa o pernoite na suíte {s}?", "Vocês aceitam cachorro na suíte {s}?",
             "Qual o horário do check-in da {s}?", "Oi, boa noite!", "Tem hidromassagem na suíte {s}?",
             "Queria reservar a {s} pra sexta, é possível?", "Achei caro, tem desconto na {s}?",
             "Qual a política de cancelamento?", "Perfeito, obrigado!", "Quero ir hoje com minha esposa")


def fact_texts(n: int) -> list[str]:
    rnd = random.Random(1)
    verbs = ("Prefere", "Gosta de", "Pede sempre", "Evita", "Reclamou de", "Elogiou")
    return [f"{rnd.choice(verbs)} {rnd.choice(THINGS)} na unidade {rnd.randint(1, 40)} ({i})" for i in range(n)]


def chunk_texts(n: int) -> list[str]:
    rnd = random.Random(2)
    out = []
    for i in range(n):
        s = SUITES[i % len(SUITES)]
        out.append(f"Suíte {s} ({i}): período de 2 horas R$ {rnd.randint(60, 300)}; pernoite R$ "
                   f"{rnd.randint(150, 600)}. Tem {rnd.choice(THINGS)} e {rnd.choice(THINGS)}. "
                   f"Check-in a partir das {rnd.randint(12, 22)}h. Animais: {rnd.choice(['sim', 'não'])}.")
    return out



def load_facts(env: Env, memory_embedder) -> tuple[float, float]:
    import numpy as np
    from pgvector.psycopg import register_vector

    t0 = time.perf_counter()
    texts = fact_texts(DISTINCT_FACTS)
    vecs = memory_embedder.embed_passages(texts)
    embed_s = time.perf_counter() - t0
    rnd = random.Random(3)
    per_account = N_CONTACTS // N_ACCOUNTS
    t1 = time.perf_counter()
    with env.conn() as conn:
        register_vector(conn)
        conn.execute("INSERT INTO accounts (id, settings) SELECT g, '{\"memory_recall_enabled\": true}' "
                     "FROM generate_series(1, %s) g", (N_ACCOUNTS,))
        # bulk load: the HNSW index is built once afterwards (far faster than row by row)
        conn.execute("DROP INDEX IF EXISTS contact_memories_embedding_512")
        with conn.cursor().copy(
                "COPY contact_memories (account_id, contact_id, memory_type, memory_key, content, evidence, "
                "confidence, scope, source_unit_id, embedding, embedding_model) FROM STDIN WITH (FORMAT BINARY)"
        ) as cp:
            cp.set_types(["int8", "int8", "text", "text", "text", "text", "float8", "text", "int8",
                          "vector", "text"])
            for i in range(N_FACTS):
                contact = i % N_CONTACTS + 1
                account = (contact - 1) // per_account + 1
                k = rnd.randrange(len(texts))
                t = TYPES[k % len(TYPES)]
                unit = rnd.randint(1, 3)
                scope = "unit" if t in ("padrao_comportamental", "reclamacao", "feedback_positivo") else "global"
                cp.write_row((account, contact, t, "slot", texts[k], texts[k], 0.8, scope, unit,
                              np.asarray(vecs[k], dtype=np.float32), memory_embedder.name))
        conn.execute("SET maintenance_work_mem = '512MB'")
        conn.execute("CREATE INDEX contact_memories_embedding_512 ON contact_memories USING hnsw "
                     "((embedding::vector(512)) vector_cosine_ops) WHERE vector_dims(embedding) = 512")
        conn.execute("ANALYZE contact_memories")
    return embed_s, time.perf_counter() - t1


def load_chunks(env: Env) -> float:
    from streams.ingest.documents import write_document

    t0 = time.perf_counter()
    texts = chunk_texts(N_CHUNKS)
    per_doc = 20
    with env.conn() as conn:
        conn.autocommit = False
        for d in range(0, N_CHUNKS, per_doc):
            account = (d // per_doc) % N_ACCOUNTS + 1
            body = "\n\n".join(texts[d:d + per_doc])
            write_document(conn, account_id=account, source=f"bench-{d}", text=body, title=f"doc {d}",
                           chunk_size=260, chunk_overlap=0)
    return time.perf_counter() - t0


async def drive(settings, contacts_per_account: int) -> tuple[list[float], int]:
    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition

    from schemas.events import InboundMessage
    from streams.kafka.topics import INBOUND, OUTBOUND, qualified

    out_topic = qualified(settings, OUTBOUND)
    cons = AIOKafkaConsumer(bootstrap_servers=settings.kafka_bootstrap_servers, enable_auto_commit=False,
                            fetch_max_wait_ms=10)  # the client must not add its own long-poll wait
    prod = AIOKafkaProducer(bootstrap_servers=settings.kafka_bootstrap_servers, enable_idempotence=False)
    await cons.start()
    await prod.start()
    sent: dict[str, float] = {}
    lat: list[float] = []
    try:
        tps = [TopicPartition(out_topic, p) for p in sorted(cons.partitions_for_topic(out_topic) or {0, 1, 2, 3})]
        cons.assign(tps)
        await cons.seek_to_beginning(*tps)
        stop = asyncio.Event()

        async def read():
            while not stop.is_set():
                batch = await cons.getmany(timeout_ms=100)
                now = time.perf_counter()
                for recs in batch.values():
                    for r in recs:
                        mid = json.loads(r.value)["in_reply_to"]
                        if mid in sent:
                            lat.append(now - sent.pop(mid))

        reader = asyncio.create_task(read())
        rnd = random.Random(4)
        n = int(RATE * SECONDS)
        t0 = time.perf_counter()
        for i in range(n):
            await asyncio.sleep(max(0.0, t0 + i / RATE - time.perf_counter()))
            account = rnd.randint(1, N_ACCOUNTS)
            contact = (account - 1) * contacts_per_account + rnd.randint(1, contacts_per_account)
            q = rnd.choice(QUESTIONS).format(s=rnd.choice(SUITES))
            m = InboundMessage(message_id=f"bench-{i}", account_id=account, inbox_id=account,
                               conversation_id=f"bench-{contact}-{i // 50}", contact_id=contact,
                               unit_id=rnd.randint(1, 3), channel="bench", text=q,
                               sent_at=datetime.now(timezone.utc))
            sent[m.message_id] = time.perf_counter()
            await prod.send(qualified(settings, INBOUND), key=m.conversation_id.encode(),
                            value=m.model_dump_json().encode())
        deadline = time.perf_counter() + 30
        while sent and time.perf_counter() < deadline:
            await asyncio.sleep(0.1)
        stop.set()
        await reader
        return lat, len(sent)
    finally:
        await prod.stop()
        await cons.stop()


def main() -> int:
    from streams.bootstrap import Container

    tmp = Path(tempfile.mkdtemp(prefix="memoria-bench-responder-"))
    env = Env(tmp, "bench_resp")
    env.env["MEMORIA_QDRANT_PATH"] = ":memory:"  # the local store's disk mode is ~70 points/s (docs/architecture.md §7)
    # BENCH_KNOWLEDGE=use: chunks embedded with USE too (one embedding per message, see evaluate_answers)
    if os.environ.get("BENCH_KNOWLEDGE") == "use":
        env.env.update(MEMORIA_EMBEDDING_PROVIDER="use", MEMORIA_EMBEDDING_MODEL="use-multilingual-v3")
    rows = []
    try:
        c = Container(env.settings)
        mem = c.memory_embedder
        samples = [q.format(s=s) for q in QUESTIONS for s in SUITES]
        mem.embed_queries(samples[:4])
        bare = []
        for s in samples * 3:
            t = time.perf_counter()
            mem.embed_queries([s])
            bare.append((time.perf_counter() - t) * 1000)
        console.print(f"loading {N_FACTS} facts over {N_CONTACTS} contacts ...")
        embed_s, copy_s = load_facts(env, mem)
        console.print(f"  embedded {DISTINCT_FACTS} distinct texts in {embed_s:.1f}s, COPY + HNSW {copy_s:.1f}s")
        chunks_s = load_chunks(env)
        n_chunks = env.q("SELECT count(*) AS n FROM chunks")[0]["n"]
        console.print(f"  {n_chunks} chunks written in {chunks_s:.1f}s; starting the worker ...")
        env.start_worker("relay,ingest,respond")
        t = time.perf_counter()
        wait_until(lambda: env.metrics().get("memoria_chunks_embedded_total", 0) >= n_chunks, 600,
                   what="chunks indexed")
        console.print(f"  {n_chunks} chunks indexed in {time.perf_counter() - t:.1f}s")
        # warm-up
        asyncio.run(_warm(env))
        log_before = len(env.worker_log())
        console.print(f"sending {RATE:.0f} msg/s for {SECONDS:.0f}s ...")
        lat, lost = asyncio.run(drive(env.settings, N_CONTACTS // N_ACCOUNTS))
        log = env.worker_log()[log_before:]
        recall = [float(x) for x in re.findall(r"recall conversation_id=bench-\S+ .*? ms=([\d.]+)", log)]
        handler = [float(x) for x in re.findall(r"reply conversation_id=bench-\S+ .*? ms=([\d.]+)", log)]
        degraded = len(re.findall(r"recall timeout", log))
        lat_ms = [x * 1000 for x in lat]
        b50, b95, b99 = pct(bare, 50), pct(bare, 95), pct(bare, 99)
        rows.append(("bare query embedding (" + mem.name + ")", len(bare), b50, b95, b99, "baseline"))
        r95 = pct(recall, 95)
        rows.append(("recall (embed + fetch + score)", len(recall), pct(recall, 50), r95, pct(recall, 99),
                     f"≤ {2 * b95 + 10:.1f} → {'OK' if r95 <= 2 * b95 + 10 else 'MISSED'}"))
        rows.append(("respond() in the worker (no Kafka)", len(handler), pct(handler, 50), pct(handler, 95),
                     pct(handler, 99), "breakdown"))
        l95 = pct(lat_ms, 95)
        rows.append(("inbound → reply (Kafka to Kafka)", len(lat_ms), pct(lat_ms, 50), l95, pct(lat_ms, 99),
                     f"≤ 250 → {'OK' if l95 <= 250 else 'MISSED'}"))
        facts = env.q("SELECT count(*) AS n FROM contact_memories")[0]["n"]
        summary = (f"{facts} facts, {n_chunks} chunks, {RATE:.0f} msg/s × {SECONDS:.0f}s; "
                   f"{lost} replies missing; {degraded} recall timeouts")
    finally:
        env.close()
    print_table("memoria bench-responder (offline composer)", ("measure", "n", "p50 ms", "p95 ms", "p99 ms", "target"),
                [(r[0], str(r[1]), f"{r[2]:.1f}", f"{r[3]:.1f}", f"{r[4]:.1f}", r[5]) for r in rows], console)
    console.print(summary)
    return 0


async def _warm(env: Env) -> None:
    from streams.respond.cli import ask_once
    from schemas.events import InboundMessage

    for i in range(3):
        m = InboundMessage(message_id=f"warm-{i}", account_id=1, inbox_id=1, conversation_id=f"warm-{i}",
                           contact_id=1, channel="bench", text="Quanto custa a suíte Luxo?",
                           sent_at=datetime.now(timezone.utc))
        if await ask_once(env.settings, m, 60) is None:
            raise RuntimeError("the worker did not answer the warm-up message")


if __name__ == "__main__":
    raise SystemExit(main())
