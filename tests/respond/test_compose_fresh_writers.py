"""How writers the composer has never seen put their questions (issue 13, probe_h's kinds):
a question reported for someone else, courtesy before the question, a difference asked between
two items, a slip of the finger or a diminutive, weights in words, a breed for its species, the
place where an item is asked about. Knowledge and questions written here, not copied."""

from uuid import uuid4

from streams.respond.compose import question_part, question_words, units_of_chunks
from streams.respond.generate import FALLBACK_NO_KNOWLEDGE, OfflineComposer
from streams.respond.model import KnowledgeChunk, ReplyRequest
from tests.respond.fakes import composed as ask

SPA = """# Estrutura

Não temos academia em nenhuma unidade.
A piscina aquecida funciona das 8h às 20h.

## Unidade Lagoa
Rua das Garças, 77.

## Pagamento
Aceitamos Pix e cartão. Também não aceitamos ticket alimentação nem cheque.
Cada diária paga vale 1 ponto no programa de fidelidade."""

ROOMS = """# Quartos

- **Quarto Safira**: varanda e banheira. 2h: R$ 120,00 · 4h: R$ 170,00.
- **Quarto Jade**: tudo o que o Safira tem, mais uma sauna. 2h: R$ 150,00 · 4h: R$ 210,00.
- **Quarto Ônix**: cama redonda. 4h: R$ 95,00. O Ônix não é alugado por 2h."""

GROOMING = """# Banho e tosa

- Banho para cães até 10 kg: R$ 55,00
- Banho para cães acima de 10 kg: R$ 80,00

A tosa pode ser na máquina ou na tesoura, pelo mesmo valor.
Tosa da pata avulsa: R$ 25,00.

# Castração

- Castração de cão até 15 kg: R$ 650,00
- Cães acima de 15 kg: orçamento após avaliação."""


def test_a_question_reported_for_someone_else_asks_only_what_follows_saber():
    assert question_words("meu marido quer saber se tem academia")[1] == {"acade"}
    text = ask("meu marido quer saber se tem academia na unidade lagoa", "info_request", SPA)
    assert text.startswith("Não") and "academia" in text


def test_courtesy_before_the_question_is_not_the_question():
    msg = "oi bom dia tudo bem? queria saber se rola pagar com ticket alimentacao"
    assert question_part(msg) == "queria saber se rola pagar com ticket alimentacao"
    assert "não aceitamos ticket alimentação" in ask(msg, "policy", SPA)
    assert question_part("tem vaga hoje? obrigado!") == "tem vaga hoje?"   # courtesy after it, too


def test_a_difference_asked_between_two_items():
    text = ask("qual a diferença da safira pra jade?", "info_request", ROOMS)
    assert "sauna" in text
    # "pelo mesmo valor" answers a difference of price as surely as two amounts
    text = ask("qual a diferenca de preço da tosa na tesoura pra maquina?", "price_question", GROOMING)
    assert "mesmo valor" in text and "R$ 25,00" not in text


def test_a_slip_of_the_finger_or_a_diminutive_is_read_as_the_knowledges_word():
    from streams.respond.compose import respelled
    units = units_of_chunks([ROOMS])
    assert respelled("qnto ta o quarto safra 4h?", units) == "qnto ta o quarto safira 4h?"
    assert respelled("qnto fica uma tosinha na pata?", units_of_chunks([GROOMING])) == "qnto fica uma tosa na pata?"
    assert "R$ 170,00" in ask("qnto ta o quarto safra 4h?", "price_question", ROOMS)
    # a diminutive of a measure is the measure ("2 horinhas" is "2h")
    assert "não é alugado por 2h" in ask("o onix da pra pegar só 2 horinhas?", "info_request", ROOMS)
    # a word the knowledge does not know and that is no slip of one it knows stays unknown
    assert respelled("tem quarto com lareira?", units) == "tem quarto com lareira?"
    assert FALLBACK_NO_KNOWLEDGE in ask("qnto custa o quarto presidencial?", "price_question", ROOMS)


def test_weights_in_words_meet_the_ranges_in_kg():
    surgery = GROOMING.split("# Castração")[1]
    assert "orçamento após avaliação" in ask("qnto é pra castrar meu cachorro de 32 quilos", "price_question", surgery)
    text = ask("qnto é pra castrar meu cachorro de oito quilos", "price_question", surgery)
    assert "R$ 650,00" in text and "orçamento" not in text
    text = ask("qnto fica o banho de um cao de seis kilos", "price_question", GROOMING)
    assert text.startswith("Banho para cães até 10 kg: R$ 55,00")   # the range holding it first


def test_a_breed_is_its_species():
    text = ask("vcs dao banho em poodle?", "info_request", GROOMING)
    assert FALLBACK_NO_KNOWLEDGE not in text and "Banho para cães" in text


def test_where_an_item_is_asked_about_is_not_part_of_the_item():
    text = ask("vcs tem academia na unidade do shopping?", "info_request", SPA)   # a place it never names
    assert text.startswith("Não") and "academia" in text


BAR = """# Bebidas

Cervejas (long neck): pilsen R$ 12,00; puro malte R$ 15,00; sem álcool R$ 11,00.
Água com ou sem gás: R$ 6,00."""


def test_a_variant_the_knowledge_never_names_is_not_priced_by_its_siblings():
    from streams.respond.compose import without_alternatives

    # "ta", "está" ask a price as "custa" does; a qualifier never named is another variant
    assert FALLBACK_NO_KNOWLEDGE in ask("qnto ta a cerveja artesanal?", "price_question", BAR)
    assert "R$ 15,00" in ask("qnto ta a cerveja puro malte?", "price_question", BAR)
    # the members of a list are the variants there are (siblings, not other words for the one asked)
    assert without_alternatives("Cervejas (long neck): pilsen R$ 12,00; puro malte R$ 15,00; sem álcool R$ 11,00.") \
        == "Cervejas "
    prose = "Não temos vaga para carretas; o Posto Trevo, ao lado, permite deixar o caminhão estacionado."
    assert without_alternatives(prose) == prose   # clauses of a sentence are no list


def test_a_sibling_in_a_list_is_not_another_word_for_the_variant_asked(use_embedder):
    from streams.respond.evaluate_answers import CachedEmbedder

    wine = "# Vinhos\n\nVinhos (garrafa): espumante R$ 90,00; vinho rosé R$ 100,00; vinho tinto R$ 110,00."
    req = ReplyRequest(messages=[], message="qnto ta o vinho branco?", intent="price_question",
                       retrieval="required", chunks=(KnowledgeChunk(uuid4(), uuid4(), 0.3, wine),))
    assert OfflineComposer(embedder=CachedEmbedder(use_embedder)).generate(req).text == FALLBACK_NO_KNOWLEDGE


KENNEL = """# Hospedagem

Cães devem chegar de coleira; gatos, em caixa de transporte.

Não hospedamos gatos nem aves.

## Unidade Centro
Não temos estacionamento próprio nesta unidade. O Estacionamento Sol, conveniado, fica em frente e cobra R$ 8,00 a hora.
A unidade Centro tem sala de espera climatizada."""


def test_a_no_about_what_was_asked_goes_first_and_brings_what_there_is_instead():
    from streams.respond.compose import is_yes_no

    text = ask("vou viajar, queria deixar meus gatos na hospedagem, pode?", "policy", KENNEL)
    assert text.startswith("Não") and "não hospedamos gatos" in text.lower()
    text = ask("tem estacionamento na unidade centro?", "info_request", KENNEL)
    assert "Não temos estacionamento próprio" in text and "Estacionamento Sol" in text
    assert not is_yes_no("q dia vcs fazem banho?")   # "que dia" asks a day, not yes or no


VACCINES = """# Vacinas

- V10 (polivalente): R$ 110,00 por dose.
- Antirrábica: R$ 70,00.
- Gripe canina: R$ 125,00.

Para vacinar: V10 e antirrábica em dia (trazer a carteira de vacinação).

# Cirurgias

Castração de cão até 15 kg: R$ 650,00.
Não fazemos cirurgias ortopédicas."""


def test_a_price_asked_of_two_items_at_once_gets_both():
    from streams.respond.compose import paired_items

    assert paired_items("qnto é a v10 e a antirrabica pro meu dog") == [
        "quanto e a v10", "quanto e a antirrabica pro meu dog"]
    assert paired_items("qnto custa a pernoite e o que inclui?") == []   # a second question, not an item
    text = ask("qnto sai a v10 e a antirrabica?", "price_question", VACCINES)
    assert "R$ 110,00" in text and "R$ 70,00" in text


def test_bones_and_joints_are_orthopaedics():
    text = ask("vcs operam ligamento do joelho de cachorro?", "info_request", VACCINES)
    assert "Não fazemos cirurgias ortopédicas" in text   # not handed over: the knowledge says it otherwise


def test_a_short_infinitive_names_its_noun():
    from streams.respond.compose import concept_forms
    from streams.respond.handler import lexically_sure

    assert concept_forms("vcs tosam ou so sabem lavar?")["lavar"] == {"lavar", "lava"}
    groom = "# Regras\n\nNão sedamos animais para banho ou tosa."
    assert lexically_sure("vcs sedam pra tosar?", groom)   # the word search keeps the chunk
    assert "não sedamos" in ask("vcs sedam pra tosar?", "info_request", groom).lower()


DESSERTS = """# Sobremesas

- Sorvete 2 bolas (chocolate, creme ou flocos): R$ 12,00
- Suco natural 400 ml (laranja, uva ou limão): R$ 9,00
- Pudim de leite: R$ 10,00"""


def test_a_word_the_customer_said_is_not_another_word_for_the_variant_asked(use_embedder):
    """"qnto ta o sorvete de pistache?": "pistache" is near "sorvete" by meaning (0.62 by USE), but
    the customer said "sorvete" too: it is the kind asked, not another name of the flavour."""
    from streams.respond.evaluate_answers import CachedEmbedder

    composer = OfflineComposer(embedder=CachedEmbedder(use_embedder))
    for message in ("qnto ta o sorvete de pistache?", "qnto custa o suco de caju?"):
        req = ReplyRequest(messages=[], message=message, intent="price_question", retrieval="required",
                           chunks=(KnowledgeChunk(uuid4(), uuid4(), 0.3, DESSERTS),))
        assert composer.generate(req).text == FALLBACK_NO_KNOWLEDGE, message
    req = ReplyRequest(messages=[], message="qnto ta o sorvete de flocos?", intent="price_question",
                       retrieval="required", chunks=(KnowledgeChunk(uuid4(), uuid4(), 0.3, DESSERTS),))
    assert "R$ 12,00" in composer.generate(req).text


PARTY = """# Festas

- **Kit Balões** — R$ 80,00: 20 balões e uma faixa de parabéns.
- **Kit Bolo** — R$ 150,00: bolo de 2 kg e velas."""

PARTY_RULES = """# Regras das festas

Prazo: os kits precisam ser encomendados com pelo menos 72 horas de antecedência.
Cancelamento: até 24 horas antes, sem custo."""


def test_two_questions_joined_by_e_are_each_answered():
    """"qnto custa o kit bolo e precisa encomendar com qnto tempo antes?": no mark between the two
    questions; each gets its own answer (the composer's best unit per question)."""
    from streams.respond.compose import question_clauses

    msg = "é aniversario do meu filho, qnto custa o kit bolo e precisa encomendar com qnto tempo antes?"
    assert question_clauses(msg) == ["é aniversario do meu filho, qnto custa o kit bolo",
                                     "precisa encomendar com qnto tempo antes?"]
    assert question_clauses("qnto custa o kit bolo e o kit baloes?") == []      # one question, two items
    assert question_clauses("quanto e o kit bolo e quanto e o de baloes") == ["quanto e o kit bolo",
                                                                            "quanto e o de baloes"]
    text = ask(msg, "price_question", PARTY, PARTY_RULES)
    assert "R$ 150,00" in text and "72 horas" in text


def test_a_short_clause_opening_with_e_after_a_question_asks_it_again_of_another_thing():
    """"a v10 qnto ta? e a antirrabica": no mark and no question word on the second clause, yet it asks the
    same thing of another item (stop 47: two tuning questions); a person telling something ("e eu amei a
    suite") or small talk ("e vc") asks nothing."""
    from streams.respond.compose import question_clauses

    assert question_clauses("o kit bolo é qnto? e o de baloes") == ["o kit bolo é qnto?", "e o de baloes"]
    assert question_clauses("qnto ta o kit bolo? e eu amei a festa") == []
    assert question_clauses("oi tudo bem? e vc") == []
    text = ask("o kit bolo é qnto? e o de baloes", "price_question", PARTY, PARTY_RULES)
    assert "R$ 150,00" in text and "R$ 80,00" in text


def test_each_question_of_a_message_brings_its_own_chunk():
    """The whole message's vector finds the first question's chunks; the best chunk for the other
    question, searched on its own, takes the last place no other question needs."""
    from uuid import NAMESPACE_URL as NS
    from uuid import uuid5

    from streams.respond.handler import _as_chunk, _each_question_chunk

    def chunk(name, d, text):
        return _as_chunk((uuid5(NS, name), uuid5(NS, "doc"), d, text))

    kits, other, rules = chunk("k", 0.3, PARTY), chunk("o", 0.5, "# Pagamento\n\nAceitamos Pix."), \
        chunk("r", 0.4, PARTY_RULES)
    clauses = ["qnto custa o kit bolo", "precisa encomendar com qnto tempo antes?"]
    got = _each_question_chunk(clauses, [[kits], [rules, other]], [kits, other], threshold=0.6, limit=2)
    assert [c.chunk_id for c in got] == [kits.chunk_id, rules.chunk_id]
    far = chunk("f", 0.9, "# Horário\n\nAbrimos às 9h.")   # beyond the cut-off, naming nothing asked: left out
    got = _each_question_chunk(clauses, [[kits], [far]], [kits, other], threshold=0.6, limit=2)
    assert [c.chunk_id for c in got] == [kits.chunk_id, other.chunk_id]


PIZZA_SIZES = {"classic": "## Clássicas\n\nCalabresa, Mussarela e Atum.\n\n- Pequena: R$ 30,00\n- Grande: R$ 50,00",
               "premium": "## Premium\n\nParma, Brie e Camarão.\n\n- Pequena: R$ 42,00\n- Grande: R$ 66,00",
               "promo": "# Promoções\n\n- **Quarta Clássica**: na compra de uma grande clássica, o refrigerante sai pela "
                        "metade do preço."}


def test_a_difference_asked_between_two_items_asks_each():
    """"qual a diferença de preço da pequena clássica pra pequena premium?": a comparison is the
    question asked of each item; each item's line answers its half."""
    from streams.respond.compose import compared_items

    msg = "qual a diferenca de preco da pequena classica pra pequena premium?"
    assert compared_items(msg) == ["qual a diferenca de preco da pequena classica",
                                   "qual a diferenca de preco da pequena premium"]
    assert compared_items("o que muda entre a suite brisa e a coral") == ["o que muda da suite brisa",
                                                                        "o que muda da coral"]
    assert compared_items("tem diferenca de preco?") == [] and compared_items("qnto custa a pequena?") == []
    premium = "## Premium\n\nParma, Brie e Camarão: pizza premium pequena R$ 42,00; grande R$ 66,00."
    classic = "## Clássicas\n\nCalabresa, Mussarela e Atum.\n\n- Pequena (4 fatias): R$ 30,00\n- Grande (8 fatias): R$ 50,00"
    text = ask(msg, "price_question", premium, classic)   # the premium line alone scores far above
    assert "R$ 30,00" in text and "R$ 42,00" in text


def test_the_chunk_naming_every_word_of_a_question_is_its_chunk():
    """Each question's own chunk is the one naming all its words (a price with them), before a nearer
    chunk naming some ("Quarta Clássica ... preço" for "pequena clássica")."""
    from uuid import NAMESPACE_URL as NS
    from uuid import uuid5

    from streams.respond.handler import _as_chunk, _each_question_chunk

    def chunk(name, d):
        return _as_chunk((uuid5(NS, name), uuid5(NS, "doc"), d, PIZZA_SIZES[name]))

    promo, premium, classic = chunk("promo", 0.4), chunk("premium", 0.7), chunk("classic", 1.0)
    clauses = ["qual a diferenca de preco da pequena classica", "qual a diferenca de preco da pequena premium"]
    got = _each_question_chunk(clauses, [[promo, classic], [premium]], [promo, premium], threshold=0.6, limit=3)
    assert [c.chunk_id for c in got] == [promo.chunk_id, premium.chunk_id, classic.chunk_id]


GROOMING_RULES = """# Regras do banho e tosa

Remarcação sem custo até 3 horas antes do horário agendado.
Pizzas do quiosque: calabresa com cebola, frango com ervilha e atum com azeitona."""


def test_words_the_best_unit_says_otherwise_are_not_unknown(use_embedder):
    """"da pra desmarcar a tosa sem pagar nada?": "desmarcar" is not in the knowledge, "remarcação"
    says it (0.68 by USE): the question is covered, not handed over. Words of one field are not
    paraphrases: "molho" and "tomate" sit near "cebola" (0.59) and are not said by a list of fillings."""
    from streams.respond.evaluate_answers import CachedEmbedder

    composer = OfflineComposer(embedder=CachedEmbedder(use_embedder))

    def reply(message, intent):
        return composer.generate(ReplyRequest(messages=[], message=message, intent=intent, retrieval="required",
                                              chunks=(KnowledgeChunk(uuid4(), uuid4(), 0.3, GROOMING_RULES),))).text

    assert "3 horas antes" in reply("da pra desmarcar a tosa sem pagar nada?", "policy")
    assert reply("o molho de tomate da pizza é caseiro?", "info_request") == FALLBACK_NO_KNOWLEDGE


STORES = {"delivery": "# Entregas\n\n- Unidade Jardim Sul entrega em: Jardim Sul, Vila Rica e Centro.\n"
                      "- Taxa: até 3 km R$ 5,00; de 3 km a 6 km R$ 9,00.",
          "address": "## Jardim Sul\n\nR. das Acácias, 410. Estacionamento na rua.",
          "other": "## Centro\n\nAv. Brasil, 88, loja 2."}


def test_an_attribute_asked_that_no_retrieved_unit_carries_is_found_by_the_words():
    """"onde fica a unidade jardim sul?": the retrieved chunk names the unit but carries no address
    (the streets it delivers to, fees by distance); the account's chunk naming it with an address
    line, under its heading, takes the last place. A price ("R$ 5,00") or a distance ("3 km a 6
    km") is no address; "R. das Acácias, 410" and "Rodovia SC-401, km 12" are."""
    from uuid import NAMESPACE_URL as NS
    from uuid import uuid5

    from streams.respond.compose import carries_asked_attribute
    from streams.respond.handler import _as_chunk, _asked_attribute_steps, _steps_here, lexical_stems
    from streams.respond.text import fold

    q = "onde fica a unidade jardim sul?"
    assert carries_asked_attribute(q, "Taxa: até 3 km R$ 5,00; de 3 km a 6 km R$ 9,00.") is False
    assert carries_asked_attribute(q, "R. das Acácias, 410.") and carries_asked_attribute(q, "Rodovia SC-401, km 12.")

    def lexical(account_id, stems, limit):
        return [(uuid5(NS, k), uuid5(NS, k), 1.0, t) for k, t in STORES.items()
                if all(any(w.startswith(s) for w in fold(t).split()) for s in stems)][:limit]

    delivery = _as_chunk((uuid5(NS, "delivery"), uuid5(NS, "delivery"), 0.3, STORES["delivery"]))
    msg = type("Msg", (), {"account_id": 1, "text": q})()
    got = _steps_here(_asked_attribute_steps(msg, q, lexical_stems(q), [delivery], lexical, 2))
    assert [c.text for c in got] == [STORES["delivery"], STORES["address"]]
    # what the retrieved chunks already carry is not searched again
    got = _steps_here(_asked_attribute_steps(msg, q, lexical_stems(q), [_as_chunk(lexical(1, ["acaci"], 1)[0])],
                                             lexical, 2))
    assert [c.text for c in got] == [STORES["address"]]


HOTEL = {"rooms": "# Quartos\n\n- **Quarto Girassol**: varanda. Diária: R$ 210,00 · Fim de semana: R$ 260,00.",
         "drinks": "# Frigobar\n\nÁgua R$ 5,00; refrigerante R$ 7,00; cerveja R$ 12,00.",
         "valet": "# Garagem\n\nManobrista sem custo nas duas unidades.",
         "units": "# Unidades\n\n**Unidade Serra** — Rodovia RS-020, km 18, sentido Taquara."}


def test_a_word_no_chunk_of_the_account_names_does_not_stop_the_search_for_the_others():
    """"eae mano qnto ta o girassol fim de semana??": "eae" and "mano" name nothing of the business
    (the word search finds "manobrista" for "mano", not "mano"), so the words it does name bring the
    room's line, as one or two missing words do."""
    from uuid import NAMESPACE_URL as NS
    from uuid import uuid5

    from streams.respond.handler import _as_chunk, _cover_missing_word_steps, _steps_here
    from streams.respond.text import fold

    def lexical(account_id, stems, limit):
        return [(uuid5(NS, k), uuid5(NS, k), 1.0, t) for k, t in HOTEL.items()
                if all(any(w.startswith(s) for w in fold(t).split()) for s in stems)][:limit]

    q = "eae mano qnto ta o girassol fim de semana??"
    msg = type("Msg", (), {"account_id": 1, "text": q})()
    drinks = _as_chunk((uuid5(NS, "drinks"), uuid5(NS, "drinks"), 0.8, HOTEL["drinks"]))
    got = _steps_here(_cover_missing_word_steps(msg, [drinks], lexical, 2))
    assert [c.text for c in got] == [HOTEL["drinks"], HOTEL["rooms"]]


def test_an_attribute_read_by_its_form_is_no_unknown_attribute():
    """"qual o endereço da unidade serra?": the word "endereço" is nowhere, the address is there."""
    from streams.respond.compose import unknown_attribute

    units = units_of_chunks([HOTEL["units"]])
    assert unknown_attribute("qual o endereço da unidade serra?", units) == set()
    assert unknown_attribute("qual a senha do wifi da unidade serra?", units) == {"senha"}
    assert "RS-020, km 18" in ask("qual o endereço da unidade serra?", "info_request", HOTEL["units"])


def test_what_an_item_leva_is_asked_of_its_ingredients():
    """"a girassol leva manjericão fresco?": "leva" asks (as "levar" does); the ingredient and its
    quality the knowledge never names are the question, and it is handed over."""
    pizzas = "# Pizzas\n\nCalabresa, Girassol e Atum.\n\nNossa massa não leva ovo nem leite."
    assert ask("a girassol de vcs leva manjericão fresco?", "info_request", pizzas) == FALLBACK_NO_KNOWLEDGE


MENU = """# Cardápio

A lanchonete abre das 8h às 20h.

**Lanches**
- Misto quente: R$ 18,00
- Bauru: R$ 24,00

Não temos opções sem glúten no cardápio."""


def test_a_bold_line_over_a_list_is_the_lists_label_and_a_no_to_the_qualifier_answers():
    """"**Lanches**" with no colon, over its list, names the list ("tem lanche ...?" is about those
    items); "tem lanche sem glúten?" — a kind the knowledge names and a qualifier it names only in a
    "no" — is answered by that no, not handed over as an unknown variant."""
    units = units_of_chunks([MENU])
    assert [u.context for u in units if u.item] == ["Lanches", "Lanches"]
    text = ask("a lanchonete abre que horas? e tem lanche vegano?", "info_request",
               MENU.replace("sem glúten", "veganas"))
    assert "8h às 20h" in text and "Não temos opções veganas" in text


def test_whether_they_open_is_not_a_question_of_hours():
    """"vcs abrem domingo?" asks whether, not when: "Domingos e feriados: fechado." answers it over
    a line that only states hours ("O banho leva de 1h30 a 2h"); "que horas abrem sábado?" wants hours."""
    shop = """# Horários

Segunda a sábado: das 8h às 18h. Domingos e feriados: fechado.

O banho leva em média de 1h30 a 2h; avisamos quando o pet estiver pronto."""
    assert "fechado" in ask("vcs abrem domingo? meu dog ta vomitando", "info_request", shop)
    assert "8h às 18h" in ask("que horas abrem sábado?", "info_request", shop)


def test_a_second_question_reported_with_e_se_is_a_question():
    """"... queria saber até que horas tem que sair e se o café tá incluso": "e se" opens a second
    (yes/no) question; each part of a clause cut in two asks, with or without a question word."""
    from streams.respond.compose import question_clauses

    msg = "queria saber ate q horas tem q sair no outro dia e se o cafe ta incluso"
    assert question_clauses(msg) == ["queria saber ate q horas tem q sair no outro dia", "se o cafe ta incluso"]
    assert question_clauses("vou levar o dog amanha e se chover?") == []   # nothing asked before it: one question
    rules = "# Pernoite\n\nNa pernoite, é preciso sair até as 12h do outro dia.\n\nO café da manhã está incluso na pernoite."
    text = ask(msg, "info_request", rules)
    assert "12h" in text and "café da manhã" in text


# ---------------------------------------------------------------------------------------------
# Issue 13, branch h-ans: replies that do not hang on a fragile intent, and kinds of wrong answers
# of the tuning probes. Knowledge and questions written here.

CLINIC = """# Cirurgias

- Castração de coelho: R$ 310,00
- Castração de furão: R$ 420,00

# Pagamento

Cirurgias podem ser parceladas em até 4x sem juros no cartão."""


def test_the_subject_asked_counts_whether_the_intent_reads_policy_or_info():
    """"da pra parcelar a castração do coelho?": the heavy keyword ("parcel*", a policy word) names
    the subject asked even when the intent was read as info_request (the line fresh writers blur)."""
    for intent in ("policy", "info_request"):
        assert "4x sem juros" in ask("da pra parcelar a castração do coelho?", intent, CLINIC), intent


def test_a_question_about_a_deal_searches_the_deals_whatever_its_intent():
    """"se eu retirar ai tem algum desconto?" is a policy question (docs/intent-labels.md); the deals
    are found by their words as for an objection, or a discount written far from the words asked
    never reaches the reply."""
    from uuid import NAMESPACE_URL as NS
    from uuid import uuid5

    from streams.respond.handler import _as_chunk, _by_words_steps, _steps_here, asks_about_deal
    from streams.respond.intent import IntentResult
    from streams.respond.text import fold

    docs = {"rules": "# Regras\n\nNão damos desconto por indicação.",
            "counter": "# Balcão\n\nRetirada no balcão: 10% de desconto no pedido."}

    def lexical(account_id, stems, limit):
        return [(uuid5(NS, k), uuid5(NS, k), 1.0, t) for k, t in docs.items()
                if all(any(w.startswith(s) for w in fold(t).split()) for s in stems)][:limit]

    q = "se eu retirar ai tem algum desconto?"
    assert asks_about_deal(q) and not asks_about_deal("se eu retirar ai tem fila?")
    assert not asks_about_deal("nao quero desconto, so a nota")   # asks nothing
    msg = type("Msg", (), {"account_id": 1, "text": q})()
    plan = type("Plan", (), {"intent": IntentResult("policy", 3.0, ())})()
    rules = _as_chunk((uuid5(NS, "rules"), uuid5(NS, "rules"), 0.5, docs["rules"]))
    got = _steps_here(_by_words_steps(msg, plan, q, [], [rules], lexical, 3))
    assert docs["counter"] in [c.text for c in got]


def test_ser_and_ir_in_the_subjunctive_are_how_a_question_is_put():
    """"se eu for buscar ai tem desconto?": "for" (ir/ser) names nothing the knowledge could say; with
    it as a word asked, two of three words were unknown and the question was handed over."""
    assert "for" not in question_words("se eu for buscar ai tem algum desconto?")[1]
    deals = "# Descontos\n\nRetirada no balcão: 10% de desconto no pedido.\nNão damos desconto por indicação."
    assert "10% de desconto" in ask("se eu for buscar ai tem algum desconto?", "policy", deals)


def test_an_amount_asked_without_a_price_word_wants_the_amount():
    """"qual o pedido mínimo?", "o que sai mais barato, X ou Y?" ask an amount whatever the intent
    says: the line with the amount answers, not the nearest rule about orders."""
    from streams.respond.compose import wants_price

    assert wants_price("qual o pedido minimo pro delivery?") and wants_price("o que sai mais barato, a p ou a g?")
    assert not wants_price("tem mais carne na de calabresa?") and not wants_price("entregam no centro?")
    orders = """# Pedidos

Cancelamento do pedido sem custo até 5 minutos após a confirmação.
Pedido mínimo para entrega: R$ 35,00."""
    assert "R$ 35,00" in ask("qual o pedido minimo pro delivery?", "info_request", orders)


def test_a_yes_no_question_priced_only_by_its_intent_is_answered_by_what_it_asks():
    """"vcs aceitam cheque?" read as a price question: nothing priced answers it, the rule does;
    a question that asks a price by its words is still handed over without one."""
    text = ask("vcs aceitam cheque?", "price_question", SPA)
    assert "não aceitamos ticket alimentação nem cheque" in text
    assert ask("qnto custa a academia?", "price_question", SPA) == FALLBACK_NO_KNOWLEDGE


MINORS = """# Leva e traz

Um adulto precisa entregar e receber o animal: menores de 18 anos não recebem o pet sozinhos.

# Vacinas

Filhotes tomam a primeira dose a partir de 45 dias. Vacinas sem hora marcada.

# Regras

Menores de idade: menores de 18 anos só autorizam vacinas com autorização por escrito do responsável."""


def ask_with(embedder, message, intent, *texts):
    """``ask`` with the knowledge embedder (sentence similarity), as the product composes."""
    from streams.respond.evaluate_answers import CachedEmbedder

    chunks = [KnowledgeChunk(uuid4(), uuid4(), 0.3, t) for t in texts]
    req = ReplyRequest(messages=[], message=message, intent=intent, retrieval="required", chunks=tuple(chunks))
    return OfflineComposer(embedder=CachedEmbedder(embedder)).generate(req).text


def test_an_age_under_18_is_a_minor_and_the_errand_is_what_is_asked(use_embedder):
    """"meu filho de 16 anos pode levar o cachorro pra vacinar sozinho?": "16 anos" is a minor (the
    knowledge writes "menores de 18 anos"), "pra vacinar" is the errand asked about (the rule on
    minors and vaccines, not the leva-e-traz rule on minors), and "filho" is not "filhote"."""
    from streams.respond.compose import concept_forms, purpose_words, stem

    assert "menor" in concept_forms("meu filho de 16 anos pode vir?").get("ano", set())
    assert "menor" not in concept_forms("o hotel tem 20 anos?").get("ano", set())
    assert purpose_words("ele pode levar o cachorro pra vacinar sozinho?") == ["vacinar"]
    assert purpose_words("precisa de jejum pra castrar?") == [] and purpose_words("da pra parcelar?") == []
    assert stem("filhotes") != stem("filho")
    text = ask_with(use_embedder, "meu filho de 16 anos pode levar o cachorro pra vacinar sozinho?", "policy", MINORS)
    assert "autorização por escrito" in text


def test_a_letters_salutation_closing_and_signature_are_not_the_question():
    """"Boa tarde. Gostaria de saber se o estabelecimento aceita cheque. Grato, Adalberto.": the
    closing and the name signed are no unknown things asked about (they made it a hand-over)."""
    from streams.respond.compose import unframed
    from streams.respond.text import normalize_chat

    assert unframed(normalize_chat("Prezados, boa tarde. Aceitam cheque? Att., Iolanda.")) == "boa tarde aceitam cheque"
    assert unframed(normalize_chat("sou grato pelo atendimento de voces")) == "sou grato pelo atendimento de voces"
    msg = "Boa tarde. Gostaria de saber se o estabelecimento aceita cheque. Grato, Adalberto."
    assert question_words(msg)[1] == {"chequ"}
    assert "não aceitamos ticket alimentação nem cheque" in ask(msg, "policy", SPA)


def test_a_limit_on_the_name_asked_is_weighed_on_the_question_not_the_told_part(use_embedder):
    """"tem esfiha doce grande? minha filha ama a de doce de leite": the told flavour makes the
    flavour list score highest and name more words; the limit on the name asked ("Esfiha doce só no
    tamanho pequeno") answers the question."""
    menu = """## Esfihas doces

Chocolate, Doce de Leite e Romeu e Julieta.

Esfiha doce só no tamanho pequeno. Esfiha de carne nos tamanhos pequeno e grande."""
    text = ask_with(use_embedder, "tem esfiha doce grande? minha filha ama a de doce de leite", "info_request", menu)
    assert "só no tamanho pequeno" in text


def test_two_halves_of_two_flavours_are_meio_a_meio():
    """"faz metade atum metade palmito na pequena?": the menu writes "meio a meio"; the flavours are the
    halves, and their list must not answer for the rule on halves."""
    from streams.respond.compose import halves_named

    assert halves_named("faz metade atum metade palmito na pequena?") == "faz meio a meio na pequena?"
    assert halves_named("pode meia quatro queijos e meia frango?") == "pode meio a meio?"
    assert halves_named("meia hora de atraso e meia pizza fria") == "meia hora de atraso e meia pizza fria"
    menu = """## Salgadas

Atum, Palmito, Calabresa e Frango.

## Meio a meio

Pizza meio a meio só na grande; cobramos o sabor mais caro. Não fazemos meio a meio na pequena."""
    assert "Não fazemos meio a meio na pequena" in ask("faz metade atum metade palmito na pequena?", "policy", menu)


def test_a_line_break_ends_a_clause_and_vr_is_vale_refeicao():
    """"slk\\naceita VR?": a chat line of its own is a clause ("slk" is not part of the question), and
    "VR" is what the knowledge writes "vale-refeição"."""
    assert question_part("slk\naceita VR?") == "aceita VR?"
    assert question_part("oi\nqual o horario?") == "qual o horario?"
    rules = "# Pagamento\n\nAceitamos Pix e cartão de crédito.\nNão aceitamos vale-refeição nem cheque."
    assert "não aceitamos vale-refeição" in ask("slk\naceita VR?", "policy", rules)


def test_whether_they_open_on_a_day_is_answered_by_a_line_on_that_day():
    """"vcs abrem sábado? meu gato ta espirrando": the story brings a unit on cats ("Não hospedamos
    gatos"), which says nothing of Saturdays; a line naming the day asked answers."""
    from streams.respond.compose import opening_day_asked

    assert opening_day_asked("vcs abrem sábado? meu gato ta espirrando") == {"sabad"}
    assert opening_day_asked("qual dia vcs fazem castração?") == set()
    shop = """# Hotel

Não hospedamos gatos: o hotel recebe somente cães.

# Horários

Segunda a sexta, das 8h às 18h. Sábados: das 8h às 12h."""
    text = ask("vcs abrem sábado? meu gato ta espirrando", "info_request", shop)
    assert "Sábados" in text and "gatos" not in text


DAYCARE = """# Creche

- Diária da creche: R$ 70,00
- Meia diária (até 5 horas): R$ 45,00

A diária vai das 7h às 19h. Retirada depois das 19h acrescenta uma taxa de R$ 30,00.

# Horários

Recepção: de segunda a sexta, entradas a partir das 7h; aos sábados, até as 13h."""


def test_a_time_of_day_in_words_falls_under_a_rule_on_the_time_of_day(use_embedder):
    """"se eu pegar ele as oito da noite pago mais?": "as oito da noite" is 20h, which falls under "depois
    das 19h"; the rule on the time asked names it, though it shares no word with the question."""
    from streams.respond.compose import clock_asked, clock_fit

    assert clock_asked("se eu pegar ele as oito da noite") == [20.0]
    assert clock_asked("e as 3 da tarde") == [15.0] and clock_asked("umas 23h") == [23.0]
    assert clock_asked("as 2 pizzas") == [] and clock_asked("o pacote de 4h") == []
    assert clock_fit("as oito da noite", "retirada depois das 19h acrescenta") is True
    assert clock_fit("as dez da manha", "retirada depois das 19h acrescenta") is False
    assert clock_fit("as dez da manha", "a diaria da creche") is None
    text = ask_with(use_embedder, "se eu pegar ele na creche as oito da noite pago mais?", "price_question", DAYCARE)
    assert "R$ 30,00" in text


SURGERY = """# Cirurgias

- Castração de gata até 4 kg: R$ 450,00
- Castração de gata acima de 4 kg: R$ 520,00

# Pagamento

Cirurgias podem ser parceladas em até 5x sem juros no cartão."""


def test_a_price_line_naming_the_things_around_it_does_not_answer_a_question_asking_no_price(use_embedder):
    """"posso parcelar a castração da minha gata, de 3 kg?": the price line names the surgery, the
    species and the weight, but the question is whether it can be paid in instalments."""
    text = ask_with(use_embedder, "Boa tarde. Queria saber se posso parcelar a castração da minha gata, de 3 kg.",
                    "policy", SURGERY)
    assert "5x sem juros" in text


DEALS = """# Promoções

- Segunda do Combo: hambúrguer, batata e refrigerante por R$ 39,90 por pessoa.

Só no salão, não vale para delivery.

# Bebidas

- Refrigerante lata: R$ 7,00"""


def test_a_limit_answers_a_yes_no_question_asking_no_price_over_a_price_line(use_embedder):
    """"a segunda do combo vale pro delivery?": the price line names the deal asked about, the limit
    ("Só no salão, não vale para delivery.") answers it."""
    text = ask_with(use_embedder, "a segunda do combo vale pro delivery?", "policy", DEALS)
    assert "não vale para delivery" in text


BILLING = """# Descontos

- Clientes com mais de 60 anos: 5% de desconto no banho e na tosa.
- Pacote de 4 banhos: 10% de desconto, pago antecipado.

# Formas de pagamento

Aceitamos cartão de débito e crédito. Pagamento por Pix só pelo QR code do balcão, com comprovante na hora."""


def test_two_reported_yes_no_questions_joined_by_e_se_are_each_answered(use_embedder):
    """"queria saber se tem desconto pra idoso e se da pra pagar no pix": two yes/no questions reported
    by one "saber se", the second opened by "e se"; each gets its answer."""
    from streams.respond.compose import question_clauses

    msg = "bom dia, sou cliente faz tempo e queria saber se tem desconto pra idoso e se da pra pagar no pix"
    assert question_clauses(msg)[1:] == ["se da pra pagar no pix"]
    assert question_clauses("queria saber se tem banho e tosa") == []
    text = ask_with(use_embedder, msg, "policy", BILLING)
    assert "mais de 60 anos" in text and "QR code" in text


SPA_PRICES = """# Massagens

- Massagem relaxante de 50 minutos: R$ 180,00
- Massagem com pedras quentes: R$ 240,00
- Drenagem linfática: R$ 150,00

# Promoções

Pacote de 4 massagens relaxantes com 15% de desconto, pago antecipado."""


def test_an_objection_naming_the_amount_confirms_the_line_priced_at_it(use_embedder):
    """"240 numa massagem com pedra?? salgado": the customer objects to an amount; the reply confirms the
    line priced at it (then a deal), where before it offered the deal alone. Bare numbers that are times,
    weights, ages or counts are not amounts."""
    from streams.respond.compose import amounts_named

    assert amounts_named("quase 240 numa massagem, puxado") == {240.0}
    assert amounts_named("R$ 99,90 por isso?") == {99.9} and amounts_named("150 reais?") == {150.0}
    assert amounts_named("as 15h com 12 kg, 30 anos, 4 pessoas, 50 minutos, dia 25/12") == set()
    assert amounts_named("liga no 98877-6655") == set() and amounts_named("tá caro") == set()
    text = ask_with(use_embedder, "240 numa massagem com pedra?? ta salgado hein", "objection", SPA_PRICES)
    assert text.startswith("Entendo!") and "R$ 240,00" in text and "R$ 180,00" not in text
    # no amount named: the deal alone, as before
    text = ask_with(use_embedder, "massagem ta muito cara", "objection", SPA_PRICES)
    assert "15% de desconto" in text and "R$ 240,00" not in text


BAKERY = """# Bolos

Sabores: chocolate, cenoura, limão e morango com chantilly.

- Bolo de aniversário de 2 kg: R$ 140,00
- **Quarta do Morango**: bolo de morango com 10% de desconto às quartas.

# Encomendas

- **Encomenda com problema ou errada**: trocamos o bolo ou devolvemos o valor; envie uma foto em até 2 horas.
- Encomendas com 48 horas de antecedência."""


def test_a_problem_told_then_what_do_i_do_is_answered_by_the_line_on_problems(use_embedder):
    """"o bolo de morango chegou todo amassado, o que eu faço?": the question is what to do about the
    problem told; the knowledge's line on a problem answers it, not the line naming the story's things
    (the flavours, the strawberry deal). A wish told before "como faço?" is a how-to, not a problem."""
    from streams.respond.compose import addresses_problem, asks_what_to_do

    assert asks_what_to_do("o bolo chegou amassado, e agora como resolvo?")
    assert asks_what_to_do("a tosa ficou torta no lado esquerdo o que devo fazer")
    assert not asks_what_to_do("como faço pra encomendar um bolo?") and not asks_what_to_do("oq eu faço?")
    assert not asks_what_to_do("quero encomendar um bolo de morango, como faço?")
    assert addresses_problem("Encomenda com problema: trocamos") and not addresses_problem("Sabores: chocolate")
    text = ask_with(use_embedder, "o bolo de morango chegou todo amassado 😡 o que eu faço?", "policy", BAKERY)
    assert "envie uma foto" in text and "Sabores" not in text
    text = ask_with(use_embedder, "quero encomendar um bolo de morango, como faço?", "policy", BAKERY)
    assert "envie uma foto" not in text


INN = """# Estrutura

Todas as cabanas têm lareira. Aceitamos pets de pequeno porte.

## Unidade Serra
A unidade Serra não tem piscina aquecida: a piscina é externa, sem aquecimento.

# Cardápio

Café da manhã colonial incluso. Não temos opções sem glúten no cardápio."""


def test_an_indefinite_object_is_no_unknown_item():
    """"tem algo sem glúten no cardápio?": "algo" asks, like "alguma coisa"; it names no item the
    knowledge lacks, so the "no" the knowledge gives answers."""
    units = units_of_chunks([INN])
    from streams.respond.compose import unknown_object

    assert "algo" not in unknown_object("minha filha é celíaca, tem algo sem glúten no cardápio pra ela?", units)
    text = ask("minha filha é celíaca, tem algo sem glúten no cardápio pra ela?", "info_request", INN)
    assert "não temos opções sem glúten" in text.lower()


def test_a_question_after_a_long_story_is_the_last_piece():
    """A long story, then after its last comma a question of its own: that piece is what is asked, and
    what the knowledge does not say about the story is no reason to hand over. A condition told before
    the question is part of it."""
    story = ("boa noite então eu e meu marido estamos juntos faz dez anos e nunca viajamos sozinhos, as crianças "
             "vão ficar com a avó no fim de semana e a gente quer aproveitar, a unidade serra tem piscina aquecida?")
    assert question_part(story) == "a unidade serra tem piscina aquecida?"
    cond = "se eu chegar depois das dez da noite com as crianças e o cachorro pequeno, tem alguma taxa a mais?"
    assert question_part(cond) == cond
    assert question_part("tem piscina aquecida na serra? queremos ir em julho") == "tem piscina aquecida na serra?"
    text = ask(story, "info_request", INN)
    assert "não tem piscina aquecida" in text


BOARDING = """# Hospedagem

A hospedagem funciona só na unidade Centro e recebe somente cães. Não hospedamos coelhos.

- Diária para cães até 10 kg: R$ 80,00
- Diária para cães acima de 10 kg: R$ 100,00

# Saúde

Não temos plantão noturno: pets doentes voltam para casa ao fim do dia."""


def test_a_no_on_the_question_beats_a_unit_scored_by_the_told_part(use_embedder):
    """"a hospedagem aceita coelho? vou viajar e ele fica sozinho em casa": "casa" of the told part
    scores a line on going home; the "no" naming the question's own thing, nearer in meaning, answers."""
    text = ask_with(use_embedder, "a hospedagem aceita coelho? vou viajar no fim do mes e ele nao pode ficar "
                    "sozinho em casa o dia todo", "policy", BOARDING)
    assert "não hospedamos coelhos" in text.lower()


GARAGE = """# Serviços

- Troca de pastilhas de freio dianteiro: R$ 250,00
- Troca de disco de freio: R$ 480,00
- Revisão completa (30 itens): R$ 390,00
- Alinhamento e balanceamento: R$ 120,00"""


def test_the_question_s_own_thing_beats_a_line_named_by_the_told_part(use_embedder):
    """"qnto ta a revisão? meu carro ta com o disco de freio fazendo barulho": the price line on the brake
    disc names the told part; the line on what the question itself names (the service) answers it."""
    text = ask_with(use_embedder, "qnto ta a revisao? meu carro ta com o disco de freio fazendo barulho",
                    "price_question", GARAGE)
    assert "R$ 390,00" in text and "R$ 480,00" not in text
    text = ask_with(use_embedder, "quanto custa o alinhamento? o disco de freio do meu carro ta chiando",
                    "price_question", GARAGE)
    assert "R$ 120,00" in text and "R$ 480,00" not in text


BOOKING = """# Reservas

Reservas pelo WhatsApp com um sinal de 40% do valor, pago por Pix.
O restante é pago na chegada, em dinheiro ou cartão.
Cancelamento até 12 horas antes devolve o sinal."""


def test_a_confirmation_carrying_a_question_answers_it_after_the_confirmation():
    """"combinado, pode marcar o quarto jade pro sábado! e o sinal, pago como?": the confirmation is
    acknowledged and its question answered from the knowledge; a bare confirmation, or a greeting
    whose question is small talk, keeps its courtesy reply."""
    from streams.respond.compose import carried_question

    msg = "combinado, pode marcar o quarto jade pro sabado!! como pago o sinal?"
    assert carried_question(msg) == ("como pago o sinal?", "policy")
    assert carried_question("oi tudo bem?") is None and carried_question("fechado, pode marcar!") is None
    # a request put as an order, in a sentence of its own, asks as a question does
    order = "combinado, vou marcar o quarto jade pro sabado. me manda o pix do sinal"
    assert carried_question(order) == ("me manda o pix do sinal", "policy")
    assert carried_question("ok. manda um beijo pra ela") is None
    # ... or in a clause after the confirmation (stop 43, probe_bb: "fechou, manda a chave pix entao")
    assert carried_question("fechou, manda o pix do sinal entao") == ("manda o pix do sinal entao", "policy")
    assert carried_question("fechou, obrigada") is None and carried_question("ok, manda um beijo pra ela") is None
    assert "sinal de 40%" in ask(order, "confirmation", BOOKING)
    text = ask(msg, "confirmation", BOOKING)
    assert text.startswith("Perfeito!") and "sinal de 40%" in text
    assert ask("fechado, pode marcar!", "confirmation", BOOKING) == "Perfeito! Qualquer dúvida é só chamar por aqui."
    text = ask("boa tarde! como faço pra pagar o sinal?", "greeting", BOOKING)
    assert text.startswith("Olá!") and "40%" in text


class ReadsConfirmation:
    """A learnt classifier that reads the whole message as the confirmation it opens with."""

    model = "bow"

    def decides(self, detected):
        return True

    def classify(self, vector, exclude=None, text=None, detected=None):
        from streams.respond.intent import IntentResult

        return IntentResult("confirmation", 0.8, ("~learnt",))


def test_a_confirmation_carrying_a_question_is_searched_in_the_knowledge():
    """The responder searches the knowledge for such a confirmation (a bare one searches nothing)."""
    import asyncio

    from streams.respond.handler import Responder, respond
    from streams.respond.model import InboxConfig
    from tests.respond.fakes import BagOfWordsEmbedder, FakeKnowledge, FakeMemory, FakeStore, FixedClock, inbound

    emb = BagOfWordsEmbedder()
    knowledge = FakeKnowledge(emb, [(101, "reservas", BOOKING)])
    deps = Responder(store=FakeStore(inbox=InboxConfig(1101, rag_distance_threshold=0.95)), memory=FakeMemory([]),
                     knowledge=knowledge, memory_embedder=emb, knowledge_embedder=emb,
                     generator=OfflineComposer(), clock=FixedClock(), intent_examples=ReadsConfirmation())
    out = asyncio.run(respond(inbound("fechado, pode reservar o quarto jade pra sexta!! como pago o sinal?"), deps))
    assert out.reply.intent == "confirmation" and out.reply.chunk_ids and "40%" in out.reply.text
    searched = knowledge.calls
    out = asyncio.run(respond(inbound("fechado, pode reservar!", message_id="wamid.2"), deps))
    assert out.reply.strategy == "none" and knowledge.calls == searched > 0



def test_a_phrase_said_by_its_other_name_beats_a_line_with_the_bare_word():
    """"fazem atendimento em casa? meu pai nao consegue sair com a perna engessada": "atendimento
    domiciliar" says the customer's phrase "em casa" by its other name (``phrase_forms``), named as a
    whole; a line where "casa" is only where one goes back to, nearer in meaning to the told part (the
    similarities below, as an embedder gives them when the story weighs on the message's vector), does
    not answer it."""
    from streams.respond.compose import score_units

    units = units_of_chunks(["Não temos leitos: quem está em observação fica conosco até o fim da tarde e "
                             "depois volta para casa com o pai ou a mãe.",
                             "Não fazemos atendimento domiciliar: as sessões são no consultório."])
    scored = score_units("fazem atendimento em casa? meu pai nao consegue sair com a perna engessada", units,
                         sims=[0.38, 0.15])
    assert "domiciliar" in max(scored, key=lambda s: s.score).unit.text


def test_a_bare_e_agora_after_a_problem_told_asks_what_to_do():
    """"O BOLO VEIO AMASSADO!!! E O NOME ESCRITO ERRADO!!! E AGORA???": "e agora?" after a story asks what
    to do about it, as "o que eu faço?" does; alone, or glued to another clause, it does not."""
    from streams.respond.compose import asks_what_to_do

    assert asks_what_to_do("O BOLO VEIO AMASSADO!!! E O NOME ESCRITO ERRADO!!! E AGORA???")
    assert not asks_what_to_do("e agora?")
    assert not asks_what_to_do("paguei o sinal e agora? como faço pra agendar")


CAKES = """# Bolos personalizados

Aniversário, chá de bebê, batizado ou casamento: montamos a mesa do bolo antes da festa.
Sabores: chocolate, ninho com morango e doce de leite.

**Prazo**: o bolo precisa ser encomendado com pelo menos 72 horas de antecedência."""


def test_an_attribute_asked_after_a_story_is_answered_by_the_unit_carrying_it(use_embedder):
    """"quero fazer surpresa pro meu marido no aniversario de casamento, com qnto tempo tenho q encomendar o
    bolo?": the story's words score the line on occasions; the question after the last comma asks a
    deadline, which the line on the deadline carries (and names the question's own thing, the cake)."""
    from streams.respond.compose import asks_attribute

    assert asks_attribute("com qnto tempo tenho q encomendar o bolo?") and not asks_attribute("tem bolo de chocolate?")
    text = ask_with(use_embedder, "quero fazer surpresa pro meu marido no aniversario de casamento, com qnto tempo "
                    "tenho q encomendar o bolo?", "policy", CAKES)
    assert "72 horas" in text


SALON = """# Estrutura

Todas as cadeiras têm secador de parede e tomada própria.
Escova progressiva: R$ 180,00.
Não temos elevador: o salão fica no primeiro andar."""


def test_an_either_or_question_answered_by_neither_option_is_handed_over():
    """"as tomadas sao 110 ou 220?": a line naming the sockets but neither voltage does not answer the
    choice (hand-over); a line naming one option does ("fica no terreo ou tem elevador?" / "Não temos
    elevador"). Two questions, or no choice, are not concerned."""
    from streams.respond.compose import alternatives

    assert alternatives("as tomadas sao 110 ou 220? vou levar meu secador") == ("110", "220")
    assert alternatives("tem elevador? e escova é quanto?") is None
    assert ask("as tomadas do salao sao 110 ou 220? vou levar meu secador", "info_request", SALON) \
        == FALLBACK_NO_KNOWLEDGE
    assert "elevador" in ask("minha mae usa bengala, o salao fica no terreo ou tem elevador?", "info_request", SALON)


THEATRE = """# Ingressos

Vendemos ingressos na bilheteria e pelo site.
Formas de pagamento: Pix, cartão de débito e de crédito. Não aceitamos vale-cultura nem cheque.
A meia-entrada vale para estudantes e professores, com documento."""


def test_a_hyphenated_compound_named_by_another_head_is_no_unknown_word():
    """"aceitam voucher cultura?": the customer names the text's "vale-cultura" with another head before
    the same qualifier; the word is no unknown item (the "no" answers it), while a sibling ("vinho
    branco" for "vinho-rosé": the qualifier differs) or a qualifier alone is not covered."""
    assert "não aceitamos vale-cultura" in ask("oi, vcs aceitam voucher cultura?", "policy", THEATRE)
    assert ask("aceitam bitcoin?", "policy", THEATRE) == FALLBACK_NO_KNOWLEDGE
    from streams.respond.compose import other_head_of_compound

    assert other_head_of_compound("aceitam voucher cultura?", THEATRE) == {"vouch"}
    assert other_head_of_compound("tem vinho branco?", "Servimos vinho-rosé.") == set()
    assert "vouch" not in other_head_of_compound("aceitam cultura voucher?", THEATRE)


BARBER = """# Horários

- Segunda a sexta: das 9h às 19h.
- Sábado: das 8h às 13h.

Corte masculino: R$ 45,00. Corte infantil: R$ 35,00.
- Domingo: fechado.

# Agendamento

Para agendar, pedimos um sinal de R$ 20,00 pelo Pix."""


def test_a_confirmation_booking_a_day_is_answered_with_that_day_s_hours(use_embedder):
    """"show, pode marcar o corte do meu filho pro sabado 10h, valeu!": a booking put as an order carries
    what the business says of that day's hours; a booking naming no day ("fechado, pode agendar") and a
    line on something else (the deposit) leave the courtesy reply alone."""
    msg = "show, pode marcar o corte do meu filho pro sabado 10h, valeu!"
    assert ask_with(use_embedder, msg, "confirmation", BARBER) == "Perfeito! Sábado: das 8h às 13h."
    from streams.respond.compose import booking_order, carried_question

    assert booking_order(msg) == "pode marcar o corte do meu filho pro sabado 10h"
    assert carried_question(msg) is not None        # the plan searches the knowledge
    assert booking_order("fechado, pode agendar") == "" and carried_question("fechado, pode agendar") is None
    text = ask_with(use_embedder, "blz, pode marcar sexta as 15h, obg", "confirmation", "# Agendamento\n\nPara agendar, pedimos um sinal de R$ 20,00 pelo Pix.")
    assert "sinal" not in text and text.startswith("Perfeito!")


def test_question_part_keeps_the_question_around_courtesy():
    # thanks or an acknowledgement before the question is not what is asked, even when the question
    # names common words only ("abrem", "amanha")
    assert question_part("ok obrigado! vcs abrem amanha?") == "vcs abrem amanha?"
    assert question_part("blz valeu!! e domingo, abre?") == "e domingo, abre?"
    assert question_part("perfeito, obrigada! qual o endereco?") == "qual o endereco?"
    assert question_part("vcs abrem amanha? obrigado!") == "vcs abrem amanha?"
    assert question_part("ok obrigado!") == "ok obrigado!"   # nothing else: whole


FLOWERS = """# Entregas

A floricultura entrega num raio de até 10 km.

- Loja Vila Rica atende: Vila Rica, Bosque, Jardim Primavera e Centro.
- Loja Serra atende: Serra, Mirante e Alto da Boa Vista.
- Acima de 10 km não entregamos, nem com taxa extra.

# Garantia

- Pontualidade: se a entrega passar de 60 minutos do horário combinado, o cliente ganha um cartão de R$ 20,00.
- Trocas: flores murchas são trocadas em até 24 horas."""


def test_a_quantity_told_counts_for_the_limit_that_holds_it():
    """"moro a uns 14 km da vila rica, vcs levam?": the place told names the area line, but the distance
    told is what the limit "Acima de 10 km não entregamos" holds; "1h20" (in hours and minutes) is what
    "passar de 60 minutos" holds."""
    from streams.respond.compose import normalize_chat, range_fit

    assert range_fit(normalize_chat("a entrega atrasou 1h20, ganho algo?"), "passar de 60 minutos") is True
    assert range_fit(normalize_chat("atrasou uns 40 min"), "passar de 60 minutos") is False
    assert range_fit(normalize_chat("chego as 10h20"), "passar de 60 minutos") is None   # a time of day
    text = ask("moro num sitio a uns 14 km da vila rica, se eu pagar a mais vcs levam?", "info_request", FLOWERS)
    assert "Acima de 10 km não entregamos" in text
    text = ask("as flores chegaram 1h20 depois do horario, ganho alguma coisa?", "policy", FLOWERS)
    assert "R$ 20,00" in text


DRINKS = """# Bebidas

- Cerveja long neck: R$ 12,00
- Refrigerante lata: R$ 7,00
- Café coado: R$ 6,00

O café é da marca Serra Alta, torra média."""


def test_an_attribute_asked_after_its_item_is_an_unknown_attribute():
    """"a cerveja é de qual marca?": the item first, then the attribute asked at the end of the clause.
    When no retrieved line says that attribute, quoting the item's price answers another question
    (hand-over); a line that says it is the answer. "é de qual unidade o telefone?" names its item
    after the attribute and is left to the other rules."""
    from streams.respond.compose import unknown_attribute

    units = units_of_chunks([DRINKS])
    assert unknown_attribute("a cerveja de vcs é de qual marca? meu pai so toma uma", units) == set()  # "marca" is there
    beers = units_of_chunks([DRINKS.split("\n\nO café")[0]])
    assert unknown_attribute("a cerveja de vcs é de qual marca? meu pai so toma uma", beers) == {"marca"}
    assert unknown_attribute("o refri é de que marca?", beers) == {"marca"}
    assert unknown_attribute("e de qual unidade o telefone?", beers) == set()
    assert ask("a cerveja é de qual marca? meu pai so toma uma", "info_request", DRINKS.split("\n\nO café")[0]) \
        == FALLBACK_NO_KNOWLEDGE
    assert "Serra Alta" in ask("o cafe de vcs é de qual marca?", "info_request", DRINKS)


LAUNDRY = {"pickup": "# Coleta em casa\n\nBuscamos e entregamos suas roupas em casa, de segunda a sábado. "
                     "Coleta acima de 8 km: não fazemos.",
           "areas": "# Bairros da coleta\n\n- Loja Norte: Alto Alegre, Vila Sol e Jardim Primavera.\n"
                    "- Loja Sul: Porto Velho, Vila Operária e Capão Redondo.",
           "uniforms": "# Uniformes\n\nUniformes de operários e de cozinha: lavagem industrial, buscamos na empresa "
                       "às terças."}


def test_a_place_the_customer_tells_is_named_by_the_line_of_the_places_served():
    """"vcs buscam a roupa em casa? moro na vila operaria": where the customer lives is part of what they
    ask. The told place is read from "moro/to/fico + no/na/em ..." (not "to em casa", "to na duvida"); a
    retrieved line writing it as a capitalised name leads the answer (a word sharing its stem, "operários",
    does not name it), and the word search brings that line's chunk when the retrieved ones lack it."""
    from uuid import NAMESPACE_URL as NS
    from uuid import uuid5

    from streams.respond.compose import names_place, told_place
    from streams.respond.handler import _as_chunk, _cover_missing_word_steps, _steps_here
    from streams.respond.text import fold

    assert told_place("vcs buscam a roupa em casa? moro no capao redondo") == ("capao", "redondo")
    assert told_place("moro na vila sol e queria saber se vcs buscam") == ("vila", "sol")
    assert told_place("fico pertinho do Alto Alegre, buscam ai?") == ("alto", "alegre")
    assert told_place("to em casa agora, vcs buscam?") == () and told_place("to na duvida, buscam?") == ()
    assert names_place(LAUNDRY["areas"], ("vila", "operaria"))
    assert not names_place(LAUNDRY["uniforms"], ("operaria",))

    texts = (LAUNDRY["pickup"], LAUNDRY["uniforms"], LAUNDRY["areas"])
    for q in ("moro na vila operaria, vcs buscam a roupa aqui em casa?",
              "vcs buscam a roupa em casa? moro na vila operaria"):
        text = ask(q, "info_request", *texts)
        assert "Loja Sul: Porto Velho, Vila Operária" in text and "Buscamos" in text
    # the price asked too, and not written: the place line answers the rest, the price is handed over
    text = ask("moro na vila operaria, vcs buscam a roupa aqui em casa? qnto?", "info_request", *texts)
    assert "Vila Operária" in text and text.endswith(FALLBACK_NO_KNOWLEDGE)
    # no place told, no place line
    assert "Loja" not in ask("vcs buscam a roupa aqui em casa?", "info_request", *texts)

    def lexical(account_id, stems, limit):
        return [(uuid5(NS, k), uuid5(NS, k), 1.0, t) for k, t in LAUNDRY.items()
                if all(any(w.startswith(s) for w in fold(t).split()) for s in stems)][:limit]

    q = "vcs buscam a roupa em casa? moro no capao redondo"
    msg = type("Msg", (), {"account_id": 1, "text": q})()
    pickup = _as_chunk((uuid5(NS, "pickup"), uuid5(NS, "pickup"), 0.8, LAUNDRY["pickup"]))
    uniforms = _as_chunk((uuid5(NS, "uniforms"), uuid5(NS, "uniforms"), 0.5, LAUNDRY["uniforms"]))
    got = _steps_here(_cover_missing_word_steps(msg, [pickup, uniforms], lexical, 2))
    assert [c.text for c in got] == [LAUNDRY["pickup"], LAUNDRY["areas"]]


CABINS = {"rules": "# Regras\n\n- Check-in a partir das 14h.\n- Cada chalé recebe no máximo 4 pessoas. Não aceitamos pessoa extra.\n"
                   "- Pets de pequeno porte são bem-vindos.",
          "party": "# Festas\n\nAniversários e confraternizações: montamos mesa de frios por R$ 150,00. "
                   "Grupos acima de 12 pessoas: reserva com 7 dias de antecedência.",
          "cabins": "# Chalés\n\n- Chalé Ipê: lareira e hidromassagem. Diária: R$ 420,00.\n"
                    "- Chalé Cedro: varanda com rede. Diária: R$ 380,00."}


def test_a_party_counted_is_answered_by_the_limit_on_people():
    """"vamos eu e mais 5 amigos pro aniversario, da pra ficar todo mundo num chale?": the story (a birthday,
    friends) finds the party line, but how many may stay is the rule on people, which the word search brings
    when no retrieved chunk states it. A rule from a number up concerns only a party that reaches it; a price
    asked for a party is answered by the price."""
    from uuid import NAMESPACE_URL as NS
    from uuid import uuid5

    from streams.respond.compose import party_size, states_party_limit
    from streams.respond.handler import _as_chunk, _party_limit_steps, _steps_here
    from streams.respond.text import fold

    assert party_size("vamos eu e mais 5 amigos pro aniversario, da pra ficar todo mundo num chale?") == 6
    assert party_size("a gente pode os 3 no mesmo chale?") == 3
    assert party_size("somos em quatro, tem chale livre?") == 4
    assert party_size("o chale de 2 diarias qnto sai?") is None and party_size("os 2 chales tem lareira?") is None
    assert states_party_limit("Cada chalé recebe no máximo 4 pessoas.", 6)
    assert not states_party_limit(CABINS["party"], 6) and states_party_limit(CABINS["party"], 13)
    assert not states_party_limit("Nota fiscal para pessoa física.")

    q = "vamos eu e mais 5 amigos pro aniversario, da pra ficar todo mundo num chale?"
    text = ask(q, "policy", CABINS["party"], CABINS["cabins"], CABINS["rules"])
    assert "no máximo 4 pessoas" in text and "mesa de frios" not in text
    assert "no máximo 4 pessoas" not in ask("qnto é a diaria do chale cedro pra 2 pessoas?", "price_question",
                                            CABINS["cabins"], CABINS["rules"])

    def lexical(account_id, stems, limit):
        return [(uuid5(NS, k), uuid5(NS, k), 1.0, t) for k, t in CABINS.items()
                if all(any(w.startswith(s) for w in fold(t).split()) for s in stems)][:limit]

    msg = type("Msg", (), {"account_id": 1, "text": q})()
    party = _as_chunk((uuid5(NS, "party"), uuid5(NS, "party"), 0.4, CABINS["party"]))
    cabins = _as_chunk((uuid5(NS, "cabins"), uuid5(NS, "cabins"), 0.5, CABINS["cabins"]))
    got = _steps_here(_party_limit_steps(msg, [party, cabins], lexical, 2))
    assert [c.text for c in got] == [CABINS["party"], CABINS["rules"]]
    # no party counted: nothing searched
    msg = type("Msg", (), {"account_id": 1, "text": "tem chale com lareira?"})()
    assert _steps_here(_party_limit_steps(msg, [party, cabins], lexical, 2)) == [party, cabins]


PATISSERIE = """# Entregas

O entregador leva maquininha de cartão. Entregamos até 5 km da loja.

# Equipe

Nossa confeiteira chefe, Dona Lurdes, faz os bolos desde 1998."""


def test_a_job_asked_for_is_handed_over_unless_the_knowledge_speaks_of_hiring():
    """"vcs tao contratando entregador? to procurando serviço": someone asks for a job, not for the service;
    a line naming the role ("O entregador leva maquininha") answers another question. Handed over, unless a
    line speaks of hiring ("Currículos pelo e-mail ..."). Buying a service ("contratar um buffet") or
    needing help from the business is no job asked."""
    from streams.respond.compose import asks_for_work

    assert asks_for_work("vcs tao contratando entregador? to procurando serviço")
    assert asks_for_work("minha sobrinha ta procurando emprego, vcs precisam de confeiteira?")
    assert not asks_for_work("quero contratar um buffet pro aniversario")
    assert not asks_for_work("vcs contratam seguro pra entrega?")
    assert not asks_for_work("vcs precisam de ajuda pra achar o endereço?")
    assert ask("vcs tao contratando entregador? to procurando serviço", "info_request", PATISSERIE) \
        == FALLBACK_NO_KNOWLEDGE
    assert ask("minha sobrinha ta procurando emprego, vcs precisam de confeiteira?", "info_request", PATISSERIE) \
        == FALLBACK_NO_KNOWLEDGE
    hiring = PATISSERIE + "\n\n# Trabalhe conosco\n\nCurrículos pelo e-mail vagas@doceria.com.br."
    assert "Currículos" in ask("vcs tao contratando entregador? to procurando serviço", "info_request", hiring)
    assert "maquininha" in ask("o entregador leva maquininha?", "info_request", PATISSERIE)


def test_two_halves_said_with_meio_are_meio_a_meio():
    """"a grande meio atum meio escarola": the halves said with "meio" are the menu's "meio a meio" too;
    "meio a meio" itself keeps the flavours that follow it."""
    from streams.respond.compose import halves_named

    assert halves_named("da pra fazer a grande meio atum meio escarola? como cobra?") == \
        "da pra fazer a grande meio a meio? como cobra?"
    assert halves_named("pode meio rucula e meio portuguesa?") == "pode meio a meio?"
    assert halves_named("faz meio a meio atum e escarola?") == "faz meio a meio atum e escarola?"
    menu = "# Pizzas\n\nSabores: Atum, Escarola e Rúcula.\nGrande: R$ 70,00.\n" \
           "Meio a meio só na grande; cobramos o valor do sabor mais caro."
    assert "sabor mais caro" in ask("da pra fazer a grande meio atum meio escarola? como cobra?", "policy", menu)


def test_the_small_pizza_is_the_broto_and_a_flavour_may_be_written_with_a_digit():
    """"metade atum metade 3 queijos na pequena?": a menu calls its smallest pizza the "broto" (the
    lexicon's other name for "pequena"), and a flavour written with a digit is still one of the two
    halves, so the question is "meio a meio na broto" and its "no" answers it."""
    from streams.respond.compose import concept_forms, halves_named

    assert halves_named("pode metade atum metade 3 queijos na pequena?") == "pode meio a meio na pequena?"
    assert halves_named("faz meia 2 queijos e meia rucula?") == "faz meio a meio?"
    assert "broto" in concept_forms("qnto é a pequena de atum?")["peque"]
    menu = ("# Pizzas\n\nSabores: Atum, Três Queijos, Rúcula e Escarola.\n"
            "Meio a meio nos tamanhos média e grande; cobramos o sabor mais caro. Não fazemos meio a meio na broto.\n\n"
            "# Bebidas\n\nSuco de uva: R$ 9,00.")
    text = ask("pode metade atum metade 3 queijos na pequena?", "policy", menu)
    assert "Não fazemos meio a meio na broto" in text


def test_where_to_leave_the_car_is_the_parking_and_no_slip_of_another_word():
    """"tem onde deixar o carro perto da loja?": leaving or stopping the car is the knowledge's
    "estacionamento"; "carro", a word the lexicon knows, is never respelled as a word the knowledge
    writes one letter away ("caro")."""
    from streams.respond.compose import concept_forms, respelled, units_of_chunks

    assert "estac" in concept_forms("tem onde deixar o carro perto da loja?")["carro"]
    assert "estac" in concept_forms("onde eu paro minha moto?")["moto"]
    shop = ("# Loja Centro\n\nO Estacionamento Central, conveniado, fica na esquina e dá 1 hora grátis.\n"
            "Nada aqui é caro: tudo com preço de fábrica.\nAbrimos de segunda a sábado, das 9h às 18h.")
    units = units_of_chunks([shop])
    assert respelled("tem onde deixar o carro perto da loja?", units) == "tem onde deixar o carro perto da loja?"
    assert "Estacionamento Central" in ask("tem onde deixar o carro perto da loja?", "info_request", shop)


def test_the_pet_hotel_and_dividing_a_payment_are_named_as_the_knowledge_names_them():
    """"meu coelho pode ficar no hotelzinho?" is a stay the knowledge calls "hospedagem" ("Não hospedamos
    coelhos"); "da pra dividir no cartão?" is paying in parts, its "parcelamento"."""
    from streams.respond.compose import concept_forms

    assert "hospe" in concept_forms("meu coelho pode ficar no hotelzinho?")["hotel"]
    assert "parce" in concept_forms("da pra dividir no cartão?")["divid"]
    kennel = ("# Hotelzinho\n\nDiária do hotelzinho para cães até 20 kg: R$ 90,00.\n"
              "Diária do hotelzinho para cães acima de 20 kg: R$ 110,00.\n\n"
              "# O que não fazemos\n\nNão hospedamos coelhos nem aves.\nNão fazemos tosa em coelhos.")
    text = ask("vou viajar e nao tenho com quem deixar meu coelho, ele pode ficar no hotelzinho de vcs?", "policy",
               kennel)
    assert text.startswith("Não hospedamos coelhos")
    pay = ("# Pagamento\n\nAceitamos Pix, dinheiro e cartão de débito ou de crédito.\n\n# Consultas\n\n"
           "Consulta: R$ 150,00.\nO parcelamento sai em até 4x sem juros no crédito, acima de R$ 200,00.")
    assert "4x sem juros" in ask("da pra dividir a consulta no cartão?", "policy", pay)


def test_an_age_under_18_said_by_the_birthday_is_a_minor():
    """"meu sobrinho fez 16 mas ta comigo, ele entra?", "ela so faz 18 em março": an age told by the birthday,
    with no "anos" and no thing counted after it, is a minor's; the knowledge writes its rule for "menores de
    18 anos". A number of things ("tem 2 vagas", "fez 17h de viagem") or 18 reached ("faz 18 hoje") is not."""
    from streams.respond.compose import concept_forms, stem

    def minor(msg):
        return stem("menores") in concept_forms(msg).get(stem("anos"), set())

    assert minor("meu sobrinho fez 16 mas ta comigo, ele entra?")
    assert minor("ela faz 18 so em março, pode vir junto?")
    assert minor("ele ainda nao fez 18, tem problema?")
    assert not minor("tem 2 vagas pra sabado?")
    assert not minor("fez 17h de viagem, chega cansado")
    assert not minor("ela faz 18 hoje, pode entrar?")
    rules = ("# Entrada\n\nNa entrada, todos os hóspedes apresentam documento oficial com foto.\n\n"
             "# Regras da casa\n\nProibida a hospedagem de menores de 18 anos, mesmo acompanhados.\n"
             "Aceitamos Pix e cartão.")
    text = ask("meu sobrinho fez 16 mas ta comigo e tem documento, ele entra?", "policy", rules)
    assert "menores de 18 anos" in text


def test_the_customer_s_people_are_who_the_question_is_for_not_what_it_asks():
    """"minha cunhada é vegana, tem algo pra ela almoçar na pousada?": the customer's people (``ROLES`` after
    "meu/minha") are who the question is for; a "no" on vegan dishes answers it, even though no line
    names the sister-in-law. A pet is what the service is about and stays a focus word."""
    from streams.respond.compose import told_people, uncovered_focus, units_of_chunks

    assert told_people("minha cunhada é vegana, tem algo pra ela almoçar na pousada?") == {"cunha"}
    assert told_people("meus filhos podem usar a piscina?") == {"filho"}
    assert told_people("meu gato pode ficar?") == set()
    menu = ("# Cardápio\n\nServimos almoço das 12h às 15h.\nNão temos pratos veganos.\n"
            "Prato do dia: R$ 42,00.")
    units = units_of_chunks([menu])
    assert "cunha" not in uncovered_focus("minha cunhada é vegana, tem algo pra ela almoçar na pousada?", units)
    text = ask("minha cunhada é vegana, tem algo pra ela comer no chalé?", "info_request", menu)
    assert "não temos pratos veganos" in text.lower()


CAKE_SHOP = {"cakes": "# Bolos de festa\n\nBolo de chocolate com morango (2 kg): R$ 160,00.\n"
                   "Bolo de nozes (2 kg): R$ 190,00.",
          "orders": "# Encomendas\n\nBolos de festa precisam ser encomendados com 3 dias de antecedência.",
          "shop": "# Loja\n\nAbrimos de terça a domingo, das 8h às 19h."}


def test_a_second_question_asking_only_how_long_before_gets_the_deadline():
    """"qnto é o bolo de nozes? e tem q avisar com qnto tempo?": the second question names nothing but
    the time before; the account's line stating a deadline ("com 3 dias de antecedência") is found by the
    handler when no retrieved chunk states one, and the composer answers the clause with it."""
    from uuid import NAMESPACE_URL as NS
    from uuid import uuid5

    from streams.respond.handler import _as_chunk, _deadline_steps, _steps_here
    from streams.respond.text import fold

    def lexical(account_id, stems, limit):
        return [(uuid5(NS, k), uuid5(NS, k), 1.0, t) for k, t in CAKE_SHOP.items()
                if all(any(w.startswith(s) for w in fold(t).split()) for s in stems)][:limit]

    q = "qnto é o bolo de nozes pra festa? e tem q avisar com qnto tempo?"
    msg = type("Msg", (), {"account_id": 1, "text": q})()
    cakes = _as_chunk((uuid5(NS, "cakes"), uuid5(NS, "cakes"), 0.3, CAKE_SHOP["cakes"]))
    shop = _as_chunk((uuid5(NS, "shop"), uuid5(NS, "shop"), 0.5, CAKE_SHOP["shop"]))
    got = _steps_here(_deadline_steps(msg, [cakes, shop], lexical, 2))
    assert [c.text for c in got] == [CAKE_SHOP["cakes"], CAKE_SHOP["orders"]]
    # one question only, or a deadline already retrieved: nothing is searched
    one = type("Msg", (), {"account_id": 1, "text": "qnto é o bolo de nozes?"})()
    assert _steps_here(_deadline_steps(one, [cakes, shop], lexical, 2)) == [cakes, shop]
    text = ask(q, "price_question", CAKE_SHOP["cakes"], CAKE_SHOP["orders"])
    assert "R$ 190,00" in text and "3 dias de antecedência" in text


def test_a_specialty_named_by_the_organ_and_not_showing_up_unannounced_are_named_as_the_knowledge_names_them():
    """"tem médico do coração pro meu gato?" asks for the "cardiologia", "alguém de pele" for the
    "dermatologia"; "se eu faltar sem avisar" / "e se eu não for e não avisar" is the knowledge's "falta sem
    aviso" (h-ans9: probe_u and probe_m/probe_v asked these in their own words)."""
    from streams.respond.compose import concept_forms

    assert "cardi" in concept_forms("tem medico do coração?")["corac"]
    assert "derma" in concept_forms("alguem de pele atende?")["pele"]
    assert "aviso" in concept_forms("e se eu nao for e nao avisar?")["avisa"]
    clinic = ("# Atendimento\n\nClínico geral: de segunda a sábado, das 9h às 18h.\n"
              "Cardiologia: só às segundas, com hora marcada.\nDermatologia: às quartas e sextas.\n"
              "Vacinas aplicadas por médico-veterinário em todos os dias de atendimento.\n\n"
              "# Faltas\n\nRemarcação sem custo até 4 horas antes.\n"
              "Falta sem aviso: cobramos 30% do valor da consulta na próxima visita.\n"
              "Avise pelo WhatsApp se o pet estiver em jejum.")
    assert "segundas" in ask("que dia tem medico do coração pra gato?", "info_request", clinic)
    assert "quartas e sextas" in ask("a de pele vem que dia?", "info_request", clinic)
    assert "30%" in ask("marquei pra amanha, se eu faltar sem avisar pago algo?", "policy", clinic)
    # the retrieval's word search finds that line by its other name, and keeps it on that evidence
    from streams.respond.handler import _named_otherwise, lexical_stems, lexically_sure

    asked = "se eu faltar sem avisar pago algo?"
    assert ["aviso", "falta"] in _named_otherwise(asked, lexical_stems(asked))
    assert lexically_sure(asked, "Falta sem aviso: cobramos 30% do valor da consulta na próxima visita.")
    asked = "e se eu esqueci da tosa e nao avisei, tem problema?"
    assert any("falta" in v and "tosa" in v for v in _named_otherwise(asked, lexical_stems(asked)))


def test_the_whole_night_is_the_pernoite_and_naquela_is_no_focus_word():
    """"qnto fica a noite toda naquela da banheira?" asks the "Pernoite" price of the room with the bathtub:
    "noite toda" / "noite inteira" is the knowledge's "pernoite", and a demonstrative contracted with its
    preposition ("naquela", "dessa", "nesse") names no topic, so it is no focus word left uncovered."""
    from streams.respond.compose import concept_forms, question_words

    assert "perno" in concept_forms("qnto fica a noite toda?")["toda"]
    assert question_words("qnto fica a noite toda naquela da banheira?")[1] == {"toda", "banhe"}
    motel = ("# Suítes\n\n- **Suíte Âmbar**: cama king e TV. 3h: R$ 100,00 · Pernoite: R$ 180,00.\n"
             "- **Suíte Cobre**: tudo o que a Âmbar tem, mais uma banheira de hidromassagem. "
             "3h: R$ 150,00 · Pernoite: R$ 260,00.")
    text = ask("boa tarde, qnto fica a noite toda naquela da banheira?", "price_question", motel)
    assert "R$ 260,00" in text


def test_no_such_thing_at_all_denies_every_variant_of_it():
    """"vcs tem hidromassagem dupla?" where the knowledge says "Não temos hidromassagem em
    nenhum quarto.": the unknown qualifier ("dupla") names no other item the knowledge offers, the
    thing itself is denied outright, so the honest no answers (h-ans10: probe_v's steam sauna). A
    narrower kind denied ("Não temos piscina coberta") or a thing named after the denial ("Não temos
    opções sem glúten no cardápio") denies nothing of the variant asked: handed over as before."""
    from streams.respond.compose import denies_outright, stem

    spa = "# Estrutura\n\nNão temos hidromassagem em nenhum quarto. A piscina fica aberta das 9h às 19h."
    text = ask("vcs tem hidromassagem dupla?", "info_request", spa)
    assert text.startswith("Não") and "hidromassagem" in text
    assert denies_outright("Não temos hidromassagem em nenhum quarto.", stem("hidromassagem"))
    assert not denies_outright("Não temos piscina coberta.", stem("piscina"))
    assert not denies_outright("Não temos opções sem glúten no cardápio.", stem("cardapio"))
    kids = "# Cardápio\n\nNão temos opções sem glúten no cardápio. Servimos pratos quentes até as 23h."
    assert ask("vcs tem cardapio kids?", "info_request", kids) == FALLBACK_NO_KNOWLEDGE


def test_what_the_customer_s_own_person_has_is_told_not_asked_nor_a_relative_clause():
    """"meu filho tem intolerância a ovo, o bolo de vcs leva ovo?": "tem" after the customer's own person
    tells a condition, it is no item the business is asked to have (an unknown "intolerância" then handed
    the question over); the question is whether the cake has egg (h-ans10: probe_u's celiac niece)."""
    from streams.respond.compose import unknown_object

    bakery = ("# Bolos\n\nBolo de cenoura: R$ 40,00.\n"
              "O bolo de fubá não leva ovo; os demais bolos levam ovo e leite.")
    units = units_of_chunks([bakery])
    assert unknown_object("meu filho tem intolerancia a ovo, o bolo de fuba leva ovo?", units) == set()
    assert unknown_object("vcs tem bolo de pistache?", units) == {"pista"}
    text = ask("meu filho tem intolerancia a ovo, o bolo de fuba leva ovo?", "info_request", bakery)
    assert "não leva ovo" in text
    # nor does a relative clause ask an offer: "o bolo q tem cobertura crocante" describes the cake asked about
    assert unknown_object("o bolo q tem cobertura crocante tem em todas as lojas?", units) == set()
    assert unknown_object("vcs tem cobertura crocante?", units) == {"cober", "croca"}


def test_a_slip_never_turns_a_word_into_a_price_or_hours_cue():
    """"tem banho a vapor?" next to a line with "qualquer valor": "vapor" is one letter from "valor", but a
    respelling that makes the question ask a price (or hours, a day, an address) changes what is asked;
    the word stays as typed. A plain slip ("grnde" → "grande") is still put right."""
    from streams.respond.compose import respelled

    units = units_of_chunks(["Vendemos vale-presente de qualquer valor. Não temos banho de ofurô."])
    assert respelled("tem banho a vapor?", units) == "tem banho a vapor?"
    menu = units_of_chunks(["Pizza grande: R$ 60,00. Pizza média: R$ 50,00."])
    assert respelled("qnto ta a grnde?", menu) == "qnto ta a grande?"


def test_a_no_on_the_very_thing_asked_beats_a_limit_on_the_name_about_another(use_embedder):
    """"o bolo de chocolate vem com cobertura light?": the line limiting the name asked ("Tradicionais: ...
    Bolo de Chocolate ... não levam recheio") denies another thing, while the best line denies the very
    thing asked that the limit never names ("Não temos cobertura sem açúcar ..."): that "no" answers
    (h-ans10: probe_l's cashews, probe_u's lactose-free cheese)."""
    cakes = ("# Bolos\n\nSem açúcar: os bolos de fubá não levam açúcar. Não temos cobertura sem açúcar para os "
             "demais bolos. Tradicionais: Cenoura, Fubá, Bolo de Chocolate e Laranja não levam recheio.")
    text = ask_with(use_embedder, "o bolo de chocolate vem com cobertura light? meu avo é diabetico", "info_request",
                    cakes)
    assert "não temos cobertura sem açúcar" in text.lower() and "recheio" not in text


def test_the_weight_told_chooses_among_the_lines_of_the_service_asked(use_embedder):
    """"qnto fica a tosa de um poodle de 22kg?": the castration list's "Cães acima de 20 kg: orçamento" fits
    the weight and names the dog (the breed's species) but not the service; the grooming table's line for
    that weight names the "tosa" asked: the weight only chooses among that service's lines (h-ans10:
    probe_t's and probe_u's labrador bath)."""
    grooming = ("| Porte | Tosa | Tosa + banho |\n|---|---|---|\n| Grande (acima de 20 kg) | R$ 110,00 | R$ 150,00 |"
                "\n\n**Gatos:** tosa R$ 80,00, somente com hora marcada.")
    surgery = ("# Castração\n\n- Castração de gato macho: R$ 350,00\n- Castração de cão macho até 20 kg: R$ 700,00\n\n"
               "- Cães acima de 20 kg: orçamento após avaliação\n\nAs cirurgias acontecem às terças-feiras.")
    from streams.respond.evaluate_answers import CachedEmbedder

    chunks = [KnowledgeChunk(uuid4(), uuid4(), 0.3, t) for t in (grooming, surgery)]
    picked = OfflineComposer(embedder=CachedEmbedder(use_embedder)).pick_sentences(
        "qnto fica a tosa de um poodle de 22kg?", chunks, "price_question")
    assert picked[0].text.startswith("Grande (acima de 20 kg)")   # the answer first, whatever joins it


def test_a_question_whose_one_thing_no_unit_writes_is_handed_over(use_embedder):
    """"qnto custa uma endoscopia?" where the exams priced are a blood count and an X-ray: the one thing
    asked is a word no retrieved unit writes (nor says in other words), so quoting a sibling exam's price
    answers another question; handed over (h-ans10: probe_h's echocardiogram). A word the knowledge writes
    ("qnto custa o raio x?") is still answered."""
    exams = ("# Exames\n\n- Hemograma completo: R$ 80,00 (resultado no mesmo dia)\n- Raio-X: R$ 140,00\n"
             "- Exame de urina: R$ 50,00")
    assert ask_with(use_embedder, "qnto custa uma endoscopia?", "price_question", exams) == FALLBACK_NO_KNOWLEDGE
    assert "R$ 140,00" in ask_with(use_embedder, "qnto custa o raio x?", "price_question", exams)


def test_a_diet_told_by_what_someone_does_not_eat_is_the_vegetarian_dish():
    """"minha filha nao come carne, tem alguma coisa pra ela?": not eating meat is the knowledge's
    "vegetariano" (h-ans10: probe_u, as probe_t's "nada de origem animal" for the vegan dishes)."""
    from streams.respond.compose import concept_forms

    assert "veget" in concept_forms("ele nao come carne")["carne"]
    assert "vegan" in concept_forms("nada de origem animal")["anima"]
    lunch = ("# Almoço\n\n- Bife acebolado com arroz: R$ 42,00\n"
             "- Lasanha de berinjela (vegetariana, leva queijo): R$ 39,00\n- Suco do dia: R$ 9,00")
    text = ask("minha filha nao come carne, tem alguma coisa pra ela?", "info_request", lunch)
    assert "Lasanha de berinjela" in text


def test_dao_is_a_verb_of_giving_like_da_and_names_no_topic():
    """"vcs dao sedativo na vacina?": "dão" is the plural of "dá" (a common verb, as "dar"), no word of the
    topic that the knowledge should write; left as a focus word it made the question look mostly unknown and
    the honest "no" was handed over (h-ans10: probe_t; probe_j and probe_s asked "vcs dão calmante" too)."""
    assert question_words("vcs dao sedativo na vacina?")[1] == {"sedat", "vacin"}
    clinic = "# Vacinas\n\nNão sedamos animais para vacinar: pets agressivos usam focinheira. Vacina V10: R$ 90,00."
    assert "Não sedamos" in ask("vcs dao sedativo na vacina?", "policy", clinic)


def test_a_no_to_a_customer_telling_an_urgency_is_followed_by_the_emergency_line():
    """"vcs atendem de madrugada? minha gata ta sangrando": the answer is no, and the customer tells an
    urgency; the line on what to do in an emergency follows the "no", as an attendant would add it
    (h-ans10: probe_j's Sunday and probe_r's 24-hour care, each with a dog vomiting). Without an urgency
    told, the "no" stands alone."""
    from streams.respond.compose import tells_urgency

    assert tells_urgency("minha gata ta sangrando") and not tells_urgency("minha gata ta dormindo")
    hours = ("# Horários\n\nAtendemos de segunda a sábado, das 8h às 20h. Não atendemos de madrugada.\n\n"
             "Em caso de emergência fora do horário, procure a Clínica Noturna Boa Vista, aberta 24h.\n\n"
             "Banho e tosa: das 9h às 17h.")
    text = ask("vcs atendem de madrugada? minha gata ta sangrando", "info_request", hours)
    assert "não atendemos de madrugada" in text.lower() and "Clínica Noturna Boa Vista" in text
    text = ask("vcs atendem de madrugada? minha gata ta dormindo", "info_request", hours)
    assert "não atendemos de madrugada" in text.lower() and "Boa Vista" not in text


def test_a_closed_day_asked_by_a_customer_telling_of_their_pet_is_followed_by_the_emergency_line():
    """"vcs abrem domingo? meu cachorro comeu uma meia": a symptom said in words no list holds ("comeu uma
    meia", "ta meio caidinho"); whether they open that day is asked and the customer tells of their pet, so a
    closed day is answered with where to go meanwhile (stop 40: probe_at, probe_av). Telling of oneself
    ("so tenho folga no domingo") adds nothing."""
    hours = ("# Horários\n\nSegunda a sábado, das 8h às 18h. Não abrimos aos domingos.\n\n"
             "Em caso de emergência fora do horário, procure a Clínica Noturna Boa Vista, aberta 24h.")
    for q in ("vcs abrem domingo?? meu cachorro comeu uma meia 😱", "abrem domingo? minha gata ta meio caidinha"):
        text = ask(q, "info_request", hours)
        assert "Não abrimos aos domingos" in text and "Clínica Noturna Boa Vista" in text, q
    text = ask("vcs abrem domingo? so tenho folga no domingo 😩", "info_request", hours)
    assert "Não abrimos aos domingos" in text and "Boa Vista" not in text


def test_a_measure_asked_by_how_many_is_unknown_when_no_line_writes_it():
    """Stop 42 (probe_av, probe_az): "a piscina tem quantos metros de comprimento?", "aquecida a quantos graus?":
    the line on the pool says nothing of its size or heat, so quoting it answers another question; hours, days and
    people are counted by lines in their own forms ("2h", "até 4 pessoas") and are never an unknown measure."""
    from streams.respond.compose import unknown_attribute

    units = units_of_chunks([SPA])
    assert unknown_attribute("a piscina tem quantos metros de comprimento?", units) == {"metro"}
    assert unknown_attribute("a piscina é aquecida a quantos graus?", units) == {"grau"}
    assert unknown_attribute("a piscina abre quantas horas?", units) == set()
    assert unknown_attribute("cabem quantas pessoas na piscina?", units) == set()
    assert ask("a piscina tem quantos metros de comprimento?", "info_request", SPA) == FALLBACK_NO_KNOWLEDGE
    deep = SPA.replace("A piscina aquecida", "A piscina aquecida tem 12 metros e")
    assert ask("a piscina tem quantos metros de comprimento?", "info_request", deep) != FALLBACK_NO_KNOWLEDGE


def test_going_without_food_before_a_procedure_is_the_knowledge_s_fasting():
    """Stop 42 (probe_ay, probe_az): "tem q ficar sem comer antes?" asks the line on "jejum", which shares no word
    with it; the procedure's price lines share the procedure's name and must not answer it."""
    from streams.respond.compose import concept_forms

    assert "jejum" in {x for xs in concept_forms("tem q ficar sem comer antes?").values() for x in xs}
    clinic = ("# Cirurgias\n\n- Extração de dente canino: R$ 400,00\n- Extração de dente felino: R$ 350,00\n\n"
              "Antes da cirurgia o pet precisa de jejum de 10 horas; a água pode até 2 horas antes.")
    for q in ("meu gato vai extrair um dente sexta, tem q ficar sem comer antes?",
              "quantas horas sem comer antes da extração do dente do meu gato?"):
        assert "jejum de 10 horas" in ask(q, "info_request", clinic)


def test_a_brand_asked_in_any_form_is_unknown_when_no_line_writes_one():
    """Stop 42 (probe_as, probe_ax, probe_ay): "vcs vendem racao? qual marca?", "qual marca de ração premium vcs dão?",
    "tem da marca que o meu come?": the line on the food served names no brand, so it does not answer."""
    from streams.respond.compose import unknown_attribute

    kennel = "# Hospedagem\n\nServimos ração premium sem custo; o tutor pode trazer a ração do pet."
    units = units_of_chunks([kennel])
    for q in ("vcs vendem racao ai? qual marca?", "qual marca de ração premium vcs dão no hotelzinho?",
              "vcs vendem ração? tem da marca que o meu come?"):
        assert unknown_attribute(q, units) == {"marca"}, q
        assert ask(q, "info_request", kennel) == FALLBACK_NO_KNOWLEDGE, q
    branded = kennel.replace("ração premium", "ração premium da marca Nutrivet")
    assert unknown_attribute("qual marca de ração premium vcs dão?", units_of_chunks([branded])) == set()


def test_one_bill_paid_two_ways_is_handed_over_unless_a_line_says_so():
    """Stop 42 (probe_ag, probe_ax, probe_az): "posso pagar metade no pix e metade no cartão?": a line listing the ways
    of paying, or refusing instalments or paying later, says nothing of splitting one bill; a line that does answers."""
    from streams.respond.compose import unstated_split_payment

    pay = ("# Pagamento\n\nAceitamos Pix, cartão e dinheiro. Não parcelamos no cartão de crédito. Não trabalhamos com "
           "fiado nem com pagamento posterior.")
    units = units_of_chunks([pay])
    for q in ("posso pagar metade no pix e metade no cartão?", "da pra dividir em dois cartoes?",
              "parte no dinheiro e o resto no cartao pode?"):
        assert unstated_split_payment(q, units), q
        assert ask(q, "policy", pay) == FALLBACK_NO_KNOWLEDGE, q
    assert not unstated_split_payment("metade hoje e metade no dia 5, pode?", units)   # paying later, which a line refuses
    split = pay + " Aceitamos até duas formas de pagamento por pedido."
    assert not unstated_split_payment("posso pagar metade no pix e metade no cartão?", units_of_chunks([split]))
    assert ask("posso pagar metade no pix e metade no cartão?", "policy", split) != FALLBACK_NO_KNOWLEDGE


DELIVERY_FEES = """# Entregas

Entregamos em até 8 km da loja.

Taxa de entrega:
- até 4 km: R$ 7,00
- de 4 km a 8 km: R$ 12,00

Pedido mínimo para entrega: R$ 50,00, sem contar a taxa."""


def test_a_question_naming_a_heading_word_for_word_is_about_the_lines_under_it():
    """"qual a taxa de entrega?" names the heading over the fee lines word for word: those lines answer it, not
    the minimum-order line that mentions the fee in passing (stop 47: it was all a tuning writer got). A heading
    that is a name ("Vila Nova") only places its lines."""
    from streams.respond.compose import heading_asked

    for message in ("qual a taxa de entrega?", "qnto fica a taxa de entrega pro centro?"):
        text = ask(message, "price_question", DELIVERY_FEES)
        assert "R$ 7,00" in text and "R$ 12,00" in text and "Pedido mínimo" not in text, message
    assert heading_asked("qual a taxa de entrega", "Taxa de entrega")
    assert not heading_asked("tem estacionamento na vila nova", "Vila Nova")
    assert not heading_asked("qual a taxa", "Taxa")   # one word: the ordinary word weights decide


PIZZA_DELIVERY = """# Delivery

Cada unidade entrega num raio de até 6 km.

- Unidade Bairro Alto atende: Bairro Alto, Centro, Jardim das Flores e Alto da Colina.
- Unidade Vila Nova atende: Vila Nova, Morada do Sol, Parque Industrial e Jardim Europa.

Taxa de entrega:
- até 3 km: R$ 6,00
- de 3 km a 6 km: R$ 10,00

Acima de 6 km não entregamos, nem cobrando taxa extra.

Pedido mínimo para entrega: R$ 40,00, sem contar a taxa."""

SIZES = """# Hospedagem

Diária por porte:
- Pequeno (até 10 kg): R$ 80,00
- Médio (de 10 a 25 kg): R$ 95,00"""


def test_a_price_by_range_asked_with_no_amount_told_gets_every_range(use_embedder):
    """"qnto fica a taxa de entrega pro centro?": the fee depends on a distance the customer did not tell, so
    each range of the list is the answer (stop 47: a tuning writer got one range and the minimum order). A
    distance told picks its range; a word that tells the rows apart ("médio") picks its row."""
    for message in ("qnto fica a taxa de entrega pro jardim europa?", "qual a taxa de entrega?"):
        text = ask_with(use_embedder, message, "price_question", PIZZA_DELIVERY)
        assert "R$ 6,00" in text and "R$ 10,00" in text, (message, text)
    text = ask_with(use_embedder, "qnto fica a taxa de entrega pra 5 km?", "price_question", PIZZA_DELIVERY)
    assert "R$ 10,00" in text and "R$ 6,00" not in text
    text = ask("qnto é a diaria da hospedagem?", "price_question", SIZES)
    assert "R$ 80,00" in text and "R$ 95,00" in text
    text = ask("qnto é a diaria da hospedagem pra cachorro medio?", "price_question", SIZES)
    assert "R$ 95,00" in text and "R$ 80,00" not in text


def test_a_row_that_is_only_its_range_and_price_is_quoted_with_its_heading():
    """"de 4 km a 8 km: R$ 12,00" alone names nothing: a row opening with its range goes out with the heading
    above it, even when the question names none of the heading's words."""
    for message in ("moro a 6 km daí, qnto fica?", "e pra 6 km qnto sai?"):
        assert ask(message, "price_question", DELIVERY_FEES) == "Taxa de entrega: de 4 km a 8 km: R$ 12,00.", message


def test_what_the_customer_has_is_told_not_asked():
    """"a gente tem uma shih tzu, ela pode ficar com a gente na vila nova?": "tem" after "a gente" (or "nós")
    tells what the customer has, like "meu filho tem"; the dog is no item the pizzeria is asked to have, and
    the question (may she stay?) is answered by the rule on pets (stop 48: a tuning writer's question was
    handed over)."""
    from streams.respond.compose import unknown_object

    pets = ("# Vila Nova\n\nNo salão interno não entram pets. "
            "Na varanda aceitamos pets de pequeno e médio porte, com coleira.")
    units = units_of_chunks([pets])
    for message in ("a gente tem uma shih tzu, ela pode ficar com a gente na varanda?",
                    "nos temos um gato, pode levar na varanda?"):
        assert unknown_object(message, units) == set(), message
        assert "Na varanda aceitamos pets" in ask(message, "policy", pets), message
    assert unknown_object("vcs tem uma shih tzu?", units) == {"shih"}   # asked of the business: still unknown


def test_two_long_words_that_part_at_the_sixth_letter_are_two_words():
    """"vcs pegam o cachorro la na vila operaria?": "operaria" and "pré-operatória" share their five-letter stem
    but are different words, so the line on surgery no longer outscores the one naming the district (stop 48: a
    tuning writer's question about the pick-up service got the surgery rules). "parcelar" still names
    "parcelamento", whose sixth letter it shares."""
    from streams.respond.compose import long_words, score_units, stem_clashes

    vet = ("# Leva e traz\n\nUnidade Centro: Centro, São José, Vila Operária e Alto da Colina.\n\n"
           "# Cirurgias\n\nAntes da cirurgia: consulta pré-operatória e hemograma são obrigatórios.")
    units = units_of_chunks([vet])
    district = next(u for u in units if "Operária" in u.text)
    surgery = next(u for u in units if "operatória" in u.text)
    longs = long_words("vcs pegam o cachorro la na vila operaria?")
    assert stem_clashes(longs, surgery) == {"opera"} and stem_clashes(longs, district) == set()
    scored = {s.unit.text: s for s in score_units("vcs pegam o cachorro la na vila operaria?", units)}
    assert scored[district.text].score > scored[surgery.text].score
    assert scored[surgery.text].lexical == 0
    plan = units_of_chunks(["Parcelamento: a pernoite pode ser parcelada em até 3x sem juros."])
    assert stem_clashes(long_words("da pra parcelar a pernoite?"), plan[0]) == set()
    shots = units_of_chunks(["V10 (polivalente): R$ 110,00 por dose. Antirrábica: R$ 70,00."])
    assert all(stem_clashes(long_words("qnto ta a v10? e a antirabica?"), u) == set() for u in shots)   # a slip


CLINIC_STAYS = """# Atendimento

Não temos internação noturna: pets em observação ficam conosco até o fim do expediente.
Não sedamos animais para banho ou tosa: pets muito agressivos precisam antes de avaliação veterinária.
O banho leva em média de 1h30 a 2h; avisamos pelo WhatsApp quando o pet estiver pronto."""


def test_presence_asked_is_never_said_by_a_line_on_someone_else_staying(use_embedder):
    """"posso ficar junto olhando o banho?" (four tuning writers): no line says whether the tutor may stay, and
    "pets em observação ficam conosco" is not one, although "junto" is near "conosco" by the embedder and
    "ficar" is respelled as the knowledge's "ficam" (stop 48: it was quoted as the answer). A line on the service
    the presence is asked at may still say it otherwise (``names_the_occasion``)."""
    from streams.respond.compose import names_the_occasion, stem

    for message in ("posso ficar junto olhando o banho?",
                    "posso ficar junto olhando durante o banho? ela fica nervosa sem mim"):
        assert ask_with(use_embedder, message, "policy", CLINIC_STAYS) == FALLBACK_NO_KNOWLEDGE, message
    units = units_of_chunks([CLINIC_STAYS])
    stays = next(u for u in units if "ficam conosco" in u.text)
    bath = next(u for u in units if "leva em média" in u.text)
    acts = {stem("junto")}
    assert not names_the_occasion("posso ficar junto olhando o banho?", acts, stays)
    assert names_the_occasion("posso ficar junto olhando o banho?", acts, bath)
