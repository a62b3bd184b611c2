"""Which line answers: a rule's subject said in other words, a "no" to a whole kind, a sum in reais,
halves of a time. Knowledge and questions invented here (a bakery, a dentist, a vet, a barber shop)."""

from uuid import uuid4

from streams.respond.compose import halves_named, uncovered_focus, units_of_chunks
from streams.respond.generate import FALLBACK_NO_KNOWLEDGE, OfflineComposer, _decisive_words
from streams.respond.model import KnowledgeChunk, ReplyRequest
from streams.respond.text import normalize_chat

BAKERY = """# Encomendas

- **Bolo meio a meio**: dois sabores no mesmo bolo, cobramos o valor do sabor mais caro.
- Bolos de aniversário a partir de 2 kg, com 48 horas de antecedência.

# Pagamento

Aceitamos Pix, cartão de débito e dinheiro. Não vendemos fiado nem aceitamos pagamento posterior.
Encomendas acima de R$ 400,00 podem ser parceladas em até 3x no cartão."""

DENTIST = """# Tratamentos

- Tratamento de canal (molar): R$ 950,00.
- Clareamento a laser: R$ 700,00.

**Parcelamento**: tratamentos podem ser divididos em até 6x sem juros no cartão de crédito.

**Cancelamento**: desmarcando com até 24 horas de antecedência, o sinal vira crédito."""

VET = """# Cirurgias

Antes da cirurgia: exames pré-operatórios e jejum de 8 horas são obrigatórios. O pet volta para casa no mesmo dia.

Não fazemos cirurgias ortopédicas.

Castração de gato: R$ 300,00."""

BARBER = """# Promoções

Quarta do Corte: 30% de desconto no corte masculino às quartas-feiras.

Barba: R$ 35,00."""


def ask(message, intent, *texts):
    chunks = [KnowledgeChunk(uuid4(), uuid4(), 0.3, t) for t in texts]
    req = ReplyRequest(messages=[], message=message, intent=intent, retrieval="required", chunks=tuple(chunks))
    return OfflineComposer().generate(req).text


def test_two_halves_of_a_time_are_no_two_flavours():
    assert halves_named("da pra fazer o bolo metade chocolate metade morango?") == "da pra fazer o bolo meio a meio?"
    told = "posso acertar metade agora e metade no dia 20?"
    assert halves_named(told) == told
    assert halves_named("metade amanha e metade sexta") == "metade amanha e metade sexta"


def test_paying_later_told_by_when_is_the_no_on_credit():
    assert "fiado" in ask("posso acertar metade agora e metade no dia 20?", "policy", BAKERY)
    assert "fiado" in ask("consigo pagar no fim do mes? sou freguesa antiga", "policy", BAKERY)


def test_a_rule_said_by_another_name_is_the_subject():
    assert "parcelamento" in _decisive_words("da pra dividir o clareamento?", "policy")
    assert "cancelamento" in _decisive_words("e se eu desistir da consulta?", "policy")
    assert "6x" in ask("consigo dividir o tratamento de canal?", "policy", DENTIST)
    assert "crédito" in ask("se eu desistir do clareamento perco o sinal?", "policy", DENTIST)


def test_an_act_asked_is_denied_by_the_no_on_its_whole_kind():
    text = ask("minha gata fraturou a pata pulando do armario, vcs operam?", "info_request", VET)
    assert "ortopédicas" in text and text.startswith("Não")


def test_a_sum_in_reais_is_no_unknown_thing():
    units = units_of_chunks([BAKERY])
    assert not uncovered_focus("consigo parcelar uma encomenda de 250 reais?", units)
    text = ask("consigo parcelar uma encomenda de 250 reais?", "policy", BAKERY)
    assert "R$ 400,00" in text and FALLBACK_NO_KNOWLEDGE not in text


def test_numa_is_no_thing_asked():
    units = units_of_chunks([BARBER])
    assert not uncovered_focus("tem desconto se eu for numa quarta?", units)
    assert "30%" in ask("tem desconto se eu for numa quarta?", "policy", BARBER)


GROOMER = """# Atendimento

Não fazemos atendimento domiciliar: o banho é sempre na loja.

Depois do banho, os pets voltam para casa perfumados e com lacinho.

# Táxi dog

Táxi dog nos bairros Jardim Primavera e Vila Esperança: R$ 20,00 ida e volta."""


def test_at_home_names_home_care_by_the_verb():
    from streams.learn.lexicon import concepts_in

    def phrases(message):
        return [w for w, _ in concepts_in(normalize_chat(message))]
    assert "em casa" in phrases("a tosadora pode vir aqui em casa?")
    assert "em casa" in phrases("vcs atendem em casa?")
    assert "em casa" not in phrases("vcs buscam a cachorra em casa?")
    assert "em casa" not in phrases("voces vem buscar o gato aqui em casa?")
    assert "em casa" not in phrases("entregam em casa?")


def test_home_care_asked_is_answered_by_the_home_care_line():
    story = ("minha avo tem 90 anos e nao dirige mais, o cachorro dela ta imundo de tanto rolar na terra, "
             "vcs atendem em casa?")
    for message in (story, "a tosadora pode vir aqui em casa?"):
        text = ask(message, "info_request", GROOMER)
        assert "domiciliar" in text and "lacinho" not in text, message


def test_a_pick_up_at_home_is_no_home_care_question():
    text = ask("vcs buscam a cachorra em casa no jardim primavera?", "info_request", GROOMER)
    assert "Jardim Primavera" in text and "domiciliar" not in text and "lacinho" not in text


def lexical_search(docs: dict[str, str]):
    """The knowledge adapter's ``lexical_search`` (its row shape) over ``docs``: every chunk whose folded
    words start with each stem, in the dict's order."""
    from uuid import NAMESPACE_URL as NS
    from uuid import uuid5

    from streams.respond.text import fold

    def lexical(account_id, stems, limit):
        return [(uuid5(NS, k), uuid5(NS, k), 1.0, t) for k, t in docs.items()
                if all(any(w.startswith(s) for w in fold(t).split()) for s in stems)][:limit]
    return lexical


KENNEL = {"stay": "# Creche\n\nA creche funciona das 7h às 19h. Não hospedamos coelhos.\n\nDiária da creche: R$ 60,00.",
          "rules": "# Regras\n\nNão aceitamos fêmeas no cio. O tutor pode trazer a ração do pet.",
          "bath": "# Banho\n\nBanho de coelho com secagem: R$ 45,00."}


def test_a_denial_naming_all_the_question_but_one_word_is_searched():
    """"posso deixar meu coelho hospedado uns dias?": the line "Não hospedamos coelhos." is far from the question
    by its vector; it names every word of it but "deixar", so it takes the last place."""
    from uuid import NAMESPACE_URL as NS
    from uuid import uuid5

    from streams.respond.handler import _as_chunk, _denial_steps, _steps_here, lexical_stems
    lexical = lexical_search(KENNEL)

    q = "posso deixar meu coelho hospedado uns dias?"
    msg = type("Msg", (), {"account_id": 1, "text": q})()
    near = [_as_chunk((uuid5(NS, k), uuid5(NS, k), 0.6, KENNEL[k])) for k in ("rules", "bath")]
    got = _steps_here(_denial_steps(msg, q, lexical_stems(q), near, lexical, 2))
    assert [c.text for c in got] == [KENNEL["rules"], KENNEL["stay"]]
    assert "não hospedamos coelhos" in ask(q, "policy", *[c.text for c in got])
    # a question that is no yes/no one, or a denial already there: nothing searched
    assert _steps_here(_denial_steps(msg, "quanto custa hospedar meu coelho uns dias?",
                                     lexical_stems(q), near, lexical, 2)) == near
    have = [near[0], _as_chunk((uuid5(NS, "stay"), uuid5(NS, "stay"), 0.7, KENNEL["stay"]))]
    assert _steps_here(_denial_steps(msg, q, lexical_stems(q), have, lexical, 2)) == have


SALON = {"book": "# Agenda\n\nAtendemos com hora marcada. Para marcar, pedimos sinal de 20% via Pix.",
         "cancel": "# Cancelamento\n\nCancelando até 12 horas antes, o sinal vira crédito para outro horário.",
         "hair": "# Cabelo\n\nCorte feminino: R$ 90,00. Escova: R$ 50,00."}


def test_a_rule_named_otherwise_in_the_story_is_searched_by_its_own_name():
    """"marquei escova pra amanha mas nao vou poder ir, o sinal volta?": the question part names the deposit only;
    the story says what it is about (a cancellation), so the account's cancellation chunk takes the last place."""
    from uuid import NAMESPACE_URL as NS
    from uuid import uuid5

    from streams.respond.handler import _as_chunk, _rule_subject_steps, _steps_here
    lexical = lexical_search(SALON)

    q = "marquei escova pra amanha mas nao vou poder ir, o sinal volta?"
    msg = type("Msg", (), {"account_id": 1, "text": q})()
    near = [_as_chunk((uuid5(NS, k), uuid5(NS, k), 0.6, SALON[k])) for k in ("book", "hair")]
    got = _steps_here(_rule_subject_steps(msg, near, lexical, 2))
    assert [c.text for c in got] == [SALON["book"], SALON["cancel"]]
    assert "crédito" in ask(q, "policy", *[c.text for c in got])
    # no rule named otherwise: nothing searched
    plain = type("Msg", (), {"account_id": 1, "text": "quanto custa a escova?"})()
    assert _steps_here(_rule_subject_steps(plain, near, lexical, 2)) == near


SPAY_VET = {"spay": "# Castração\n\nCastração de cadela até 15 kg: R$ 790,00.",
            "partners": "# Parceiros\n\nNossos parceiros de banho e tosa atendem no mesmo endereço.",
            "pay": "# Pagamento\n\nParcelamento em até 3x sem juros no cartão, para valores acima de R$ 300,00."}


def test_a_word_sharing_only_the_stem_of_the_rule_does_not_name_it():
    """"a castracao da minha cadela deu 790, consigo pagar em 3 vezes?": the instalment rule (parcelamento)
    is not named by a retrieved chunk's "parceiros", which shares its five-letter stem: it is searched; and
    "em 3x" names paying in parts as "em 3 vezes" does."""
    from uuid import NAMESPACE_URL as NS
    from uuid import uuid5

    from streams.respond.handler import _as_chunk, _rule_subject_steps, _steps_here
    lexical = lexical_search(SPAY_VET)

    for q in ("a castracao da minha cadela deu 790, consigo pagar em 3 vezes?",
              "posso pagar em 3x? a castraçao dela deu 790"):
        msg = type("Msg", (), {"account_id": 1, "text": q})()
        near = [_as_chunk((uuid5(NS, k), uuid5(NS, k), 0.6, SPAY_VET[k])) for k in ("spay", "partners")]
        got = _steps_here(_rule_subject_steps(msg, near, lexical, 2))
        assert [c.text for c in got] == [SPAY_VET["spay"], SPAY_VET["pay"]], q
        assert "3x sem juros" in ask(q, "policy", *[c.text for c in got])


INN = {"rooms": "# Quartos\n\nQuarto Bromélia: cama de casal e varanda. Diária: R$ 280,00.",
       "access": "# Acessibilidade\n\nOs quartos do térreo têm barras no banheiro. Não temos elevador.",
       "food": "# Café\n\nCafé da manhã das 7h às 10h."}


def test_a_no_on_the_thing_asked_is_searched_by_its_name():
    """"minha mae anda de bengala e sobe escada com dificuldade, o quarto bromelia tem elevador?": a long story
    and no retrieved line; the line denying the thing asked outright is found by its name."""
    from uuid import NAMESPACE_URL as NS
    from uuid import uuid5

    from streams.respond.handler import _as_chunk, _denial_steps, _steps_here, lexical_stems
    from streams.respond.text import fold

    def lexical(account_id, stems, limit):
        return [(uuid5(NS, k), uuid5(NS, k), 1.0, t) for k, t in INN.items()
                if all(any(w.startswith(s) for w in fold(t).split()) for s in stems)][:limit]

    q = "minha mae anda de bengala e sobe escada com dificuldade, o quarto bromelia tem elevador?"
    msg = type("Msg", (), {"account_id": 1, "text": q})()
    assert [c.text for c in _steps_here(_denial_steps(msg, q, lexical_stems(q), [], lexical, 3))] == [INN["access"]]
    rooms = _as_chunk((uuid5(NS, "rooms"), uuid5(NS, "rooms"), 0.7, INN["rooms"]))
    got = _steps_here(_denial_steps(msg, q, lexical_stems(q), [rooms], lexical, 3))
    assert [c.text for c in got] == [INN["rooms"], INN["access"]]
    assert "não temos elevador" in ask("o quarto bromelia tem elevador?", "info_request", *[c.text for c in got])


ACAI = """# Cardápio

## Tradicionais
Açaí puro, Açaí com Banana e Açaí com Morango.
- 300 ml: R$ 14,00
- 500 ml: R$ 20,00

## Especiais
Açaí Tropical, Cupuaçu com Castanha, Açaí com Leite Ninho e Paçoca, e o Açaí da Casa.
- 300 ml: R$ 19,00
- 500 ml: R$ 27,00

## Adicionais
Cobertura extra (leite condensado, mel ou leite ninho): acréscimo de R$ 3,00 em qualquer tamanho."""


def test_an_item_named_in_a_list_is_priced_by_the_lines_under_its_heading():
    """"qnto o de 500 do acai com leite ninho e pacoca?": the list under "Especiais" names it; its price is that
    heading's 500 ml line, not the topping line naming "leite ninho" among its options."""
    from streams.respond.compose import names_outside_options

    reply = ask("qnto sai o de 500 ml do acai com leite ninho e pacoca?", "price_question", ACAI)
    assert "R$ 27,00" in reply and "R$ 3,00" not in reply and "R$ 20,00" not in reply
    assert "R$ 3,00" in ask("qnto é a cobertura extra de leite ninho?", "price_question", ACAI)
    assert not names_outside_options("e o acai com leite ninho?",
                                     "Cobertura extra (leite condensado, mel ou leite ninho): acréscimo de R$ 3,00")
    assert names_outside_options("qnto a cobertura de mel?", "Cobertura extra (leite condensado, mel): R$ 3,00")


BAR = """# Bebidas

- Taça de vinho da casa: R$ 22,00
- Long neck: R$ 12,00

**De fora**: é permitido trazer bebidas de fora, com taxa de rolha de R$ 40,00 por garrafa.

Não aceitamos animais, exceto cão-guia."""

BISTRO = """# Vinhos

- Taça de vinho da casa: R$ 22,00
- Garrafa de vinho da casa: R$ 90,00

**Bolo**: o cliente pode trazer bolo de fora, com taxa de R$ 15,00."""


def test_bringing_ones_own_thing_is_answered_by_the_rule_on_things_from_outside_or_handed_over():
    """"posso levar meu whisky?": the rule on things brought from outside, when it covers the thing; never
    the price of the same thing sold there, nor the rule on another thing (a cake) for a wine."""
    from streams.respond.compose import asks_to_bring, brought_thing, states_bringing

    assert asks_to_bring("posso levar minha cerveja? cobra alguma coisa?")
    assert asks_to_bring("da pra trazer um vinho de casa?")
    assert not asks_to_bring("meu filho pode levar o cachorro pra vacinar sozinho?")   # an errand
    assert not asks_to_bring("posso levar meu cachorro na unidade centro?")            # a pet: another rule
    assert not asks_to_bring("vcs levam ate em casa?")
    assert brought_thing("posso levar minha cerveja?")[1] >= {"cerve", "bebid"}   # stems, with its other names
    assert states_bringing("é permitido trazer bebidas de fora, com taxa de rolha") and not states_bringing(
        "Long neck: R$ 12,00")
    reply = ask("posso levar minha cerveja? cobra rolha?", "policy", BAR)
    assert "taxa de rolha de R$ 40,00" in reply and "R$ 12,00" not in reply
    assert ask("posso levar meu vinho? cobra rolha?", "policy", BISTRO) == FALLBACK_NO_KNOWLEDGE
    assert ask("posso levar meu travesseiro de casa?", "policy", BAR) == FALLBACK_NO_KNOWLEDGE
    # the thing ends where what it is for and where it goes begin: a line on the table is no rule on the wine
    assert brought_thing("posso levar meu proprio vinho pra tomar ai na mesa?")[0] == {"vinho"}
    table = "**Decoração**: é permitida decoração simples de mesa trazida pelo cliente."
    assert ask("posso levar meu proprio vinho pra tomar ai na mesa?", "policy", f"{BISTRO}\n\n{table}") \
        == FALLBACK_NO_KNOWLEDGE


def test_the_rule_on_things_from_outside_is_found_by_its_word():
    from streams.respond.handler import _brought_rule_steps
    from tests.respond.fakes import WordIndex, chunk, inbound, run_steps

    got = [chunk("- Taça de vinho da casa: R$ 22,00"), chunk("- Long neck: R$ 12,00")]
    rule = chunk("**De fora**: é permitido trazer bebidas de fora, com taxa de rolha de R$ 40,00 por garrafa.")
    lexical = WordIndex({"fora": [rule]})
    assert run_steps(_brought_rule_steps(inbound("posso levar minha cerveja?"), got, lexical, 2)) == got[:1] + [rule]
    assert run_steps(_brought_rule_steps(inbound("qnto a long neck?"), got, lexical, 2)) == got


def test_a_titles_period_ends_no_clause():
    """"a Dra. Helena atende sabado?": the question names the doctor; cut at "Dra." it would ask only whether
    "Helena atende sabado", and the opening hours would answer it. A doctor the knowledge never names is handed
    over."""
    from streams.respond.compose import question_part

    assert question_part("a Dra. Helena atende sabado? só confio nela") == "a Dra. Helena atende sabado?"
    assert question_part("oi. vcs abrem sabado?") == "vcs abrem sabado?"
    hours = "# Horário\n\nSábado: das 8h às 14h.\n\nConsultas com a Dra. Paula às terças."
    assert ask("a Dra. Helena atende sabado?", "info_request", hours) == FALLBACK_NO_KNOWLEDGE


def test_a_cake_brought_from_home_is_food_from_outside():
    rules = "**De fora**: é permitido trazer bebidas, com taxa de rolha de R$ 35,00. Comida de fora é permitida, sem taxa."
    assert "sem taxa" in ask("a gente pode levar um bolo de aniversario de casa? cobra alguma coisa?", "policy", rules)


def test_a_sentence_under_the_rule_s_label_is_on_the_rule_asked():
    """"da pra parcelar a pernoite? e a de 4h tb parcela?": "Os períodos de 2h e 4h são cobrados à vista." names
    the instalments only by its paragraph's label ("**Parcelamento**:"); it is on the subject asked all the same,
    and it answers the second question (stop 40: probe_r, probe_ap)."""
    rules = ("# Pagamento\n\nAceitamos Pix e cartão.\n\n**Parcelamento**: a pernoite pode ser parcelada em até 3x "
             "sem juros no cartão de crédito. Os períodos de 2h e 4h são cobrados à vista.")
    text = ask("da pra parcelar a pernoite? e a de 4h tb parcela?", "policy", rules)
    assert "3x sem juros" in text and "à vista" in text
