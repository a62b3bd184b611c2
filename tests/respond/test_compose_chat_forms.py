"""How customers of the stop-37 question writers put things (issue 13): a story told in one breath with
its question at the end, regional interjections, a thing brought to be drunk there, an emoji for the
thing, the south's word for delivery. Knowledge and questions written here, not copied."""


from streams.respond.compose import brought_thing, buried_question, concept_forms, question_words
from streams.respond.generate import FALLBACK_NO_KNOWLEDGE
from streams.respond.text import normalize_chat
from tests.respond.fakes import composed as ask

CLINIC = """# Cirurgias

- Castração de gato: R$ 350,00
- Castração de gata: R$ 480,00

Não atendemos animais silvestres nem répteis: somente cães e gatos."""

BAR = """# Regras do salão

- Animais: só cão-guia.
- Bolo de fora: permitido, com taxa de R$ 15,00.

# Entrega

Pedido mínimo para entrega: R$ 35,00."""


def test_a_story_told_in_one_breath_asks_from_its_last_question_word():
    msg = "oi tudo bem entao minha gata ela ta no cio direto e eu queria castrar ela quanto que fica a castracao de gata"
    assert buried_question(msg) == "quanto que fica a castracao de gata"
    assert "R$ 480,00" in ask(msg, "price_question", CLINIC)
    # a short message, or a story setting a condition, stays whole
    assert buried_question("quanto que fica a castracao de gata") == "quanto que fica a castracao de gata"
    cond = "se eu trouxer ela amanha cedo sem comer desde ontem a noite quanto que fica a castracao"
    assert buried_question(cond) == cond


def test_a_story_in_sentences_with_its_question_last_and_unmarked_asks_that_question():
    msg = ("boa noite!! eu e meu namorado vamos fazer 1 ano sexta, queria algo especial mas sem exagero kkk "
           "qnto fica a coral pernoite")
    assert buried_question(msg) == "qnto fica a coral pernoite"
    # a question followed by more talk is not the last thing said: the message stays whole
    told = "a gente vai fazer 1 ano sexta e queria algo especial mas sem exagero qnto fica a coral, fala ai"
    assert buried_question(told) == told


def test_a_pet_said_small_or_by_its_breed_is_an_animal_too():
    rules = "# Regras da casa\n\n- Animais de estimação não são permitidos, com exceção de cão-guia."
    for q in ("vou com meu cachorrinho, ele é bem quietinho e nao late, pode?",
              "a gente vai com nossa shih tzu, ela pode entrar?"):
        assert "cão-guia" in ask(q, "policy", rules), q


def test_an_interjection_names_nothing():
    assert not any(w.startswith(("oxent", "vixe", "bah")) for w in question_words("oxente vcs atendem jabuti?")[1])
    assert not any(w.startswith("bah") for w in question_words("bah qnto é o minimo na tele?")[1])
    assert "répteis" in ask("oxente vcs atendem jabuti? o meu ta com o casco esquisito", "policy", CLINIC)


def test_a_thing_brought_to_be_drunk_there_is_no_errand():
    assert brought_thing("posso levar um vinho meu pra tomar ai no salao? cobram rolha?") is not None
    assert brought_thing("posso levar o carro pra lavar?") is None     # an errand: a service done to it
    # the rule on cakes is no rule on wine: handed over
    assert FALLBACK_NO_KNOWLEDGE in ask("posso levar um vinho meu pra tomar ai? cobram rolha?", "policy", BAR)


def test_an_emoji_is_the_word_it_stands_for():
    assert "cachorro" in normalize_chat("posso levar meu 🐶?").split()
    assert "cão-guia" in ask("posso levar meu 🐶? ele é bem quietinho", "policy", BAR)


def test_tele_is_delivery():
    assert "entre" in {f for forms in concept_forms("qnto é o minimo pra pedir na tele?").values() for f in forms}
    assert "R$ 35,00" in ask("bah qnto é o minimo pra pedir na tele?", "price_question", BAR)


SURGERY_DAYS = """# Castração

- Castração de gato: R$ 350,00

As cirurgias acontecem às quintas-feiras, somente na unidade Lago. Jejum de 10 horas."""

PICKUP = """# Retirada no balcão

Sem pedido mínimo. A pizza fica pronta em cerca de 30 minutos.

# Tamanhos

Grande: 35 cm, 8 fatias."""


def test_a_confirmation_that_books_a_service_or_a_pick_up_gets_what_the_business_says_of_it():
    text = ask("blz, entao marca a castração do Tom pra quinta, obg", "confirmation", SURGERY_DAYS)
    assert text.startswith("Perfeito!") and "quintas-feiras" in text and "R$" not in text
    text = ask("blz entao, faz uma grande de calabresa pra retirada q eu passo ai", "confirmation", PICKUP)
    assert "30 minutos" in text and "35 cm" not in text
    # fetching the pet is no pick-up of an order; a plain confirmation stays a courtesy
    assert "30 minutos" not in ask("fechou, vou buscar ele as 17h", "confirmation", PICKUP)
    assert ask("fechado, obrigada!", "confirmation", PICKUP) == "Perfeito! Qualquer dúvida é só chamar por aqui."


RULES = """# Regras

- Pizza por fatia: não vendemos pizza por fatia.
- Máximo de 2 pessoas por mesa no balcão.
- Não entregamos em zona rural."""


def test_a_piece_the_countryside_and_going_in_three():
    from streams.respond.compose import party_size

    assert "não vendemos pizza por fatia" in ask("ô, vcs vendem o pedaço? so quero provar uma", "policy", RULES)
    assert "zona rural" in ask("entregam na roça, no sitio perto do trevo?", "info_request", RULES)
    assert party_size("mermão, dá pra ir em 3? eu, minha mina e uma amiga dela") == 3
    assert party_size("da pra ir em 2 carros?") is None and party_size("vou chegar em 10 minutos") is None


MENU = """## Tradicionais

Mussarela, Calabresa e Napolitana.
- Média: R$ 40,00
- Grande: R$ 52,00

# Promoções

- **Segunda Dupla**: na compra de uma pizza grande tradicional, a segunda sai pela metade do preço.
- **Sábado do Broto**: broto doce grátis nas pizzas média."""


def test_an_objection_to_a_line_with_one_price_gets_the_deal_on_that_item():
    text = ask("52 numa grande de mussarela? na pizzaria da esquina é 40", "objection", MENU)
    assert text.startswith("Entendo!") and "R$ 52,00" in text and "Segunda Dupla" in text
    assert "Sábado do Broto" not in text     # a deal on another size concedes nothing


def test_an_attribute_with_a_qualifier_the_knowledge_never_states_is_handed_over():
    units = """# Unidade Bairro Alto

Não aceitamos pets na unidade Bairro Alto. A unidade Bairro Alto tem cadeirões para bebês.
Endereço: Rua das Acácias, 120."""
    assert FALLBACK_NO_KNOWLEDGE in ask("qual o telefone fixo da unidade bairro alto?", "info_request", units)
    assert FALLBACK_NO_KNOWLEDGE in ask("qual o telefone da unidade bairro alto?", "info_request", units)
    assert "Rua das Acácias" in ask("qual o endereço completo da unidade bairro alto?", "info_request", units)


def test_calling_off_at_the_last_minute_is_the_cancellation_rule_for_less_notice():
    rules = """# Reservas

Para reservar, pedimos um sinal de 30% do valor, pago via Pix. **Cancelamento**: - até 24 horas antes da entrada, o sinal
é devolvido integralmente; - com menos de 24 horas, o sinal vira crédito para usar em até 60 dias."""
    text = ask("se eu desmarcar em cima da hr perco o sinal", "policy", rules)
    assert FALLBACK_NO_KNOWLEDGE not in text and "60 dias" in text
    assert "cance" in concept_forms("se eu desmarcar amanha")["desma"]   # stems of five letters


def test_a_yes_no_on_a_charge_is_answered_by_the_share_charged():
    from streams.respond.compose import carries_price
    from streams.respond.handler import lexically_sure

    line = "Falta sem aviso gera cobrança de 50% do valor do serviço no próximo atendimento."
    assert lexically_sure("se eu faltar cobra algo", line)       # the word search keeps it: a share is charged
    assert not lexically_sure("quanto cobra se eu faltar?", line)  # an amount asked wants R$
    assert carries_price("multa de 20% da diária", free_answers=True)
    assert not carries_price("20% dos clientes voltam", free_answers=True)


def test_a_party_said_with_its_subject():
    """Stop 50 (probe_bo): "a gente é em 3, pode entrar td mundo na msm suite?" counts a party of three, answered by
    the line on how many people may come; "a gente vai 2 horas" counts nobody."""
    from streams.respond.compose import party_size

    assert party_size("a gente é em 3, pode entrar td mundo na msm suite?") == 3
    assert party_size("a gente vai em 4, pode?") == 4
    assert party_size("a gente vai 2 horas") is None and party_size("nos vamos em 2 carros") is None
    assert "Máximo de 2 pessoas" in ask("a gente é em 3, pode entrar td mundo na msm mesa do balcão?", "policy", RULES)


ROOM = """# Cardápio — comidas

A cozinha funciona das 18h às 4h em todas as unidades.
O tempo médio de entrega na suíte é de 30 minutos.
É proibido fumar dentro das suítes."""


def test_room_service_is_the_delivery_to_the_suite():
    """Stop 50 (probe_ae): "qnto tempo demora o room service?" asks about the delivery to the suite the knowledge
    writes; the phrase named otherwise is named whole ("room" is not an unknown word once "entrega" is there)."""
    from streams.respond.compose import uncovered_focus, units_of_chunks

    assert uncovered_focus("qnto tempo demora o room service?", units_of_chunks([ROOM])) <= {"demor"}
    assert "30 minutos" in ask("qnto tempo demora o room service?", "info_request", ROOM)
    both = ask("qnto tempo demora o room service? e a cozinha abre q horas?", "info_request", ROOM)
    assert "30 minutos" in both and "18h às 4h" in both and "fumar" not in both
