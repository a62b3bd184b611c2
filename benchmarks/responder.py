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
same run, and the machine's load average. Then it steps the rate up to find the
worker's sustained capacity (the highest rate whose inbound→reply p95 stays under
the target). Targets: recall p95 ≤ 2 × bare embedding p95 + 5 ms; inbound→reply
p95 ≤ 150 ms (BENCH_TARGET_MS); capacity ≥ 50 msg/s. BENCH_EMBEDDING_SERVICE=1
runs the worker against ``memoria embedding-service``.
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

from benchmarks import service as bench_service  # noqa: E402
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


async def drive(settings, contacts_per_account: int, rate: float = RATE, seconds: float = SECONDS,
                tag: str = "bench", drain_s: float = 30.0) -> tuple[list[float], int]:
    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer

    from schemas.events import InboundMessage
    from streams.kafka.topics import INBOUND, OUTBOUND, assign_from_beginning, qualified

    out_topic = qualified(settings, OUTBOUND)
    cons = AIOKafkaConsumer(bootstrap_servers=settings.kafka_bootstrap_servers, enable_auto_commit=False,
                            auto_offset_reset="earliest", fetch_max_wait_ms=10)  # the client must not add its own long-poll wait
    prod = AIOKafkaProducer(bootstrap_servers=settings.kafka_bootstrap_servers, enable_idempotence=False)
    await cons.start()
    await prod.start()
    sent: dict[str, float] = {}
    lat: list[float] = []
    try:
        await assign_from_beginning(cons, out_topic)
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
        n = int(rate * seconds)
        t0 = time.perf_counter()
        for i in range(n):
            await asyncio.sleep(max(0.0, t0 + i / rate - time.perf_counter()))
            account = rnd.randint(1, N_ACCOUNTS)
            contact = (account - 1) * contacts_per_account + rnd.randint(1, contacts_per_account)
            q = rnd.choice(QUESTIONS).format(s=rnd.choice(SUITES))
            m = InboundMessage(message_id=f"{tag}-{i}", account_id=account, inbox_id=account,
                               conversation_id=f"{tag}-{contact}-{i // 50}", contact_id=contact,
                               unit_id=rnd.randint(1, 3), channel="bench", text=q,
                               sent_at=datetime.now(timezone.utc))
            sent[m.message_id] = time.perf_counter()
            await prod.send(qualified(settings, INBOUND), key=m.conversation_id.encode(),
                            value=m.model_dump_json().encode())
        deadline = time.perf_counter() + drain_s
        while sent and time.perf_counter() < deadline:
            await asyncio.sleep(0.1)
        stop.set()
        await reader
        return lat, len(sent)
    finally:
        await prod.stop()
        await cons.stop()


def cpu_seconds(pids) -> float:
    """User + system CPU seconds of these processes so far (Linux /proc)."""
    tick = os.sysconf("SC_CLK_TCK")
    total = 0.0
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            total += (int(fields[11]) + int(fields[12])) / tick
        except (OSError, IndexError, ValueError):
            pass
    return total


def processed(env: Env) -> float:
    from streams.kafka.topics import INBOUND, qualified

    key = f'memoria_events_processed_total{{topic="{qualified(env.settings, INBOUND)}"}}'
    return env.metrics().get(key, 0.0)


def capacity(env: Env, contacts_per_account: int, target_ms: float) -> tuple[float, list[tuple]]:
    """Sustained capacity: step the rate up (BENCH_CAPACITY_RATES, BENCH_CAPACITY_SECONDS each)
    until inbound → reply p95 exceeds the target or replies go missing; the last rate that
    held is the worker's capacity."""
    rates = [float(r) for r in os.environ.get("BENCH_CAPACITY_RATES", "30,40,50,65,80,100").split(",") if r]
    secs = float(os.environ.get("BENCH_CAPACITY_SECONDS", "15"))
    best, steps = 0.0, []
    for k, rate in enumerate(rates):
        load0 = os.getloadavg()[0]
        lat, lost = asyncio.run(drive(env.settings, contacts_per_account, rate, secs, tag=f"cap{k}",
                                      drain_s=10))
        ms = [x * 1000 for x in lat]
        p95 = pct(ms, 95)
        ok = bool(ms) and p95 <= target_ms and lost <= 0.01 * rate * secs
        steps.append((rate, len(ms), pct(ms, 50), p95, lost, (load0 + os.getloadavg()[0]) / 2, ok))
        if not ok:
            break
        best = rate
        time.sleep(2)  # let the queue settle between steps
    return best, steps


def main() -> int:
    from streams.bootstrap import Container

    tmp = Path(tempfile.mkdtemp(prefix="memoria-bench-responder-"))
    env = Env(tmp, "bench_resp")
    env.env["MEMORIA_QDRANT_PATH"] = ":memory:"  # the local store's disk mode is ~70 points/s (docs/architecture.md §7)
    # BENCH_KNOWLEDGE=use: chunks embedded with USE too (one embedding per message, see evaluate_answers)
    if os.environ.get("BENCH_KNOWLEDGE") == "use":
        env.env.update(MEMORIA_EMBEDDING_PROVIDER="use", MEMORIA_EMBEDDING_MODEL="use-multilingual-v3")
    # BENCH_EMBEDDING_SERVICE=1: the worker embeds through `memoria embedding-service` (as `make up` runs it)
    use_service = bench_service.wanted()
    worker_env: dict[str, str] = {}
    service = None
    target_ms = float(os.environ.get("BENCH_TARGET_MS", "150"))
    rows, cap_steps, best = [], [], 0.0
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
        if use_service:
            service, worker_env["MEMORIA_EMBEDDING_SERVICE_URL"] = bench_service.start(env, tmp)
        console.print(f"  {n_chunks} chunks written in {chunks_s:.1f}s; starting the worker"
                      f"{' (embedding service)' if use_service else ''} ...")
        env.start_worker("relay,ingest,respond", extra_env=worker_env)
        t = time.perf_counter()
        wait_until(lambda: env.metrics().get("memoria_chunks_embedded_total", 0) >= n_chunks, 900,
                   what="chunks indexed")
        console.print(f"  {n_chunks} chunks indexed in {time.perf_counter() - t:.1f}s")
        # warm-up
        asyncio.run(_warm(env))
        log_before = len(env.worker_log())
        console.print(f"sending {RATE:.0f} msg/s for {SECONDS:.0f}s ... (load average {os.getloadavg()[0]:.1f})")
        load0 = os.getloadavg()[0]
        pids = [p.pid for p in env.workers] + (bench_service.pids(service, worker_env["MEMORIA_EMBEDDING_SERVICE_URL"])
                                               if service is not None else [])
        cpu0, done0 = cpu_seconds(pids), processed(env)
        lat, lost = asyncio.run(drive(env.settings, N_CONTACTS // N_ACCOUNTS))
        cpu1, done1 = cpu_seconds(pids), processed(env)
        load_run = (load0 + os.getloadavg()[0]) / 2
        cpu_ms = (cpu1 - cpu0) * 1000 / max(1.0, done1 - done0)
        log = env.worker_log()[log_before:]
        recall = [float(x) for x in re.findall(r"reply conversation_id=bench-\S+ .*? recall_ms=([\d.]+)", log)]
        handler = [float(x) for x in re.findall(r"reply conversation_id=bench-\S+ .*? ms=([\d.]+)", log)]
        degraded = len(re.findall(r"recall timeout", log))
        lat_ms = [x * 1000 for x in lat]
        b50, b95, b99 = pct(bare, 50), pct(bare, 95), pct(bare, 99)
        rows.append(("bare query embedding (" + mem.name + ")", len(bare), b50, b95, b99, "baseline"))
        r95 = pct(recall, 95)
        rows.append(("recall (embed + fetch + score)", len(recall), pct(recall, 50), r95, pct(recall, 99),
                     f"≤ 2 × {b95:.1f} + 5 = {2 * b95 + 5:.1f} → {'OK' if r95 <= 2 * b95 + 5 else 'MISSED'}"))
        rows.append(("respond() in the worker (no Kafka)", len(handler), pct(handler, 50), pct(handler, 95),
                     pct(handler, 99), "breakdown"))
        l95 = pct(lat_ms, 95)
        rows.append(("inbound → reply (Kafka to Kafka)", len(lat_ms), pct(lat_ms, 50), l95, pct(lat_ms, 99),
                     f"≤ {target_ms:.0f} → {'OK' if l95 <= target_ms else 'MISSED'}"))
        facts = env.q("SELECT count(*) AS n FROM contact_memories")[0]["n"]
        summary = (f"{facts} facts, {n_chunks} chunks, {RATE:.0f} msg/s × {SECONDS:.0f}s; "
                   f"{lost} replies missing; {degraded} recall timeouts; embedding "
                   f"{'through the service' if use_service else 'in the worker'}; "
                   f"load average during the run {load_run:.1f} on {os.cpu_count()} cores\n"
                   f"CPU per message (worker{' + embedding service' if use_service else ''}, "
                   f"{done1 - done0:.0f} messages processed in the window): {cpu_ms:.1f} ms "
                   f"→ {1000 / cpu_ms if cpu_ms else float('nan'):.0f} msg/s per idle core")
        if lost > 0.01 * RATE * SECONDS:
            console.print(f"capacity: below {RATE:.0f} msg/s in this run (replies missing); not stepping up")
            best, cap_steps = 0.0, [(RATE, len(lat_ms), pct(lat_ms, 50), l95, lost, load_run, False)]
        elif os.environ.get("BENCH_CAPACITY", "1") not in ("0", "false"):
            console.print("capacity: stepping the rate up ...")
            best, cap_steps = capacity(env, N_CONTACTS // N_ACCOUNTS, target_ms)
    finally:
        env.close()
        bench_service.stop(service)
    print_table("memoria bench-responder (offline composer)", ("measure", "n", "p50 ms", "p95 ms", "p99 ms", "target"),
                [(r[0], str(r[1]), f"{r[2]:.1f}", f"{r[3]:.1f}", f"{r[4]:.1f}", r[5]) for r in rows], console)
    console.print(summary)
    if cap_steps:
        print_table(f"sustained capacity: inbound → reply p95 ≤ {target_ms:.0f} ms",
                    ("msg/s", "replies", "p50 ms", "p95 ms", "missing", "load avg", "held"),
                    [(f"{r[0]:.0f}", str(r[1]), f"{r[2]:.1f}", f"{r[3]:.1f}", str(r[4]), f"{r[5]:.1f}",
                      "yes" if r[6] else "no") for r in cap_steps], console)
        console.print("sustained capacity of one worker: "
                      + (f"{best:.0f} msg/s" if best else f"below {cap_steps[0][0]:.0f} msg/s") + " (target ≥ 50)")
    return 0


async def _warm(env: Env) -> None:
    from schemas.events import InboundMessage
    from streams.respond.cli import ask_once

    for i in range(3):
        m = InboundMessage(message_id=f"warm-{i}", account_id=1, inbox_id=1, conversation_id=f"warm-{i}",
                           contact_id=1, channel="bench", text="Quanto custa a suíte Luxo?",
                           sent_at=datetime.now(timezone.utc))
        if await ask_once(env.settings, m, 60) is None:
            raise RuntimeError("the worker did not answer the warm-up message")


if __name__ == "__main__":
    raise SystemExit(main())
