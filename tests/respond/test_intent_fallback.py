"""Intent with chat spelling: the dictionary on normalised text, then the
example-phrase fallback on the message's own vector (real USE embedder)."""

import asyncio

import numpy as np
import pytest

from streams.learn.fixtures import FIXTURES_DIR
from streams.respond.evaluate_intent import cross_validate, intent_accuracy, load_questions
from streams.respond.generate import OfflineComposer
from streams.respond.handler import Responder, respond
from streams.respond.intent import (
    EXAMPLE_THRESHOLD,
    IntentExamples,
    IntentResult,
    detect_intent,
    load_examples,
    refine_intent,
)
from streams.respond.model import InboxConfig
from streams.respond.text import normalize_chat
from tests.respond.fakes import BagOfWordsEmbedder, FakeKnowledge, FakeMemory, FakeStore, FixedClock, inbound


@pytest.fixture(scope="module")
def use(use_embedder):
    return use_embedder


def test_normalize_chat_spelling():
    assert normalize_chat("Qnt vcs cobram?? Blz") == "quanto voces cobram beleza"
    assert normalize_chat("q horas abre hj") == "que horas abre hoje"
    assert normalize_chat("oiiii tb quero, mto bom") == "oi tambem quero muito bom"
    # the learning flow's spellings are the responder's too (one table), minus what it reads as typed
    assert normalize_chat("qndo vcs abrem? tava pensando em ir c/ o boy amn") == \
        "quando voces abrem estava pensando em ir c o boy amanha"
    assert normalize_chat("num quarto pra dois") == "num quarto pra dois"


@pytest.mark.parametrize("text,expected", [
    ("qnt vcs cobram pra 2 pessoas?", "price_question"),
    ("a diaria sai qnto?", "price_question"),
    ("q horas vcs fecham hj?", "info_request"),
    ("vcs aceitam cheque pre datado?", "policy"),
    ("blz, pode marcar", "confirmation"),
    ("oiii bom diaaa", "greeting"),
])
def test_dictionary_reads_chat_spelling(text, expected):
    assert detect_intent(text).intent == expected


def test_inbox_keywords_are_normalised_too():
    assert detect_intent("qnto é o combo?", {"price_question": ["combo"]}).intent == "price_question"
    assert detect_intent("vcs tem rodízio?", {"info_request": ["vcs tem rodizio"]}).intent == "info_request"


@pytest.mark.parametrize("text,expected", [
    ("dá p levar o dog?", "policy"),  # no keyword; nearest example: "posso levar meu cachorro"
    ("oiee", "greeting"),
])
def test_examples_decide_what_the_dictionary_leaves_general(use, text, expected):
    assert detect_intent(text).intent == "general"
    ex = IntentExamples(use, learnt=False)
    got = refine_intent(detect_intent(text), use.embed_queries([text])[0], ex)
    assert got.intent == expected and got.matched == ("~example",) and got.score >= EXAMPLE_THRESHOLD
    learnt = refine_intent(detect_intent(text), use.embed_queries([text])[0], IntentExamples(use), text)
    assert learnt.matched == ("~learnt",) and learnt.intent != "general"
    if expected == "greeting":
        assert learnt.intent == expected
    # "dá p levar o dog?": the learnt classifier (round 5) reads it as info_request (0.40 against
    # policy 0.34), a known miss; a question is never small talk all the same
    assert learnt.intent in {expected, "info_request"}


def test_below_threshold_stays_general_and_dictionary_stays_authoritative(use):
    ex = IntentExamples(use, learnt=False)
    vec = use.embed_queries(["sussa?"])[0]     # no keyword ("eae" is a greeting's since stop 38)
    assert ex.nearest(vec)[1] < EXAMPLE_THRESHOLD
    assert refine_intent(detect_intent("sussa?"), vec, ex).intent == "general"
    # a keyword verdict is never replaced, whatever the examples say
    kw = IntentResult("price_question", 2.0, ("quanto",))
    assert refine_intent(kw, use.embed_queries(["posso levar meu cachorro"])[0], ex) is kw


def test_examples_file_has_every_intent_and_no_duplicates():
    ex = load_examples()
    assert set(ex) == {"price_question", "info_request", "policy", "objection", "greeting",
                       "confirmation", "general"}
    phrases = [p for v in ex.values() for p in v]
    assert len(phrases) == len(set(phrases)) and all(len(v) >= 10 for v in ex.values())


def test_threshold_cross_validation_and_dev_accuracy(use):
    cv = cross_validate(load_questions(FIXTURES_DIR), use, folds=5)
    assert len(cv["folds"]) == 5 and 0.2 <= cv["chosen_on_all"] <= 0.8
    print(f"intent cv: {cv}")
    assert cv["cv_accuracy"] >= 0.9
    acc = intent_accuracy(FIXTURES_DIR, use)
    assert acc["accuracy"] >= 0.9, acc


def test_handler_embeds_the_message_once_for_fallback_recall_and_knowledge():
    emb = BagOfWordsEmbedder()
    ex = IntentExamples(emb, {"policy": ["levar cachorro"], "general": ["kkkk"]}, threshold=0.5)
    deps = Responder(store=FakeStore(inbox=InboxConfig(1101, rag_distance_threshold=0.95)), memory=FakeMemory([]),
                     knowledge=FakeKnowledge(emb, [(101, "regras", "Não é permitido levar cachorro.")]),
                     memory_embedder=emb, knowledge_embedder=emb, generator=OfflineComposer(),
                     clock=FixedClock(), intent_examples=ex)
    out = asyncio.run(respond(inbound("rola levar o cachorro?"), deps))
    assert out.reply.intent == "policy" and out.reply.strategy == "required"
    assert emb.calls == 1  # the examples used the vector recall and knowledge use
    assert "cachorro" in out.reply.text


# ------------------------------------------------------ the learnt classifier
def test_learnt_classifier_is_shipped_for_the_memory_embedder(use):
    ex = IntentExamples(use)
    assert ex.learnt is not None and ex.learnt.meta["embedder"] == use.name
    assert set(ex.learnt.classes) == {"price_question", "info_request", "policy", "objection", "greeting",
                                      "confirmation", "general"}
    assert ex.learnt.meta["cv_accuracy"] >= 0.9
    # custom example phrases or another embedder: the nearest-example fallback
    assert IntentExamples(use, {"policy": ["levar cachorro"]}).learnt is None
    assert IntentExamples(BagOfWordsEmbedder()).learnt is None


def test_learnt_classifier_overrides_the_dictionary_but_not_the_inbox(use):
    ex = IntentExamples(use)
    strong = ex.learnt.strong
    vec = use.embed_queries(["posso levar meu cachorro?"])[0]
    # a verdict at or above the chosen weight and an inbox's own intent are never replaced
    decisive = IntentResult("price_question", max(strong, 3.0), ("quanto custa",))
    assert refine_intent(decisive, vec, ex, "posso levar meu cachorro?") is decisive
    custom = IntentResult("booking", 0.5, ("reserva",))
    assert refine_intent(custom, vec, ex, "posso levar meu cachorro?") is custom
    # a weak hint ("tem" alone) is weighed against the message's meaning
    weak = IntentResult("info_request", 0.5, ("tem",))
    got = refine_intent(weak, vec, ex, "posso levar meu cachorro?")
    assert got.intent == "policy" and got.matched == ("~learnt",)


def test_learnt_classifier_reads_the_dictionary_next_to_the_meaning(use):
    """docs/intent-labels.md: a discount and who it applies to is ``policy``; the dictionary's
    "tem desconto" says so too (it said ``info_request`` until issue 13's stop 30) and the classifier,
    reading the dictionary's keywords (the whole message's totals, or since stop 31 the first question's
    clause) next to the message's vector, agrees. An inbox keyword for another intent stands."""
    ex = IntentExamples(use)
    assert ex.learnt.meta["keyword_scale"] == ex.learnt.keyword_scale
    assert ex.learnt.keyword_scale > 0 or ex.learnt.clause_keyword_scale > 0
    text = "tem desconto pra quem paga no pix?"
    vec = use.embed_queries([text])[0]
    d = detect_intent(text)
    assert d.intent == "policy"
    assert refine_intent(d, vec, ex, text).intent == "policy"
    inbox = detect_intent(text, {"info_request": ["desconto"]})   # the operator's word: weight 3
    assert refine_intent(inbox, vec, ex, text) is inbox
    # this classifier needs the message's text besides its vector: calling it without is a bug
    with pytest.raises(ValueError):
        refine_intent(d, vec, ex)


def test_handler_lets_the_learnt_classifier_correct_the_dictionary(use):
    deps = Responder(store=FakeStore(inbox=InboxConfig(1101, rag_distance_threshold=2.0)), memory=FakeMemory([]),
                     knowledge=FakeKnowledge(use, [(101, "promo", "Pagamento no Pix não tem desconto.")]),
                     memory_embedder=use, knowledge_embedder=use, generator=OfflineComposer(),
                     clock=FixedClock(), intent_examples=IntentExamples(use))
    out = asyncio.run(respond(inbound("tem desconto pra quem paga no pix?"), deps))
    assert out.reply.intent == "policy"


def test_learnt_classifier_below_its_floor_keeps_the_dictionary(use):
    import numpy as np

    from streams.respond.intent import LearntIntent

    model = LearntIntent(np.zeros((3, 512), np.float32), np.zeros(3, np.float32),
                         ["general", "info_request", "policy"], strong=2.0, meta={}, floor=0.6)
    weak = IntentResult("info_request", 1.0, ("abre",))
    assert refine_intent(weak, np.ones(512), model) is weak      # a third each is below the floor
    model.bias = np.array([0.0, 0.0, 3.0], np.float32)
    assert refine_intent(weak, np.ones(512), model).intent == "policy"


@pytest.mark.slow  # retrains the classifier, its CV at the shipped settings (~2 min loaded): in `make test`, not the unit tier
def test_intent_training_reproduces_the_shipped_artefact(use):
    from streams.respond.intent import LearntIntent
    from streams.respond.train_intent import train

    shipped = LearntIntent.load()
    # the CV at the shipped point only (its accuracy there is the full grid's; the full grid's choice is
    # `train_intent --check`, ~16 min under load, past the per-test timeout)
    model = train(embedder=use, log=lambda *a: None, settings=shipped.meta, report=False)
    for k in ("cv_accuracy", "training_sha256", "C", "strong", "floor", "keyword_scale", "clause_scale",
              "neighbour_scale", "clause_keyword_scale", "embedder"):
        assert shipped.meta.get(k, 0.0 if k.endswith("_scale") else None) == model.meta[k], k
    assert np.allclose(shipped.weights, model.weights, atol=1e-2)


def test_training_refuses_the_heldout_half():
    from streams.respond.train_intent import main

    assert main(["--corpus", str(FIXTURES_DIR.parent / "heldout")]) == 2


def test_a_question_about_the_business_is_never_small_talk():
    import numpy as np

    from streams.respond.intent import LearntIntent, asks_a_question

    assert asks_a_question("o leva e traz vai ate o bairro sao jose?")
    assert asks_a_question("qual o horario de vcs")
    assert not asks_a_question("kkkk vc é robô ou gente?")
    assert not asks_a_question("meu cachorro adora vcs")
    model = LearntIntent(np.zeros((3, 4), np.float32), np.array([2.0, 1.0, 0.0], np.float32),
                         ["general", "info_request", "policy"], strong=2.0, meta={}, floor=0.0)
    none = IntentResult("general", 0.0, ())
    assert refine_intent(none, np.ones(4), model).intent == "general"           # no text: as before
    assert refine_intent(none, np.ones(4), model, "meu dog ficou lindo").intent == "general"
    assert refine_intent(none, np.ones(4), model, "vai ate o bairro sao jose?").intent == "info_request"


@pytest.mark.parametrize("text, expected", [
    ("demora qnto pra chegar o delivery?", "info_request"),      # a duration, not a price
    ("vcs tem tosa na tesoura? é mais caro?", "price_question"),  # asking, not complaining
    ("tem desconto durante a tarde?", "policy"),  # asking (a discount: docs/intent-labels.md), not complaining
    ("nossa ta caro demais", "objection"),
    ("a entrega no sabado sai mais cara?", "price_question"),      # feminine forms ask too
    ("a diaria de feriado fica mais cara?", "price_question"),
])
def test_dictionary_tells_asking_from_complaining(text, expected):
    assert detect_intent(text).intent == expected


def test_more_chat_spellings_of_question_words():
    assert normalize_chat("a broto tem qnts fatias? qtos reais?") == "a broto tem quantos fatias quantos reais"


def test_asking_for_the_cheaper_option_is_a_price_question():
    assert detect_intent("qual a suite mais barata?").intent == "price_question"
    assert detect_intent("na pizzaria do lado é bem mais barato viu").intent == "objection"


def test_evaluation_lists_intent_misses_and_tolerates_a_folder_of_questions_only(tmp_path):
    from streams.evaluation import evaluate_folder, format_misses

    (tmp_path / "questions.jsonl").write_text(
        '{"question_id": "q1", "account_id": 301, "text": "vcs aceitam cheque?", "intent": "greeting", '
        '"answerable": true, "expected_document_ids": [], "expected_answer_contains": []}\n')
    (tmp_path / "knowledge.jsonl").write_text(
        '{"document_id": "d1", "account_id": 301, "title": "Pagamento", "text": "Não aceitamos cheque."}\n')
    emb = BagOfWordsEmbedder()
    col = evaluate_folder(tmp_path, "rules", {"memory_embedder": emb, "knowledge_embedder": emb})
    assert col["intent_accuracy"] == 0.0 and "extraction_precision" not in col
    assert "[probe] intent q1 (greeting → policy)" in format_misses({"probe": col})


def test_the_readable_probes_train_the_intent_classifier_and_no_validation_or_reserved_set_does():
    """The tuning probes' questions (blind writers; probe_l and probe_m since stop 26, probe_r since stop 27)
    join the classifier's training questions; a validation (probe_o, probe_p, probe_q) or reserved set
    (heldout, probe_b, d, e, f, g) never does, even when passed by hand, so their intent figure stays out
    of sample."""
    from streams.respond.train_intent import NEVER_TRAIN, READABLE_PROBES, WRITTEN_FILES, train

    names = {p.parent.name for p in WRITTEN_FILES}
    assert set(READABLE_PROBES) <= names and not names & set(NEVER_TRAIN)
    assert {"probe_l", "probe_m", "probe_r", "probe_s", "probe_t", "probe_u", "probe_v"} <= set(READABLE_PROBES)
    assert {"probe_o", "probe_p", "probe_q", "heldout"} <= set(NEVER_TRAIN)
    for name in ("probe_o", "probe_q", "heldout"):
        with pytest.raises(ValueError):
            train(embedder=object(), log=lambda *a: None, written=[FIXTURES_DIR.parent / name / "questions.jsonl"])


@pytest.mark.parametrize("text, clause", [
    # a story in front: the question's own clause
    ("meu gato ta velhinho e com medo de tudo, vcs fazem consulta em casa?", "vcs fazem consulta em casa?"),
    # two questions: the first one
    ("vcs abrem domingo? e fecham que horas?", "vcs abrem domingo?"),
    # a greeting line, then the question, then a remark
    ("boa tarde\nposso pagar com cartao de outra pessoa?\na conta é da minha irma", "posso pagar com cartao de outra pessoa?"),
    # a short last clause takes the one before along
    ("moro perto da rodoviaria, entregam?", "moro perto da rodoviaria, entregam?"),
    # one clause, one question: the message itself (its vector is reused)
    ("qual o horario de domingo?", "qual o horario de domingo?"),
    ("queria saber o horario de domingo", "queria saber o horario de domingo"),
    # a question that is only small talk is no real question: the clause is sought after it
    ("oi tudo bem? queria saber se aceita vale refeicao", "queria saber se aceita vale refeicao"),
    ("boa tarde, tudo bem? vcs tem sauna?", "vcs tem sauna?"),
    ("oi tudo bem? 😀", "oi tudo bem?"),                          # nothing after it: small talk it is
])
def test_question_clause_is_the_clause_that_asks(text, clause):
    from streams.respond.intent import question_clause

    assert question_clause(text) == clause


def test_a_classifier_that_reads_the_clause_needs_its_vector():
    from streams.respond.intent import LearntIntent

    # weights: the message's 2 dims, then the clause's 2 dims; only the clause's first dim says "policy"
    w = np.array([[0.0, 0.0, 0.0, 0.0], [0.0, 0.0, 5.0, 0.0]], np.float32)
    model = LearntIntent(w, np.zeros(2, np.float32), ["info_request", "policy"], strong=99.0, meta={},
                         clause_scale=1.0)
    weak = IntentResult("general", 0.0, ())
    story = "meu cachorro é grandao e late muito, posso levar ele?"
    assert model.clause_for(story) == "posso levar ele?"
    assert model.clause_for("posso levar ele?") is None            # the message is its own clause
    with pytest.raises(ValueError):
        refine_intent(weak, np.zeros(2), model, story)              # the clause's vector is missing
    assert refine_intent(weak, np.zeros(2), model, story, np.array([1.0, 0.0])).intent == "policy"
    assert refine_intent(weak, np.zeros(2), model, story, np.array([0.0, 1.0])).intent == "info_request"
    # one clause: the message's vector serves as the clause's
    assert refine_intent(weak, np.array([1.0, 0.0]), model, "posso levar ele?").intent == "policy"
    assert model.probabilities(np.zeros(3), "posso levar ele?") is None  # another embedder's width


def test_intent_examples_embed_the_question_clause_themselves(use):
    ex = IntentExamples(use)
    if ex.learnt is None or (ex.learnt.clause_scale <= 0 and ex.learnt.neighbour_scale <= 0):
        pytest.skip("the shipped classifier does not read the question clause")
    text = "sabado faz 10 anos de casados e quero fazer uma surpresa, posso levar um bolo?"
    vec = use.embed_queries([text])[0]
    clause_vec = use.embed_queries([ex.clause_for(text)])[0]
    given = refine_intent(detect_intent(text), vec, ex, text, clause_vec)
    assert refine_intent(detect_intent(text), vec, ex, text) == given


def test_neighbour_similarities_average_the_nearest_references_of_each_intent():
    from streams.respond.intent import INTENTS, neighbour_similarities

    refs = np.array([[1.0, 0.0], [0.8, 0.6], [0.0, 1.0], [0.6, 0.8]], np.float32)
    labels = ["policy", "policy", "info_request", "info_request"]
    got = neighbour_similarities(np.array([1.0, 0.0]), refs, labels, k=2)[0]
    assert got[INTENTS.index("policy")] == pytest.approx((1.0 + 0.8) / 2)
    assert got[INTENTS.index("info_request")] == pytest.approx((0.0 + 0.6) / 2)
    assert got[INTENTS.index("greeting")] == 0.0                   # no reference of that intent
    # training: each reference leaves itself out (it must not see its own label)
    own = neighbour_similarities(refs, refs, labels, exclude_self=True, k=1)
    assert own[0, INTENTS.index("policy")] == pytest.approx(0.8)


def test_a_classifier_that_reads_neighbours_compares_the_question_clause(tmp_path):
    """The neighbour features are the question clause's (not the story's) similarities to the training
    clauses: a clause next to the policy ones reads policy whatever the story around it."""
    from streams.respond.intent import INTENTS, LearntIntent

    refs = np.array([[1.0, 0.0], [0.9, 0.1], [0.0, 1.0], [0.1, 0.9]], np.float32)
    labels = ("policy", "policy", "info_request", "info_request")
    # weights: the message's 2 dims, then the 7 neighbour similarities; only those decide
    w = np.zeros((2, 2 + len(INTENTS)), np.float32)
    w[0, 2 + INTENTS.index("info_request")] = 5.0
    w[1, 2 + INTENTS.index("policy")] = 5.0
    model = LearntIntent(w, np.zeros(2, np.float32), ["info_request", "policy"], strong=99.0, meta={},
                         neighbour_scale=2.0, references=refs, reference_labels=labels)
    weak = IntentResult("general", 0.0, ())
    story = "meu cachorro é grandao e late muito, posso levar ele?"
    assert model.clause_for(story) == "posso levar ele?"
    with pytest.raises(ValueError):
        refine_intent(weak, np.zeros(2), model, story)              # the clause's vector is missing
    assert refine_intent(weak, np.array([0.0, 1.0]), model, story, np.array([1.0, 0.05])).intent == "policy"
    assert refine_intent(weak, np.array([1.0, 0.0]), model, story, np.array([0.05, 1.0])).intent == "info_request"
    assert refine_intent(weak, np.array([1.0, 0.05]), model, "posso levar ele?").intent == "policy"  # one clause
    model.save(tmp_path / "m")
    back = LearntIntent.load(tmp_path / "m")
    assert back.neighbour_scale == 2.0 and back.reference_labels == labels
    assert refine_intent(weak, np.array([0.0, 1.0]), back, story, np.array([1.0, 0.05])).intent == "policy"


def test_clause_keyword_features_tell_a_price_asked_only_after_the_first_question():
    from streams.respond.intent import INTENTS, LATER_PRICE, clause_keyword_features, keyword_features

    later = clause_keyword_features("vcs fazem cremação? e qnto custa?")
    assert later[-1] == LATER_PRICE
    np.testing.assert_array_equal(later[:-1], keyword_features("vcs fazem cremação?"))  # the first question's words
    assert later[INTENTS.index("price_question")] == 0.0
    assert clause_keyword_features("qnto custa a cremação? e demora?")[-1] == 0.0      # the price comes first
    assert clause_keyword_features("vcs fazem cremação? tenho um gato")[-1] == 0.0     # no price after it
    assert clause_keyword_features("qnto custa a cremação?")[-1] == 0.0                 # one question


def test_a_classifier_that_reads_clause_keywords_weighs_a_later_price(tmp_path):
    """With ``clause_keyword_scale`` the question clause's keyword features come last; here only the
    later-price flag decides: a price asked after an info question reads info_request."""
    from streams.respond.intent import INTENTS, LearntIntent

    w = np.zeros((2, 2 + 2 * len(INTENTS) + 1), np.float32)
    w[0, -1] = 1.0                                                  # the later-price flag: info_request
    b = np.array([0.0, 1.0], np.float32)                           # otherwise price
    model = LearntIntent(w, b, ["info_request", "price_question"], strong=99.0, meta={}, clause_keyword_scale=0.5)
    weak = IntentResult("general", 0.0, ())
    assert model.clause_for("vcs fazem cremação? e qnto custa?") is None   # no clause vector needed
    assert refine_intent(weak, np.zeros(2), model, "vcs fazem cremação? e qnto custa?").intent == "info_request"
    assert refine_intent(weak, np.zeros(2), model, "qnto custa a cremação?").intent == "price_question"
    assert model.probabilities(np.zeros(3), "qnto custa a cremação?") is None  # another embedder's width
    model.save(tmp_path / "m")
    assert LearntIntent.load(tmp_path / "m").clause_keyword_scale == 0.5


def test_a_question_the_classifier_reads_as_small_talk_stays_general_and_an_amount_is_a_price(use):
    """A question is never small talk unless the classifier is sure of it (``GENERAL_STANDS``: the weather, the
    agent's day); a first question asking an amount is a price question whatever the classifier says."""
    from streams.respond.intent import GENERAL_STANDS

    ex = IntentExamples(use)
    weather = "nossa choveu mt ai hj? aqui alagou td kkkk"
    vec = use.embed_queries([weather])[0]
    p = ex.learnt.probabilities(vec, weather, detect_intent(weather),
                                use.embed_queries([ex.clause_for(weather)])[0] if ex.clause_for(weather) else None)
    assert p[ex.learnt.classes.index("general")] >= GENERAL_STANDS
    assert refine_intent(detect_intent(weather), vec, ex, weather).intent == "general"
    fine = "quanto é a multa se eu cancelar em cima da hora?"
    got = refine_intent(detect_intent(fine), use.embed_queries([fine])[0], ex, fine)
    assert got.intent == "price_question" and "~amount" in got.matched
    # the operator's own word still stands
    inbox = detect_intent(fine, {"policy": ["em cima da hora"]})
    assert refine_intent(inbox, use.embed_queries([fine])[0], ex, fine) is inbox


def test_the_handler_lets_the_form_decide_without_embedding_the_question_clause(use):
    """"oi boa noite, quanto é a multa se eu cancelar?": the amount asked decides (``intent_by_form``); the message is
    embedded once for retrieval, its question clause ("quanto é a multa se eu cancelar?") never."""
    seen: list[str] = []

    class Recording:
        name, dim = use.name, use.dim

        def embed_queries(self, texts):
            seen.extend(texts)
            return use.embed_queries(texts)

        def embed_passages(self, texts):
            return use.embed_passages(texts)

    emb = Recording()
    deps = Responder(store=FakeStore(inbox=InboxConfig(1101, rag_distance_threshold=2.0)), memory=FakeMemory([]),
                     knowledge=FakeKnowledge(emb, [(101, "regras", "Cancelamento com menos de 24 horas: multa de R$ 50,00.")]),
                     memory_embedder=emb, knowledge_embedder=emb, generator=OfflineComposer(),
                     clock=FixedClock(), intent_examples=IntentExamples(use))
    text = "oi boa noite, quanto é a multa se eu cancelar?"
    assert IntentExamples(use).clause_for(text) == "quanto é a multa se eu cancelar?"
    out = asyncio.run(respond(inbound(text), deps))
    assert out.reply.intent == "price_question"
    assert text in seen and "quanto é a multa se eu cancelar?" not in seen


def test_a_thing_asked_for_before_its_price_is_an_info_request():
    """"vcs fazem limpeza de tartaro? qnto custa?": the first real question asks whether it is offered, the price
    follows (docs/intent-labels.md); a rule asked first ("tem desconto pra estudante? qnto custa?") is not this."""
    from streams.respond.intent import INFO, asks_if_offered_then_price, detect_intent, intent_by_form

    text = "vcs fazem limpeza de tartaro? qnto custa?"
    assert asks_if_offered_then_price(text)
    assert intent_by_form(detect_intent(text), text).intent == INFO
    assert not asks_if_offered_then_price("tem desconto pra estudante? qnto custa?")
    assert not asks_if_offered_then_price("qnto custa a limpeza de tartaro?")
    assert not asks_if_offered_then_price("vcs fazem limpeza de tartaro?")
    # the price is what follows the first question, not a word of it
    assert not asks_if_offered_then_price("vcs tem aquele quanto custa da tabela? e abre domingo?")
    assert asks_if_offered_then_price("oi, vcs tem pizza vegana? qnto é a grande")


@pytest.mark.parametrize("text, objects", [
    ("hmm taxa de 10 reais pra entregar... vou pensar", True),        # a fee named, the decision put off
    ("nossa 790 pra castrar a cadela? vou pensar", True),            # the price echoed as a question first
    ("putz deixa eu falar c meu marido antes", True),
    ("hmm vou ver com o pessoal aqui e te falo, ta salgado", True),
    ("vou pensar, mas tem desconto no pix?", False),                  # a question follows the hesitation
    ("qnto fica a coral pernoite? vou pensar", False),                # an amount asked: a price question
    ("pode ser, vou pensar no sabor ainda", False),                   # a choice thought over
    ("to a pensar levar a minha mulher, qnto ta a coral?", False),
])
def test_putting_the_decision_off_is_an_objection(text, objects):
    """Stop 41 (probe_aw, probe_ax): "vou pensar", "deixa eu ver com a patroa" put the decision off: an objection
    whatever fee the message names (44 of 44 such tuning messages), unless a question follows or an amount is asked."""
    from streams.respond.intent import OBJECTION, detect_intent, intent_by_form, puts_off

    formed = intent_by_form(detect_intent(text), text)
    assert ((formed is not None and formed.intent == OBJECTION)) == objects
    if text.startswith("qnto"):
        assert puts_off(text) and formed.intent != OBJECTION    # asks_an_amount decides first
