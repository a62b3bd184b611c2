import asyncio
import json
import time
from uuid import uuid4

from streams.respond.generate import FALLBACK_LOOP, FALLBACK_NO_KNOWLEDGE, GREETING_REPLY, OfflineComposer
from streams.respond.handler import Responder, reply_id_for, respond
from streams.respond.lead import MAX_LEAD_STATE_BYTES
from streams.respond.model import Generation, InboxConfig
from streams.respond.recall import MemoryFact
from tests.respond.fakes import (
    AsyncSlowMemory,
    BagOfWordsEmbedder,
    FakeKnowledge,
    FakeMemory,
    FakeStore,
    FixedClock,
    inbound,
)

DOCS = [(101, "precos", "O pernoite na suíte Luxo custa R$ 240 e na Master custa R$ 450."),
        (101, "regras", "Cancelamento com menos de 24 horas converte o sinal em crédito."),
        (102, "precos-outra-conta", "O pernoite na suíte Luxo custa R$ 999.")]


def make(memory=None, store=None, generator=None, budget=0.5, **store_kw):
    emb = BagOfWordsEmbedder()
    facts = [MemoryFact(1, "preferencia", "Prefere a suíte Master com piscina", 0.9, "global", None, 1.0,
                        emb.embed_passages(["suíte master pernoite"])[0]),
             MemoryFact(2, "reclamacao", "Portão da unidade 12 demora", 0.8, "unit", 12, 1.0,
                        emb.embed_passages(["pernoite suíte"])[0]),
             MemoryFact(3, "restricao", "Alérgico a frutos do mar", 0.9, "global", None, 1.0, None)]
    store = store or FakeStore(**store_kw)
    deps = Responder(store=store, memory=memory if memory is not None else FakeMemory(facts),
                     knowledge=FakeKnowledge(emb, DOCS), memory_embedder=emb, knowledge_embedder=emb,
                     generator=generator or OfflineComposer(), clock=FixedClock(), recall_budget_s=budget)
    return deps, store, emb


def run(coro):
    return asyncio.run(coro)


def test_price_question_grounded_reply_with_memory_and_unit_scope():
    deps, store, emb = make(inbox=InboxConfig(1101, rag_distance_threshold=0.9))
    out = run(respond(inbound("Quanto custa o pernoite na suíte Luxo?", unit_id=11), deps))
    r = out.reply
    assert r.intent == "price_question" and r.strategy == "required"
    assert "R$ 240" in r.text and "999" not in r.text  # other account's chunk never seen
    assert r.memory_ids == [1]  # unit-12 fact excluded in a unit-11 conversation; fact 3 has no embedding
    assert r.chunk_ids and r.degraded == [] and r.in_reply_to == "wamid.1"
    assert r.reply_id == reply_id_for(inbound("x"))
    assert "memória" not in r.text.lower()
    assert emb.calls == 1  # embedded once, reused for knowledge
    assert store.replies == [r] and store.lead_state["stage"] == "cotacao"
    assert store.lead_state["retrieval_count"] == 1


def test_duplicate_message_gets_no_reply():
    deps, store, _ = make(inbox=InboxConfig(1101, rag_distance_threshold=0.9))
    assert run(respond(inbound("Quanto custa o pernoite?"), deps)) is not None
    assert run(respond(inbound("Quanto custa o pernoite?"), deps)) is None
    assert len(store.replies) == 1


def test_required_retrieval_without_hits_uses_fallback():
    deps, store, _ = make(inbox=InboxConfig(1101, rag_distance_threshold=0.01))
    out = run(respond(inbound("Vocês têm karaokê nas suítes? Qual o preço?"), deps))
    assert out.reply.text == FALLBACK_NO_KNOWLEDGE and out.reply.chunk_ids == []


def test_loop_protection_after_five_retrievals():
    deps, store, _ = make(inbox=InboxConfig(1101, rag_distance_threshold=0.9))
    texts = []
    for k in range(7):
        out = run(respond(inbound("Quanto custa o pernoite na Luxo?", message_id=f"m{k}"), deps))
        texts.append(out.reply.text)
    assert all("R$ 240" in t for t in texts[:5])
    assert texts[5] == texts[6] == FALLBACK_LOOP
    assert deps.knowledge.calls == 5
    assert "retrieval_limit" in out.reply.degraded
    # greetings still work after the limit
    assert run(respond(inbound("Oi", message_id="m-greet"), deps)).reply.text.startswith(GREETING_REPLY)


def test_recall_sleeping_past_the_budget_is_abandoned_within_budget():
    deps, store, _ = make(memory=FakeMemory(sleep_s=1.2), budget=0.3,
                          inbox=InboxConfig(1101, rag_distance_threshold=0.9))
    out = run(respond(inbound("Quanto custa o pernoite na Luxo?"), deps))
    # asyncio.run waits for the default executor at shutdown, so time the reply itself
    assert out.total_ms < 800, out.total_ms
    assert out.reply.degraded == ["recall_timeout"] and out.reply.memory_ids == []
    assert "R$ 240" in out.reply.text
    assert deps.memory.calls[0][2] == 0.3  # the budget is passed down to the port


def test_async_recall_port_is_really_cancelled():
    slow = AsyncSlowMemory(sleep_s=2.0)
    deps, store, _ = make(memory=slow, budget=0.2, inbox=InboxConfig(1101, rag_distance_threshold=0.9))
    t = time.perf_counter()
    out = run(respond(inbound("Oi"), deps))
    assert time.perf_counter() - t < 1.0
    assert slow.cancelled and out.reply.degraded == ["recall_timeout"]


def test_recall_error_degrades_and_flag_off_skips_recall():
    deps, _, _ = make(memory=FakeMemory(fail=True), inbox=InboxConfig(1101, rag_distance_threshold=0.9))
    out = run(respond(inbound("Quanto custa o pernoite na Luxo?"), deps))
    assert out.reply.degraded == ["recall_error"] and "R$ 240" in out.reply.text
    deps, _, emb = make(recall_enabled=False)
    out = run(respond(inbound("Ok, obrigado!"), deps))
    assert deps.memory.calls == [] and out.recall_ms is None and emb.calls == 0
    assert out.reply.strategy == "none"


class LyingGenerator:
    def generate(self, request):
        return Generation(text="Fica R$ 123 o pernoite.", model="fake", provider="fake")


class BrokenGenerator:
    def generate(self, request):
        raise TimeoutError("llm down")


def test_ungrounded_price_and_generation_error_fall_back():
    deps, _, _ = make(generator=LyingGenerator(), inbox=InboxConfig(1101, rag_distance_threshold=0.9))
    out = run(respond(inbound("Quanto custa o pernoite na Luxo?"), deps))
    assert out.reply.text == FALLBACK_NO_KNOWLEDGE and "ungrounded_price" in out.reply.degraded
    deps, _, _ = make(generator=BrokenGenerator(), inbox=InboxConfig(1101, rag_distance_threshold=0.9))
    out = run(respond(inbound("Quanto custa o pernoite na Luxo?"), deps))
    assert out.reply.text == FALLBACK_NO_KNOWLEDGE and out.reply.degraded == ["generation_error"]


def test_lead_state_stays_under_4kb_and_prompt_gets_it():
    seen = {}

    class Spy(OfflineComposer):
        def generate(self, request):
            seen["sys"] = request.messages[0]["content"]
            return super().generate(request)

    deps, store, _ = make(generator=Spy(), lead_state={"stage": "abertura", "blob": "x" * 9000},
                          inbox=InboxConfig(1101, rag_distance_threshold=0.9))
    run(respond(inbound("Quanto custa o pernoite na Luxo?"), deps))
    assert len(json.dumps(store.lead_state, ensure_ascii=False).encode()) <= MAX_LEAD_STATE_BYTES
    assert "<estado_lead>" in seen["sys"] and "<memoria_cliente>" in seen["sys"]


def test_only_a_heading_found_brings_the_chunks_with_most_of_the_words():
    from uuid import NAMESPACE_URL as NS
    from uuid import uuid5

    from streams.respond.handler import _as_chunk, _most_words, lexical_stems
    from streams.respond.text import fold

    heading = (uuid5(NS, "h"), uuid5(NS, "d"), 0.5, "# Banho & Tosa")
    texts = ["Adicionais: Corte de unhas avulso: R$ 20,00. Hidratação: R$ 30,00.",
             "Tosa higiênica: R$ 40,00."]

    def lexical(account_id, stems, limit):
        return [(uuid5(NS, t), uuid5(NS, "d"), 1.0, t) for t in texts
                if all(any(w.startswith(s) for w in fold(t).split()) for s in stems)][:limit]

    msg = inbound("cortam a unha avulso? qnto")
    stems = lexical_stems(msg.text)
    assert not lexical(101, stems, 10)          # no chunk holds every word ("cortam" / "corte")
    got = asyncio.run(_most_words(msg, msg.text, stems, [_as_chunk(heading)], lexical, 3))
    assert [c.text for c in got] == [texts[0]]


def test_a_word_of_the_question_may_be_in_a_chunk_by_another_name():
    from streams.respond.handler import _named_otherwise, lexical_stems, lexically_sure

    msg = "minha gata precisa de banho, qnto fica"
    assert ["banho", "gato"] in _named_otherwise(msg, lexical_stems(msg))
    assert lexically_sure(msg, "Gatos: banho R$ 90,00, somente com hora marcada.")
    assert not lexically_sure(msg, "Gatos: banho somente com hora marcada.")   # a price is asked


def test_rerank_counts_a_word_the_chunk_names_by_another_name():
    """"vcs fazem atendimento em casa?": the chunk saying "atendimento domiciliar" names "em casa" by its
    other name (``phrase_forms``) and goes before a nearer chunk where "casa" is only where the pet
    goes back to."""
    from uuid import uuid4

    from streams.respond.handler import rerank
    from streams.respond.model import KnowledgeChunk

    near = KnowledgeChunk(uuid4(), uuid4(), 0.64, "Atendemos com hora marcada; depois da consulta o pet volta para casa.")
    far = KnowledgeChunk(uuid4(), uuid4(), 0.70, "Não fazemos atendimento domiciliar: as consultas são na clínica.")
    other = KnowledgeChunk(uuid4(), uuid4(), 0.62, "Aceitamos Pix e cartão de crédito.")
    assert rerank("vcs fazem atendimento em casa?", [near, other, far])[0] == far
    # a single word's wider kind ("gato" → "pet", "animal") is no other name of it here: most chunks name it
    from streams.respond.compose import phrase_forms

    assert phrase_forms("vcs fazem atendimento em casa?") == {"casa": {"domic"}}
    assert phrase_forms("o hotel aceita gato?") == {}


def test_the_cheapest_of_a_kind_brings_the_chunk_of_that_item_when_the_search_missed_it():
    from uuid import NAMESPACE_URL as NS
    from uuid import uuid5

    from streams.respond.handler import _as_chunk, _extreme_of_kind
    from streams.respond.text import fold

    found = (uuid5(NS, "k"), uuid5(NS, "kits"), 0.4, "# Kits\n\n- **Kit Festa** — R$ 250,00: bolo e balões, na suíte.")
    suites = ["- **Suíte Mar**: ofurô. 2h: R$ 140,00 · Pernoite: R$ 300,00.",
              "- **Suíte Sol**: cama king. 2h: R$ 90,00 · Pernoite: R$ 210,00.",
              "- **Suíte Lua**: sauna. 2h: R$ 120,00 · Pernoite: R$ 260,00."]

    def lexical(account_id, stems, limit):
        return [(uuid5(NS, t), uuid5(NS, "suites"), 1.0, t) for t in suites + [found[3]]
                if all(any(w.startswith(s) for w in fold(t).split()) for s in stems)][:limit]

    msg = inbound("qual a suite mais baratinha? to sem grana")
    got = asyncio.run(_extreme_of_kind(msg, "qual a suite mais baratinha?", [_as_chunk(found)], lexical, 3))
    # the answer's chunk holds no other suite to compare it with: the next compared item's chunk comes second
    assert [c.text for c in got] == [suites[1], suites[0], found[3]]
    # not a superlative: the chunks are left as they were
    same = asyncio.run(_extreme_of_kind(msg, "a suite sol é mais barata que a lua?", [_as_chunk(found)], lexical, 3))
    assert [c.text for c in same] == [found[3]]


def test_an_item_only_mentioned_inside_another_items_line_brings_its_own_line():
    from uuid import NAMESPACE_URL as NS
    from uuid import uuid5

    from streams.respond.handler import _as_chunk, _named_item_line
    from streams.respond.text import fold

    ouro = (uuid5(NS, "o"), uuid5(NS, "planos"), 0.3, "- **Plano Ouro**: tudo o que o Prata tem, mais banho. Mensal: R$ 180,00.")
    other = (uuid5(NS, "x"), uuid5(NS, "faq"), 0.4, "Aceitamos Pix e cartão.")
    texts = ["Consultas: o Prata e o Ouro cobrem vacinas.",           # mentions Prata, not its line
             "- **Plano Prata**: consulta e vacinas. Mensal: R$ 120,00."]

    def lexical(account_id, stems, limit):
        return [(uuid5(NS, t), uuid5(NS, "planos"), 1.0, t) for t in texts
                if all(any(w.startswith(s) for w in fold(t).split()) for s in stems)][:limit]

    msg = inbound("qual a diferença do prata pro ouro?")
    got = asyncio.run(_named_item_line(msg, msg.text, [_as_chunk(ouro), _as_chunk(other)], lexical, 2))
    assert [c.text for c in got] == [ouro[3], texts[1]]
    # a name the question does not say brings nothing
    msg = inbound("quanto custa o ouro?")
    got = asyncio.run(_named_item_line(msg, msg.text, [_as_chunk(ouro), _as_chunk(other)], lexical, 2))
    assert [c.text for c in got] == [ouro[3], other[3]]


def test_recall_votes_with_the_responders_labelled_examples():
    class Vote:  # the labelled examples' port: it gets the message's vector and every live fact
        def __init__(self):
            self.seen = []

        def votes(self, q, contents, vectors):
            self.seen.append(list(contents))
            return [1.0 if c == "Prefere a suíte Master com piscina" else 0.0 for c in contents]

        def type_prior(self, q, types):   # what kinds of fact such queries needed: none here
            return [0.0] * len(types)

    deps, _, _ = make(inbox=InboxConfig(1101, rag_distance_threshold=0.9))
    plain = run(respond(inbound("Quanto custa o pernoite na suíte Luxo?", unit_id=12), deps)).reply.memory_ids
    deps.recall_examples = Vote()
    voted = run(respond(inbound("Quanto custa o pernoite na suíte Luxo?", unit_id=12, message_id="m2"), deps))
    assert plain[0] == 2 and voted.reply.memory_ids[0] == 1   # the vote put the preference first
    assert deps.recall_examples.seen and "Alérgico a frutos do mar" not in deps.recall_examples.seen[0]


class GuessingIntent:
    """A learnt classifier that reads every message the dictionary leaves open as ``policy``."""

    model = "bow"

    def decides(self, detected):
        return detected.intent == "general"

    def classify(self, vector, exclude=None, text=None, detected=None):
        from streams.respond.intent import IntentResult

        return IntentResult("policy", 0.6, ("~learnt",))


class RecordingGenerator:
    def __init__(self):
        self.requests = []

    def generate(self, request):
        self.requests.append(request)
        return Generation(text="Combinado, te esperamos!", model="fake", provider="fake")


def test_a_guessed_intent_that_finds_no_knowledge_does_not_drop_the_model_and_the_memory():
    """A wish the classifier alone reads as policy ("Quero ir aí hoje à noite, na suíte Stilo de
    sempre"), with no chunk past the threshold, is answered as a general read is: the model is
    called with the customer's memory, not handed over. A question that finds nothing still is."""
    emb = BagOfWordsEmbedder()
    fact = MemoryFact(7, "preferencia", "Prefere a suíte Stilo", 0.9, "global", None, 1.0,
                      emb.embed_passages(["suíte Stilo de sempre"])[0])
    gen, store = RecordingGenerator(), FakeStore(inbox=InboxConfig(1101, rag_distance_threshold=0.01))
    deps = Responder(store=store, memory=FakeMemory([fact]), knowledge=FakeKnowledge(emb, DOCS),
                     memory_embedder=emb, knowledge_embedder=emb, generator=gen, clock=FixedClock(),
                     intent_examples=GuessingIntent())
    out = run(respond(inbound("Quero ir aí hoje à noite, na suíte Stilo de sempre"), deps))
    assert out.reply.intent == "policy" and out.reply.chunk_ids == []   # the reading is recorded as it was
    assert out.reply.text == "Combinado, te esperamos!" and out.reply.memory_ids == [7]
    assert len(gen.requests) == 1 and gen.requests[0].intent == "general"
    assert [m.fact.id for m in gen.requests[0].memories] == [7]
    assert out.reply.strategy == "optional" and out.reply.degraded == []
    # a question the classifier reads as policy and the knowledge does not answer: handed over, no call
    out = run(respond(inbound("Vocês têm karaokê nas suítes?", message_id="wamid.2"), deps))
    assert out.reply.text == FALLBACK_NO_KNOWLEDGE and len(gen.requests) == 1
    # the offline composer, on the same wish, answers as it answers a general message
    deps.generator = OfflineComposer()
    out = run(respond(inbound("Quero ir aí hoje à noite, na suíte Stilo de sempre", message_id="wamid.3"), deps))
    assert out.reply.text != FALLBACK_NO_KNOWLEDGE


def test_knowledge_is_required_for_a_question_or_a_keyword_verdict_not_for_a_guess_on_a_statement():
    from streams.respond.intent import IntentResult
    from streams.respond.strategy import knowledge_required

    guess = IntentResult("policy", 0.6, ("~learnt",))
    assert not knowledge_required(guess, "Quero ir aí hoje à noite, na suíte Stilo de sempre")
    assert not knowledge_required(IntentResult("info_request", 0.5, ("~example",)), "vou levar meu cachorro amanhã")
    assert knowledge_required(guess, "vcs tem karaoke na suite?")            # a question mark
    assert knowledge_required(guess, "qual a senha do wifi")                 # a question word
    assert knowledge_required(IntentResult("policy", 2.0, ("cancelamento",)), "sobre o cancelamento")  # a keyword
    assert knowledge_required(guess, "quero a suite stilo", decided=True)    # the acts step named it


def _words_search(texts):
    from uuid import NAMESPACE_URL as NS
    from uuid import uuid5

    from streams.respond.text import fold

    def lexical(account_id, stems, limit):
        return [(uuid5(NS, t), uuid5(NS, "d"), 1.0, t) for t in texts
                if all(any(w.startswith(s) for w in fold(t).split()) for s in stems)][:limit]
    return lexical


def test_a_place_asked_of_a_service_finds_the_list_chunk_that_names_it():
    """A coverage list cut from its service's name by the chunker ("# Entrega de compras" … then
    "**Bairros atendidos** - Loja Norte: Centro, Morro Azul…"): "a entrega vai no morro azul?" finds no
    chunk naming both words; the chunk that writes the place as a name is brought. One word of two is
    never enough when the knowledge writes it as a common word ("posso levar meu som?")."""
    from streams.respond.handler import _as_chunk, _most_words, lexical_stems

    service = "# Entrega de compras\n\nEntregamos suas compras em casa. Taxa: R$ 12,00."
    places = "**Bairros atendidos** - Loja Norte: Centro, Morro Azul, Vila Rica e Lagoa."
    suite = "Suíte Safira: banheira e som ambiente. 2h: R$ 120,00."
    lexical = _words_search([service, places, suite])
    msg = inbound("a entrega vai no morro azul?")
    stems = lexical_stems(msg.text)
    assert len(stems) >= 2 and not lexical(101, stems, 10)
    got = asyncio.run(_most_words(msg, msg.text, stems, [], lexical, 3))
    assert places in [c.text for c in got]
    msg = inbound("posso levar minha caixa de som?")
    got = asyncio.run(_most_words(msg, msg.text, lexical_stems(msg.text), [], lexical, 3))
    assert suite not in [c.text for c in got]
    # a price asked by a second question does not bar the chunk answering the first
    msg = inbound("a entrega vai na vila rica? e qnto fica")
    got = asyncio.run(_most_words(msg, msg.text, lexical_stems(msg.text), [_as_chunk(
        (uuid4(), uuid4(), 0.5, "Banho: R$ 50,00."))], lexical, 3))
    assert places in [c.text for c in got]


def test_chunks_naming_nothing_asked_are_searched_again_by_the_question_s_words():
    from streams.respond.handler import _names_nothing_asked
    from streams.respond.model import KnowledgeChunk

    table = KnowledgeChunk(uuid4(), uuid4(), 0.5, "Banho pequeno porte: R$ 50,00. Banho grande porte: R$ 80,00.")
    places = KnowledgeChunk(uuid4(), uuid4(), 0.7, "Bairros atendidos: Centro, Morro Azul e Lagoa.")
    assert _names_nothing_asked("a entrega vai no morro azul? e qnto fica", [table])
    assert not _names_nothing_asked("a entrega vai no morro azul? e qnto fica", [places])


def test_a_phrase_whose_other_name_no_chunk_writes_is_searched_by_that_name():
    """"a fisio vem aqui em casa? meu avô não anda": the retrieved chunks say "casa" only where the
    patient goes back to; the knowledge names the customer's phrase "em casa" otherwise ("domiciliar",
    ``phrase_forms``), so that name is searched and its chunk takes the last place, even in a long
    message with many words no chunk names; the bare word "casa" is not searched again."""
    from uuid import NAMESPACE_URL as NS
    from uuid import uuid5

    from streams.respond.compose import answer_units, unnamed_phrases
    from streams.respond.handler import _as_chunk, _cover_missing_word_steps, _steps_here
    from streams.respond.text import fold

    home = "Não oferecemos sessões domiciliares: todo o tratamento é feito no consultório."
    rest = "Casa de repouso conveniada: 10% de desconto nas sessões."
    near = [_as_chunk((uuid5(NS, t), uuid5(NS, "d"), 0.6, t)) for t in (
        "Depois da sessão o paciente volta para casa com os exercícios impressos.",
        "Aceitamos Pix e cartão de débito.")]

    def lexical(account_id, stems, limit):
        return [(uuid5(NS, t), uuid5(NS, "d"), 1.0, t) for t in (home, rest)
                if all(any(w.startswith(s) for w in fold(t).split()) for s in stems)][:limit]

    units = [u for c in near for u in answer_units(c.text)]
    assert unnamed_phrases("a fisio vem aqui em casa?", units) == {"casa"}
    assert unnamed_phrases("a fisio vem aqui em casa?", answer_units(home)) == set()
    assert unnamed_phrases("a fisio vem aqui?", units) == set()   # no phrase with another name
    for text in ("a fisio vem aqui em casa?",
                 "bom dia moça meu avô operou o joelho semana passada e ta sem andar direito, mora sozinho "
                 "no terceiro andar sem elevador, a fisio vem aqui em casa?"):
        got = _steps_here(_cover_missing_word_steps(inbound(text), list(near), lexical, 3))
        assert [c.text for c in got] == [near[0].text, near[1].text, home], text
