"""Recall@3 / @5 of the memory scoring with another message-to-fact encoder, or two (issue 13).

    python -m benchmarks.recall_encoders [--counts DIR ...] [--cache FILE]

Per encoder variant — USE (the shipped one), multilingual-e5-small, and the two concatenated (unit
vectors scaled so that their dot product is ``a`` × USE cosine + (1 − ``a``) × e5 cosine: the mean of the
two similarities runs through every part of the score, the vote's fact likeness included) — it
prints, per readable recall set (``recall_examples.READABLE``), leave-one-set-out:

* ``bare``: the hand-built score alone (no labelled memory: no vote, no type prior, no re-weighting);
* ``vote``: with the labelled memory of the other sets (vote + type prior, ``train_recall.set_features``);
* ``refit``: plus the pairwise re-weighting of the parts refitted on the other sets *for this encoder*
  (``train_recall.fit``).

and, for the sets given with ``--counts`` (scored with every readable set in the memory and the fit on
all of them, as the responder would), the same three figures as counts only: aggregate recall@3 / @5,
nothing per case. A learnt mix (``mix``) adds e5's cosine deviation (and its vote and type prior) as
further re-weighted parts over the USE parts. Vectors are cached in ``--cache`` (an ``.npz``) so a
second run does not re-embed (the first embeds ~5,500 texts with e5: ~6 min here). Figures of stop 32:
``docs/quality-log.md`` (h-rec9).
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from streams.respond import train_recall
from streams.respond.rank import build_configured_embedder, load_cases
from streams.respond.recall_examples import READABLE, TAU, RecallExamples


class CachedEmbedder:
    """An embedder whose unit vectors are kept per (kind, text), optionally in an ``.npz`` file."""

    def __init__(self, inner, name: str | None = None):
        self.inner = inner
        self.name = name or inner.name
        self.dim = inner.dim
        self.vecs: dict[tuple[str, str], np.ndarray] = {}

    def _get(self, kind: str, texts) -> np.ndarray:
        todo = [t for t in dict.fromkeys(texts) if (kind, t) not in self.vecs]
        if todo:
            fn = self.inner.embed_queries if kind == "q" else self.inner.embed_passages
            for i in range(0, len(todo), 64):
                chunk = todo[i:i + 64]
                for t, v in zip(chunk, np.asarray(fn(chunk), dtype=np.float32)):
                    n = float(np.linalg.norm(v))
                    self.vecs[(kind, t)] = v / n if n else v
        if not texts:
            return np.zeros((0, self.dim), np.float32)
        return np.stack([self.vecs[(kind, t)] for t in texts])

    def embed_queries(self, texts):
        return self._get("q", list(texts))

    def embed_passages(self, texts):
        return self._get("p", list(texts))

    def save(self, path: Path) -> None:
        keys = list(self.vecs)
        np.savez_compressed(path, kinds=np.array([k for k, _ in keys]), texts=np.array([t for _, t in keys]),
                            vecs=np.stack([self.vecs[k] for k in keys]) if keys else np.zeros((0, self.dim)))

    def load(self, path: Path) -> None:
        if path.exists():
            d = np.load(path, allow_pickle=False)
            self.vecs.update({(str(k), str(t)): v for k, t, v in zip(d["kinds"], d["texts"], d["vecs"])})


class ConcatEmbedder:
    """[√a · USE, √(1 − a) · e5]: its dot products are a × USE cosine + (1 − a) × e5 cosine."""

    def __init__(self, first, second, a: float):
        self.first, self.second, self.a = first, second, a
        self.name = f"concat-{a:g}-{first.name}-{second.name}"
        self.dim = first.dim + second.dim

    def _join(self, x: np.ndarray, y: np.ndarray) -> np.ndarray:
        return np.hstack([np.sqrt(self.a) * x, np.sqrt(1 - self.a) * y]).astype(np.float32)

    def embed_queries(self, texts):
        return self._join(self.first.embed_queries(texts), self.second.embed_queries(texts))

    def embed_passages(self, texts):
        return self._join(self.first.embed_passages(texts), self.second.embed_passages(texts))


def features(embedder, sets: dict[str, list[dict]], counts: dict[str, list[dict]], tau: float = TAU):
    """(loso, counted): per set, per case its ``train_recall.CaseRows`` with the labelled memory
    (readable sets: without their own cases) and without any (``bare``: vote and prior 0)."""
    loso, counted = {}, {}
    for s, cases in sets.items():
        ex = RecallExamples(embedder, exclude_sources={s}, rerank=None, tau=tau)
        loso[s] = [train_recall.case_features(c, embedder, ex) for c in cases]
    full = RecallExamples(embedder, rerank=None, tau=tau)
    for s, cases in counts.items():
        counted[s] = [train_recall.case_features(c, embedder, full) for c in cases]
    bare = {s: [train_recall.case_features(c, embedder, None) for c in cases]
            for s, cases in {**sets, **counts}.items()}
    return loso, counted, bare


def scores(loso, counted, bare, extra=None) -> dict[str, dict[str, tuple[float, float]]]:
    """Per set: bare / vote / refit recall@3, @5 (refit: leave-one-set-out on the readable sets,
    the fit on all of them for the counted ones). ``extra``: per set, per case, columns appended to
    the features (a learnt mix)."""
    def cat(d):
        if extra is None:
            return d
        return {s: [c._replace(parts=np.hstack([c.parts, extra[s][n]])) for n, c in enumerate(cs)]
                for s, cs in d.items()}
    loso, counted = cat(loso), cat(counted)
    out = {}
    w_all = train_recall.fit([c for cs in loso.values() for c in cs])
    for s in list(loso) + list(counted):
        cases = loso.get(s, counted.get(s))
        w = train_recall.fit([c for t, cs in loso.items() if t != s for c in cs]) if s in loso else w_all
        out[s] = {"bare": train_recall.recall(bare[s], None), "vote": train_recall.recall(cases, None),
                  "refit": train_recall.recall(cases, w)}
    return out


def print_table(name: str, res: dict, readable: list[str]) -> None:
    for kind in ("bare", "vote", "refit"):
        lo = [res[s][kind] for s in readable]
        others = [s for s in res if s not in readable]
        line = f"{name:14s} {kind:5s} LOSO {len(lo)} sets {np.mean([x[0] for x in lo]):.3f} / " \
               f"{np.mean([x[1] for x in lo]):.3f}"
        if others:
            line += "  | " + "  ".join(f"{s} {res[s][kind][0]:.3f}/{res[s][kind][1]:.3f}" for s in others)
        print(line, flush=True)


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--counts", nargs="*", default=[], help="folders scored as counts only (full memory)")
    p.add_argument("--cache", default="/tmp/recall_encoders", help="prefix of the vector caches (.npz)")
    p.add_argument("--mixes", default="0.15,0.3,0.5,0.7", help="USE shares of the concatenated encoder")
    a = p.parse_args(argv)
    sets = {s: load_cases(rel) for s, rel in READABLE.items() if Path(rel).exists()}
    counts = {Path(d).name: load_cases(Path(d) / "recall.jsonl") for d in a.counts}
    use = CachedEmbedder(build_configured_embedder("use"))
    e5 = CachedEmbedder(build_configured_embedder("e5"))
    for emb, tag in ((use, "use"), (e5, "e5")):
        emb.load(Path(f"{a.cache}-{tag}.npz"))
    readable = list(sets)
    feats = {}
    variants = [("use", use, TAU), ("e5", e5, TAU), ("e5 tau.9", e5, 0.9)]
    # the vote's fact likeness: e5's cosines sit higher (0.9 there ~ USE's 0.8), the concatenation's between
    variants += [(f"mean a={m}", ConcatEmbedder(use, e5, float(m)), float(m) * TAU + (1 - float(m)) * 0.9)
                 for m in a.mixes.split(",") if m.strip()]
    for name, emb, tau in variants:
        feats[name] = features(emb, sets, counts, tau)
        for e, tag in ((use, "use"), (e5, "e5")):
            e.save(Path(f"{a.cache}-{tag}.npz"))
        print_table(name, scores(*feats[name]), readable)
    for s in feats["use"][0]:   # the same facts, in the same order, under both encoders
        assert all(a_[1] == b_[1] for a_, b_ in zip(feats["use"][0][s], feats["e5"][0][s]))
    # a learnt mix: e5's parts (cosine deviation, vote, type prior) as further re-weighted columns over USE's
    extra = {s: [F[:, 1:] for F, _, _ in cs] for d in feats["e5"][:2] for s, cs in d.items()}
    print_table("mix use+e5", scores(*feats["use"], extra=extra), readable)
    extra1 = {s: [F[:, 1:2] for F, _, _ in cs] for d in feats["e5"][:2] for s, cs in d.items()}
    print_table("mix +e5 cos", scores(*feats["use"], extra=extra1), readable)


if __name__ == "__main__":
    main()
