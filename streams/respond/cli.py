"""``memoria ask``: one message through the real topics, and its reply."""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from datetime import datetime, timezone
from typing import Optional

import typer
from rich.console import Console

console = Console(stderr=True)


async def ask_once(settings, msg, timeout: float = 30.0, *, extra_groups: str = "ask") -> dict | None:
    """Produce ``msg`` to the inbound topic and wait for the reply whose
    in_reply_to is its message_id. Reads the outbound topic from the
    beginning with a manual assignment and filters (Tansu's end offsets and
    ``latest`` are unreliable, docs/architecture.md §7)."""
    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer

    from streams.kafka.topics import INBOUND, OUTBOUND, assign_from_beginning, qualified

    out_topic = qualified(settings, OUTBOUND)
    from streams.bootstrap import consumer_config, producer_config

    consumer = AIOKafkaConsumer(**consumer_config(settings, None, "memoria-respond-cli"))  # assigned, commits nothing
    producer = AIOKafkaProducer(**producer_config(settings, "memoria-respond-cli"))
    await consumer.start()
    await producer.start()
    try:
        try:
            await assign_from_beginning(consumer, out_topic)
        except LookupError as e:
            raise RuntimeError(str(e)) from None
        await producer.send_and_wait(qualified(settings, INBOUND), key=msg.conversation_id.encode(),
                                     value=msg.model_dump_json().encode())
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            batch = await consumer.getmany(timeout_ms=200)
            for recs in batch.values():
                for r in recs:
                    try:
                        reply = json.loads(r.value)
                    except (TypeError, ValueError):
                        continue
                    if reply.get("in_reply_to") == msg.message_id and reply.get("account_id") == msg.account_id:
                        return reply
        return None
    finally:
        await producer.stop()
        await consumer.stop()


def _details(settings, reply: dict) -> tuple[list[str], list[str]]:
    """Memory contents and chunk texts for display (read from Postgres)."""
    from streams.store.db import connect

    mems, chunks = [], []
    with connect(settings) as conn:
        if reply["memory_ids"]:
            rows = conn.execute("SELECT id, memory_type, content FROM contact_memories WHERE id = ANY(%s) "
                                "AND account_id = %s", (reply["memory_ids"], reply["account_id"])).fetchall()
            by = {r["id"]: r for r in rows}
            mems = [f"#{i} [{by[i]['memory_type']}] {by[i]['content']}" for i in reply["memory_ids"] if i in by]
        if reply["chunk_ids"]:
            rows = conn.execute("SELECT id::text, content FROM chunks WHERE id = ANY(%s::uuid[]) "
                                "AND account_id = %s", (reply["chunk_ids"], reply["account_id"])).fetchall()
            by = {r["id"]: r for r in rows}
            chunks = [f"{i}: {by[i]['content'][:200]}" for i in reply["chunk_ids"] if i in by]
    return mems, chunks


def register(app: typer.Typer) -> None:
    @app.command()
    def ask(
        text: str = typer.Argument(..., help="the customer's message"),
        account: int = typer.Option(..., "--account"),
        inbox: int = typer.Option(..., "--inbox"),
        contact: int = typer.Option(..., "--contact"),
        conversation: Optional[str] = typer.Option(None, "--conversation", help="default: a new one"),
        unit: Optional[int] = typer.Option(None, "--unit"),
        channel: str = typer.Option("cli", "--channel"),
        timeout: float = typer.Option(30.0, "--timeout", help="seconds to wait for the reply"),
        as_json: bool = typer.Option(False, "--json", help="print the OutboundReply as one JSON object"),
    ) -> None:
        """Send one message through the real topics and print the worker's reply."""
        from schemas.events import InboundMessage
        from streams.settings import get_settings

        s = get_settings()
        msg = InboundMessage(message_id=f"ask-{uuid.uuid4()}", account_id=account, inbox_id=inbox,
                             conversation_id=conversation or f"ask-{uuid.uuid4()}", contact_id=contact,
                             unit_id=unit, channel=channel, text=text, sent_at=datetime.now(timezone.utc))
        t0 = time.perf_counter()
        reply = asyncio.run(ask_once(s, msg, timeout))
        if reply is None:
            console.print(f"[red]error:[/red] no reply within {timeout:.0f}s: is a worker with the "
                          "`respond` role running (`memoria worker --roles respond`)?")
            raise typer.Exit(3)
        if as_json:
            print(json.dumps(reply, ensure_ascii=False))
            return
        mems, chunks = _details(s, reply)
        print(reply["text"])
        print(f"\nintent={reply['intent']} strategy={reply['strategy']} "
                      f"conversation={reply['conversation_id']} ms={1000 * (time.perf_counter() - t0):.0f}"
                      + (f" degraded={','.join(reply['degraded'])}" if reply["degraded"] else ""))
        print("memories:" + ("" if mems else " none"))
        for m in mems:
            print(f"  {m}")
        print("chunks:" + ("" if chunks else " none"))
        for c in chunks:
            print(f"  {c}")
