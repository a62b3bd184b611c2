"""make bench-memory: memory learning throughput and lag on the embedded stack.

Prints, from one run (offline providers: rules extraction, rules
contradiction, the configured memory embedder):
  * pipeline conversations/s through extract → embed → consolidate →
    contradiction, 20 generated messages per conversation, real Postgres;
  * raw embedding throughput on the same facts (same batching: one call per
    conversation) and the pipeline/raw ratio;
  * p50/p95 resolve → recallable lag through the relay + learn worker.
"""

from __future__ import annotations

import os
import random
import sys
import tempfile
import time
from pathlib import Path

from rich.console import Console

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.report import pct, print_table  # noqa: E402
from tests.harness import Env, wait_until  # noqa: E402

N_CONVERSATIONS = int(os.environ.get("BENCH_CONVERSATIONS", "300"))
N_CONTACTS = int(os.environ.get("BENCH_CONTACTS", "60"))
LAG_CONVERSATIONS = int(os.environ.get("BENCH_LAG_CONVERSATIONS", "60"))
LAG_RATE = float(os.environ.get("BENCH_LAG_RATE", "5"))  # resolves per second
MESSAGES = 20
console = Console()

SUITES = ["Hidro", "Master", "Stilo", "Luxo", "Alpha", "Prime"]
FOODS = ["camarão", "amendoim", "lactose", "glúten", "frutos do mar"]
NAMES = ["Camila", "Bruno", "Juliana", "Rafael", "Marina", "Lucas"]
COMPANIES = ["Petrobras", "Vale", "Itaú", "Ambev", "Natura"]
FACTS = [
    lambda r: f"É sempre a {r.choice(SUITES)} que eu peço, a gente gosta muito dela.",
    lambda r: f"Agora prefiro a suíte {r.choice(SUITES)}, não quero mais a {r.choice(SUITES)}.",
    lambda r: f"Sou alérgico a {r.choice(FOODS)}.",
    lambda r: f"Eu e minha namorada, a {r.choice(NAMES)}.",
    lambda r: f"A gente chega sempre lá pelas {r.choice([20, 21, 22, 23])}h.",
    lambda r: f"Trabalho na {r.choice(COMPANIES)} e venho a trabalho às vezes.",
    lambda r: f"Meu aniversário é dia {r.randint(1, 28)} de {r.choice(['março', 'maio', 'julho', 'outubro'])}.",
]
FILLER_CONTACT = ["Boa noite!", "Tem vaga hoje?", "Quanto fica o pernoite?", "Aceita pix?", "Show, obrigado!",
                  "Qual o horário do check-in?", "Tem garagem privativa?", "Beleza", "Pode ser", "Blz, valeu"]
FILLER_AGENT = ["Boa noite! Temos sim.", "O pernoite fica R$ 240.", "Aceitamos pix e cartão.",
                "Posso reservar para você?", "Perfeito, anotado!", "O check-in é a partir das 14h."]


def conversation(r: random.Random) -> list[tuple[str, str]]:
    """20 messages, alternating contact/agent; 2–3 contact messages carry facts."""
    fact_slots = set(r.sample(range(0, MESSAGES, 2), r.randint(2, 3)))
    out = []
    for i in range(MESSAGES):
        if i % 2:
            out.append(("agent", r.choice(FILLER_AGENT)))
        else:
            out.append(("contact", r.choice(FACTS)(r) if i in fact_slots else r.choice(FILLER_CONTACT)))
    return out



def seed(env, r: random.Random, n: int, account: int, contacts: list[int]) -> list[int]:
    from tests.learn import seed as S

    return [S.conversation(env, account, r.choice(contacts), conversation(r)) for _ in range(n)]


def main() -> int:
    from streams.bootstrap import Container
    from streams.learn.extract import extract_facts
    from streams.learn.learn import learn_conversation
    from streams.learn.store import load_conversation, load_transcript
    from streams.learn.triggers import resolve_conversation
    from tests.learn import seed as S

    tmp = Path(tempfile.mkdtemp(prefix="memoria-bench-memory-"))
    env = Env(tmp, "benchmem")
    rows = []
    r = random.Random(7)
    container = Container(env.settings)
    try:
        account = S.account(env)
        contacts = [S.contact(env, account) for _ in range(N_CONTACTS)]
        ids = seed(env, r, N_CONVERSATIONS, account, contacts)
        ports = container.learn_ports()
        embedder = ports.embedder
        embedder.embed_passages(["aquecimento"])  # warm-up, like a running worker

        # ---- pipeline, in process: extract → embed → consolidate → contradiction
        t0 = time.perf_counter()
        outcomes = [learn_conversation(ports, cid) for cid in ids]
        elapsed = time.perf_counter() - t0
        facts = sum(o.facts for o in outcomes)
        created = sum(len(o.created) for o in outcomes)
        reinforced = sum(len(o.reinforced) for o in outcomes)
        superseded = sum(len(o.superseded) for o in outcomes)
        conv_rate = len(ids) / elapsed
        rows.append((f"pipeline, {len(ids)} conversations × {MESSAGES} messages",
                     f"{conv_rate:,.1f} conv/s", f"{facts / elapsed:,.0f} facts/s",
                     f"{facts} facts: {created} new, {reinforced} reinforced, {superseded} superseded"))

        # ---- raw embedding of the same facts, batched per conversation like the pipeline
        with container.pool.connection() as conn:
            transcripts = [load_transcript(conn, load_conversation(conn, cid)) for cid in ids]
        batches = [[f.content for f in extract_facts(t, ports.extractor).facts] for t in transcripts]
        t = time.perf_counter()
        for b in batches:
            if b:
                embedder.embed_passages(b)
        raw_elapsed = time.perf_counter() - t
        raw_rate = facts / raw_elapsed
        rows.append((f"raw embedding ({embedder.name}), same {facts} facts", f"{raw_rate:,.0f} facts/s",
                     f"pipeline = {facts / elapsed / raw_rate:.2f} × raw",
                     f"embedding is {raw_elapsed / elapsed:.0%} of pipeline time"))

        # ---- resolve → recallable lag through the worker (relay + learn)
        env.start_worker("relay,learn")
        lag_ids = seed(env, r, LAG_CONVERSATIONS, account, contacts)
        # warm the worker (model load, group join) with one conversation first
        with env.conn() as conn:
            resolve_conversation(conn, lag_ids[0])
        wait_until(lambda: env.q("SELECT 1 FROM conversation_extractions WHERE conversation_id = %s "
                                 "AND status = 'done'", lag_ids[0]), 120, what="worker warm")
        pending: dict[int, float] = {}
        lags: list[float] = []

        def poll():
            if not pending:
                return
            done = env.q("SELECT conversation_id FROM conversation_extractions WHERE status = 'done' "
                         "AND conversation_id = ANY(%s)", list(pending))
            now = time.perf_counter()
            for row in done:
                lags.append(now - pending.pop(row["conversation_id"]))

        with env.conn() as conn:
            start = time.perf_counter()
            for i, cid in enumerate(lag_ids[1:]):
                due = start + i / LAG_RATE
                while time.perf_counter() < due:
                    poll()
                    time.sleep(0.01)
                resolve_conversation(conn, cid)
                pending[cid] = time.perf_counter()
        deadline = time.time() + 120
        while pending and time.time() < deadline:
            poll()
            time.sleep(0.01)
        rows.append((f"resolve → recallable at {LAG_RATE:g} conv/s ({len(lags)} conversations)",
                     f"p50 {pct(lags, 50) * 1000:,.0f} ms", f"p95 {pct(lags, 95) * 1000:,.0f} ms",
                     f"max {max(lags) * 1000:,.0f} ms; {len(pending)} not done"))
    finally:
        container.close()
        env.close()
    print_table("memoria bench-memory (offline providers)", ("measure", "value", "ratio / detail", "note"),
                rows, console)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
