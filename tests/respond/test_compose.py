"""The offline composer picks what answers the question (entity + attribute),
says "Não" when the knowledge says no, never quotes Markdown or cut pieces,
and hands over what the knowledge does not cover. Knowledge written here."""

import re
from uuid import uuid4

import pytest

from streams.ingest.chunking import chunk_text
from streams.respond.compose import answer_units, range_match, units_of_chunks
from streams.respond.generate import (
    FALLBACK_NO_KNOWLEDGE,
    GENERAL_REPLY,
    OBJECTION_REPLY,
    OfflineComposer,
    unsupported_prices,
)
from streams.respond.model import KnowledgeChunk, ReplyRequest

SUITES = """# Suítes e valores

Valem para todas as unidades.

- **Suíte Jade**: hidromassagem e sauna seca. 2h: R$ 110,00 · 4h: R$ 150,00 · Pernoite: R$ 260,00.
- **Suíte Safira**: piscina aquecida e teto solar. 2h: R$ 180,00 · 4h: R$ 240,00 · Pernoite: R$ 390,00.
- **Suíte Topázio**: cama redonda. 4h: R$ 95,00 · Pernoite: R$ 170,00. A Topázio não é alugada por 2h."""

RULES = """# Regras

## Pagamento
Aceitamos Pix e cartão. Não aceitamos cheque.

## Unidade Lagoa
Rua das Garças, 77.
Não temos estacionamento próprio nesta unidade.

**Cancelamento**:
- até 48 horas antes, devolvemos o sinal;
- com menos de 48 horas, o sinal vira crédito por 90 dias."""

DELIVERY = """# Entrega

| Distância | Taxa | Prazo |
|---|---|---|
| até 2 km | R$ 5,00 | 30 min |
| de 2 km a 7 km | R$ 12,00 | 50 min |

Acima de 7 km não entregamos."""


def chunk(text, doc=None):
    return KnowledgeChunk(uuid4(), doc or uuid4(), 0.3, text)


def ask(message, intent, *texts, retrieval="required"):
    chunks = [chunk(t) for t in texts]
    req = ReplyRequest(messages=[], message=message, intent=intent, retrieval=retrieval, chunks=tuple(chunks))
    text = OfflineComposer().generate(req).text
    assert not unsupported_prices(text, chunks)
    return text


def test_entity_and_attribute_pick_that_items_line():
    text = ask("qnto sai a safira por 2h?", "price_question", SUITES)
    assert "R$ 180,00" in text and "Jade" not in text and "R$ 110,00" not in text
    text = ask("quanto fica o pernoite na jade", "price_question", SUITES)
    assert "Suíte Jade" in text and "R$ 260,00" in text and "Safira" not in text


def test_negative_yes_no_answer_starts_with_nao():
    assert ask("vcs aceitam cheque?", "policy", RULES).startswith("Não, não aceitamos cheque.")
    text = ask("tem estacionamento na unidade lagoa?", "info_request", RULES)
    assert text.startswith("Não") and "estacionamento próprio" in text


def test_a_heading_names_the_unit_it_is_about():
    text = ask("onde fica a unidade lagoa?", "info_request", RULES)
    assert "Rua das Garças, 77." in text and text.startswith("Unidade Lagoa: ")


def test_list_label_is_context_and_quantities_meet_ranges():
    text = ask("se eu cancelar faltando 1 dia perco o sinal?", "policy", RULES)
    assert "crédito por 90 dias" in text or "devolvemos o sinal" in text
    text = ask("qual a taxa pra 5 km?", "price_question", DELIVERY)
    assert "R$ 12,00" in text and "R$ 5,00" not in text
    assert "Taxa: R$ 12,00" in text  # a table row is read with its header
    assert range_match("entrega pra 5 km", "de 2 km a 7 km") and not range_match("9 km", "ate 7 km")
    assert range_match("um labrador de 32 kg", "caes acima de 25 kg")


def test_never_headings_markup_or_cut_pieces():
    for message, intent in [("quanto custa a suíte?", "price_question"), ("quais as regras?", "policy"),
                            ("como funciona a entrega?", "info_request")]:
        for size in (120, 200, 300):
            pieces = [c.content for c in chunk_text(SUITES + "\n\n" + RULES + "\n\n" + DELIVERY, size, 50)]
            text = ask(message, intent, *pieces)
            assert "#" not in text and "**" not in text and "|" not in text and " - " not in text, text
            for sentence in re.split(r"(?<=[.!?])\s+", text):
                assert not sentence[:1].islower(), (size, text)
    for size in (120, 200):
        for piece in chunk_text(SUITES + "\n\n" + RULES, size, 50):
            for u in answer_units(piece.content):
                assert not u.text.startswith(("#", "-", "*", "|")) and u.text[0].isupper() or u.item
                assert u.text.endswith((".", "!", "?")), u.text


def test_halves_of_a_cut_sentence_are_joined_back():
    doc = uuid4()
    a = "- Diária: R$ 80,00 - Não aceitamos fêmeas no"
    b = "cio. O hotelzinho recebe só cães."
    units = units_of_chunks([a, b], [doc, doc])
    assert "Não aceitamos fêmeas no cio." in [u.text for u in units]
    assert "cio." not in " ".join(u.text for u in units if u.text != "Não aceitamos fêmeas no cio.")
    # from two different documents nothing is joined
    assert "Não aceitamos fêmeas no cio." not in [u.text for u in units_of_chunks([a, b], [doc, uuid4()])]


def test_what_the_knowledge_does_not_cover_is_handed_over():
    assert ask("vcs fazem massagem relaxante e drenagem linfática?", "info_request", SUITES, RULES) \
        == FALLBACK_NO_KNOWLEDGE
    # a price asked, and no retrieved line states one
    assert ask("quanto custa o estacionamento?", "price_question", RULES) == FALLBACK_NO_KNOWLEDGE
    assert ask("quanto custa?", "price_question") == FALLBACK_NO_KNOWLEDGE


def test_small_talk_and_objections_get_polite_replies_not_the_hand_over():
    assert ask("kkkk vcs são demais", "general", SUITES, retrieval="optional") == GENERAL_REPLY
    assert ask("achei salgado", "objection", SUITES, retrieval="optional") == OBJECTION_REPLY
    deal = "Terça em Dobro: na compra de uma suíte de 4h, a segunda visita do mês sai pela metade do preço."
    text = ask("tá caro demais", "objection", SUITES, deal, retrieval="optional")
    assert text.startswith("Entendo! ") and "metade do preço" in text


@pytest.mark.parametrize("intent,expect", [("greeting", "Olá"), ("confirmation", "Perfeito")])
def test_greeting_and_confirmation_need_no_knowledge(intent, expect):
    assert ask("oi blz", intent, retrieval="none").startswith(expect)


def test_answer_accuracy_on_dev_questions(use_embedder):
    from streams.learn.fixtures import FIXTURES_DIR
    from streams.respond.evaluate_answers import CachedEmbedder, answer_accuracy

    r = answer_accuracy(FIXTURES_DIR, CachedEmbedder(use_embedder))
    print(f"dev answers: {r}")
    assert r["accuracy"] >= 0.9


def test_chatty_question_with_many_other_words_is_still_answered():
    text = ask("Boa noite! Sábado de madrugada passo aí de novo com a patroa, quanto fica o pernoite na Safira?",
               "price_question", SUITES)
    assert "R$ 390,00" in text and "Suíte Safira" in text


def test_a_sentence_the_chunker_broke_by_a_paragraph_inside_one_chunk_is_one_unit():
    piece = ("**Requisitos do hotelzinho**\n- Vermífugo em dia - Não aceitamos fêmeas no\n\ncio."
             "\n\nEnviamos fotos do pet uma vez por dia.")
    texts = [u.text for u in answer_units(piece)]
    assert "Não aceitamos fêmeas no cio." in texts
    assert "Enviamos fotos do pet uma vez por dia." in texts
    assert not any(t.startswith("cio") for t in texts)


def test_suite_and_duration_in_chat_spelling_get_that_price():
    text = ask("qnto sai a jade 2h", "price_question", SUITES)
    assert "Suíte Jade" in text and "R$ 110,00" in text
    assert "Safira" not in text and "R$ 180,00" not in text


# ---- issue 13: the key entity or the attribute asked decides (knowledge written here)
SHOP = """# Loja e horários

Vendemos ração premium seca e úmida para cães e gatos, e petiscos naturais.

- Segunda a sábado: das 9h às 20h.

O delivery funciona nos mesmos dias e encerra 45 minutos antes do fechamento da loja.

Atendimento clínico por médico-veterinário de plantão, sem hora marcada. Em emergências, indicamos o Hospital Veterinário Monte Azul."""

STAFF = """# Equipe

A tosadora Bianca atende às terças e quintas. Cancelamento sem custo até 3 horas antes do horário."""


def test_an_item_the_knowledge_never_names_is_handed_over_not_answered_with_its_category():
    # the knowledge sells "ração premium", never this brand: quoting the category answers another question
    assert ask("vcs vendem ração golden formula?", "info_request", SHOP) == FALLBACK_NO_KNOWLEDGE
    assert ask("tem petisco dreamies aí?", "info_request", SHOP) == FALLBACK_NO_KNOWLEDGE
    # the category itself is answered
    assert "ração premium" in ask("vcs vendem ração?", "info_request", SHOP)
    # words after the item ("pra cachorro") are not the item
    assert "petiscos naturais" in ask("vcs tem petisco pra cachorro?", "info_request", SHOP)


def test_a_name_is_answered_only_by_a_unit_naming_someone():
    assert ask("qual o nome do veterinário de plantão?", "info_request", SHOP) == FALLBACK_NO_KNOWLEDGE
    assert "Bianca" in ask("qual o nome da tosadora?", "info_request", STAFF)


def test_until_what_time_to_order_wants_the_deadline_not_the_opening_hours():
    text = ask("até q horas dá pra pedir delivery no sábado?", "info_request", SHOP)
    assert "45 minutos antes" in text


def test_how_long_in_advance_is_a_deadline_not_a_price():
    text = ask("com quanto tempo de antecedencia posso cancelar sem pagar?", "price_question", STAFF, SUITES)
    assert "3 horas antes" in text and "R$" not in text


# ---- durations, "free" answers, plurals, hours spelled two ways (knowledge written here)
SERVICE = """# Serviços

- Lavagem simples: R$ 45,00
- Lavagem completa: R$ 90,00
- Revisão em até 30 dias após a lavagem: sem custo

A lavagem completa leva em média de 1h30 a 2h. O carro fica pronto em cerca de 40 minutos na lavagem simples.

Não temos opções de lavagem a seco. Não temos atendimento 24 horas."""


def test_how_long_is_a_duration_not_a_price():
    text = ask("qnto tempo demora a lavagem completa?", "price_question", SERVICE)
    assert "1h30 a 2h" in text and "R$" not in text


def test_a_yes_no_price_question_is_answered_by_free_but_what_price_wants_an_amount():
    assert "sem custo" in ask("a revisão é cobrada?", "price_question", SERVICE)
    text = ask("qual o valor da lavagem completa?", "price_question", SERVICE)
    assert "R$ 90,00" in text and "sem custo" not in text


def test_plurals_in_ao_and_hours_spelled_either_way_match():
    assert ask("tem opção de lavagem a seco?", "info_request", SERVICE).startswith("Não")
    assert "24 horas" in ask("vcs atendem 24h?", "info_request", SERVICE)


HOURS = """# Horários

- Segunda-feira: fechado. Não abrimos às segundas.
- Terça a sábado: das 18h às 23h.
- Domingo: das 17h às 22h.

# Castração

- Castração de cão macho até 15 kg: R$ 680,00
- Cães acima de 15 kg: orçamento após avaliação

As cirurgias acontecem às quartas-feiras."""


def test_numbers_written_out_are_quantities():
    text = ask("qnto sai quatro horas na safira", "price_question", SUITES)
    assert "Suíte Safira" in text and "R$ 240,00" in text and "Jade" not in text
    assert "R$ 110,00" in ask("quanto fica duas horas na jade?", "price_question", SUITES)


def test_a_unit_naming_what_was_asked_beats_one_that_only_carries_the_attribute():
    # "abrem" asks hours, but the line about Monday says it is closed
    assert "fechado" in ask("vcs abrem segunda feira?", "info_request", HOURS)
    assert "17h às 22h" in ask("q horas abre domingo?", "info_request", HOURS)


def test_a_quote_on_request_answers_a_price_and_a_range_that_excludes_the_quantity_loses():
    text = ask("qnto custa castrar um cão de 30 kg?", "price_question", HOURS)
    assert "orçamento após avaliação" in text and "R$ 680,00" not in text
    assert "R$ 680,00" in ask("qnto custa castrar um cão de 10 kg?", "price_question", HOURS)


CLINIC = """# Clínica

Não fazemos atendimento domiciliar: todas as consultas são presenciais.
Buscamos o seu pet em casa para banho e vacinas.
Não vendemos medicamentos controlados.
Cães acima de 15 kg: orçamento após avaliação.
Castração de gata: R$ 520,00.
Feriados: abrimos normalmente, com exceção de 25/12 e 01/01."""


def test_the_customers_word_meets_the_knowledges_word_for_it():
    # "remédio" is "medicamento", "em casa" is "domiciliar", "cachorro" is "cão", "natal" is 25/12
    assert ask("vcs vendem remedio controlado?", "info_request", CLINIC).startswith("Não, não vendemos medicamentos")
    assert ask("fazem consulta em casa?", "info_request", CLINIC).startswith("Não, não fazemos atendimento domiciliar")
    assert "orçamento após avaliação" in ask("qnto custa pra castrar um cachorro de 30kg?", "price_question", CLINIC)
    assert "25/12" in ask("vcs abrem no natal?", "info_request", CLINIC)


def test_the_price_of_a_kind_the_knowledge_never_names_is_handed_over():
    # the knowledge prices castration, never cataract surgery: another kind's price would be wrong
    assert ask("qnto custa uma cirurgia de catarata em cachorro?", "price_question",
               "# Cirurgias\n\n- Cirurgia de castração de cachorro: R$ 680,00.") == FALLBACK_NO_KNOWLEDGE
    assert "R$ 680,00" in ask("qnto custa uma cirurgia de castração?", "price_question",
                              "# Cirurgias\n\n- Cirurgia de castração de cachorro: R$ 680,00.")


def test_a_question_about_what_the_business_offers_is_not_small_talk():
    from streams.respond.compose import asks_the_business

    assert asks_the_business("vcs colocam microchip?") and asks_the_business("o x aurora vem com oq?")
    assert not asks_the_business("vc é robô ou gente?") and not asks_the_business("kkkk ele é mto dramático mesmo")
    # the intent says "general", but the knowledge does not say: hand over, not "Entendi!"
    assert ask("vcs colocam microchip?", "general", CLINIC, retrieval="optional") == FALLBACK_NO_KNOWLEDGE
    assert ask("vc é robô ou gente?", "general", CLINIC, retrieval="optional") != FALLBACK_NO_KNOWLEDGE


def test_a_question_word_that_joins_a_statement_asks_nothing():
    from streams.respond.compose import asks_the_business

    # "qdo" and "quem" inside a clause, with no "?" and no asker's frame: a statement, answered as small talk
    assert not asks_the_business("o zeus ama vcs kkk fica doido qdo ve a van chegando")
    assert not asks_the_business("a vitrine é a coisa mais linda, parabens pra quem decorou 😍")
    assert ask("o zeus ama vcs kkk fica doido qdo ve a van chegando", "general", CLINIC,
               retrieval="optional") != FALLBACK_NO_KNOWLEDGE
    # the same words framed as a question still ask, with or without a "?"
    assert asks_the_business("me fala quando vcs abrem") and asks_the_business("pra quem eu mando o comprovante")
    assert asks_the_business("o zeus fica doido, vcs buscam ele quando?")


def test_a_verb_is_covered_by_its_noun():
    from streams.respond.compose import answer_units, uncovered_focus

    units = answer_units("- Não fazemos corte de orelha ou de cauda.\n- Não hospedamos gatos.")
    assert uncovered_focus("vcs cortam orelha de pitbull?", units) == {"pitbu"}
    assert ask("vcs cortam orelha de pitbull?", "info_request",
               "# O que não fazemos\n\n- Não fazemos corte de orelha ou de cauda.").startswith("Não")


def test_a_count_is_not_a_price_and_a_short_other_name_is_a_word_of_its_own():
    from streams.respond.compose import answer_units, uncovered_focus, wants_price

    assert not wants_price("quantas pessoas podem ficar na suite?", price_intent=True)
    assert wants_price("qnto custa pra 2 pessoas?") and wants_price("quantos reais é a diaria?", price_intent=True)
    # "camarão" is "frutos do mar", whose "mar" is not the "mar" of "margherita"
    units = answer_units("- Pizzas Margherita, Calabresa e Portuguesa.")
    assert uncovered_focus("tem pizza de camarao?", units) == {"camar"}


def test_an_unnamed_item_of_named_ones_is_handed_over_but_a_plain_adjective_is_not():
    suites = "# Suítes\n\n- **Suíte Brisa**: cama queen. 2h: R$ 89,00.\n- **Suíte Coral**: ofurô. 2h: R$ 139,00."
    assert ask("qnto custa a suite presidencial?", "price_question", suites) == FALLBACK_NO_KNOWLEDGE
    clinic = "# Consultas\n\n- Consulta clínica geral: R$ 160,00\n- Consulta de filhote: R$ 130,00"
    assert "R$ 160,00" in ask("qnto custa a consulta normal?", "price_question", clinic)


def test_a_title_in_a_street_name_is_not_a_person():
    from streams.respond.compose import names_someone

    assert not names_someone("Unidade Centro — Rua Doutor Amâncio, 415.")
    assert names_someone("A veterinária Dra. Helena atende às terças.")


def test_no_through_another_name_only_when_the_whole_kind_is_denied():
    from streams.respond.compose import denies_whole_kind

    assert denies_whole_kind("Não servimos drinks nem destilados.", {"drink"})
    assert not denies_whole_kind("Não fazemos cirurgias ortopédicas.", {"cirur"})
    text = ask("vcs fazem castração?", "info_request", "# Cirurgias\n\n- Castração de gata: R$ 520,00.\n"
               "- Não fazemos cirurgias ortopédicas.")
    assert not text.startswith("Não")


PAYMENT = """# Pagamento

- Pix e cartão de crédito.
- Parcelamento em até 3x sem juros no cartão de crédito, para valores acima de R$ 300,00.

Se precisar de outro serviço, indicamos parceiros da região."""

SURGERY = """# Castração

- Castração de gata: R$ 520,00
- Castração de cadela até 15 kg: R$ 790,00"""


def test_the_word_that_decided_the_intent_names_what_is_asked():
    # "parcelar" is the subject; the castration is only what it is about
    text = ask("da pra parcelar uma castracao de cadela?", "policy", SURGERY, PAYMENT)
    assert "3x sem juros" in text and "R$ 790,00" not in text


def test_a_long_word_needs_six_letters_in_common_to_be_covered():
    from streams.respond.compose import uncovered_focus

    units = units_of_chunks([PAYMENT.replace("Parcelamento em até 3x", "Em até 3x")])
    assert "parce" in uncovered_focus("da pra parcelar?", units)   # "parceiros" does not cover it
    assert "parce" not in uncovered_focus("da pra parcelar?", units_of_chunks([PAYMENT]))


def test_the_question_clause_decides_and_the_told_part_is_context():
    from streams.respond.compose import question_part

    assert question_part("tem elevador? minha esposa tem problema no joelho") == "tem elevador?"
    assert question_part("posso levar meu vinho? cobra alguma coisa") == "posso levar meu vinho? cobra alguma coisa"
    assert question_part("qnto custa o rodizio? e crianca paga?") == "qnto custa o rodizio? e crianca paga?"
    assert question_part("quero saber o preço da Jade") == "quero saber o preço da Jade"   # no question mark
    rules = "# Regras\n\n- Não temos elevador. A Suíte Topázio fica no térreo."
    text = ask("tem elevador? minha esposa tem problema no joelho", "info_request", rules)
    assert text.startswith("Não") and "não temos elevador" in text.lower()


def test_no_price_difference_answers_is_it_more_expensive():
    grooming = "# Tosa\n\n- Tosa higiênica: R$ 40,00\n\nA tosa pode ser na máquina ou na tesoura, sem diferença de preço."
    assert "sem diferença de preço" in ask("tosa na tesoura é mais cara?", "price_question", grooming)


def test_time_gone_by_is_not_an_item_asked_for():
    orders = "# Pedidos\n\n- Cancelamento de delivery: sem custo em até 5 minutos após a confirmação do pedido."
    assert "5 minutos" in ask("quero cancelar o pedido, ja faz 20 min q confirmei", "policy", orders)


def test_a_name_written_in_two_pieces_covers_the_word_typed_whole():
    from streams.respond.compose import concept_forms, uncovered_focus

    assert "wi fi" in concept_forms("o wifi é de graça?")["wifi"]
    units = units_of_chunks(["# Estrutura\n\nEm todas as suítes: Wi-Fi gratuito e TV."])
    assert "wifi" not in uncovered_focus("o wifi é de graça?", units)


def test_an_item_whose_qualifier_is_only_named_elsewhere_is_handed_over():
    drinks = "# Bebidas\n\n- Cerveja long neck: R$ 14,00\n- Chopp 300 ml: R$ 11,00"
    pizzas = "# Especiais\n\nCasarão da Vila: linguiça artesanal, cebola roxa e provolone."
    assert ask("vcs tem cerveja artesanal?", "info_request", drinks, pizzas) == FALLBACK_NO_KNOWLEDGE
    assert "R$ 14,00" in ask("vcs tem cerveja long neck?", "info_request", drinks, pizzas)
    assert "não temos massa integral" in ask("tem massa integral?", "info_request",
                                             "# Massas\n\nNão temos massa integral. A massa é fina.").lower()


def test_what_the_customer_takes_along_is_what_the_business_lets_bring():
    drinks = ("# Bebidas\n\n- Vinho rosé: R$ 105,00\n- Vinho tinto: R$ 115,00\n\n"
              "Trazer de fora: é permitido trazer bebidas, com taxa de rolha de R$ 35,00 por garrafa.")
    assert "R$ 35,00" in ask("posso levar meu vinho? cobra alguma coisa", "policy", drinks)


def test_no_only_when_the_thing_asked_is_denied():
    pool = "# Estrutura\n\n- Não temos piscina coletiva; a única piscina é a privativa da Suíte Safira."
    assert not ask("vcs tem quarto com piscina?", "info_request", pool).startswith("Não,")
    pay = "# Pagamento\n\n- Cartão de crédito e de débito.\n- Não parcelamos compras no cartão de crédito."
    assert not ask("aceita cartao de credito?", "info_request", pay).startswith("Não")
    assert ask("vcs parcelam no cartao?", "policy", pay).startswith("Não, não parcelamos")


def test_a_denied_object_is_not_a_denied_subject():
    vegan = "# Veganas\n\n- Grande vegana: R$ 72,00.\n\nSem lactose: as pizzas veganas não contêm lactose."
    assert not ask("tem pizza vegana?", "info_request", vegan).startswith("Não")
    pets = "# Regras\n\n- Animais de estimação não são permitidos, com exceção de cão-guia."
    assert "não são permitidos" in ask("posso levar meu cachorro?", "policy", pets)


def test_each_question_of_a_message_gets_its_answer():
    from streams.respond.compose import question_clauses

    assert question_clauses("vcs entregam no jardim europa? e qnto é a taxa") == [
        "vcs entregam no jardim europa?", "e qnto é a taxa"]
    assert question_clauses("tem elevador? minha esposa tem problema no joelho") == []
    text = ask("qnto sai a safira 4h? e a topazio aluga por 2h?", "price_question", SUITES)
    assert "R$ 240,00" in text and "não é alugada por 2h" in text


def test_a_unit_naming_the_one_thing_asked_beats_one_sounding_like_it():
    pay = "# Pagamento\n\nFormas de pagamento: Pix, cartão e dinheiro. Não aceitamos cheque."
    assert ask("aceita pix?", "info_request", pay).startswith("Formas de pagamento: Pix")


def test_two_questions_one_not_covered_answers_the_other_and_hands_the_rest_over():
    cake = "# Eventos\n\nBolo: o cliente pode trazer bolo de fora, com taxa de bolo de R$ 20,00."
    text = ask("fazem festa de aniversario ai? tem taxa pra levar bolo?", "price_question", cake)
    assert "R$ 20,00" in text and text.endswith(FALLBACK_NO_KNOWLEDGE)


def test_a_paragraph_label_names_its_later_sentences_and_a_fuller_unit_joins_the_best():
    parking = ("# Unidades\n\nEstacionamento: não temos estacionamento próprio em nenhuma das unidades. "
               "Na unidade Centro existe convênio com o Bastos Park, ao lado da clínica. "
               "Na unidade Lagoa há vagas de zona azul na rua.")
    units = answer_units(parking)
    assert [u.label for u in units] == ["", "Estacionamento", "Estacionamento"]
    assert "Bastos Park" in ask("tem estacionamento na unidade centro?", "info_request", parking)


def test_a_bold_label_the_chunker_glued_to_a_list_item_opens_its_own_unit():
    glued = ("- se o cliente não aparecer e não avisar, o sinal não é devolvido. **Discrição na cobrança**: "
             'na fatura do cartão, a cobrança aparece como "RA Hotelaria".')
    texts = [u.text for u in answer_units(glued)]
    assert texts[-1] == 'Discrição na cobrança: na fatura do cartão, a cobrança aparece como "RA Hotelaria".'
    assert not any(t.startswith("se o cliente") and "Discrição" in t for t in texts)


def test_a_label_with_its_colon_inside_the_bold_opens_a_paragraph_too():
    glued = ("- **Unidade Centro**: Av. Coronel Bastos, 1.250. WhatsApp (11) 4002-3302. "
             "**Horário (nas duas unidades):** - Segunda a sexta: das 8h às 19h")
    texts = [u.text for u in answer_units(glued)]
    assert "Unidade Centro: Av. Coronel Bastos, 1.250. WhatsApp (11) 4002-3302." in texts


def test_no_is_not_read_from_an_offer_of_something_else():
    pickup = "# Retirada\n\nRetirada no balcão: não tem pedido mínimo e o cliente ganha 5% de desconto."
    assert not ask("tem desconto na retirada?", "info_request", pickup).startswith("Não")


def test_sentences_after_a_list_item_are_labelled_by_that_item_not_the_first_one():
    promos = ("- Terça em Dobro: a segunda grande sai pela metade do preço. Vale no salão e no delivery.\n"
              "- Quarta do Rodízio: rodízio no salão por pessoa, R$ 59,90 Só no salão, não vale para delivery.")
    units = answer_units(promos)
    tail = [u for u in units if u.text.startswith("Só no salão")]
    assert tail and tail[0].label == "Quarta do Rodízio"


ON_CALL = ("# Plantão\n\nNão temos plantão nem atendimento aos feriados. Num feriado com urgência, indicamos a "
           "Clínica Vida, que abre nos feriados.")


def test_a_yes_no_question_about_an_act_is_answered_by_the_denial_of_that_act():
    # the best unit talks around the question (urgência, feriado); the one denying the act asked
    # ("atendem" → "atendimento") is the honest answer, and comes first
    text = ask("urgencia no feriado, vcs atendem?", "policy", ON_CALL)
    assert text.startswith("Não, não temos plantão nem atendimento aos feriados.")
    assert "Clínica Vida" in text
    # a question that is not yes/no, or about another act, gets no such denial
    assert not ask("qual clinica vcs indicam no feriado com urgencia?", "info_request", ON_CALL).startswith("Não")


def test_the_denial_of_an_act_must_deny_what_was_asked_when_the_act_is_its_verb():
    from streams.respond.compose import asked_acts, denies_act

    assert asked_acts("emergencia de madrugada, vcs atendem?") == {"atend"}
    assert asked_acts("vcs vendem coleira?") == {"vend"}
    assert asked_acts("quais vcs atendem?") == set()          # not a yes/no question
    assert denies_act("Não temos pronto-socorro nem atendimento 24 horas.", {"atend"})
    assert not denies_act("Temos atendimento 24 horas.", {"atend"})   # no denial
    # "Não vendemos medicamentos controlados" says nothing of a coleira ...
    assert not denies_act("Não vendemos medicamentos controlados.", {"vend"}, {"colei"})
    # ... and answers "vendem remédio controlado?" (the object denied is the one asked)
    assert denies_act("Não vendemos medicamentos controlados.", {"vend"}, {"medic", "contr"})


def test_an_offer_of_another_object_is_never_turned_into_a_no():
    shop = ("# Loja\n\nCães devem estar de coleira e guia na recepção. Não vendemos medicamentos controlados; o "
            "veterinário entrega a receita.")
    assert not ask("vcs vendem coleira?", "info_request", shop).startswith("Não")


def test_do_you_sell_it_wants_a_sale_a_price_or_a_limit_not_a_mention():
    from streams.respond.compose import answers_a_sale

    shop = "# Recepção\n\nCães devem estar de coleira e guia na recepção. Gatos vêm em caixa de transporte."
    assert ask("vcs vendem coleira?", "info_request", shop) == FALLBACK_NO_KNOWLEDGE
    sweets = "# Doces\n\nPizza doce só é feita nos tamanhos broto e média. Temos pizzas grandes de calabresa."
    assert "broto e média" in ask("vcs vendem pizza doce grande?", "info_request", sweets)
    assert answers_a_sale("Cerveja long neck: R$ 14,00.")
    assert answers_a_sale("Não trabalhamos com fiado.")
    assert answers_a_sale("Vendemos vale-presente de qualquer valor.")
    assert not answers_a_sale("Cães devem estar de coleira e guia.")


def test_a_limit_on_the_name_asked_answers_a_yes_no_question_before_its_words_apart():
    from streams.respond.compose import phrases_named

    menu = ("# Tamanhos\n\nPizza meio a meio só nos tamanhos média, grande e família. "
            "Pizza doce só é feita nos tamanhos broto e média.")
    text = ask("tem pizza doce grande?", "info_request", menu)
    assert text == "Pizza doce só é feita nos tamanhos broto e média."
    assert phrases_named("tem pizza doce grande?", "Pizza doce só é feita") == {("pizza", "doce")}
    assert phrases_named("tem pizza doce grande?", "Pizza meio a meio só nos tamanhos média, grande") == set()
    # a place named as one ("Vila Nova") that another rule limits is not what was asked
    units = ("# Vila Nova\n\nNa varanda aceitamos pets de pequeno porte, com coleira. "
             "Espaço kids: apenas na unidade Vila Nova, aos sábados.")
    text = ask("posso levar meu cachorro na vila nova?", "policy", units)
    assert "Na varanda aceitamos pets" in text and "Espaço kids" not in text


def test_the_line_of_an_item_the_best_unit_points_to_by_name_joins_it():
    from streams.respond.compose import answer_units, item_name, refers_to

    house = ("# Estrutura\n\nNão temos piscina coletiva; a única piscina é a da Suíte Safira.\n\n"
             "- **Suíte Safira**: ofurô aquecido e teto solar. 2h: R$ 180,00.\n"
             "- **Suíte Jade**: hidromassagem. 2h: R$ 110,00.")
    text = ask("vcs tem suite com piscina?", "info_request", house)
    assert "a única piscina é a da Suíte Safira" in text and "ofurô aquecido e teto solar" in text
    assert "Jade" not in text
    units = answer_units(house)
    safira = next(u for u in units if u.text.startswith("Suíte Safira"))
    assert item_name(safira) == "Suíte Safira"
    assert refers_to("a única piscina é a da Suíte Safira", safira)
    assert not refers_to(safira.text, safira)            # its own line does not point to itself


NOISE = """# Banho e tosa

Pets com medo de barulho são secos com toalha e secador silencioso, mediante aviso.

Servimos ração premium sem custo no hotel; o tutor pode trazer a ração do pet."""


def test_an_unknown_word_the_best_unit_says_in_other_words_is_not_an_unknown_item(use_embedder):
    from streams.respond.evaluate_answers import CachedEmbedder

    emb = CachedEmbedder(use_embedder)
    question = "o meu gato tem pavor do secador, da pra secar de outro jeito?"

    def reply(composer, message):
        req = ReplyRequest(messages=[], message=message, intent="info_request", retrieval="required",
                           chunks=(chunk(NOISE),))
        return composer.generate(req).text

    # "pavor" is never in the knowledge, but "medo" is: the embedder reads one word as the other
    assert "secador silencioso" in reply(OfflineComposer(embedder=emb), question)
    # off (no word is close enough): the unknown word vetoes the answer, as before
    assert reply(OfflineComposer(embedder=emb, synonym_similarity=1.01), question) == FALLBACK_NO_KNOWLEDGE
    # an item the knowledge never names stays unknown: a brand is not a synonym of "ração"
    assert reply(OfflineComposer(embedder=emb), "vcs vendem ração golden formula?") == FALLBACK_NO_KNOWLEDGE


def test_a_choice_between_two_options_is_asked_of_each():
    from streams.respond.compose import option_questions

    assert option_questions("o que sai mais barato, a Jade ou a Safira?") == [
        "o que sai mais barato, a Jade?", "o que sai mais barato, a Safira?"]
    assert option_questions("aceita pix ou não?") == []
    assert option_questions("tem vaga?") == []
    # each option gets its own line, though the first one's section names the second's word too
    salty = "## Salgadas\n\nMussarela e Calabresa.\n\n- Pequena: R$ 32,00\n- Média: R$ 46,00"
    sweet = "## Doces\n\nBrigadeiro e Paçoca.\n\n- Pequena doce: R$ 34,00\n- Média doce: R$ 49,00"
    text = ask("o que fica mais barato, uma media doce ou uma media salgada?", "price_question", salty, sweet)
    assert "R$ 49,00" in text and "R$ 46,00" in text


def test_each_option_is_asked_with_its_own_intent():
    # read as a price question ("paga"), the whole wants an amount, which the knowledge never states
    text = ask("o estacionamento ta incluso na diaria ou paga a parte?", "price_question", "# Hospedagem\n\nO estacionamento coberto está incluso na diária, para um carro.")
    assert "incluso na diária" in text


def test_which_attribute_the_knowledge_never_states_is_handed_over():
    """"qual a marca da ração premium?": the knowledge talks about the ração premium but never
    names its brand; quoting the ração sentence would answer another question."""
    hotel = "O tutor pode trazer a ração do pet; se não trouxer, servimos ração premium sem custo."
    assert ask("qual a marca da racao premium q vcs dao no hotel?", "info_request", hotel) == FALLBACK_NO_KNOWLEDGE
    # "marca" is not "marcada"; an attribute the knowledge does state is answered
    vets = "Atendemos cães e gatos com hora marcada. O horário da clínica é das 8h às 19h."
    assert ask("qual a marca da vacina de vcs?", "info_request", vets) == FALLBACK_NO_KNOWLEDGE
    assert "8h às 19h" in ask("qual o horário da clínica?", "info_request", vets)


KITS = """# Kits de festa

- **Kit Festa Infantil** — R$ 250,00: bolo, balões e mesa decorada com o tema escolhido.
- **Kit Festa Adulto** — R$ 300,00: bolo, espumante e painel de fotos com luzes."""


def test_the_cheapest_or_dearest_of_a_kind_compares_the_prices_of_its_items():
    from streams.respond.compose import extreme_price

    # Topázio's lowest price (R$ 95,00) is the lowest of all; Safira's highest (R$ 390,00) the highest
    assert ask("qual a suite mais barata?", "price_question", SUITES).startswith("Suíte Topázio")
    assert ask("e qual a suíte mais cara de vcs?", "price_question", SUITES).startswith("Suíte Safira")
    assert ask("qual é o mais em conta?", "price_question", SUITES).startswith("Suíte Topázio")   # no kind said
    assert extreme_price("qual dos kits é o mais caro?") == ("max", frozenset({"kit"}))
    assert extreme_price("qual a pizza menos cara?")[0] == "min"
    # comparisons are not superlatives: they are answered by both options (``option_questions``)
    assert extreme_price("a jade é mais cara que a safira?") is None
    assert extreme_price("o que sai mais barato, a jade ou a safira?") is None
    assert extreme_price("é mais caro?") is None


def test_an_unknown_qualifier_gives_way_when_the_best_unit_identifies_the_item_by_every_other_word():
    # "inteiro" is said of no kit, but "kit", "festa", "painel" and "fotos" name the Adulto one
    assert "R$ 300,00" in ask("qnto sai o kit inteiro de festa com painel de fotos?", "price_question", KITS)
    # the kind's head alone, or with one more word, does not identify an item: still an unknown variant
    assert ask("qnto sai o kit luxo?", "price_question", KITS) == FALLBACK_NO_KNOWLEDGE
    assert ask("qnto sai o kit luxo com painel?", "price_question", KITS) == FALLBACK_NO_KNOWLEDGE


def test_a_line_naming_another_item_by_its_proper_name_brings_that_items_line():
    plans = ("# Planos\n\n- **Plano Ouro**: tudo o que o Prata tem, mais banho semanal. Mensal: R$ 180,00.\n"
             "- **Plano Prata**: consulta e vacinas. Mensal: R$ 120,00.\n- **Plano Bronze**: consulta. Mensal: R$ 70,00.")
    got = ask("qual a diferença de preço do prata pro ouro?", "price_question", plans)
    assert "R$ 180,00" in got and "R$ 120,00" in got and "R$ 70,00" not in got


def test_being_and_a_problem_are_how_a_question_is_put_not_what_it_asks_about():
    # "somos em 10 pessoas, tem problema?" asks whether ten people may come: "pessoas" is the focus
    tables = "# Mesas\n\nReservamos mesas para até 8 pessoas. Grupos maiores não são aceitos no salão."
    for q in ("somos em 10 pessoas, tem problema?", "estamos em 10 pessoas, tem algum problema?"):
        assert "até 8 pessoas" in ask(q, "policy", tables)


def test_a_yes_no_question_about_one_deal_is_answered_by_its_denial_even_as_an_objection():
    deals = ("# Promoções\n\nTerça em dobro: duas pizzas grandes pelo preço de uma.\n\n"
             "Não temos desconto para aniversariante nem cupom de primeira compra.")
    got = ask("se for meu aniversario eu ganho desconto?", "objection", deals)
    assert "desconto para aniversariante" in got and "Terça em dobro" not in got
    # a plain objection still gets the deal
    assert "Terça em dobro" in ask("ta caro demais, nao tem desconto?", "objection", deals)


def test_a_seven_letter_word_needs_six_letters_in_common_to_be_covered():
    """"vcs parcela o clareamento?": "parcela" (seven letters) is not covered by "parceria" either;
    a word of the same six letters still covers it ("aceitam" / "aceitamos")."""
    from streams.respond.compose import uncovered_focus

    units = units_of_chunks(["Clareamento a laser: R$ 900,00, em parceria com o laboratório Sorriso."])
    assert "parce" in uncovered_focus("vcs parcela o clareamento?", units)
    assert "parce" not in uncovered_focus("vcs parcela o clareamento?", units_of_chunks(
        ["Clareamento: parcelamos em até 4x no cartão."]))
    assert not uncovered_focus("aceitam vale?", units_of_chunks(["Aceitamos vale-refeição."]))


PACKAGES = """# Decoração para datas especiais

- **Pacote Pétalas** — R$ 120,00: pétalas de rosa na cama, caminho de velas de LED e 6 balões de coração.
- **Pacote Aurora Romântica** — R$ 260,00: tudo do Pacote Pétalas, mais uma garrafa de espumante nacional.
- **Pacote Pedido de Casamento** — R$ 390,00: tudo do Aurora Romântica, mais letreiro luminoso e tapete de pétalas."""


def test_an_item_asked_by_name_is_priced_by_its_own_line_not_a_siblings_that_mentions_it(use_embedder):
    """Stop 41 (probe_ax): "tudo do Pacote Pétalas, mais ..." prices the Aurora Romântica, not the Pétalas (by
    meaning the sibling's line ranked first)."""
    from streams.respond.evaluate_answers import CachedEmbedder

    composer = OfflineComposer(embedder=CachedEmbedder(use_embedder))
    picked = composer.pick_sentences("qnto fica o pacote petalas?", [chunk(PACKAGES)], "price_question")
    assert [u.text.split(" —")[0] for u in picked] == ["Pacote Pétalas"]
    # a name with a lower-case connector is a name ("Pacote Pedido de Casamento")
    from streams.respond.compose import answer_units, item_name
    assert [item_name(u) for u in answer_units(PACKAGES)][2] == "Pacote Pedido de Casamento"
    # an item not named keeps every line that may answer
    picked = composer.pick_sentences("qnto fica o pacote aurora romantica?", [chunk(PACKAGES)], "price_question")
    assert picked[0].text.startswith("Pacote Aurora Romântica")


def test_the_cheapest_for_a_period_with_no_kind_named_is_found_by_the_period_and_told_against_the_next_item():
    """"qual é a opção mais em conta pra 2h?": "opção" names no kind, and the vector finds the deals; the priced
    lists are found by the period ("2h"), the cheapest item for it leads, and the chunk holding the next item of the
    comparison comes with it when the answer's chunk holds no other (the composer tells a cheapest only among two
    or more)."""
    from streams.respond.compose import extreme_price, price_labels_asked
    from streams.respond.handler import _extreme_of_kind_steps
    from tests.respond.fakes import WordIndex, chunk, inbound, run_steps

    assert extreme_price("qual é a opçao mais em conta pra 2h?") == ("min", frozenset())
    assert price_labels_asked("qual sai mais em conta pra ficar 4h na praia?") == ["4h"]
    first = chunk("# Suítes\n\n- **Suíte Lua**: cama redonda. 2h: R$ 80,00 · Pernoite: R$ 180,00.")
    second = chunk("- **Suíte Sol**: hidromassagem. 2h: R$ 120,00 · Pernoite: R$ 240,00.")
    deal = chunk("**Tarde Feliz**: 20% de desconto nos períodos de 2h e 4h, de segunda a quinta.")
    other = chunk("**Reservas**: não são obrigatórias.")
    lexical = WordIndex({"2h": [deal, second, first]})
    got = run_steps(_extreme_of_kind_steps(inbound("qual é a opçao mais em conta pra 2h?"),
                                           "qual é a opçao mais em conta pra 2h?", [deal, other], lexical, 3))
    assert got == [first, second, deal]
    text = ask("qual é a opçao mais em conta pra 2h?", "price_question", first.text, second.text, deal.text)
    assert text.startswith("Suíte Lua")
