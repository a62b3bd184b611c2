"""Where a reply's CPU goes: ``respond()`` in this process, no Kafka, one message at a time.

    .venv/bin/python -m benchmarks.profile_respond      # needs the stack (make up --no-worker)

Loads BENCH_FACTS (10k) facts and BENCH_CHUNKS (2k) chunks like ``make bench-scale``,
builds the responder exactly as the worker does (``Container.responder``), warms it up
(BENCH_WARM messages: the composer's caches), then answers BENCH_MESSAGES messages one
after another and prints

  * CPU time per message of this process (user + system, every thread), which does not
    depend on the neighbours' load, and the wall time of ``respond()``;
  * a CPU profile of every thread: every 1 ms, the CPU time each thread used since the
    last look (its own CPU clock) is charged to the stack it is in (``sys._current_frames``);
    the functions that used the most CPU, self and inclusive, in ms per message.

Sampling stands in for py-spy (not installed here); the sampler costs the process some
CPU itself (its own thread is not charged), so take the CPU figure from a run without it
(BENCH_SAMPLE=0).

BENCH_CONCURRENCY=8 answers the messages that many at a time (as the worker does, one
conversation per task, blocking ports in a 32-thread executor) and prints the messages per
second this process answered that way: the threads then share the GIL, which one message
at a time never shows (thread hand-offs, GIL waits). No Kafka: an upper bound of the worker.
"""

from __future__ import annotations

import asyncio
import collections
import os
import random
import sys
import tempfile
import threading
import time
from datetime import datetime, timezone
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.report import pct  # noqa: E402
from benchmarks.responder import QUESTIONS, SUITES  # noqa: E402
from tests.harness import Env  # noqa: E402

FACTS = int(os.environ.get("BENCH_FACTS", "10000"))
CHUNKS = int(os.environ.get("BENCH_CHUNKS", "2000"))
MESSAGES = int(os.environ.get("BENCH_MESSAGES", "400"))
WARM = int(os.environ.get("BENCH_WARM", "300"))
SAMPLE = os.environ.get("BENCH_SAMPLE", "1") not in ("0", "false")
TOP = int(os.environ.get("BENCH_TOP", "40"))
CONCURRENCY = max(1, int(os.environ.get("BENCH_CONCURRENCY", "1")))


class Sampler(threading.Thread):
    """Every ``interval`` s, for every other thread: the CPU time it used since the last
    look (its own clock, ``pthread_getcpuclockid``), charged to the stack it is in now —
    leaf function = self, every function on the stack = inclusive. A thread waiting on a
    socket or a lock uses no CPU and is charged nothing."""

    def __init__(self, interval: float = 0.001):
        super().__init__(daemon=True)
        self.interval = interval
        self.self_cpu: collections.Counter = collections.Counter()
        self.incl_cpu: collections.Counter = collections.Counter()
        self.total = 0.0
        self._last: dict[int, float] = {}
        self._halt = threading.Event()

    def run(self) -> None:
        me = threading.get_ident()
        while not self._halt.is_set():
            for tid, frame in sys._current_frames().items():
                if tid == me:
                    continue
                try:
                    now = time.clock_gettime(time.pthread_getcpuclockid(tid))
                except (OSError, ProcessLookupError):
                    continue
                used = now - self._last.get(tid, now)
                self._last[tid] = now
                if used <= 0:
                    continue
                self.total += used
                self.self_cpu[_where(frame.f_code)] += used
                seen = set()
                f = frame
                while f is not None:
                    w = _where(f.f_code)
                    if w not in seen:
                        seen.add(w)
                        self.incl_cpu[w] += used
                    f = f.f_back
            time.sleep(self.interval)

    def stop(self) -> None:
        self._halt.set()
        self.join()


def _where(code) -> str:
    path = code.co_filename
    for marker in ("site-packages/", "/streams/", "/benchmarks/", "/lib/python3"):
        if marker in path:
            path = path.split(marker, 1)[1]
            break
    return f"{path}:{code.co_name}"


def main() -> int:
    from benchmarks.scale import ScaleBench
    from schemas.events import InboundMessage
    from streams.respond.handler import respond

    tmp = Path(tempfile.mkdtemp(prefix="memoria-profile-respond-"))
    env = Env(tmp, "prof_resp")
    env.env["MEMORIA_QDRANT_PATH"] = ":memory:"
    try:
        b = ScaleBench(env)
        b.templates()
        b.grow_facts(FACTS)
        b.grow_chunks(CHUNKS)
        deps = b.c.responder()
        rnd = random.Random(11)
        questions = [q.format(s=s) for q in QUESTIONS for s in SUITES]

        recalls: list[float] = []   # recall_ms of the measured messages (recall on)

        async def run(tag: str, n: int) -> list[float]:
            from concurrent.futures import ThreadPoolExecutor

            asyncio.get_running_loop().set_default_executor(ThreadPoolExecutor(32))   # as the worker's
            out = []
            todo = iter(range(n))

            async def one_at_a_time():
                for i in todo:
                    contact = rnd.choice(b.contacts)[0]
                    account = contact % 10 + 1
                    m = InboundMessage(message_id=f"{tag}-{i}", account_id=account, inbox_id=account,
                                       conversation_id=f"{tag}-{contact}-{i // 5}", contact_id=contact,
                                       unit_id=rnd.randint(1, 3), channel="bench", text=rnd.choice(questions),
                                       sent_at=datetime.now(timezone.utc))
                    t0 = time.perf_counter()
                    outcome = await respond(m, deps)
                    if outcome is None:
                        raise RuntimeError(f"message {m.message_id} taken for a duplicate")
                    out.append((time.perf_counter() - t0) * 1000)
                    if tag == "prof" and outcome.recall_ms is not None:
                        recalls.append(outcome.recall_ms)

            await asyncio.gather(*(one_at_a_time() for _ in range(CONCURRENCY)))
            return out

        asyncio.run(run("warm", WARM))
        sampler = Sampler() if SAMPLE else None
        if sampler:
            sampler.start()
        load0 = os.getloadavg()[0]
        c0, w0 = time.process_time(), time.perf_counter()
        wall = asyncio.run(run("prof", MESSAGES))
        cpu_ms = (time.process_time() - c0) * 1000 / MESSAGES
        rate = MESSAGES / (time.perf_counter() - w0)
        if sampler:
            sampler.stop()
        print(f"{FACTS} facts, {CHUNKS} chunks, {MESSAGES} messages "
              f"{'one at a time' if CONCURRENCY == 1 else f'{CONCURRENCY} at a time'} (after {WARM} warm-up); "
              f"load average {(load0 + os.getloadavg()[0]) / 2:.1f} on {os.cpu_count()} cores"
              f"{'; sampling on' if sampler else ''}")
        print(f"CPU per message (this process, all threads): {cpu_ms:.2f} ms; respond() wall p50 "
              f"{pct(wall, 50):.1f} / p95 {pct(wall, 95):.1f} ms; {rate:.1f} messages/s")
        if recalls:
            print(f"recall (embed + fetch + score, as the reply logs it) p50 {pct(recalls, 50):.1f} / p95 "
                  f"{pct(recalls, 95):.1f} ms over {len(recalls)} messages")
        if sampler:
            n = max(1e-9, sampler.total)
            print(f"\n{sampler.total * 1000 / MESSAGES:.2f} ms of thread CPU per message sampled; top {TOP} self:")
            for w, k in sampler.self_cpu.most_common(TOP):
                print(f"  {100 * k / n:5.1f}%  {k * 1000 / MESSAGES:6.3f} ms  {w}")
            print(f"\ntop {TOP} inclusive:")
            for w, k in sampler.incl_cpu.most_common(TOP):
                print(f"  {100 * k / n:5.1f}%  {k * 1000 / MESSAGES:6.3f} ms  {w}")
    finally:
        env.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
