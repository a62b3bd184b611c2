"""Every agent's loop (``streams.kafka.agent.consume_in_order``): batches run in order, each acknowledged
only after it ran, and a handler's lookahead (``prepare``) reads the next batch while one runs — one
batch ahead, never more (unit tier: fake events, no Kafka)."""

from __future__ import annotations

import asyncio
import threading
from types import SimpleNamespace

from streams.kafka.agent import consume_in_order


def _event(offset: int):
    return SimpleNamespace(message=SimpleNamespace(topic="t", partition=0, offset=offset, key=b"k",
                                                   value=b"v", headers=()))


async def _batches(log: list, n: int, size: int = 2):
    for b in range(n):
        log.append(("take", b))
        yield [_event(b * size + i) for i in range(size)]


def _offsets(records) -> int:
    return records[0].offset // 2


def test_without_a_lookahead_a_batch_is_taken_only_after_the_one_before_ran_and_was_acknowledged():
    log: list = []

    async def work(records):
        b = _offsets(records)
        log.append(("start", b))
        await asyncio.sleep(0.01)
        log.append(("done", b))

    async def ack(e):
        log.append(("ack", e.message.offset))

    asyncio.run(consume_in_order(_batches(log, 3), work, ack, name="t"))
    assert log == [("take", 0), ("start", 0), ("done", 0), ("ack", 0), ("ack", 1),
                   ("take", 1), ("start", 1), ("done", 1), ("ack", 2), ("ack", 3),
                   ("take", 2), ("start", 2), ("done", 2), ("ack", 4), ("ack", 5)]


def test_the_lookahead_prepares_the_next_batch_while_one_runs_and_effects_and_acks_stay_in_order():
    log: list = []
    mu = threading.Lock()
    prepared = {b: threading.Event() for b in range(4)}

    def prepare(records):
        b = _offsets(records)
        with mu:
            log.append(("prepare", b))
        prepared[b].set()

    async def work(records):
        b = _offsets(records)
        log.append(("start", b))
        if b + 1 < 4:   # a batch finishes only once the next one was prepared: the lookahead overlaps them
            assert await asyncio.to_thread(prepared[b + 1].wait, 5), f"batch {b + 1} not prepared during {b}"
        log.append(("done", b))

    async def ack(e):
        log.append(("ack", e.message.offset))

    asyncio.run(consume_in_order(_batches(log, 4), work, ack, name="t", prepare=prepare))
    starts = [b for k, b in log if k == "start"]
    acks = [o for k, o in log if k == "ack"]
    assert starts == [0, 1, 2, 3] and acks == list(range(8))
    for b in range(4):   # a batch runs after the one before it finished and was acknowledged
        i = log.index(("start", b))
        assert b == 0 or (log.index(("done", b - 1)) < i and log.index(("ack", 2 * b - 1)) < i)
        assert log.index(("done", b)) < log.index(("ack", 2 * b))
    for b in range(2, 4):   # never more than one batch ahead: b is taken after b - 2 has finished
        assert log.index(("take", b)) > log.index(("ack", 2 * (b - 2) + 1))


def test_a_lookahead_that_fails_leaves_the_batch_to_run_as_without_it():
    done: list = []

    def prepare(records):
        raise RuntimeError("lookahead broke")

    async def work(records):
        done.append(_offsets(records))

    async def ack(e):
        pass

    asyncio.run(consume_in_order(_batches([], 3), work, ack, name="t", prepare=prepare))
    assert done == [0, 1, 2]


def test_on_shutdown_the_batches_taken_finish_in_order_and_are_acknowledged():
    log: list = []
    started = asyncio.Event()

    async def forever():
        for b in range(2):
            yield [_event(2 * b), _event(2 * b + 1)]
        await asyncio.Event().wait()   # no more records: the agent waits for the next batch

    async def work(records):
        b = _offsets(records)
        started.set()
        await asyncio.sleep(0.05)
        log.append(("done", b))

    async def ack(e):
        log.append(("ack", e.message.offset))

    async def main():
        task = asyncio.ensure_future(consume_in_order(forever(), work, ack, name="t", prepare=lambda r: None))
        await started.wait()
        task.cancel()   # the worker stops while batch 0 runs and batch 1 was taken
        try:
            await task
        except asyncio.CancelledError:
            pass

    asyncio.run(main())
    assert log == [("done", 0), ("ack", 0), ("ack", 1), ("done", 1), ("ack", 2), ("ack", 3)]
