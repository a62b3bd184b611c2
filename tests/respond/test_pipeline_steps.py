"""The responder's steps one at a time (receive → plan → gather → compose → record),
over the in-memory ports of ``fakes.py``: no service, the unit tier."""

import asyncio
import uuid
from dataclasses import dataclass

from streams.respond.acts import Act
from streams.respond.generate import FALLBACK_LOOP, FALLBACK_NO_KNOWLEDGE, OfflineComposer
from streams.respond.handler import (
    Composed,
    Gathered,
    MessageVector,
    Plan,
    Responder,
    compose,
    gather,
    plan,
    receive,
    record,
    reply_id_for,
)
from streams.respond.intent import IntentResult
from streams.respond.model import ConversationContext, Generation, InboxConfig, KnowledgeChunk
from streams.respond.recall import MemoryFact
from streams.respond.strategy import decide
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
        (102, "outra-conta", "O pernoite na suíte Luxo custa R$ 999.")]
PRICE_Q = "Quanto custa o pernoite na suíte Luxo?"


def deps_for(memory=None, knowledge=None, generator=None, acts=None, examples=None, budget=0.5,
             knowledge_embedder=None, **store_kw):
    emb = BagOfWordsEmbedder()
    facts = [MemoryFact(1, "preferencia", "Prefere a suíte Master", 0.9, "global", None, 1.0,
                        emb.embed_passages(["suíte master pernoite"])[0])]
    return Responder(store=FakeStore(**store_kw), memory=memory if memory is not None else FakeMemory(facts),
                     knowledge=knowledge if knowledge is not None else FakeKnowledge(emb, DOCS),
                     memory_embedder=emb, knowledge_embedder=knowledge_embedder or emb,
                     generator=generator or OfflineComposer(), clock=FixedClock(), recall_budget_s=budget,
                     acts=acts, intent_examples=examples)


def ctx_of(recall=True, retrievals=0, threshold=0.9) -> ConversationContext:
    return ConversationContext(recall_enabled=recall, inbox=InboxConfig(1101, rag_distance_threshold=threshold),
                               retrieval_count=retrievals)


def run(coro):
    return asyncio.run(coro)


# ------------------------------------------------------------------ receive
def test_receive_reads_the_context_once_and_refuses_duplicates_and_reactions():
    deps = deps_for(recall_enabled=False)
    ctx = run(receive(inbound("oi"), deps))
    assert ctx is not None and ctx.recall_enabled is False
    assert run(receive(inbound("oi"), deps)) is None                      # the same message id again
    assert run(receive(inbound("👍", message_id="r1", message_type="reaction"), deps)) is None
    assert "r1" in deps.store.seen and deps.store.replies == []           # stored, never answered


# ------------------------------------------------------------------ plan
def test_plan_price_question_retrieves_and_embeds_once():
    deps = deps_for()

    async def go():
        p = await plan(inbound(PRICE_Q), ctx_of(), deps)
        vec = await p.vector.get()
        again = await p.vector.get()
        p.close()
        return p, vec, again

    p, vec, again = run(go())
    assert p.intent.intent == "price_question" and p.strategy.retrieval == "required"
    assert p.retrieve and not p.over_limit and p.degraded == []
    assert vec is again and deps.memory_embedder.calls == 1


def test_plan_greeting_without_recall_embeds_nothing():
    deps = deps_for()

    async def go():
        return await plan(inbound("Oi, boa noite!"), ctx_of(recall=False), deps)

    p = run(go())
    assert p.strategy.retrieval == "none" and not p.retrieve and p.vector is None
    assert deps.memory_embedder.calls == 0


def test_plan_over_the_retrieval_limit_does_not_retrieve():
    deps = deps_for()
    p = run(plan(inbound(PRICE_Q), ctx_of(recall=False, retrievals=deps.max_retrievals), deps))
    assert p.over_limit and not p.retrieve


@dataclass
class FakeActs:
    act: Act | None
    seen: list = None

    async def before_reply(self, msg, ctx, intent):
        self.seen = [msg.message_id, intent]
        return self.act


def test_plan_keeps_what_the_acts_step_said():
    silent = run(plan(inbound(PRICE_Q), ctx_of(), deps_for(acts=FakeActs(Act(suppress=True)))))
    assert silent.act.suppress and silent.vector is None  # nothing embedded for a message not answered
    text = run(plan(inbound("apaga tudo"), ctx_of(), deps_for(acts=FakeActs(Act(text="Feito.")))))
    assert text.act.text == "Feito." and text.vector is None
    acts = FakeActs(Act(intent="booking_status", degraded=("tool_slow",)))
    p = run(plan(inbound("cadê minha reserva?"), ctx_of(recall=False), deps_for(acts=acts)))
    assert acts.seen == ["wamid.1", "general"]
    assert p.intent.intent == "booking_status" and p.degraded == ["tool_slow"]
    assert p.strategy == decide("booking_status")


class NearestExample:
    """The example-phrase fallback: says ``policy`` for any vector."""

    def __init__(self, model):
        self.model, self.vectors = model, []

    def decides(self, detected):
        return detected.intent == "general"

    def classify(self, vector, exclude=None, text=None, detected=None):
        self.vectors.append(vector)
        return IntentResult("policy", 0.9, ("example",))


def test_plan_general_asks_the_examples_with_the_one_vector():
    emb_deps = deps_for()
    examples = NearestExample(emb_deps.memory_embedder.name)
    deps = deps_for(examples=examples)
    deps.memory_embedder = deps.knowledge_embedder = emb_deps.memory_embedder
    deps.intent_examples = examples

    async def go():
        p = await plan(inbound("dá p levar o dog?"), ctx_of(), deps)
        vec = await p.vector.get()
        p.close()
        return p, vec

    p, vec = run(go())
    assert p.intent.intent == "policy" and p.strategy.retrieval == "required"
    assert examples.vectors[0] is vec and deps.memory_embedder.calls == 1


# ------------------------------------------------------------------ gather
def _gather(deps, text=PRICE_Q, ctx=None):
    ctx = ctx or ctx_of()

    async def go():
        p = await plan(inbound(text), ctx, deps)
        try:
            return p, await gather(inbound(text), ctx, p, deps)
        finally:
            p.close()
    return run(go())


def test_gather_brings_memory_and_knowledge_of_the_account_only():
    deps = deps_for()
    p, g = _gather(deps)
    assert [m.fact.id for m in g.memories] == [1]
    assert g.chunks and all("999" not in c.text for c in g.chunks)
    assert g.retrieval_count == 1 and g.recall_ms is not None and g.degraded == []
    assert g.query["query_model"] == deps.knowledge_embedder.name
    assert deps.memory_embedder.calls == 1  # the message is embedded once for both


def test_gather_recall_over_budget_degrades_and_knowledge_still_arrives():
    slow = AsyncSlowMemory(sleep_s=2.0)
    deps = deps_for(memory=slow, budget=0.1)
    _, g = _gather(deps)
    assert g.degraded == ["recall_timeout"] and g.memories == [] and slow.cancelled
    assert g.chunks and g.recall_ms < 1000


class BrokenKnowledge:
    def search(self, *a, **kw):
        raise ConnectionError("qdrant down")


def test_gather_knowledge_failure_degrades_and_memory_still_arrives():
    deps = deps_for(knowledge=BrokenKnowledge())
    _, g = _gather(deps)
    assert g.degraded == ["knowledge_error"] and g.chunks == [] and [m.fact.id for m in g.memories] == [1]
    assert g.retrieval_count == 1  # the attempt counts towards loop protection


def test_gather_with_recall_off_and_nothing_to_retrieve_does_nothing():
    deps = deps_for()
    _, g = _gather(deps, "Perfeito, obrigado!", ctx_of(recall=False))
    assert g == Gathered(retrieval_count=0) and deps.memory.calls == [] and deps.knowledge.calls == 0


def test_gather_embeds_again_only_for_another_knowledge_model():
    other = BagOfWordsEmbedder(name="other")
    deps = deps_for(knowledge_embedder=other)
    _, g = _gather(deps)
    assert deps.memory_embedder.calls == 1 and other.calls == 1 and g.query["query_model"] == "other"


# ------------------------------------------------------------------ compose
def _plan(intent="price_question", **kw) -> Plan:
    strategy = decide(intent)
    kw.setdefault("retrieve", strategy.retrieves)
    return Plan(IntentResult(intent, 1.0, ()), strategy, **kw)


CHUNK = KnowledgeChunk(uuid.uuid4(), uuid.uuid4(), 0.1, "O pernoite na suíte Luxo custa R$ 240.")


def test_compose_hands_over_when_knowledge_is_required_and_missing_or_used_up():
    deps = deps_for()
    c = run(compose(inbound(PRICE_Q), ctx_of(), _plan(), Gathered(), deps))
    assert c.text == FALLBACK_NO_KNOWLEDGE and c.degraded == [] and c.chunks == []
    c = run(compose(inbound(PRICE_Q), ctx_of(), _plan(retrieve=False, over_limit=True), Gathered(), deps))
    assert c.text == FALLBACK_LOOP and c.degraded == ["retrieval_limit"]


def test_compose_quotes_the_chunk_and_guards_prices():
    deps = deps_for()
    c = run(compose(inbound(PRICE_Q), ctx_of(), _plan(), Gathered(chunks=[CHUNK]), deps))
    assert "R$ 240" in c.text and c.chunks == [CHUNK] and c.generation.provider == "offline"

    class Liar:
        def generate(self, request):
            return Generation(text="Sai por R$ 99.", model="fake", provider="fake")

    c = run(compose(inbound(PRICE_Q), ctx_of(), _plan(), Gathered(chunks=[CHUNK]), deps_for(generator=Liar())))
    assert c.text == FALLBACK_NO_KNOWLEDGE and c.degraded == ["ungrounded_price"]

    class Down:
        def generate(self, request):
            raise TimeoutError("llm down")

    c = run(compose(inbound(PRICE_Q), ctx_of(), _plan(), Gathered(chunks=[CHUNK]), deps_for(generator=Down())))
    assert c.text == FALLBACK_NO_KNOWLEDGE and c.degraded == ["generation_error"]


# ------------------------------------------------------------------ record
def test_record_saves_one_idempotent_reply_with_every_reason():
    deps = deps_for()
    msg = inbound(PRICE_Q)
    p = _plan(degraded=["tool_slow"])
    g = Gathered(chunks=[CHUNK], retrieval_count=3, recall_ms=4.2, degraded=["recall_timeout"])
    c = Composed("O pernoite custa R$ 240.", chunks=[CHUNK], degraded=["empty_generation"])
    out = run(record(msg, ctx_of(), p, g, c, deps, t0=0.0))
    again = run(record(msg, ctx_of(), p, g, c, deps))
    r = out.reply
    assert r.reply_id == reply_id_for(msg) == again.reply.reply_id
    assert r.degraded == ["tool_slow", "recall_timeout", "empty_generation"]
    assert r.chunk_ids == [CHUNK.chunk_id] and r.intent == "price_question" and r.strategy == "required"
    assert out.recall_ms == 4.2 and out.lead_state["retrieval_count"] == 3
    assert deps.store.replies[0] == r and out.model_call is None  # the offline composer costs nothing


def test_message_vector_is_embedded_once_and_cancelled_when_unused():
    emb = BagOfWordsEmbedder()

    async def go():
        v = MessageVector(emb, "pernoite").start()
        a, b = await asyncio.gather(v.get(), v.get())
        unused = MessageVector(emb, "outra").start()
        unused.close()
        await asyncio.sleep(0)
        return a is b, unused._task.cancelled()

    same, cancelled = run(go())
    assert same and cancelled and emb.calls == 1


def test_a_specific_word_no_retrieved_chunk_names_brings_the_chunk_that_does():
    from streams.respond.handler import _cover_missing_word

    def kc(text):
        return KnowledgeChunk(uuid.uuid4(), uuid.uuid4(), 0.5, text)

    got = [kc("Vacinas aplicadas de segunda a sábado, sem consulta."), kc("Filhotes podem vacinar a partir de 45 dias.")]
    gripe = kc("**Cães**\n- V10: R$ 110,00\n- Gripe canina (tosse dos canis): R$ 125,00")
    drinks = kc("Nossa carta de vinhos tem somente o tinto da casa. Não servimos drinks nem destilados.")
    common = [kc(f"Banho e tosa {k}.") for k in range(6)]
    index = {"gripe": [gripe], "drink": [drinks], "banho": common}
    asked = []

    def lexical(account_id, stems, limit):
        asked.append(stems)
        return [c for s in stems for c in index.get(s, [])][:limit]

    msg = inbound("a vacina de gripe qnto é?")
    out = asyncio.run(_cover_missing_word(msg, got, lexical, 3))
    assert out == got + [gripe]
    out = asyncio.run(_cover_missing_word(inbound("vcs servem caipirinha?"), got, lexical, 2))
    assert out == got[:1] + [drinks]  # "drinks", the knowledge's word for a caipirinha, takes the last place
    assert asyncio.run(_cover_missing_word(inbound("tem banho?"), got, lexical, 3)) == got  # in too many chunks


def test_an_objection_brings_the_accounts_deals_found_by_their_words():
    from streams.respond.compose import offers_deal
    from streams.respond.handler import _deals

    def kc(text):
        return KnowledgeChunk(uuid.uuid4(), uuid.uuid4(), 1.0, text)

    promo = kc("# Promoções\n\n- **Terça em Dobro**: a segunda pizza grande sai pela metade do preço.")
    rules = kc("Regras: as promoções não são cumulativas entre si.")
    got = [kc("Pizza meio a meio só nos tamanhos média e grande.")]

    def lexical(account_id, stems, limit):
        return {"promo": [promo, rules], "desco": []}[stems[0]][:limit]

    assert asyncio.run(_deals(inbound("86 reais numa pizza? ta caro demais"), got, lexical)) == [promo]
    assert offers_deal("Tarde Aurora: 20% de desconto nos períodos de 2h e 4h.")
    assert not offers_deal("Fora isso, não oferecemos outros descontos.") and not offers_deal(rules.text)
    # a compensation for the business's own failure is no way to pay less (stop 41, probe_ax)
    assert not offers_deal("Atraso: se a entrega passar de 80 minutos, o cliente ganha um cupom de R$ 15,00.")
    assert offers_deal("Retirada no balcão: o cliente ganha 5% de desconto no valor das pizzas.")


def test_a_message_vector_waited_for_in_a_thread_is_embedded_once_by_whoever_comes_first():
    """A worker thread takes the vector without the event loop (``wait``): a job not yet begun
    (still queued in the executor) is embedded by the waiting thread itself, never twice."""
    import threading

    emb = BagOfWordsEmbedder()

    async def go():
        v = MessageVector(emb, "pernoite").start()   # its job not submitted yet: the loop has not turned
        waited = await asyncio.to_thread(v.wait)       # so this thread embeds it
        return waited, await v.get(), threading.get_ident()

    waited, got, _ = run(go())
    assert waited is got and emb.calls == 1
    never_started = MessageVector(emb, "outra")
    assert never_started.wait() is never_started.wait() and emb.calls == 2


def test_the_composer_reads_the_sentence_vectors_stored_with_the_chunks_and_embeds_only_the_rest():
    """With the indexer's sentence vectors (``sentences``) the offline composer embeds no stored
    sentence, and answers as it does embedding them itself; a sentence with none stored (another
    model, an old chunk) is embedded at reply time as before."""
    from streams.respond.compose import answer_units
    from streams.respond.model import ReplyRequest

    text = "O pernoite na suíte Luxo custa R$ 240. A suíte Master custa R$ 320. Check-out ao meio-dia."
    chunk = KnowledgeChunk(uuid.UUID(int=5), uuid.UUID(int=6), 0.2, text)
    units = [u.text for u in answer_units(text)]

    class Passages(BagOfWordsEmbedder):
        def __init__(self):
            super().__init__()
            self.passages: list[str] = []

        def embed_passages(self, texts):
            self.passages += list(texts)
            return super().embed_passages(texts)

    def ask(sentences, emb):
        composer = OfflineComposer(embedder=emb, sentences=sentences)
        q = "Quanto custa o pernoite na suíte Luxo?"
        return composer.generate(ReplyRequest(messages=[], message=q, intent="price_question", retrieval="required",
                                              chunks=(chunk,), account_id=1101)).text

    asked: list = []

    def stored(account_id, chunk_ids, model):
        asked.append((account_id, list(chunk_ids), model))
        vecs = BagOfWordsEmbedder().embed_passages(units[:-1])   # the last sentence has none stored
        return dict(zip(units[:-1], vecs))

    plain, reading = Passages(), Passages()
    assert ask(None, plain) == ask(stored, reading) and "R$ 240" in ask(None, Passages())
    # (the fake embeds its queries as passages too: only the chunk's sentences are looked at)
    assert set(units) <= set(plain.passages) and [p for p in reading.passages if p in units] == units[-1:]
    assert asked == [(1101, [chunk.chunk_id], reading.name)]


def test_a_confirmation_booking_a_time_brings_the_deposit_rule_found_by_the_booking_word():
    """"fechado, pode reservar a coral pra sexta 22h": the vector follows the suite named, so the line on
    what booking asks ("Para reservar, pedimos um sinal de 30%") is found by the act's root; a price line
    that only needs an appointment ("somente com hora marcada") is not a deposit."""
    from streams.respond.handler import _booking_rule_steps
    from tests.respond.fakes import WordIndex, chunk, run_steps

    got = [chunk("- **Suíte Coral**: hidromassagem. Pernoite: R$ 329,00"), chunk("A garagem é privativa.")]
    deposit = chunk("**Reservas**: não são obrigatórias. Para reservar, pedimos um sinal de 30% do valor, pago via Pix.")
    lexical = WordIndex({"reserv": [deposit], "marc": [chunk("**Gatos:** banho R$ 90,00, somente com hora marcada.")]})

    def booked(text, chunks):
        return run_steps(_booking_rule_steps(inbound(text), chunks, lexical, 3))

    assert booked("fechado, pode reservar a coral pra sexta 22h", got) == got + [deposit]
    assert lexical.asked == [["reserv"]]
    assert booked("fechado, pode reservar a coral pra sexta 22h", got + [deposit]) == got + [deposit]  # there already
    assert booked("pode marcar o banho da Mel pra terça as 9", got) == got     # no deposit asked: nothing added
    assert booked("fechado, obrigada", got) == got and len(lexical.asked) == 2  # books no day nor time: no search


def test_a_booking_told_without_a_verb_or_as_already_booked_brings_the_deposit_rule_too():
    """"fechou coral sabado 22h 👍" and "entao fica reservado pra 10 pessoas sabado 20h": no booking verb, or its
    participle; the deposit line is sought under every booking act until one states it."""
    from streams.respond.compose import booking_acts, booking_order
    from streams.respond.handler import _booking_rule_steps
    from tests.respond.fakes import WordIndex, chunk, run_steps

    assert booking_order("fechou coral sabado 22h 👍") == "fechou coral sabado 22h 👍"
    assert booking_order("perfeito, entao fica reservado pra 10 pessoas sabado 20h") == "entao fica reservado pra 10 pessoas sabado 20h"
    assert booking_order("fechou, valeu") == "" and booking_order("perfeito, obrigada") == ""
    assert booking_acts("fechou coral sabado 22h") == ["agend", "marc", "reserv"]
    got = [chunk("- **Suíte Coral**: hidromassagem. Pernoite: R$ 329,00")]
    deposit = chunk("Para reservar, pedimos um sinal de 30% do valor, pago via Pix.")
    lexical = WordIndex({"reserv": [deposit]})
    assert run_steps(_booking_rule_steps(inbound("fechou coral sabado 22h 👍"), got, lexical, 3)) == got + [deposit]
    assert lexical.asked == [["agend"], ["marc"], ["reserv"]]


def test_a_price_asked_of_an_act_on_a_thing_no_unit_names_is_an_unknown_kind():
    """Stop 41 (probe_aw): "derrubei vinho na minha camisa ... quanto vcs cobram pra lavar e passar uma peça?" asks
    the motel the price of a service it never names: two acts joined by "e" still point to the thing ("peça")."""
    from streams.respond.compose import answer_units, unknown_kind

    units = answer_units("# Bebidas\n\n- **Vinhos**: vinho rosé R$ 105,00; vinho tinto R$ 115,00.\n"
                         "- **Lavanderia do hotel**: lavagem de lençóis inclusa.")
    assert "peca" in unknown_kind("derrubei vinho na minha camisa ontem ai kkkk quanto vcs cobram pra lavar e passar "
                                  "uma peça?", units)
    assert not unknown_kind("quanto vcs cobram pra lavar e passar uma peça de vinho?",
                            answer_units("- **Peça avulsa**: lavar e passar uma peça custa R$ 12,00."))


def test_a_confirmation_telling_how_it_pays_gets_the_business_s_word_on_paying_so():
    """Stop 42 (probe_ax, probe_az: "isso, pode mandar, pago no pix quando confirmar", "fechou, pode mandar entao.
    vou pagar no pix"): the vector follows the order, so the line on paying that way ("Pix: a chave é enviada na
    confirmação") is found by the method's word; a deposit to book ("sinal de R$ 50,00 via Pix") is not it, and a
    booking's own deposit ("mando o pix do sinal") stays the booking's."""
    from streams.respond.compose import booking_acts, booking_order, payment_lines, payment_told, units_of_chunks
    from streams.respond.handler import _booking_rule_steps
    from tests.respond.fakes import WordIndex, chunk, run_steps

    assert payment_told("vou pagar no pix") == "pix" and payment_told("pago no cartão") == "cartao"
    assert payment_told("vou pagar em dinheiro, troco pra 100") == "dinheiro"
    assert payment_told("faço o pix ja ja") == "pix" and payment_told("pode ser, manda o pix") == "pix"
    assert payment_told("ja mando o pix do sinal") == "" and payment_told("faço o pix dos 50") == ""
    assert payment_told("fechou, valeu") == "" and payment_told("vou pensar no pix") == ""
    assert booking_order("fechou, pode mandar entao. vou pagar no pix") == "vou pagar no pix"
    assert booking_acts("vou pagar no pix") == []   # pays, books nothing
    assert booking_order("fechado, pode reservar a coral pra sexta 22h, mando o pix do sinal") == \
        "pode reservar a coral pra sexta 22h"
    lines = units_of_chunks(["# Pagamento\n\nAceitamos:\n- Pix (a chave é enviada pelo atendente na confirmação)\n"
                             "- Dinheiro: levamos troco para até R$ 100,00.",
                             "**Reservas**: para grupos, sinal de R$ 50,00 via Pix."])
    assert [u.text for u in payment_lines("pix", lines)] == ["Pix (a chave é enviada pelo atendente na confirmação)."]
    assert [u.text for u in payment_lines("dinheiro", lines)] == ["Dinheiro: levamos troco para até R$ 100,00."]
    assert payment_lines("cartao", lines) == []

    got = [chunk("- **Calabresa**: grande R$ 58,00"), chunk("Reservas: para grupos, sinal de R$ 50,00 via Pix.")]
    key = chunk("Aceitamos Pix (a chave é enviada pelo atendente na confirmação do pedido) e cartão.")
    lexical = WordIndex({"pix": [key]})
    assert run_steps(_booking_rule_steps(inbound("fechou, manda a calabresa. vou pagar no pix"), got, lexical, 3)) \
        == got + [key]
    assert lexical.asked == [["pix"]]
    assert run_steps(_booking_rule_steps(inbound("fechou, manda a calabresa"), got, lexical, 3)) == got
    assert lexical.asked == [["pix"]]   # told no way of paying: no search


def test_the_reply_to_a_confirmation_telling_how_it_pays_carries_that_way_s_line():
    from uuid import uuid4

    from streams.respond.generate import CONFIRMATION_REPLY, OfflineComposer
    from streams.respond.model import KnowledgeChunk, ReplyRequest

    text = ("# Formas de pagamento\n\nAceitamos:\n- Pix (a chave é enviada pelo atendente na confirmação do pedido)\n"
            "- Cartão de crédito e de débito\n\nPara pagar em dinheiro, informe o valor na hora do pedido: levamos "
            "troco para até R$ 200,00.")

    def reply(message):
        req = ReplyRequest(messages=[], message=message, intent="confirmation", retrieval="required",
                           chunks=(KnowledgeChunk(uuid4(), uuid4(), 0.3, text),))
        return OfflineComposer().generate(req).text

    assert reply("fechou, pode mandar entao. vou pagar no pix") == \
        "Perfeito! Pix (a chave é enviada pelo atendente na confirmação do pedido)."
    assert "troco para até R$ 200,00" in reply("fechou, manda 1 grande de calabresa, vou pagar em dinheiro, troco pra 100")
    assert reply("fechou, valeu") == CONFIRMATION_REPLY
