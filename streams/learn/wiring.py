"""Faust wiring of the ``learn`` role: a few lines per agent or timer.

- agent ``learn`` on ``outbox.event.conversation`` → ``ConversationEventHandler``;
- agent ``lifecycle`` on ``channel.conversation.events`` → ``LifecycleEventHandler``
  (the channel resolves or reopens a conversation);
- leader-only timers: retry failed extractions, re-embed facts left without
  an embedding, refresh the active-facts gauge.
"""

from __future__ import annotations

import asyncio
import logging
import threading

from streams import metrics
from streams.kafka.topics import CONVERSATION_EVENTS, outbox_topic

log = logging.getLogger(__name__)

RETRY_EVERY = 60.0
REEMBED_EVERY = 60.0
GAUGE_EVERY = 30.0


def register(app, settings, container, roles, *, batch_agent, state) -> None:
    if "learn" not in roles:
        return
    from streams.learn.embed import reembed_missing
    from streams.learn.learn import ConversationEventHandler, retry_failed
    from streams.learn.store import count_live

    lock = threading.Lock()
    holder: dict = {}

    def ports():
        with lock:
            if "ports" not in holder:
                holder["ports"] = container.learn_ports()
            return holder["ports"]

    batch_agent(outbox_topic("conversation"), lambda: ConversationEventHandler(ports()), name="learn")

    def make_lifecycle():
        from streams.learn.lifecycle import LifecycleEventHandler

        return LifecycleEventHandler(container.pool)

    batch_agent(CONVERSATION_EVENTS, make_lifecycle, name="lifecycle")

    async def guarded(name, fn):
        try:
            await asyncio.to_thread(fn)
        except Exception:  # a timer must never kill the worker; the next tick retries
            log.exception("learn timer %s failed", name)

    @app.timer(RETRY_EVERY, on_leader=True)
    async def learn_retry_failed() -> None:
        await guarded("retry_failed", lambda: retry_failed(ports()))

    @app.timer(REEMBED_EVERY, on_leader=True)
    async def learn_reembed() -> None:
        await guarded("reembed", lambda: reembed_missing(container.pool, ports().embedder))

    @app.timer(GAUGE_EVERY, on_leader=True)
    async def learn_active_facts() -> None:
        def refresh():
            with container.pool.connection() as conn:
                metrics.ACTIVE_FACTS.set(count_live(conn))

        await guarded("active_facts", refresh)
