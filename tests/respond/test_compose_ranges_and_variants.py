"""Kinds of answer misses read across the tuning writers (h-ans17): a quantity told that falls in a range a
line states names that line ("pra 7km" → "De 5 a 10 km"), and the price asked of a variant the thing is kept
away from is answered by the line keeping it ("a torta grande qnto é?" → "só nos tamanhos mini e média").
Knowledge and questions invented here (a laundry, a bakery)."""

from uuid import uuid4

from streams.respond.compose import only_some, score_units, units_of_chunks
from streams.respond.generate import FALLBACK_NO_KNOWLEDGE, OfflineComposer
from streams.respond.model import KnowledgeChunk, ReplyRequest

LAUNDRY = """# Coleta e entrega

Buscamos e devolvemos as roupas em casa, para lavagem, passadoria e tapetes.

**Taxas (ida e volta):** - Até 3 km da loja: R$ 12,00 - De 3 a 8 km da loja: R$ 25,00 - Acima de 8 km não atendemos."""

BAKERY = """## Tortas doces

Limão, Morango, Nozes e Holandesa (contém castanhas). - Mini torta doce: R$ 29,00 - Média torta doce: R$ 61,00

Torta doce só é feita nos tamanhos mini e média."""


def composer(embedder):
    from streams.respond.evaluate_answers import CachedEmbedder

    return OfflineComposer(embedder=CachedEmbedder(embedder))


def ask(composer, message, intent, *texts):
    chunks = tuple(KnowledgeChunk(uuid4(), uuid4(), 0.3, t) for t in texts)
    return composer.generate(ReplyRequest(messages=[], message=message, intent=intent, retrieval="required",
                                          chunks=chunks)).text


def test_a_range_holding_the_quantity_told_names_it():
    units = units_of_chunks([LAUNDRY])
    scored = {s.unit.text: s for s in score_units("a coleta pra 5km da loja sai quanto?", units)}
    assert scored["De 3 a 8 km da loja: R$ 25,00."].focus_hits > scored["Até 3 km da loja: R$ 12,00."].focus_hits


def test_the_price_for_a_distance_told_is_the_range_holding_it(use_embedder):
    reply = ask(composer(use_embedder), "a coleta pra 5km da loja sai quanto?", "price_question", LAUNDRY)
    assert "R$ 25,00" in reply and FALLBACK_NO_KNOWLEDGE not in reply


BAKERY_DELIVERY = """# Entregas

Cada loja entrega num raio de até 7 km.

- Loja Centro atende: Centro, Vila Rica, Jardim Aurora e Boa Vista.
- Loja Lago atende: Lago Sul, Cruzeiro e Parque das Águas.

Taxa de entrega:
- até 3 km: R$ 7,00
- de 3 km a 7 km: R$ 12,00

Acima de 7 km não entregamos.

Pedido mínimo para entrega: R$ 45,00, sem contar a taxa."""


def test_the_fee_for_a_distance_told_beats_a_price_line_without_ranges(use_embedder):
    """Stop 43 (probe_q, probe_ba: "qual a taxa de entrega pro jardim das flores? da uns 4km daí"): when the best priced
    line states no range ("Pedido mínimo ... sem contar a taxa"), a line of the question's words whose range holds
    the distance told (under "Taxa de entrega") is the price asked, and goes first; a line whose range does not
    hold it, or naming nothing of the question, does not."""
    from streams.respond.compose import Scored, Unit

    minimum = Scored(Unit("Pedido mínimo para entrega: R$ 45,00, sem contar a taxa.", "Entregas"), 0.9, 3.6, 0.35, 1)
    near = Scored(Unit("até 3 km: R$ 7,00.", "Taxa de entrega", item=True), 0.3, 1.8, 0.2, 2)
    far = Scored(Unit("de 3 km a 7 km: R$ 12,00.", "Taxa de entrega", item=True), 0.8, 1.8, 0.14, 2)
    pick = composer(use_embedder)._range_of_the_thing_asked
    message = "qual a taxa de entrega pro jardim aurora? da uns 4km daí"
    assert pick(message, [minimum, far, near])[0] is far
    assert pick("qual a taxa de entrega? da uns 9km daí", [minimum, far, near])[0] is minimum   # no range holds 9
    unnamed = Scored(far.unit, 0.8, 1.8, 0.14, 0)
    assert pick(message, [minimum, unnamed])[0] is minimum
    reply = ask(composer(use_embedder), message, "price_question", BAKERY_DELIVERY)
    assert "R$ 12,00" in reply and "R$ 7,00" not in reply


def test_only_some_is_a_line_keeping_to_some_cases_not_a_plain_no():
    assert only_some("Torta doce só é feita nos tamanhos mini e média.")
    assert only_some("Funciona apenas aos sábados.")
    assert not only_some("As tortas salgadas não levam carne.")


def test_the_price_of_a_variant_kept_away_is_answered_by_the_line_keeping_it(use_embedder):
    c = composer(use_embedder)
    reply = ask(c, "a torta doce grande de limão qnto é?", "price_question", BAKERY)
    assert "mini e média" in reply
    # a variant that is priced is answered with its price, no limit first
    assert ask(c, "a torta doce média qnto é?", "price_question", BAKERY).startswith("Média torta doce")


GYM = """**Estacionamento:** não temos estacionamento próprio em nenhuma das academias. Na unidade Lagoa existe convênio com o Park Sete, ao lado da academia: a primeira hora é grátis.

- Avaliação física: R$ 90,00. As avaliações são feitas somente na unidade Lagoa, às segundas e quartas."""


def test_each_question_gets_the_line_naming_more_of_it_than_its_first(use_embedder):
    """"tem estacionamento na lagoa? e a avaliação é que dia?": the first question's best line is the general
    "no"; its second names the place asked too (the agreement there), and is quoted as well."""
    reply = ask(composer(use_embedder), "tem estacionamento na lagoa? e a avaliacao fisica é que dia?",
                "info_request", GYM)
    assert "Park Sete" in reply and "segundas e quartas" in reply


CAKES = """## Bolos de festa

Chocolate, Nozes e Limão.

- Pequeno: R$ 80,00 - Médio: R$ 120,00 - Grande: R$ 160,00

## Promoções

- **Sexta Doce**: na compra de um bolo grande simples, o segundo grande simples sai pela metade do preço."""


def test_a_difference_asked_between_two_items_is_one_question_per_item(use_embedder):
    from streams.respond.compose import compared_items

    # the qualifier said after the second item is the first's too
    assert compared_items("qual a diferença do medio pro grande na festa?") == [
        "qual a diferenca da medio na festa", "qual a diferenca da grande na festa"]
    reply = ask(composer(use_embedder), "qual a diferença do medio pro grande na festa? compensa?",
                "price_question", CAKES)
    assert "R$ 120,00" in reply and "R$ 160,00" in reply


HOSTEL = """# Quartos

Quarto Ipê: cama de casal e varanda. Quarto Jatobá: duas camas de solteiro.

**Unidade Serra** — Estrada do Mirante, 1.200. Check-out na unidade Serra até as 12h."""


def test_a_count_asked_that_no_line_states_is_handed_over():
    from streams.respond.compose import uncounted_thing

    assert uncounted_thing("quantos quartos tem na unidade serra no total?", ["Unidade Serra — Estrada do Mirante, 1.200."])
    assert not uncounted_thing("quantas camas tem o jatobá?", ["Quarto Jatobá: duas camas de solteiro."])
    assert not uncounted_thing("quantas horas antes tem que avisar?", ["Avise com 24 horas de antecedência."])
    c = OfflineComposer()
    req = ReplyRequest(messages=[], message="quantos quartos tem na unidade serra no total?", intent="info_request",
                       retrieval="required", chunks=(KnowledgeChunk(uuid4(), uuid4(), 0.3, HOSTEL),))
    assert c.generate(req).text == FALLBACK_NO_KNOWLEDGE
