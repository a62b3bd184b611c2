"""Labelled recall cases as evidence at query time: what queries like this one needed.

The hand-built score (``streams.respond.recall``) reads the message's words and its cosine with
each fact; what it cannot read is an inference a person makes ("quero um quarto sossegado" needs
"Tem sono leve"; "tem rampa?" needs "Usa cadeira de rodas"; "uma doce pro otavio" needs "O marido é
diabético"). Writers of the same businesses label such pairs over and over, so the labelled recall
cases (``data/recall_examples.jsonl``: per case the query, the facts marked relevant and the others)
are kept as a memory of (fact, query, relevant?) pairs, and a fact scores

    ``BETA`` × (best cosine of the message with a query for which a *similar* fact was relevant
               − best cosine with a query for which a similar fact was not)

more, where *similar* is a fact cosine of at least ``TAU`` (0 when no similar fact was ever relevant,
or when the two cosines differ by less than ``MARGIN``: a near tie is no evidence). ``score_memories``
never lets it vote *for* a fact about someone else than the one the customer asks about (the facts
the word evidence puts below by ``OTHER_PARTY``). On by default (setting ``recall_examples``).
It is a nearest-neighbour vote in (fact, query) space, learnt from labels, never from hand-listed
words. The same memory gives a *type prior* (``type_prior``): the memory types of the relevant facts of
the ``TYPE_K`` labelled queries nearest the message (a softmax of their cosines), and a fact scores
``TYPE_WEIGHT`` × log p(its type) more (a message asking what someone may eat wants a restriction,
"o de sempre" a preference), added after the hand-built lifts. Leave-one-set-out over the 17
readable sets, weight 0 / 0.01 / 0.02 / 0.03 / 0.045: mean recall@3 0.871 / 0.874 / 0.877 / 0.878 /
0.873, @5 0.968 / 0.968 / 0.972 / 0.971 / 0.971 (quality log, stop 30). Cost: the labelled facts similar to a fact are found once per fact text and cached (a
contact's facts come back message after message); per message it is one product of the message's
vector with the labelled queries (a few hundred), no second embedding and no model call.

The same cases then weigh the score's parts (``rerank_weights``, ``RERANK_FEATURES``): a pairwise logistic
regression over the labelled (relevant, other) fact pairs of each case says how much more of the cosine (as
its deviation from the contact's mean), the vote and the type prior the hand-built score should read
(fitted by ``python -m streams.respond.train_recall`` into ``data/recall_rerank.json``: one fit on every
readable set, which the responder uses, and one without each, which the evaluation uses when it scores that
set). The fit reads less of the cosine (−0.35 per unit) and more of the type prior (+0.63) and the vote (+0.15):
leave-one-set-out over the 19 readable sets, mean recall@3 / @5 0.867 / 0.967 → 0.877 / 0.967 (quality log,
stop 31). Cost: three multiply-adds per fact.

Since stop 35 the same pairwise fit also reads the vectors themselves (``Rerank``): a weight per embedding
dimension of (message ⊙ fact), a learnt cosine that reads the directions of meaning that decide relevance, and
per memory type a linear reading of the message's vector, a learnt type prior that reaches messages unlike any
labelled one (the nearest-query prior above only reads the neighbours). Its weights are in
``data/recall_rerank.npz`` (float16, per fit) and are read only with vectors of the embedder they were fitted
with; any other embedder gets the parts' own fit. Leave-one-set-out over the 29 readable sets (probe_aa …
probe_aj joined the labelled cases at stop 35), mean recall@3 / @5 0.866 / 0.964 (the parts alone) → 0.876 /
0.969; the validation sets probe_o/p/q 0.764/0.689/0.839 → 0.797/0.742/0.828 (quality log, stop 35). Cost: one
product of the message's vector with the facts' (already in memory) and one per memory type.

Stop 44: the sixteen tuning sets written since (probe_ak … probe_bd) joined the labelled cases (1151 → 1791 cases,
45 sets) and the fits were redone. Each new set scored out of sample both ways (before: not in the memory; after:
left out of it), recall@3 0.900 → 0.913 (11 sets up, 3 down); the 29 older sets, leave-one-set-out, 0.873 → 0.876;
the validation sets probe_o/p/q 0.797/0.742/0.828 → 0.797/0.731/0.800 and the fresh probe_be/bf 0.900/0.900 →
0.900/0.887 (counts; 170 cases, −0.012). Over the 810 cases scored out of sample both ways, +0.008; the grid of stop
35 re-run over 45 sets still chose C 0.3, scales 10 / 0.5 (quality log, stop 44). Stop 45: probe_be and probe_bf
(first checked on f75f76c) joined (1791 → 1871 cases, 47 sets); leave-one-set-out mean recall@3 0.890 (be 0.875 →
0.912, bf 0.887); validation o/p/q @3 0.797/0.731/0.800 → 0.797/0.714/0.800, fresh probe_bg/bh 0.842/0.816 →
0.842/0.824 (counts; quality log, stop 45). Stop 46: probe_bg and probe_bh (first checked on 983ffbd) joined (1871 →
1951 cases, 49 sets); leave-one-set-out mean recall@3 0.887 (bg 0.842, bh 0.824 both ways); validation o/p/q @3
0.797/0.714/0.800 → 0.786/0.714/0.833, fresh probe_bi/bj 0.950/0.875 unchanged (counts; quality log, stop 46). Stop 47:
probe_bi and probe_bj (first checked on 7f533f2) joined (1951 → 2031 cases, 51 sets); leave-one-set-out mean recall@3
0.886 (bi 0.950 → 0.912, bj 0.875 both ways); validation o/p/q @3 0.786/0.714/0.833 unchanged, @5 0.942/0.924/0.956 →
0.953/0.935/0.956 (counts; quality log, stop 47). Stop 48: probe_bk and probe_bl (first checked on d8f9421) joined
(2031 → 2111 cases, 53 sets); leave-one-set-out mean recall@3 0.887 (bk 0.938, bl 0.854); validation o/p/q @3
0.786/0.714/0.833 → 0.786/0.714/0.822, @5 unchanged; fresh probe_bm/bn @3 0.929/0.900 → 0.929/0.912 (counts). Stop 49:
probe_bm and probe_bn (first checked on be74ee5) joined (2111 → 2191 cases, 55 sets); leave-one-set-out mean recall@3
0.887 (bm 0.929, bn 0.912; dev 0.868 unchanged); validation o/p/q @3 0.786/0.714/0.822 → 0.797/0.714/0.839, @5
0.953/0.935/0.956 → 0.953/0.925/0.956; fresh probe_bo/bp @3 0.883/0.912 → 0.871/0.912, @5 unchanged (counts).

Measured leave-one-set-out (each readable set scored with its own cases left out of the memory):
``python -m streams.respond.evaluate_recall --loso``. The evaluation (``streams.evaluation``,
``memoria rank`` via ``evaluate_recall``) always leaves the scored file's own sets out, so its
recall figures stay out-of-sample. Rebuild the data file from the readable folders with
``python -m streams.respond.recall_examples`` (never from a reserved set).
"""

from __future__ import annotations

import json
import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Sequence

import numpy as np

EXAMPLES_FILE = Path(__file__).with_name("data") / "recall_examples.jsonl"
TAU = 0.8      # a labelled fact at least this similar to the fact (USE cosine) is "a fact like it"
BETA = 0.1     # weight of the vote (in cosine units, like the other bonuses of ``score_memories``)
MARGIN = 0.05  # no vote unless the best relevant neighbour query and the best irrelevant one differ by this much
# the type prior (``type_prior``): what kinds of fact the labelled queries nearest the message needed
TYPE_WEIGHT = 0.02   # per unit of log-probability (cosine units, like the vote)
TYPE_K = 20          # labelled queries read
TYPE_TEMP = 0.05     # softmax temperature over their cosines with the message
TYPE_SMOOTH = 0.1    # share of the probability spread evenly over the known types
_CACHE_MAX = 16384
# the learnt re-weighting of the score's parts (``rerank_weights``; trained by ``streams.respond.train_recall``)
RERANK_FILE = Path(__file__).with_name("data") / "recall_rerank.json"
RERANK_FEATURES = ("similarity", "vote", "type_prior")   # what ``score_memories`` adds, per unit of each
#: ... and the learnt reading of the vectors themselves (``Rerank.interaction``), in the file beside it
RERANK_VECTORS = RERANK_FILE.with_suffix(".npz")

# the readable recall sets the data file is built from (``build``); the reserved ones never are
READABLE = {"dev": "examples/dev/recall.jsonl", "train": "examples/train/recall.jsonl",
            "probe_a": "examples/probe_a/recall.jsonl", "probe_c": "examples/probe_c/recall.jsonl",
            "probe_i": "examples/probe_i/recall.jsonl", "probe_j": "examples/probe_j/recall.jsonl",
            "probe_k": "examples/probe_k/recall.jsonl",
            "probe_l": "examples/probe_l/recall.jsonl", "probe_m": "examples/probe_m/recall.jsonl",
            "probe_r": "examples/probe_r/recall.jsonl",
            "probe_s": "examples/probe_s/recall.jsonl", "probe_t": "examples/probe_t/recall.jsonl",
            "probe_u": "examples/probe_u/recall.jsonl", "probe_v": "examples/probe_v/recall.jsonl",
            "probe_w": "examples/probe_w/recall.jsonl", "probe_x": "examples/probe_x/recall.jsonl",
            "probe_y": "examples/probe_y/recall.jsonl", "probe_z": "examples/probe_z/recall.jsonl",
            "written": "tests/respond/data/recall_written.jsonl",
            **{f"probe_{x}": f"examples/probe_{x}/recall.jsonl"
               for x in ("aa", "ab", "ac", "ad", "ae", "af", "ag", "ah", "ai", "aj",
                         "ak", "al", "am", "an", "as", "at", "au", "av", "aw", "ax", "ay", "az", "ba", "bb", "bc",
                         "bd", "be", "bf", "bg", "bh", "bi", "bj", "bk", "bl", "bm", "bn", "bo", "bp")}}


REPO_ROOT = Path(__file__).resolve().parents[2]


def source_of(path: str | Path | None) -> set[str]:
    """The readable set(s) ``path`` (a recall.jsonl or its folder) is, by location."""
    if path is None:
        return set()
    p = Path(path)
    p = (p / "recall.jsonl" if p.is_dir() else p).resolve()
    return {s for s, rel in READABLE.items() if (REPO_ROOT / rel).resolve() == p}


def load_cases(path: str | Path = EXAMPLES_FILE) -> list[dict]:
    p = Path(path)
    if not p.exists():
        return []
    with open(p, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def cases_from_recall(source: str, recall_cases: Iterable[dict]) -> list[dict]:
    """Recall cases (``contact_facts`` + ``relevant`` indices) as example cases of ``source``."""
    out = []
    for c in recall_cases:
        rel = set(c.get("relevant", []))
        facts = c["contact_facts"]
        out.append({"source": source, "case_id": c["case_id"], "query": c["query"],
                    "relevant": [f["content"] for i, f in enumerate(facts) if i in rel],
                    "relevant_types": [f["memory_type"] for i, f in enumerate(facts) if i in rel],
                    "other": [f["content"] for i, f in enumerate(facts) if i not in rel]})
    return out


def _unit(m: np.ndarray) -> np.ndarray:
    m = np.asarray(m, dtype=np.float32)
    if m.ndim == 1:
        n = float(np.linalg.norm(m))
        return m / n if n else m
    n = np.linalg.norm(m, axis=1, keepdims=True)
    return m / np.where(n == 0, 1.0, n)


_VECTORS: dict[tuple[str, str, str], np.ndarray] = {}   # (embedder, "q"|"p", text) → vector, per process
_VECTORS_LOCK = threading.Lock()


def _embed(embedder, kind: str, texts: Sequence[str]) -> np.ndarray:
    name = getattr(embedder, "name", repr(embedder))
    with _VECTORS_LOCK:
        todo = [t for t in dict.fromkeys(texts) if (name, kind, t) not in _VECTORS]
    if todo:
        vecs = (embedder.embed_queries if kind == "q" else embedder.embed_passages)(list(todo))
        with _VECTORS_LOCK:
            for t, v in zip(todo, vecs):
                _VECTORS[(name, kind, t)] = _unit(np.asarray(v, dtype=np.float32).reshape(-1))
    with _VECTORS_LOCK:
        return np.stack([_VECTORS[(name, kind, t)] for t in texts]) if texts else np.zeros((0, 0), np.float32)


class RecallExamples:
    """The memory of labelled (fact, query, relevant?) pairs (see the module docstring).

    ``exclude_sources``: sets left out (the evaluation leaves out the set it scores). The examples
    are embedded lazily once per embedder (``warm`` does it ahead of the first message)."""

    def __init__(self, embedder, cases: Sequence[dict] | None = None, exclude_sources: Iterable[str] = (),
                 tau: float = TAU, beta: float = BETA, margin: float = MARGIN,
                 type_weight: float = TYPE_WEIGHT, rerank: str | None = "learnt"):
        self.embedder = embedder
        self.type_weight = type_weight
        drop = set(exclude_sources)
        # the learnt re-weighting (``score_memories``): the one fitted with this memory, i.e. the data file's
        # cases without the sets left out here ("learnt"; None: the hand-built score, as for cases given here)
        self.rerank = rerank_weights(drop, embedder=getattr(embedder, "name", None)) \
            if rerank == "learnt" and cases is None else None
        self.cases = [c for c in (load_cases() if cases is None else cases) if c.get("source") not in drop]
        self.tau, self.beta, self.margin = tau, beta, margin
        self._lock = threading.Lock()
        self._ready = False
        self._queries = np.zeros((0, 0), np.float32)
        self._facts = np.zeros((0, 0), np.float32)
        self._pos: np.ndarray | None = None   # (facts, queries): the fact was relevant to the query
        self._neg: np.ndarray | None = None   # ... labelled not relevant
        self._types: list[str] = []              # the memory types the labelled relevant facts have
        self._type_rows = np.zeros(0, np.int64)   # per labelled query with a type: its index in _queries
        self._type_dist = np.zeros((0, 0), np.float32)   # ... and the share of each type among its relevant facts
        self._near: OrderedDict[str, tuple[np.ndarray, np.ndarray]] = OrderedDict()

    @classmethod
    def leaving_out(cls, embedder, path: str | Path | None) -> "RecallExamples | None":
        """The memory without the set read from ``path`` (a recall file or its folder), if it is one
        of the sets the data file was built from: an honest figure for it. Any other file (a
        reserved set, a new one) is scored with every example, as the responder would. None when
        the setting ``recall_examples`` is off (``MEMORIA_RECALL_EXAMPLES=0``)."""
        from streams.settings import Settings

        if not Settings().recall_examples:
            return None
        return cls(embedder, exclude_sources=source_of(path))

    def warm(self) -> None:
        self._ensure()

    def _ensure(self) -> None:
        if self._ready:
            return
        with self._lock:
            if self._ready:
                return
            queries = list(dict.fromkeys(c["query"] for c in self.cases))
            facts = list(dict.fromkeys(f for c in self.cases for f in c["relevant"] + c["other"]))
            if queries and facts:
                qi = {q: i for i, q in enumerate(queries)}
                fi = {f: i for i, f in enumerate(facts)}
                pos = np.zeros((len(facts), len(queries)), dtype=bool)
                neg = np.zeros_like(pos)
                for c in self.cases:
                    for f in c["relevant"]:
                        pos[fi[f], qi[c["query"]]] = True
                    for f in c["other"]:
                        neg[fi[f], qi[c["query"]]] = True
                self._queries = _embed(self.embedder, "q", queries)
                self._facts = _embed(self.embedder, "p", facts)
                self._pos, self._neg = pos, neg
                self._build_types(qi)
            self._ready = True

    def _build_types(self, qi: dict[str, int]) -> None:
        per: dict[int, list[str]] = {}
        for c in self.cases:
            per.setdefault(qi[c["query"]], []).extend(c.get("relevant_types", []))
        per = {q: ts for q, ts in per.items() if ts}
        self._types = sorted({t for ts in per.values() for t in ts})
        ti = {t: i for i, t in enumerate(self._types)}
        self._type_rows = np.array(sorted(per), dtype=np.int64)
        dist = np.zeros((len(self._type_rows), len(self._types)), np.float32)
        for n, q in enumerate(self._type_rows):
            for t in per[q]:
                dist[n, ti[t]] += 1.0 / len(per[q])
        self._type_dist = dist

    def _neighbours(self, content: str, vec) -> tuple[np.ndarray, np.ndarray]:
        """Indices of the labelled queries a fact like this one was relevant / not relevant to,
        each list opened by the index one past the last query (``_segment_max``'s sentinel);
        cached per fact text, so the vector is read only the first time."""
        hit = self._near.get(content)
        if hit is not None:
            return hit
        end = np.array([self._queries.shape[0]], dtype=np.int64)
        e = np.asarray(vec, dtype=np.float32).reshape(-1) if vec is not None else np.zeros(0, np.float32)
        if e.shape[0] != self._facts.shape[1]:
            return end, end   # another model's vector: no vote (and nothing cached)
        near = (self._facts @ _unit(e)) >= self.tau
        if near.any():
            pos = np.concatenate((end, np.flatnonzero(self._pos[near].any(axis=0))))
            neg = np.concatenate((end, np.flatnonzero(self._neg[near].any(axis=0))))
        else:
            pos = neg = end
        self._near[content] = (pos, neg)
        if len(self._near) > _CACHE_MAX:
            self._near.popitem(last=False)
        return pos, neg

    def votes(self, query_unit: np.ndarray, contents: Sequence[str],
              vectors: Sequence[np.ndarray]) -> list[float]:
        """Per fact, ``beta`` × (best cosine with a query a fact like it was relevant to − best
        with one it was not); 0 without such a relevant example or with a vector of another size.
        ``query_unit``: the message's unit vector."""
        self._ensure()
        if self._pos is None or not len(contents) or query_unit.shape[0] != self._queries.shape[1]:
            return [0.0] * len(contents)
        # the message's cosine with every labelled query, and a last slot (-inf / 0) that opens each
        # fact's list so that an empty one reads "none": one reduceat per side for all the facts
        sims = self._queries @ query_unit
        pairs = [self._neighbours(c, v) for c, v in zip(contents, vectors)]
        best_pos = _segment_max(np.append(sims, np.float32(-np.inf)), [p for p, _ in pairs])
        best_neg = _segment_max(np.append(sims, np.float32(0.0)), [n for _, n in pairs])
        return [self.beta * float(p - n) if p != -np.inf and abs(p - n) >= self.margin else 0.0
                for p, n in zip(best_pos, best_neg)]


    def type_prior(self, query_unit: np.ndarray, types: Sequence[str]) -> list[float]:
        """Per fact, ``type_weight`` × log p(its memory type | the message): p is the mix of the
        relevant facts' types of the ``TYPE_K`` labelled queries nearest the message, weighted by a
        softmax of their cosines (``TYPE_TEMP``), with ``TYPE_SMOOTH`` spread over the known types
        ("tem algo sem lactose?" asks for a restriction, "o de sempre" for a preference, whatever the
        words). 0 for every fact without labelled types or with a vector of another size."""
        self._ensure()
        if (not self.type_weight or not len(self._type_rows) or not len(types)
                or query_unit.shape[0] != self._queries.shape[1]):
            return [0.0] * len(types)
        sims = self._queries[self._type_rows] @ query_unit
        near = np.argsort(-sims, kind="stable")[:TYPE_K]
        w = np.exp((sims[near] - sims[near].max()) / TYPE_TEMP)
        p = (1 - TYPE_SMOOTH) * (w @ self._type_dist[near]) / w.sum() + TYPE_SMOOTH / len(self._types)
        floor = TYPE_SMOOTH / len(self._types)   # a type no labelled query needed: the least share
        ti = {t: i for i, t in enumerate(self._types)}
        return [self.type_weight * float(np.log(p[ti[t]] if t in ti else floor)) for t in types]


@dataclass(frozen=True)
class Rerank:
    """The learnt re-weighting ``score_memories`` adds to the hand-built score (``train_recall`` fits it).

    ``parts``: weights of ``RERANK_FEATURES`` (per fact: weight × (its cosine − the contact's mean), × the vote,
    × the type prior). ``match``: per embedding dimension, the weight of (message ⊙ fact), a learnt re-weighting
    of the cosine ("which directions of meaning matter when this message meets that fact"). ``by_type``: per
    memory type, a linear reading of the message's vector (what this message asks of a restriction, a date, a
    habit: a learnt type prior that generalises past the nearest labelled queries). Both are read only with
    vectors of the embedder they were fitted with (``embedder``)."""

    parts: np.ndarray
    match: np.ndarray | None = None
    by_type: dict[str, np.ndarray] = field(default_factory=dict)
    embedder: str | None = None

    def interaction(self, query_unit: np.ndarray, fact_units: np.ndarray, types: Sequence[str]) -> np.ndarray:
        """Per fact (rows of ``fact_units``, unit vectors), what the vectors add: match · (q ⊙ f) plus the
        fact type's reading of q; zeros when the vectors are of another size than the fit's."""
        out = np.zeros(len(types), dtype=np.float64)
        if self.match is None or fact_units.ndim != 2 or query_unit.shape[0] != self.match.shape[0] \
                or fact_units.shape[1] != self.match.shape[0]:
            return out
        out += fact_units @ (query_unit * self.match)
        per_type = {t: float(query_unit @ w) for t, w in self.by_type.items()}
        return out + np.array([per_type.get(t, 0.0) for t in types], dtype=np.float64)


def rerank_weights(left_out: Iterable[str] = (), path: Path = RERANK_FILE,
                   embedder: str | None = None) -> Rerank | None:
    """The learnt re-weighting (``Rerank``; ``score_memories`` adds, per fact, weight × (its cosine − the mean
    over the contact's facts), weight × the vote, weight × the type prior, on top of the hand-built score
    that already holds each once, and the vectors' learnt reading): the one fitted on every readable set,
    or, with ``left_out`` (the set the evaluation scores), the one fitted without it. None (the hand-built
    score alone) without the file, or when several sets are left out (no such fit). With the vectors' part
    (``RERANK_VECTORS``; the parts' weights of the joint fit, ``joint``) only when ``embedder`` is the one it
    was fitted with; otherwise the parts' weights fitted alone (``weights``)."""
    left = sorted(set(left_out))
    if not path.exists() or len(left) > 1:
        return None
    data = json.loads(path.read_text(encoding="utf-8"))
    if list(data.get("features", [])) != list(RERANK_FEATURES):
        return None
    key = left[0] if left else "*"
    w = data["weights"].get(key)
    if w is None:
        return None
    vectors = path.with_suffix(".npz")
    fitted_with = data.get("embedder")
    joint = (data.get("joint") or {}).get(key)
    if joint is None or not (vectors.exists() and fitted_with and embedder == fitted_with):
        return Rerank(np.asarray(w, dtype=np.float64))   # the parts' own fit: no vectors of that model
    with np.load(vectors) as z:
        match = z[f"{key}/match"].astype(np.float64)
        by_type = z[f"{key}/by_type"].astype(np.float64)
    return Rerank(np.asarray(joint, dtype=np.float64), match,
                  {t: by_type[n] for n, t in enumerate(data["types"])}, fitted_with)


def _segment_max(values: np.ndarray, segments: Sequence[np.ndarray]) -> np.ndarray:
    """max of ``values`` over each (never empty) list of indices."""
    lens = np.fromiter((s.size for s in segments), dtype=np.int64, count=len(segments))
    starts = np.concatenate(([0], np.cumsum(lens)[:-1]))
    return np.maximum.reduceat(values[np.concatenate(segments)], starts)


# ------------------------------------------------------------------ offline command
def build(root: Path = Path("."), sources: dict[str, str] | None = None, out: Path = EXAMPLES_FILE) -> int:
    """Write the data file from the readable recall sets; returns the number of cases."""
    rows = []
    for source, rel in (sources or READABLE).items():
        path = root / rel
        if path.exists():
            with open(path, encoding="utf-8") as f:
                rows += cases_from_recall(source, [json.loads(line) for line in f if line.strip()])
    out.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    return len(rows)


if __name__ == "__main__":   # python -m streams.respond.recall_examples: rebuild the data file
    print(f"{build()} cases → {EXAMPLES_FILE}")
