"""``memoria demo``: the main job, end to end, on whatever stack the settings point at.

1. seed the sample accounts of examples/ (units, inboxes; extraction and recall flags on),
2. ingest the sample knowledge base and wait until it is searchable,
3. replay the sample conversations (stored, then resolved) and wait for the
   worker to learn from them,
4. show the facts learned for one returning customer, including a superseded one,
5. send a new inbound message through Kafka and show the reply, which uses a
   recalled fact and a knowledge chunk.

It needs a running worker with every role (``make demo`` starts one).
"""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from datetime import datetime, timezone

import typer
from rich.console import Console
from rich.panel import Panel
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn
from rich.table import Table

from streams.learn.fixtures import DEV_DIR, KNOWLEDGE_FILE
from streams.settings import get_settings

ACCOUNTS = {  # the sample businesses of examples/README.md: account -> (name, units, inbox)
    301: ("Motel Recanto Aurora", {3101: "Centro", 3102: "Rodovia", 3103: "Praia"}, 3001),
    302: ("Forno da Vila Pizzaria", {3201: "Bairro Alto", 3202: "Vila Nova"}, 3002),
    303: ("PetAmigo Clínica Veterinária e Banho & Tosa", {3301: "Jardim América", 3302: "Centro"}, 3003),
}
# A returning customer of the motel chain (three conversations in examples/dev).
HERO = {"account": 301, "inbox": 3001, "contact": 7003, "unit": 3102}
QUESTION = "Boa noite! Sábado de madrugada passo aí de novo, quanto fica o pernoite na Coral?"
console = Console()


class DemoError(RuntimeError):
    pass


def _wait(what: str, fn, timeout: float = 180.0, interval: float = 0.5):
    deadline = time.time() + timeout
    while time.time() < deadline:
        v = fn()
        if v:
            return v
        time.sleep(interval)
    raise DemoError(f"timed out after {timeout:.0f}s waiting for {what}; is the worker running? (make up)")


def seed(conn) -> None:
    for acc, (name, units, inbox) in ACCOUNTS.items():
        conn.execute("INSERT INTO accounts (id, name, settings) VALUES (%s, %s, %s::jsonb) ON CONFLICT (id) DO UPDATE "
                     "SET settings = accounts.settings || EXCLUDED.settings",
                     (acc, name, json.dumps({"memory_extraction_enabled": True, "memory_recall_enabled": True})))
        for uid, uname in units.items():
            conn.execute("INSERT INTO units (id, account_id, name) VALUES (%s, %s, %s) ON CONFLICT DO NOTHING",
                         (uid, acc, uname))
        conn.execute("INSERT INTO inboxes (id, account_id, name) VALUES (%s, %s, 'WhatsApp') ON CONFLICT DO NOTHING",
                     (inbox, acc))
    conn.commit()


def ingest_knowledge(conn, settings) -> int:
    from streams.ingest.documents import document_body, write_document

    docs = [json.loads(x) for x in KNOWLEDGE_FILE.read_text(encoding="utf-8").splitlines() if x.strip()]
    touched = 0
    for d in docs:
        r = write_document(conn, account_id=d["account_id"], source=f"examples/{d['document_id']}",
                           title=d["title"], text=document_body(d["title"], d["text"]),
                           chunk_size=settings.chunk_size, chunk_overlap=settings.chunk_overlap)
        touched += r.inserted + r.moved + r.tombstoned
    return len(docs)


def replay_conversations(conn) -> list[int]:
    from streams.learn.triggers import resolve_conversation

    convs = [json.loads(x) for x in (DEV_DIR / "conversations.jsonl").read_text(encoding="utf-8").splitlines() if x.strip()]
    ids = []
    with Progress(TextColumn("  {task.description}"), BarColumn(), MofNCompleteColumn(), console=console) as p:
        task = p.add_task("storing and resolving conversations", total=len(convs))
        for c in convs:
            conn.execute("INSERT INTO contacts (id, account_id, name) VALUES (%s, %s, '') ON CONFLICT DO NOTHING",
                         (c["contact_id"], c["account_id"]))
            row = conn.execute("SELECT id FROM conversations WHERE external_id = %s", (c["conversation_id"],)).fetchone()
            if row is None:
                last = max(datetime.fromisoformat(m["sent_at"]) for m in c["messages"])
                row = conn.execute(
                    "INSERT INTO conversations (external_id, account_id, inbox_id, contact_id, unit_id, last_message_at) "
                    "VALUES (%s, %s, %s, %s, %s, %s) RETURNING id",
                    (c["conversation_id"], c["account_id"], c["inbox_id"], c["contact_id"], c["unit_id"], last)).fetchone()
                with conn.cursor() as cur:
                    cur.executemany(
                        "INSERT INTO messages (conversation_id, account_id, role, text, sent_at, channel_message_id) "
                        "VALUES (%s, %s, %s, %s, %s, %s) ON CONFLICT (channel_message_id) DO NOTHING",
                        [(row["id"], c["account_id"], m["role"], m["text"], m["sent_at"],
                          f"{c['conversation_id']}-{i}") for i, m in enumerate(c["messages"])])
            conn.commit()
            resolve_conversation(conn, row["id"])
            conn.commit()
            ids.append(row["id"])
            p.advance(task)
    return ids


def _facts_table(rows) -> Table:
    t = Table(show_lines=False)
    for col in ("id", "type", "content", "scope", "unit", "status"):
        t.add_column(col)
    for r in rows:
        status = "[yellow]superseded by #%s[/yellow]" % r["superseded_by_id"] if r["superseded_at"] else "[green]live[/green]"
        t.add_row(str(r["id"]), r["memory_type"], r["content"], r["scope"], str(r["source_unit_id"] or "-"), status)
    return t


def run_demo() -> dict:
    from schemas.events import InboundMessage
    from streams.bootstrap import Container
    from streams.ingest.knowledge import chunk_alias
    from streams.respond.cli import ask_once

    s = get_settings()
    c = Container(s)
    t0 = time.time()
    summary: dict = {}
    try:
        with c.pool.connection() as conn:
            console.rule("[bold]1. accounts")
            seed(conn)
            console.print(f"  {len(ACCOUNTS)} accounts with memory extraction and recall enabled")

            console.rule("[bold]2. knowledge base")
            n_docs = ingest_knowledge(conn, s)
            live = conn.execute("SELECT count(*) AS n FROM chunks WHERE deleted_at IS NULL").fetchone()["n"]
            console.print(f"  {n_docs} documents → {live} live chunks in Postgres; waiting for the worker to index them")
        store = c.vector_store
        alias = chunk_alias(s.vector_domain)

        def indexed():
            target = store.alias_target(alias)
            return target and store.count(target) >= live and target

        target = _wait("the chunks to be indexed", indexed)
        console.print(f"  {store.count(target)} points searchable in [cyan]{target}[/cyan]")
        summary["chunks"] = live

        console.rule("[bold]3. conversations → memory")
        with c.pool.connection() as conn:
            ids = replay_conversations(conn)

        def learnt():
            with c.pool.connection() as conn:
                n = conn.execute("SELECT count(*) AS n FROM conversation_extractions WHERE conversation_id = ANY(%s) "
                                 "AND status IN ('done', 'discarded', 'skipped')", (ids,)).fetchone()["n"]
                emb = conn.execute("SELECT count(*) AS n FROM contact_memories WHERE deleted_at IS NULL AND "
                                   "superseded_at IS NULL AND embedding IS NULL").fetchone()["n"]
            return n == len(ids) and emb == 0

        _wait("the worker to learn from the conversations", learnt)
        with c.pool.connection() as conn:
            stats = conn.execute(
                "SELECT count(*) FILTER (WHERE superseded_at IS NULL AND deleted_at IS NULL) AS live, "
                "count(*) FILTER (WHERE superseded_at IS NOT NULL) AS superseded FROM contact_memories").fetchone()
            hero = conn.execute(
                "SELECT * FROM contact_memories WHERE account_id = %s AND contact_id = %s ORDER BY id",
                (HERO["account"], HERO["contact"])).fetchall()
        console.print(f"  {len(ids)} conversations extracted: {stats['live']} live facts, "
                      f"{stats['superseded']} superseded")
        console.print(f"\n  facts of customer {HERO['contact']} (account {HERO['account']}), "
                      f"learnt over their conversations:")
        console.print(_facts_table(hero))
        summary.update(conversations=len(ids), live_facts=stats["live"], superseded=stats["superseded"])

        console.rule("[bold]4. a new message")
        msg = InboundMessage(message_id=f"demo-{uuid.uuid4()}", account_id=HERO["account"], inbox_id=HERO["inbox"],
                             conversation_id=f"demo-{uuid.uuid4().hex[:8]}", contact_id=HERO["contact"],
                             unit_id=HERO["unit"], channel="whatsapp", text=QUESTION,
                             sent_at=datetime.now(timezone.utc))
        console.print(f"  [bold]customer:[/bold] {QUESTION}")
        reply = asyncio.run(ask_once(s, msg, timeout=60))
        if reply is None:
            raise DemoError("no reply within 60s; is the worker running with the respond role?")
        with c.pool.connection() as conn:
            mems = conn.execute("SELECT id, memory_type, content FROM contact_memories WHERE id = ANY(%s)",
                                (reply["memory_ids"],)).fetchall()
            chunks = conn.execute("SELECT c.id::text, d.title, c.content FROM chunks c JOIN documents d "
                                  "ON d.id = c.document_id WHERE c.id = ANY(%s::uuid[])",
                                  (reply["chunk_ids"],)).fetchall()
        console.print(Panel(reply["text"], title="reply", subtitle=f"intent={reply['intent']} "
                            f"strategy={reply['strategy']} degraded={reply['degraded'] or 'none'}"))
        console.print("  memories injected:")
        for m in mems:
            console.print(f"    #{m['id']} [{m['memory_type']}] {m['content']}")
        console.print("  knowledge chunks:")
        for ch in chunks:
            console.print(f"    {ch['title']}: {ch['content'][:110]}…")
        summary.update(reply=reply["text"], memories=len(mems), chunk_hits=len(chunks),
                       seconds=round(time.time() - t0, 1))
    finally:
        c.close()
    console.rule("[bold]summary")
    console.print(f"  {summary['chunks']} chunks indexed, {summary['conversations']} conversations learnt "
                  f"({summary['live_facts']} live facts, {summary['superseded']} superseded), one reply with "
                  f"{summary['memories']} memories and {summary['chunk_hits']} chunks, in {summary['seconds']}s")
    return summary


def register(app: typer.Typer) -> None:
    @app.command("demo")
    def demo() -> None:
        """Run the main job end to end against the running stack and worker (see `make demo`)."""
        try:
            run_demo()
        except DemoError as e:
            console.print(f"[red]demo failed:[/red] {e}")
            raise typer.Exit(1)
