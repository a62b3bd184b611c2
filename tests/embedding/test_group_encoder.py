"""GroupEncoder: calls that arrive while the model is busy are encoded together
in the next model call; each caller gets its own rows; a failure reaches every
call of its batch and the encoder keeps serving."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from streams.embedding.providers import GroupEncoder
from tests.harness import wait_until


class Model:
    """Encodes a text as [len(text), its number]; the first call blocks until released."""

    def __init__(self, fail_on: str | None = None):
        self.batches: list[list[str]] = []
        self.started = threading.Event()
        self.release = threading.Event()
        self.fail_on = fail_on

    def __call__(self, texts: list[str]) -> np.ndarray:
        self.batches.append(list(texts))
        if len(self.batches) == 1:
            self.started.set()
            self.release.wait()
        if self.fail_on in texts:
            raise ValueError("model failed")
        return np.array([[len(t), float(t.split("-")[1])] for t in texts], dtype=np.float32)


def _in_threads(enc: GroupEncoder, calls: list[list[str]]) -> tuple[list, list[threading.Thread]]:
    out: list = [None] * len(calls)

    def run(i: int) -> None:
        try:
            out[i] = enc(calls[i])
        except Exception as e:  # noqa: BLE001 - reported to the test
            out[i] = e

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(calls))]
    return out, threads


def test_calls_arriving_while_busy_share_one_model_call_and_keep_their_rows():
    model = Model()
    enc = GroupEncoder(model)
    first, t0 = _in_threads(enc, [["t-0"]])
    t0[0].start()
    model.started.wait(30)
    calls = [["t-1"], ["t-2", "t-3"], ["t-4"]]
    out, threads = _in_threads(enc, calls)
    for t in threads:
        t.start()
    wait_until(lambda: len(enc._queue) == 3, 30, what="three calls queued behind the busy model")
    model.release.set()
    for t in t0 + threads:
        t.join(30)
    assert model.batches == [["t-0"], ["t-1", "t-2", "t-3", "t-4"]]
    assert first[0].tolist() == [[3.0, 0.0]]
    assert [o[:, 1].tolist() for o in out] == [[1.0], [2.0, 3.0], [4.0]]
    assert (enc.calls, enc.grouped) == (2, 4)
    assert enc(["t-9"]).tolist() == [[3.0, 9.0]]  # alone again: its own call at once


def test_a_batch_is_capped_and_a_failure_reaches_only_its_batch():
    model = Model(fail_on="t-2")
    enc = GroupEncoder(model, max_texts=2)
    first, t0 = _in_threads(enc, [["t-0"]])
    t0[0].start()
    model.started.wait(30)
    calls = [["t-1", "t-2"], ["t-3"], ["t-4"]]
    out = [None] * 3
    threads = []
    for i in range(3):  # queued in this order
        o, ts = _in_threads(enc, [calls[i]])
        threads.append((o, ts[0]))
        ts[0].start()
        wait_until(lambda n=i + 1: len(enc._queue) == n, 30, what="call queued")
    model.release.set()
    t0[0].join(30)
    for o, t in threads:
        t.join(30)
    out = [o[0] for o, _ in threads]
    assert model.batches == [["t-0"], ["t-1", "t-2"], ["t-3", "t-4"]]
    assert isinstance(out[0], ValueError)
    assert [o[:, 1].tolist() for o in out[1:]] == [[3.0], [4.0]]
    with pytest.raises(ValueError):
        enc(["t-2"])
    assert enc(["t-5"]).tolist() == [[3.0, 5.0]]
