"""The answer is about the thing asked: another item's line, a line on what is around the thing,
or a rule for another lead time never answers it. Knowledge and questions written here."""


from streams.respond.compose import (
    named_items,
    offered_object,
    range_fit,
    sibling_item,
    units_of_chunks,
    unknown_priced,
)
from streams.respond.generate import FALLBACK_NO_KNOWLEDGE
from streams.respond.text import fold, normalize_chat
from tests.respond.fakes import composed as ask

CABINS = """# Chalés

- **Chalé Ipê**: cama de casal king, lareira e frigobar. Diária: R$ 320,00.
- **Chalé Cedro**: tudo o que o Ipê tem, mais banheira de hidromassagem. Diária: R$ 410,00.
- **Chalé Aroeira**: decoração rústica, rede na varanda e vista do lago. Diária: R$ 380,00."""

ACCESS = """# Acessibilidade

O Chalé Ipê e o Chalé Cedro ficam no nível da recepção. O Chalé Aroeira fica no alto do morro, com acesso por uma trilha de pedras. Não temos carrinho de transporte.

# Animais

Na área do gramado aceitamos animais de pequeno porte, com guia. No restaurante não entram animais."""

BOOKING = """# Reservas

Pedimos sinal de 40% por transferência.

**Desistência**:
- até 72 horas antes da chegada, o sinal é devolvido;
- com menos de 72 horas, o sinal vira crédito para usar em até 90 dias."""


def test_an_item_named_is_not_answered_by_a_siblings_line():
    units = units_of_chunks([CABINS])
    asked = named_items("a aroeira tem cama king ou queen?", units)
    assert asked == {"chale aroeira"}
    ipe = next(u for u in units if u.text.startswith("Chalé Ipê"))
    cedro = next(u for u in units if u.text.startswith("Chalé Cedro"))
    assert sibling_item(ipe, asked)
    assert not sibling_item(cedro, named_items("o ipe tem banheira?", units))   # the Cedro's line speaks of the Ipê
    # the Ipê's "king" says nothing of the Aroeira's bed: hand over
    text = ask("a aroeira tem cama king ou queen?", "info_request", CABINS)
    assert FALLBACK_NO_KNOWLEDGE in text and "king" not in text
    assert "king" in ask("o ipe tem cama king ou queen?", "info_request", CABINS)
    assert "banheira" in ask("o ipe tem banheira?", "info_request", CABINS)


def test_the_thing_asked_whether_they_have_it_is_what_the_answer_names():
    assert offered_object("o chale do morro tem carrinho?") == {"carri"}
    # a kind of the thing asked ("pra moto") or a place after it leaves the thing unnamed alone
    assert offered_object("tem vaga pra moto?") == set()
    assert offered_object("qual o valor do chale?") == set()
    text = ask("o chale aroeira do alto tem carrinho? minha avó usa bengala", "info_request", ACCESS)
    assert text.startswith("Não, não temos carrinho") and "trilha" in text


def test_the_sentence_before_a_no_on_the_thing_asked_is_part_of_the_answer():
    animals = ACCESS.split("# Animais")[1]
    text = ask("posso levar meu gato no restaurante?", "policy", animals)
    assert text.startswith("Não") and "No restaurante não entram animais" in text and "gramado" in text
    # where the sentence before allows what the no denies, it leads: the answer is no plain "não"
    text = ask("posso levar animais?", "policy", animals)
    assert text.startswith("Na área do gramado aceitamos animais") and "No restaurante" in text


def test_a_lead_time_is_held_by_the_rule_on_the_time_before_not_a_period_after():
    before = normalize_chat("se eu desistir com 4 dias de antecedencia perco o sinal?")
    assert range_fit(before, fold("até 72 horas antes da chegada, o sinal é devolvido;")) is True
    assert range_fit(before, fold("com menos de 72 horas, o sinal vira crédito para usar em até 90 dias.")) is False
    late = normalize_chat("e se eu desistir umas 20 horas antes?")
    assert range_fit(late, fold("até 72 horas antes da chegada, o sinal é devolvido;")) is False
    assert range_fit(late, fold("com menos de 72 horas, o sinal vira crédito para usar em até 90 dias.")) is True
    # a bare "até" is still an upper bound ("até 10 kg")
    assert range_fit(normalize_chat("meu cachorro tem 8 kg"), fold("Pequeno (até 10 kg): R$ 50,00.")) is True
    assert "crédito" in ask("se eu desistir na vespera, umas 12 horas antes, perco o sinal?", "policy", BOOKING)
    assert "devolvido" in ask("se eu desistir com uma semana, 5 dias de antecedencia, perco o sinal?", "policy",
                              BOOKING)


def test_a_no_to_a_way_of_the_thing_is_no_no_to_the_thing():
    from streams.respond.compose import denies_outright, stem

    assert not denies_outright("Não vendemos bolo por fatia.", stem("bolo"))
    assert not denies_outright("Não temos quarto com banheira.", stem("quarto"))
    assert denies_outright("Não temos sauna em nenhuma unidade.", stem("sauna"))
    assert denies_outright("Não servimos sobremesa.", stem("sobremesa"))
    # "bolo por fatia" denied says nothing of a bolo de jabuticaba: the unknown flavour is handed over
    cakes = "# Bolos\n\nBolo de cenoura e bolo de chocolate, inteiros. Não vendemos bolo por fatia."
    assert ask("vcs tem bolo de jabuticaba?", "info_request", cakes) == FALLBACK_NO_KNOWLEDGE


def test_giving_up_is_cancelling_and_a_late_delivery_is_a_delay():
    from streams.respond.compose import concept_forms

    assert "cance" in set().union(*concept_forms("se eu desistir da reserva perco o sinal?").values())
    assert "atras" in set().union(*concept_forms("o lanche demorou demais, tenho direito a algo?").values())
    rules = """# Entregas

- **Taxa**: R$ 7,00 em todo o bairro.
- **Atraso**: se o lanche passar de 50 minutos, o próximo pedido sai com 10% de desconto."""
    assert "10% de desconto" in ask("se o lanche demorar muito eu ganho alguma coisa?", "policy", rules)


def test_what_is_allowed_before_a_no_picked_after_another_line_joins_it():
    deliveries = "# Entregas\n\n- Unidade Lagoa entrega em: Lagoa, Centro e Bosque.\n- Unidade Serra entrega em: Serra e Vale."
    lagoa = "## Lagoa\n\nRua das Garças, 77.\n\nNo jardim aceitamos cães pequenos, com guia. No salão não entram cães."
    text = ask("posso ir com meu cachorro na lagoa?", "policy", deliveries, lagoa)
    assert text.startswith("Lagoa: No jardim aceitamos cães") and "No salão não entram cães" in text
    assert "entrega em" not in text


def test_a_variant_outside_the_only_ones_allowed_is_answered_by_the_limit():
    from streams.respond.compose import excluded_variant

    sizes = "# Tamanhos\n\nServimos três tamanhos:\n\n- Pequeno: 300 ml\n- Médio: 500 ml\n- Gigante: 700 ml.\n\nTodos com chantilly."
    shakes = ("## Milkshakes especiais\n\nOvomaltine, Nutella e Pistache.\n\n- Pequeno especial: R$ 18,00\n"
              "- Médio especial: R$ 24,00\n\nMilkshake especial só é feito nos tamanhos pequeno e médio.")
    units = units_of_chunks([shakes, sizes])
    limit = excluded_variant("da pra pedir o de pistache no tamanho gigante?", units)
    assert limit is not None and limit.text.startswith("Milkshake especial só")
    assert "pequeno e médio" in ask("da pra pedir o de pistache no tamanho gigante?", "info_request", shakes, sizes)
    # a size allowed, or a thing the limit is not about, is no excluded variant
    assert excluded_variant("da pra pedir o de pistache no tamanho medio?", units) is None
    assert excluded_variant("qnto ta o milkshake de morango gigante?", units) is None


ROOMS = """# Quartos

- **Quarto Ipê**: cama de casal e ventilador de teto. 3h: R$ 90,00 · Pernoite: R$ 210,00.
- **Quarto Cedro**: tudo o que o Ipê tem, mais ar-condicionado e frigobar. 3h: R$ 120,00 · Pernoite: R$ 260,00.

**Parcelamento**: a pernoite pode ser dividida em até 4x sem juros no cartão.

# Reservas

Pedimos sinal de 30% no Pix para reservar o quarto.

**Cancelamento**:
- com até 48 horas de antecedência, o sinal é devolvido;
- com menos de 48 horas, o sinal vira crédito para usar em até 30 dias."""


def test_a_stay_and_a_cancellation_said_in_the_customers_words_are_the_knowledges():
    """"pra dormir" is the overnight stay ("Pernoite"); taking a booking off the calendar ("desmarcar") is cancelling it,
    and what was paid ahead ("o q paguei adiantado") is its "sinal": none of those words is the knowledge's, each is
    answered, not handed over."""
    text = ask("qnto fica o cedro pra dormir?", "price_question", ROOMS)
    assert "260,00" in text and FALLBACK_NO_KNOWLEDGE not in text
    text = ask("se eu desmarcar perco o q paguei adiantado?", "policy", ROOMS)
    assert "o sinal" in text and FALLBACK_NO_KNOWLEDGE not in text
    assert "crédito" in ask("se eu desmarcar umas 10 horas antes perco o q paguei adiantado?", "policy", ROOMS)
    # paying in parts with no number said ("em vezes") is the knowledge's "Parcelamento"
    assert "4x" in ask("da pra pagar a pernoite do cedro em vezes?", "policy", ROOMS)


GROOMING = """# Banho e tosa

- **Pequeno (até 10 kg)**: banho R$ 55,00; banho + tosa R$ 90,00.
- **Grande (acima de 25 kg)**: banho R$ 95,00; banho + tosa R$ 150,00.
- **Consulta clínica**: R$ 150,00.

# Bebidas

- Taça de vinho da casa: R$ 22,00. Garrafa de vinho da casa: R$ 89,00.
- Refrigerante lata 350 ml: R$ 6,00."""


def test_a_price_asked_of_a_thing_the_knowledge_never_names_is_handed_over():
    """"qnto vcs cobram de rolha?" asks the price of corkage, which no line names: the wine list's prices answer
    another question. The same for the kind a "de" gives the thing ("limpeza de tartaro", "refri de 600ml"). Whose
    the thing is ("num shih tzu de 7kg", "nele"), a word describing it ("normal") and a count ("as duas") are no
    other thing: those are still answered."""
    units = units_of_chunks([GROOMING])
    assert unknown_priced("qnto vcs cobram de rolha se eu levar meu vinho?", units) == {"rolha"}
    assert ask("qnto vcs cobram de rolha se eu levar meu vinho?", "price_question", GROOMING) == FALLBACK_NO_KNOWLEDGE
    assert ask("qnto ta a limpeza de tartaro num cachorro pequeno?", "price_question", GROOMING) \
        == FALLBACK_NO_KNOWLEDGE
    assert ask("qnto ta o refri de 600ml?", "price_question", GROOMING) == FALLBACK_NO_KNOWLEDGE
    assert unknown_priced("qnto fica banho e tosa num shih tzu de 7kg?", units) == set()
    assert "90,00" in ask("qnto fica banho e tosa num shih tzu de 7kg?", "price_question", GROOMING)
    assert "150,00" in ask("tenho um golden de 32kg, qnto fica banho e tosa nele", "price_question", GROOMING)
    assert "150,00" in ask("qnto ta a consulta normal?", "price_question", GROOMING)
    assert unknown_priced("a taça e a garrafa qnto fica as duas?", units) == set()
    assert unknown_priced("qnto fica pra 2h?", units) == set()


def test_whether_they_charge_a_thing_is_asked_of_that_thing():
    """"vcs cobram os 10% do garçom?" asks whether a thing is charged, like "vcs têm ...?" asks whether it is offered:
    no line names the waiter's share, so a line on the wine list does not answer it. A thing the knowledge prices is
    answered however the charge is put ("a parte" says how, not what)."""
    assert ask("vcs cobram os 10% do garçom no salão?", "policy", GROOMING) == FALLBACK_NO_KNOWLEDGE
    assert ask("se eu levar meu proprio vinho vcs cobram rolha?", "policy", GROOMING) == FALLBACK_NO_KNOWLEDGE
    assert "6,00" in ask("vcs cobram o refrigerante a parte?", "policy", GROOMING)


def test_a_line_closing_the_list_of_a_thing_answers_any_kind_of_it_the_knowledge_never_names():
    """"tem desconto pra policial militar?": no line names the police, but "não oferecemos outros descontos" (or "os
    únicos descontos são os descritos") says there is no such discount; a mere "só" keeps one item to its sizes and
    closes nothing ("pizza doce só é feita nos tamanhos broto e média" says nothing of a pizza with less salt)."""
    from streams.respond.compose import closes_the_list

    deals = ("# Pagamento e descontos\n\nAceitamos Pix e cartão. Não existe cartão VIP nem desconto por indicação: os "
             "únicos descontos são os descritos nesta página.\n\n**Pacote mensal**: 4 banhos com 10% de desconto.")
    text = ask("tem desconto pra policial militar?", "policy", deals)
    assert text.startswith("Não") and "os únicos descontos" in text and FALLBACK_NO_KNOWLEDGE not in text
    assert closes_the_list("Fora o pacote e o convênio, não oferecemos outros descontos.", "desco")
    assert closes_the_list("os únicos descontos são os descritos nesta página", "desco")
    assert not closes_the_list("Pizza doce só é feita nos tamanhos broto e média.", "pizza")
    sizes = "# Pizzas\n\nPizza doce só é feita nos tamanhos broto e média."
    assert ask("vcs fazem pizza com pouco sal? meu pai é hipertenso", "info_request", sizes) == FALLBACK_NO_KNOWLEDGE


def test_an_order_asked_for_at_home_is_a_delivery():
    """"qual o valor minimo pra pedir em casa?": the minimum for delivery, not the house wine ("da casa")."""
    menu = ("# Delivery\n\nPedido mínimo para entrega: R$ 35,00, sem contar a taxa. Tempo médio de entrega: de 40 a "
            "60 minutos.\n\nRetirada no balcão: não tem pedido mínimo e o cliente ganha 5% de desconto no valor.\n\n"
            "# Bebidas\n\n- Taça de vinho tinto da casa: R$ 22,00\n- Garrafa de vinho tinto da casa: R$ 90,00")
    assert "35,00" in ask("qual o valor minimo pra pedir em casa?", "price_question", menu)
