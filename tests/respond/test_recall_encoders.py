"""The measuring script of a second message-to-fact encoder (``benchmarks.recall_encoders``)."""

import numpy as np

from benchmarks.recall_encoders import CachedEmbedder, ConcatEmbedder, scores


class Fixed:
    """Fixed (not unit) vectors per text; counts the texts it embeds."""

    def __init__(self, table, name):
        self.table = {k: np.asarray(v, dtype=np.float32) for k, v in table.items()}
        self.name, self.dim, self.seen = name, len(next(iter(table.values()))), 0

    def embed_queries(self, texts):
        self.seen += len(texts)
        return np.stack([self.table[t] for t in texts])

    embed_passages = embed_queries


def test_cached_embedder_embeds_each_text_once_and_keeps_unit_vectors(tmp_path):
    inner = Fixed({"a": [3, 4], "b": [0, 2]}, "x")
    emb = CachedEmbedder(inner)
    assert np.allclose(emb.embed_queries(["a", "b", "a"]), [[0.6, 0.8], [0, 1], [0.6, 0.8]])
    emb.embed_queries(["b"])
    assert inner.seen == 2
    emb.save(tmp_path / "c.npz")
    again = CachedEmbedder(inner)
    again.load(tmp_path / "c.npz")
    assert np.allclose(again.embed_queries(["b"]), [[0, 1]]) and inner.seen == 2
    assert again.embed_passages([]).shape == (0, 2)


def test_concatenation_reads_the_weighted_mean_of_the_two_cosines():
    first = CachedEmbedder(Fixed({"q": [1, 0], "f": [0.6, 0.8]}, "use"))     # cosine 0.6
    second = CachedEmbedder(Fixed({"q": [0, 0, 1], "f": [0, 0.6, 0.8]}, "e5"))   # cosine 0.8
    for a in (0.15, 0.5, 0.7):
        cat = ConcatEmbedder(first, second, a)
        q, f = cat.embed_queries(["q"])[0], cat.embed_passages(["f"])[0]
        assert abs(float(np.linalg.norm(q)) - 1) < 1e-6
        assert abs(float(q @ f) - (a * 0.6 + (1 - a) * 0.8)) < 1e-6
        assert cat.dim == 5 and str(a) in cat.name


def test_scores_refit_reads_the_part_the_score_misses_out_of_the_scored_set():
    # per fact [hand-built score, one part]: in one case the score ranks the relevant fact (0) first, in the
    # other only the part does (it is fifth by the score)
    from streams.respond.train_recall import CaseRows

    def case(parts):
        return CaseRows(np.array(parts), [0, 1, 2, 3, 4], {0}, np.ones(2), np.ones((5, 2)), ["preferencia"] * 5)

    by_score = case([[1.0, 0], [0.5, 0], [0.4, 0], [0.3, 0], [0.2, 0]])
    by_part = case([[0.0, 1], [0.5, 0], [0.4, 0], [0.3, 0], [0.2, 0]])
    cases = [by_score, by_part]
    res = scores({"a": cases, "b": cases}, {"c": cases}, {s: cases for s in "abc"})
    for s in "abc":
        assert res[s]["bare"] == (0.5, 1.0) and res[s]["vote"] == (0.5, 1.0)
        assert res[s]["refit"] == (1.0, 1.0)
