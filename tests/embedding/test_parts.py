"""Passages embedded part by part: through the embedding service the parts are requested at once (the
service encodes the next while the caller stores one); an in-process model gets one call."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from streams.embedding import tokens
from streams.embedding.client import ServiceEmbedder
from streams.embedding.parts import passages_in_parts
from streams.embedding.port import out_of_process


class Recording:
    """A deterministic embedder: a text's vector is its length and its first character."""

    name, dim = "fake", 2

    def __init__(self, *, remote: bool, gate: threading.Event | None = None, fail_at: str | None = None):
        self.out_of_process = remote
        self.calls: list[list[str]] = []
        self.gate, self.fail_at = gate, fail_at
        self._mu = threading.Lock()

    def embed_passages(self, texts):
        with self._mu:
            self.calls.append(list(texts))
        tokens.report(self.name, len(texts))
        if self.fail_at is not None and self.fail_at in texts:
            raise RuntimeError("part failed")
        if self.gate is not None:
            if texts[0] == "a":   # the first part finishes only once the second was requested
                assert self.gate.wait(10), "the second part was not requested while the first was encoded"
            else:
                self.gate.set()
        return np.array([[len(t), ord(t[0])] for t in texts], dtype=np.float32)


TEXTS = ["a", "bb", "ccc", "dddd", "eeeee"]


def _expected(texts):
    return np.array([[len(t), ord(t[0])] for t in texts], dtype=np.float32)


def test_an_in_process_model_gets_one_call_for_all_the_texts():
    emb = Recording(remote=False)
    parts = list(passages_in_parts(emb, TEXTS, part=2))
    assert emb.calls == [TEXTS]
    assert [s for s, _ in parts] == [0]
    np.testing.assert_array_equal(parts[0][1], _expected(TEXTS))


def test_out_of_process_the_parts_are_in_flight_together_and_come_back_in_order():
    emb = Recording(remote=True, gate=threading.Event())
    sink = tokens.collect()
    parts = list(passages_in_parts(emb, TEXTS, part=2))
    assert sorted(emb.calls) == [["a", "bb"], ["ccc", "dddd"], ["eeeee"]]
    assert [s for s, _ in parts] == [0, 2, 4]
    np.testing.assert_array_equal(np.vstack([v for _, v in parts]), _expected(TEXTS))
    assert sink == {"fake": 5}   # the parts' paid tokens reach the caller's collector


def test_one_part_or_no_part_size_is_one_call():
    emb = Recording(remote=True)
    assert [s for s, _ in passages_in_parts(emb, TEXTS, part=0)] == [0]
    assert [s for s, _ in passages_in_parts(emb, TEXTS[:2], part=2)] == [0]
    assert emb.calls == [TEXTS, TEXTS[:2]]
    assert list(passages_in_parts(emb, [], part=2)) == []


def test_a_failing_part_raises_after_the_parts_before_it():
    emb = Recording(remote=True, fail_at="ccc")
    got = []
    with pytest.raises(RuntimeError, match="part failed"):
        for s, v in passages_in_parts(emb, TEXTS, part=2, in_flight=1):
            got.append(s)
    assert got == [0]


def test_the_service_client_runs_out_of_process_and_the_local_models_do_not():
    assert out_of_process(ServiceEmbedder("http://127.0.0.1:9", "use-multilingual-v3"))
    assert not out_of_process(Recording(remote=False))
    assert not out_of_process(object())
