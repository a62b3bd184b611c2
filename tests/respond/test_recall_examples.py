"""Labelled recall cases vote for the facts queries like the message needed (``RecallExamples``)."""

import json

import numpy as np

from streams.respond.recall import MemoryFact, score_memories
from streams.respond.recall_examples import RecallExamples, Rerank, cases_from_recall, load_cases


class TableEmbedder:
    """Fixed vectors per text (queries and passages alike): the test says what is near what."""

    name = "table"

    def __init__(self, table):
        self.table = {k: np.asarray(v, dtype=np.float32) for k, v in table.items()}
        self.calls = 0

    def embed_queries(self, texts):
        self.calls += 1
        return np.stack([self.table[t] for t in texts])

    embed_passages = embed_queries


# axes: 0 "quiet room" queries, 1 "sleeps lightly" facts, 2 "likes pizza" facts, 3 other queries, 4 dates
TABLE = {
    "quero um quarto quietinho": [1, 0, 0, 0, 0],          # labelled query
    "tem pizza doce?": [0, 0, 0, 1, 0],                    # labelled query
    "Tem sono leve": [0, 1, 0, 0, 0],                      # labelled fact, relevant to the quiet room
    "Gosta de pizza de calabresa": [0, 0, 1, 0, 0],        # labelled fact, irrelevant to the quiet room
    "quarto sossegado hj": [0.95, 0, 0, 0.31, 0],          # a new message, like the quiet-room query
    "Dorme mal com barulho": [0, 0.95, 0.31, 0, 0],        # a new fact, like "Tem sono leve"
    "Pede pizza de calabresa": [0, 0.1, 0.99, 0, 0],       # a new fact, like the irrelevant one
    "Faz aniversário em maio": [0.2, 0, 0, 0, 0.98],       # like nothing labelled (a little like the message)
}
CASES = [
    {"source": "a", "case_id": "a1", "query": "quero um quarto quietinho",
     "relevant": ["Tem sono leve"], "other": ["Gosta de pizza de calabresa"]},
    {"source": "b", "case_id": "b1", "query": "tem pizza doce?",
     "relevant": ["Gosta de pizza de calabresa"], "other": ["Tem sono leve"]},
]


def _unit(v):
    v = np.asarray(v, dtype=np.float32)
    return v / np.linalg.norm(v)


def test_a_fact_like_one_such_queries_needed_gets_the_vote():
    emb = TableEmbedder(TABLE)
    ex = RecallExamples(emb, CASES, tau=0.8, beta=0.1)
    facts = ["Dorme mal com barulho", "Pede pizza de calabresa", "Faz aniversário em maio"]
    votes = ex.votes(_unit(TABLE["quarto sossegado hj"]), facts, [_unit(TABLE[f]) for f in facts])
    assert votes[0] > 0.05          # like "Tem sono leve", which the quiet-room query needed
    assert votes[1] < 0             # like a fact that query did not need (and only a pizza query did)
    assert votes[2] == 0.0          # like no labelled fact: no vote
    calls = emb.calls
    ex.votes(_unit(TABLE["quarto sossegado hj"]), facts, [_unit(TABLE[f]) for f in facts])
    assert emb.calls == calls       # the examples are embedded once, the neighbours cached per fact
    # a vector of another size is not read
    assert ex.votes(_unit(TABLE["quarto sossegado hj"]), ["Outro fato"], [np.ones(3)]) == [0.0]


def test_the_vote_reorders_recall_and_leaving_a_set_out_removes_its_votes():
    emb = TableEmbedder(TABLE)
    q = TABLE["quarto sossegado hj"]
    facts = [MemoryFact(id=k, memory_type="preferencia", content=c, confidence=1.0, scope="global",
                        source_unit_id=None, embedding=TABLE[c])
             for k, c in enumerate(["Faz aniversário em maio", "Dorme mal com barulho"])]
    plain = score_memories(q, facts, None, query_text="quarto sossegado hj")
    assert [s.fact.id for s in plain] == [0, 1]       # the cosine alone prefers the birthday
    voted = score_memories(q, facts, None, query_text="quarto sossegado hj",
                           examples=RecallExamples(emb, CASES, tau=0.8, beta=0.5))
    assert [s.fact.id for s in voted] == [1, 0]       # the labelled quiet-room case says sleep
    assert voted[0].similarity == plain[1].similarity  # the similarity reported stays the cosine
    without_a = RecallExamples(emb, CASES, exclude_sources={"a"}, tau=0.8, beta=0.5)
    assert [s.fact.id for s in score_memories(q, facts, None, query_text="quarto sossegado hj",
                                              examples=without_a)] == [0, 1]


def test_shipped_examples_come_from_readable_sets_and_evaluation_leaves_its_own_out(monkeypatch):
    from streams.respond.recall_examples import REPO_ROOT, source_of

    rows = load_cases()
    assert rows and {r["source"] for r in rows} <= {"dev", "train", "probe_a", "probe_c", "written",
                                                    "probe_i", "probe_j", "probe_k", "probe_h",
                                                    "probe_l", "probe_m", "probe_r", "probe_s", "probe_t",
                                                    "probe_u", "probe_v", "probe_w", "probe_x", "probe_y", "probe_z",
                                                    "probe_aa", "probe_ab", "probe_ac", "probe_ad", "probe_ae",
                                                    "probe_af", "probe_ag", "probe_ah", "probe_ai", "probe_aj",
                                                    "probe_ak", "probe_al", "probe_am", "probe_an", "probe_as",
                                                    "probe_at", "probe_au", "probe_av", "probe_aw", "probe_ax",
                                                    "probe_ay", "probe_az", "probe_ba", "probe_bb", "probe_bc",
                                                    "probe_bd", "probe_be", "probe_bf", "probe_bg", "probe_bh",
                                                    "probe_bi", "probe_bj", "probe_bk", "probe_bl", "probe_bm",
                                                    "probe_bn", "probe_bo", "probe_bp"}
    assert any(r["source"] == "probe_k" for r in rows)   # probe_k, a tuning set now, is in the examples
    for s in ("probe_l", "probe_m", "probe_r", "probe_s", "probe_t", "probe_u", "probe_v", "probe_w",
              "probe_x", "probe_y", "probe_z", "probe_aa", "probe_ai", "probe_aj", "probe_ak", "probe_an", "probe_as",
              "probe_az", "probe_bc", "probe_bd", "probe_be", "probe_bf", "probe_bg", "probe_bh", "probe_bi",
              "probe_bj", "probe_bk", "probe_bl", "probe_bm", "probe_bn", "probe_bo", "probe_bp"):
        # tuning sets from stop 26 on (probe_aa … probe_aj from stop 35, probe_ak … probe_bd from stop 44, probe_be and
        # probe_bf from stop 45, probe_bg and probe_bh from stop 46, probe_bi and probe_bj from stop 47, probe_bk and
        # probe_bl from stop 48, probe_bm and probe_bn from stop 49, probe_bo and probe_bp from stop 50): in the examples, left out when scored
        assert any(r["source"] == s for r in rows)
        assert source_of(REPO_ROOT / "examples" / s) == {s}
    assert all(r["query"] and (r["relevant"] or r["other"]) for r in rows)

    monkeypatch.setenv("MEMORIA_RECALL_EXAMPLES", "1")
    left = RecallExamples.leaving_out(TableEmbedder({}), REPO_ROOT / "examples" / "dev")
    assert left.cases and not any(c["source"] == "dev" for c in left.cases)
    assert source_of(REPO_ROOT / "examples/train/recall.jsonl") == {"train"}
    for s in ("probe_k", "probe_l", "probe_m", "probe_r", "probe_t", "probe_v"):   # scoring a readable probe: out-of-set
        left_s = RecallExamples.leaving_out(TableEmbedder({}), REPO_ROOT / "examples" / s)
        assert left_s.cases and not any(c["source"] == s for c in left_s.cases)
    for s in ("probe_o", "probe_p", "probe_q", "probe_bq", "probe_br"):   # validation / fresh: never
        assert source_of(REPO_ROOT / "examples" / s) == set() and not any(r["source"] == s for r in rows)
    assert source_of(REPO_ROOT / "examples" / "heldout") == set() and source_of(None) == set()
    got = cases_from_recall("x", [{"case_id": "c", "query": "q", "relevant": [1],
                                   "contact_facts": [{"memory_type": "t", "content": "f0"},
                                                     {"memory_type": "t", "content": "f1"}]}])
    assert got == [{"source": "x", "case_id": "c", "query": "q", "relevant": ["f1"], "relevant_types": ["t"],
                    "other": ["f0"]}]
    assert all(len(r["relevant_types"]) == len(r["relevant"]) for r in rows)   # the type prior reads them


def test_the_setting_turns_the_vote_off(monkeypatch):
    from streams.respond.recall_examples import REPO_ROOT

    monkeypatch.setenv("MEMORIA_RECALL_EXAMPLES", "0")
    assert RecallExamples.leaving_out(TableEmbedder({}), REPO_ROOT / "examples" / "dev") is None
    monkeypatch.setenv("MEMORIA_RECALL_EXAMPLES", "1")
    assert RecallExamples.leaving_out(TableEmbedder({}), None) is not None


def test_the_vote_is_on_by_default(monkeypatch):
    from streams.respond.recall_examples import REPO_ROOT
    from streams.settings import Settings

    monkeypatch.delenv("MEMORIA_RECALL_EXAMPLES", raising=False)
    assert Settings().recall_examples is True
    assert RecallExamples.leaving_out(TableEmbedder({}), REPO_ROOT / "examples" / "dev") is not None


def test_no_vote_within_the_margin():
    # (texts of their own: the examples' vectors are cached per embedder name and text)
    # the message is about as near a query the fact was relevant to as one it was not
    table = {"q pos": [1, 0, 0], "q neg": [0, 1, 0], "Sono leve demais": [0, 0, 1], "Dorme mal": [0, 0.1, 0.995],
             "msg": [0.70, 0.68, 0.2]}
    cases = [{"source": "a", "case_id": "a1", "query": "q pos", "relevant": ["Sono leve demais"], "other": []},
             {"source": "b", "case_id": "b1", "query": "q neg", "relevant": [], "other": ["Sono leve demais"]}]
    emb = TableEmbedder(table)
    msg, fact = _unit(table["msg"]), _unit(table["Dorme mal"])
    assert RecallExamples(emb, cases, tau=0.8, beta=0.1, margin=0.0).votes(msg, ["Dorme mal"], [fact])[0] > 0
    assert RecallExamples(emb, cases, tau=0.8, beta=0.1, margin=0.05).votes(msg, ["Dorme mal"], [fact]) == [0.0]
    far = _unit([0.9, 0.3, 0.2])   # clearly nearer the query the fact was relevant to: the vote stays
    assert RecallExamples(emb, cases, tau=0.8, beta=0.1, margin=0.05).votes(far, ["Dorme mal"], [fact])[0] > 0


def test_no_positive_vote_for_a_fact_about_someone_else_than_the_one_asked_about():
    emb = TableEmbedder(TABLE)
    q = TABLE["quarto sossegado hj"]
    rows = [("vinculo_social", "Tem um filho chamado Pedro", TABLE["Faz aniversário em maio"]),
            ("vinculo_social", "Casado com a Ana", TABLE["Faz aniversário em maio"]),
            ("restricao", "A Ana dorme mal com barulho", TABLE["Dorme mal com barulho"])]
    facts = [MemoryFact(id=k, memory_type=t, content=c, confidence=1.0, scope="global", source_unit_id=None,
                        embedding=v) for k, (t, c, v) in enumerate(rows)]
    ex = RecallExamples(emb, CASES, tau=0.8, beta=0.5)
    assert ex.votes(_unit(q), [rows[2][1]], [_unit(rows[2][2])])[0] > 0   # the vote alone would lift Ana's fact
    text = "o Pedro quer um quarto sossegado hj"                         # ... but the message is about Pedro
    plain = {s.fact.id: s.score for s in score_memories(q, facts, None, query_text=text)}
    voted = {s.fact.id: s.score for s in score_memories(q, facts, None, query_text=text, examples=ex)}
    assert voted[2] == plain[2]
    about_ana = "a Ana quer um quarto sossegado hj"                      # about Ana herself, the vote counts
    plain = {s.fact.id: s.score for s in score_memories(q, facts, None, query_text=about_ana)}
    voted = {s.fact.id: s.score for s in score_memories(q, facts, None, query_text=about_ana, examples=ex)}
    assert voted[2] > plain[2]


# (texts of their own: the examples' vectors are cached per embedder name and text)
TYPE_TABLE = {
    "vcs tem bolo sem ovo?": [1, 0, 0],           # labelled: asked what a restriction answers
    "tem opção sem glúten pra mim?": [0.95, 0.31, 0],
    "manda aquele de sempre": [0, 0, 1],           # labelled: asked what a preference answers
    "rola um pão sem leite hj?": [0.97, 0.1, 0.2],  # a new message, like the first two
    "Não pode comer amendoim": [0, 1, 0],           # two facts the cosine nearly ties (and no word shared)
    "Prefere entrega à tarde": [0, 1, 0.02],
}
TYPE_CASES = [
    {"source": "a", "case_id": "t1", "query": "vcs tem bolo sem ovo?", "relevant": ["Alérgica a ovo"],
     "relevant_types": ["restricao"], "other": ["Prefere bolo de cenoura"]},
    {"source": "b", "case_id": "t2", "query": "tem opção sem glúten pra mim?", "relevant": ["Celíaco"],
     "relevant_types": ["restricao"], "other": ["Gosta de pão francês"]},
    {"source": "c", "case_id": "t3", "query": "manda aquele de sempre", "relevant": ["Pede sempre o combo 2"],
     "relevant_types": ["preferencia"], "other": ["Alérgica a ovo"]},
]


def test_the_type_prior_lifts_the_kind_of_fact_such_queries_needed():
    emb = TableEmbedder({**TYPE_TABLE, **{t: [0.5, 0.5, 0.5] for c in TYPE_CASES for t in c["relevant"] + c["other"]}})
    ex = RecallExamples(emb, TYPE_CASES, type_weight=0.02)
    msg = _unit(TYPE_TABLE["rola um pão sem leite hj?"])
    restr, pref, unknown = ex.type_prior(msg, ["restricao", "preferencia", "data_comemorativa"])
    assert restr > pref                 # the nearest labelled queries needed restrictions
    assert pref >= unknown and restr < 0   # log-probabilities: a type no query needed gets the least
    assert ex.type_prior(msg[:2], ["restricao"]) == [0.0]   # a vector of another size is not read
    assert RecallExamples(emb, TYPE_CASES, type_weight=0.0).type_prior(msg, ["restricao"]) == [0.0]
    # in the ranking: two facts the cosine ties, the restriction comes first
    facts = [MemoryFact(id=k, memory_type=t, content=c, confidence=1.0, scope="global", source_unit_id=None,
                        embedding=TYPE_TABLE[c])
             for k, (t, c) in enumerate([("preferencia", "Prefere entrega à tarde"),
                                         ("restricao", "Não pode comer amendoim")])]
    q = TYPE_TABLE["rola um pão sem leite hj?"]
    assert [s.fact.id for s in score_memories(q, facts, None, query_text="rola um pão sem leite hj?")] == [0, 1]
    ranked = score_memories(q, facts, None, query_text="rola um pão sem leite hj?", examples=ex)
    assert [s.fact.id for s in ranked] == [1, 0]
    # leaving out the sets whose queries asked for restrictions leaves only the preference query
    only_c = RecallExamples(emb, TYPE_CASES, exclude_sources={"a", "b"}, type_weight=0.02)
    r2, p2 = only_c.type_prior(msg, ["restricao", "preferencia"])
    assert p2 > r2


class _Learnt:   # no vote, no type prior: only the learnt re-weighting moves the order
    def __init__(self, rerank):
        self.rerank = rerank

    def votes(self, q, contents, vectors):
        return [0.0] * len(contents)

    def type_prior(self, q, types):
        return [0.0] * len(types)


def test_the_learnt_rerank_reweighs_the_score_parts():
    """``score_memories`` adds the learnt weights × (cosine − the contact's mean, vote, type prior):
    a negative cosine weight lets a fact the message matches less come first."""
    facts = [MemoryFact(id=k, memory_type="preferencia", content=c, confidence=1.0, scope="global",
                        source_unit_id=None, embedding=v)
             for k, (c, v) in enumerate([("Gosta de vinho", [0.9, 0.436]), ("Tem sono leve", [0.5, 0.866])])]
    # no vote, no type prior (``_Learnt``): only the cosine part moves
    assert [s.fact.id for s in score_memories([1.0, 0.0], facts, None, examples=_Learnt(None))] == [0, 1]
    flipped = score_memories([1.0, 0.0], facts, None, examples=_Learnt(Rerank(np.array([-2.0, 0.0, 0.0]))))
    assert [s.fact.id for s in flipped] == [1, 0]
    assert abs(flipped[0].score - (0.5 + 2.0 * 0.2)) < 1e-3


def test_rerank_weights_are_the_fit_without_the_set_left_out(tmp_path):
    from streams.respond.recall_examples import RERANK_FEATURES, rerank_weights

    path = tmp_path / "rerank.json"
    path.write_text(json.dumps({"features": list(RERANK_FEATURES),
                                "weights": {"*": [1, 2, 3], "dev": [4, 5, 6]}}), encoding="utf-8")
    assert rerank_weights((), path).parts.tolist() == [1, 2, 3]      # the responder: every set
    assert rerank_weights({"dev"}, path).parts.tolist() == [4, 5, 6]  # scoring dev: the fit without it
    assert rerank_weights({"dev", "train"}, path) is None           # no fit without both: the hand-built score
    assert rerank_weights({"new"}, path) is None
    path.write_text(json.dumps({"features": ["other"], "weights": {"*": [1]}}), encoding="utf-8")
    assert rerank_weights((), path) is None                          # weights of other parts: unused


def test_the_shipped_rerank_has_a_fit_without_each_readable_set():
    from streams.respond.recall_examples import READABLE, RERANK_FILE

    weights = json.loads(RERANK_FILE.read_text(encoding="utf-8"))["weights"]
    assert set(weights) == set(READABLE) | {"*"}
    # cases given by hand (not the data file's memory) never take the data file's fit
    assert RecallExamples(TableEmbedder(TABLE), CASES).rerank is None
    # the shipped vectors' part was fitted with USE: another embedder reads the parts' own fit, no vectors
    table = RecallExamples(TableEmbedder(TABLE), exclude_sources={"dev"}).rerank
    assert table.parts.tolist() == weights["dev"] and table.match is None


def _two_facts(vectors, types=("preferencia", "preferencia")):
    return [MemoryFact(id=k, memory_type=t, content=f"fato {k}", confidence=1.0, scope="global",
                       source_unit_id=None, embedding=v) for k, (v, t) in enumerate(zip(vectors, types))]


def test_the_learnt_reading_of_the_vectors_reorders_the_facts():
    """``Rerank.match`` re-weighs the cosine per dimension and ``Rerank.by_type`` reads the message per
    memory type: either can put first a fact the plain cosine puts second; vectors of another size read 0."""
    q = [1.0, 1.0, 0.0]
    facts = _two_facts([[0.9, 0.0, 0.436], [0.0, 0.8, 0.6]])   # the first matches the message better
    parts = np.zeros(3)
    assert [s.fact.id for s in score_memories(q, facts, None, examples=_Learnt(Rerank(parts)))] == [0, 1]
    # the learnt cosine: the second dimension is what matters between this message and a fact
    match = Rerank(parts, np.array([0.0, 1.0, 0.0]))
    assert [s.fact.id for s in score_memories(q, facts, None, examples=_Learnt(match))] == [1, 0]
    # the learnt type prior: a message along the first two dimensions asks for a restriction
    typed = _two_facts([[0.9, 0.0, 0.436], [0.0, 0.8, 0.6]], ("preferencia", "restricao"))
    prior = Rerank(parts, np.zeros(3), {"restricao": np.array([0.5, 0.5, 0.0])})
    assert [s.fact.id for s in score_memories(q, typed, None, examples=_Learnt(prior))] == [1, 0]
    assert prior.interaction(np.ones(2) / np.sqrt(2), np.eye(2), ["restricao", "preferencia"]).tolist() == [0, 0]


def test_rerank_weights_read_the_vectors_only_for_the_embedder_they_were_fitted_with(tmp_path):
    from streams.respond.recall_examples import RERANK_FEATURES, rerank_weights

    path = tmp_path / "rerank.json"
    path.write_text(json.dumps({"features": list(RERANK_FEATURES), "embedder": "use", "types": ["restricao"],
                                "weights": {"*": [1, 2, 3], "dev": [4, 5, 6]},
                                "joint": {"*": [7, 8, 9], "dev": [10, 11, 12]}}), encoding="utf-8")
    np.savez(path.with_suffix(".npz"), **{"*/match": np.ones(4, np.float16), "*/by_type": np.full((1, 4), 2, np.float16),
                                          "dev/match": np.zeros(4, np.float16),
                                          "dev/by_type": np.zeros((1, 4), np.float16)})
    every = rerank_weights((), path, embedder="use")
    assert every.parts.tolist() == [7, 8, 9] and every.match.tolist() == [1, 1, 1, 1]
    assert every.by_type["restricao"].tolist() == [2, 2, 2, 2] and every.embedder == "use"
    assert rerank_weights({"dev"}, path, embedder="use").parts.tolist() == [10, 11, 12]
    other = rerank_weights((), path, embedder="e5")   # another model's vectors: the parts' own fit
    assert other.parts.tolist() == [1, 2, 3] and other.match is None and other.by_type == {}


def test_the_shipped_rerank_reads_the_vectors_of_its_embedder_for_every_fit():
    from streams.respond.recall_examples import READABLE, RERANK_FILE, RERANK_VECTORS, rerank_weights

    data = json.loads(RERANK_FILE.read_text(encoding="utf-8"))
    assert set(data["joint"]) == set(READABLE) | {"*"}
    with np.load(RERANK_VECTORS) as z:
        for key in data["joint"]:
            assert z[f"{key}/match"].shape == (data["dim"],)
            assert z[f"{key}/by_type"].shape == (len(data["types"]), data["dim"])
    learnt = rerank_weights({"probe_ai"}, embedder=data["embedder"])
    assert learnt.parts.tolist() == data["joint"]["probe_ai"] and learnt.match.shape == (data["dim"],)
