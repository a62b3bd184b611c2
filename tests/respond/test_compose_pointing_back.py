"""Kinds of answer misses read across the tuning writers (h-ans16): a line pointing back at the one before it,
the deposit a booking asks, the customer fetching the order, a discount answering "fica mais barato?", a choice
between two ways no line names, the first question's unknown item, a price of a thing no line names, a long word
sharing only a short prefix. Knowledge and questions invented here (a dance school, a dentist, a bakery, a
restaurant, a garage)."""

from uuid import uuid4

from streams.respond.compose import (
    alternatives,
    booking_rule,
    carries_price,
    concept_forms,
    opens_with_anaphor,
    uncovered_focus,
    units_of_chunks,
    with_antecedents,
    with_other_branch,
)
from streams.respond.generate import FALLBACK_NO_KNOWLEDGE, OfflineComposer
from streams.respond.model import KnowledgeChunk, ReplyRequest

DANCE = """# Aulas

**Atrasos**: tolerância de 10 minutos depois do início da aula. Passado esse prazo, a aula conta como dada.

**Aula experimental**: gratuita, com agendamento pelo WhatsApp."""

GARAGE = """# Preços

- Carro: R$ 20,00 por 2 horas.

**Tempo extra**: tolerância de 10 minutos depois do período pago. Passando disso, cada hora adicional custa R$ 8,00."""

DENTIST = """# Tratamentos

- Clareamento a laser: R$ 700,00.
- Limpeza: R$ 180,00.

**Agendamento**: para agendar, pedimos um sinal de R$ 50,00 via Pix, abatido do tratamento.

**Sábado**: das 8h às 12h."""

BAKERY = """# Encomendas

Entregamos bolos num raio de 5 km. No delivery o entregador leva maquininha.

Retirada na loja: a encomenda fica pronta em 2 horas e o cliente ganha 10% de desconto."""


def ask(message, intent, *texts):
    chunks = [KnowledgeChunk(uuid4(), uuid4(), 0.3, t) for t in texts]
    req = ReplyRequest(messages=[], message=message, intent=intent, retrieval="required", chunks=tuple(chunks))
    return OfflineComposer().generate(req).text


def test_a_line_pointing_back_is_quoted_with_the_line_it_points_at():
    assert opens_with_anaphor("Passando disso, cada hora adicional custa R$ 40,00.")
    assert opens_with_anaphor("Depois disso, o atendimento pode ser remarcado.")
    assert opens_with_anaphor("Nesse caso, o sinal vira crédito.")
    assert not opens_with_anaphor("Depois das 18h, só delivery.")
    units = units_of_chunks([DANCE.replace("Passado esse prazo", "Passando disso")])
    after = next(u for u in units if u.text.startswith("Passando disso"))
    got = with_antecedents([after], units)
    assert got[0] == after   # the best unit stays first
    assert any("tolerância de 10 minutos" in u.text for u in got)
    reply = ask("se eu passar uns 30 min do horario pago qnto a mais?", "price_question", GARAGE)
    assert "R$ 8,00" in reply and "tolerância de 10 minutos" in reply


def test_a_rule_is_quoted_with_the_line_that_goes_on_from_it():
    """Stop 43 (probe_ba): "se eu cancelar a reserva no dia eu perco o sinal?" is answered by the half of the rule
    after "Depois desse prazo", which follows the half the search ranks first; both are quoted, in reading order."""
    units = units_of_chunks([DANCE])
    rule = next(u for u in units if "tolerância de 10 minutos" in u.text)
    got = with_other_branch([rule], units)
    assert got[0] == rule and any(u.text.startswith("Passado esse prazo") for u in got)
    other = next(u for u in units if "experimental" in u.text)
    assert with_other_branch([other], units) == [other]   # nothing goes on from it
    reply = ask("se eu chegar 20 min atrasada perco a aula?", "policy", DANCE)
    assert "tolerância de 10 minutos" in reply and "a aula conta como dada" in reply


def test_a_booking_confirmation_gets_what_the_business_asks_to_book():
    units = units_of_chunks([DENTIST])
    rule = booking_rule("pode agendar a limpeza pra quinta 14h", units)
    assert len(rule) == 1 and "sinal de R$ 50,00" in rule[0].text
    assert booking_rule("fechado, obrigada", units) == []
    reply = ask("fechado, pode agendar a limpeza pra quinta 14h", "confirmation", DENTIST)
    assert "sinal de R$ 50,00" in reply
    # a booking on a day whose hours the knowledge gives gets those hours too
    assert "das 8h às 12h" in ask("blz, pode agendar sabado 9h entao", "confirmation", DENTIST)


def test_the_customer_fetching_the_order_is_the_pickup():
    assert "retir" in {x for xs in concept_forms("se eu for buscar ai fica mais barato?").values() for x in xs}
    assert "10% de desconto" in ask("se eu for buscar ai sai mais barato?", "policy", BAKERY)
    # a yes/no price question is answered by a discount in percent; "qual o valor?" wants an amount
    assert carries_price("Retirada na loja: o cliente ganha 10% de desconto.", free_answers=True)
    assert not carries_price("Retirada na loja: o cliente ganha 10% de desconto.")


def test_a_choice_between_two_ways_no_line_names_is_handed_over():
    assert alternatives("o entregador sobe ate o apartamento ou tenho que descer na portaria?") == (
        "apartamento", "portaria")
    assert alternatives("tem elevador? e escova é quanto?") is None
    reply = ask("o entregador sobe ate o apartamento ou tenho que descer na portaria?", "info_request", BAKERY)
    assert reply == FALLBACK_NO_KNOWLEDGE


def test_the_first_question_s_unknown_item_is_not_answered_by_the_price_asked_next():
    reply = ask("vcs fazem tratamento de bruxismo? qnto custa?", "info_request", DENTIST)
    assert "R$" not in reply.replace(FALLBACK_NO_KNOWLEDGE, "")


def test_the_price_of_a_thing_no_line_names_is_handed_over():
    assert ask("qnto custa o kit de clareamento a laser?", "price_question", DENTIST) == FALLBACK_NO_KNOWLEDGE
    assert "R$ 700,00" in ask("qnto custa o clareamento a laser?", "price_question", DENTIST)


def test_a_long_word_needs_more_than_a_short_prefix_in_common():
    units = units_of_chunks(["Não temos vaga para caminhões nem carretas. Motos são bem-vindas."])
    assert "camin" in uncovered_focus("a garagem cabe uma caminhonete grande?", units)
    assert "camin" not in uncovered_focus("tem vaga pra caminhão?", units)


def test_an_ingredient_asked_by_whether_they_use_it_is_an_item_asked():
    cakes = "# Bolos\n\nTodos os bolos são feitos com farinha de trigo e manteiga. Bolo de cenoura: R$ 60,00."
    assert ask("vcs usam farinha de amendoa nos bolos?", "info_request", cakes) == FALLBACK_NO_KNOWLEDGE
    assert "farinha de trigo" in ask("vcs usam manteiga nos bolos?", "info_request", cakes)


def test_the_price_of_an_act_done_to_a_thing_no_line_names_is_handed_over():
    assert ask("qnto vcs cobram pra alugar um telao pra ver o jogo na sala?", "price_question",
               "# Salas\n\nSala de reunião: R$ 90,00 por hora. A sala é alugada por no mínimo 2 horas.") \
        == FALLBACK_NO_KNOWLEDGE
    assert "R$ 90,00" in ask("qnto vcs cobram pra alugar a sala de reunião?", "price_question",
                             "# Salas\n\nSala de reunião: R$ 90,00 por hora. A sala é alugada por no mínimo 2 horas.")


def test_whether_a_thing_is_offered_at_a_unit_is_answered_by_its_limit_to_units():
    gym = ("# Unidades\n\n**Unidade Norte**: Rua das Acácias, 90 – Norte.\n\n# Piscina\n\n"
           "A piscina e a hidroginástica funcionam apenas na unidade Sul. Não aceitamos menores de 12 anos.")
    reply = ask("a piscina tem na unidade norte tb?", "info_request", gym)
    assert "funcionam apenas na unidade Sul" in reply


def test_an_objection_to_the_delivery_fee_is_answered_with_the_pickup_discount():
    """Stop 42 (probe_ax, probe_ay): "achei a taxa de 10 meio salgada", "essa taxa de 10 reais de entrega pesa": the
    line priced at the amount named is the one objected to, however the ranking placed it (a word of the complaint,
    "salgada", found "pizzas salgadas"), and fetching the order spares the fee where the business gives a discount
    for it; a fee with no such line stands alone."""
    from streams.respond.compose import is_delivery_fee

    bakery = ("# Entregas\n\nTaxa de entrega:\n- até 2 km: R$ 5,00\n- de 2 a 5 km: R$ 10,00\n\n"
              "Retirada na loja: a encomenda fica pronta em 2 horas e o cliente ganha 10% de desconto.\n\n"
              "# Doces\n\n- Brigadeiros salgados de caramelo: R$ 3,00 a unidade, para festas de 10 a 20 pessoas.")
    units = units_of_chunks([bakery])
    assert is_delivery_fee(next(u for u in units if "R$ 10,00" in u.text))
    assert not is_delivery_fee(next(u for u in units if "Brigadeiros" in u.text))
    for message in ("hmm vou pensar, achei a taxa de 10 meio salgada", "essa taxa de 10 reais de entrega pesa"):
        reply = ask(message, "objection", bakery)
        assert "R$ 10,00" in reply and "10% de desconto" in reply, reply
    alone = bakery.replace(" e o cliente ganha 10% de desconto", "")
    assert "mais em conta" not in ask("essa taxa de 10 reais de entrega pesa", "objection", alone)
    reply = ask("essa taxa de 10 reais de entrega pesa", "objection", bakery)
    assert reply.count("Retirada na loja") == 1, reply


def test_a_price_told_of_another_business_is_not_one_of_ours():
    """Stop 42 (probe_az): "oxe no motel da esquina 2h sai 60 conto, vcs tao caros demais" named no price of ours:
    the R$ 60,00 of a late check-out is not what was objected to. Our cheapest item for the period named answers
    it, with the deal on that period; the business's own hotel ("95 a diaria do hotel") is no other business."""
    from streams.respond.compose import amounts_named, cheapest_at, elsewhere, labels_named

    assert elsewhere("oxe no motel da esquina 2h sai 60 conto") and elsewhere("na outra pizzaria a grande é 50")
    assert elsewhere("no da marginal eu pago bem menos") and elsewhere("o motel do outro lado da rodovia ta mais barato")
    assert not elsewhere("hmm 95 a diaria do hotel") and not elsewhere("a diaria no hotel de vcs é 95?")
    assert amounts_named("oxe no motel da esquina 2h sai 60 conto, vcs tao caros demais") == set()
    assert amounts_named("nossa 459 numa pernoite?? ta loco, no motel da estrada é 250") == {459.0}
    rooms = ("# Quartos\n\n- **Quarto Safira**: varanda. 2h: R$ 120,00 · 4h: R$ 170,00.\n"
             "- **Quarto Ônix**: cama redonda. 2h: R$ 95,00 · 4h: R$ 150,00.\n\n"
             "**Saída tardia**: até as 14h pagando R$ 60,00.\n\n"
             "**Happy hour**: 20% de desconto nos períodos de 2h, de segunda a quinta.")
    units = units_of_chunks([rooms])
    assert labels_named("no motel da esquina 2h sai 60 conto", units) == {"2h"}
    assert "Ônix" in cheapest_at("2h", units).text and "Ônix" in cheapest_at("4h", units).text
    reply = ask("oxe no motel da esquina 2h sai 60 conto, vcs tao caros demais", "objection", rooms)
    assert "R$ 95,00" in reply and "R$ 60,00" not in reply, reply


def test_small_talk_about_the_agent_quotes_no_knowledge():
    """Stop 42 (probe_az): "qual teu nome? tu eh atendente msm?" asks the agent about itself (general): a line that
    happens to say "nome" ("letras de balão com nome") is no answer, and nothing is handed over to the team."""
    from streams.respond.generate import GENERAL_REPLY

    party = "# Decoração\n\nPersonalização: letras de balão com nome ou data por R$ 45,00."
    assert ask("qual teu nome? tu eh atendente msm?", "general", party) == GENERAL_REPLY
    assert ask("com quem eu falo?", "general", party) == GENERAL_REPLY


def test_small_talk_about_the_people_or_the_day_is_not_handed_over():
    """Stop 50: seven writers ask the people at the business about themselves or the day ("vc torce pra qual
    time?", "vc trabalha ai faz tempo?", "vcs gostam mais de gato ou de cachorro?", "vcs viram q o tempo vai virar
    amanha?"): a friendly line, not "I'll check with the team". Asked beside a question about the business, the
    business question is still answered or handed over."""
    from streams.respond.generate import GENERAL_REPLY

    pets = "# Banho\n\nBanho de cachorro pequeno: R$ 60,00. Banho de gato: R$ 80,00."
    for q in ("vc torce pra qual time?", "vcs torcem pra Bahia ou Vitória? kkk", "vc trabalha ai faz tempo? kkk",
              "vcs gostam mais de gato ou de cachorro? kkk", "vcs viram q o tempo vai virar amanha? chuva o dia td aff"):
        assert ask(q, "general", pets) == GENERAL_REPLY, q
    assert ask("vc torce pra qual time? e tem hotelzinho?", "general", pets) == FALLBACK_NO_KNOWLEDGE
