import json

import pytest

from streams.learn.fixtures import FIXTURES_DIR
from streams.respond.intent import detect_intent
from streams.respond.strategy import decide

QUESTIONS = FIXTURES_DIR / "questions.jsonl"


@pytest.mark.parametrize("text,expected", [
    ("Quanto custa a suíte Luxo?", "price_question"),
    ("QUANTO CUSTA A SUITE LUXO", "price_question"),
    ("qual o preço do pernoite", "price_question"),
    ("Qual o PREÇO?", "price_question"),
    ("Achei muito caro, tem algo mais barato?", "objection"),
    ("Posso cancelar a reserva?", "policy"),
    ("Vcs aceitam pet? posso levar meu cachorro", "policy"),
    ("Que horas abre a unidade Centro?", "info_request"),
    ("Dá pra parcelar no cartão?", "policy"),  # payment terms are policy (examples/README labels)
    ("Olá, boa tarde!", "greeting"),
    ("ola boa noite", "greeting"),
    ("Oi", "greeting"),
    ("Ok, obrigado!", "confirmation"),
    ("Perfeito, pode confirmar", "confirmation"),
    ("Meu sobrinho mora em Curitiba", "general"),
    ("Boa noite, quanto fica o pernoite?", "price_question"),
    # word boundaries: "caro" inside "carona"/"caroço" is no objection, "oi" inside "oitenta" no greeting
    ("Vocês dão carona até o centro?", "general"),
    ("oitenta", "general"),
    # greeting words followed by a real question are not small talk
    ("Oi, tudo bem? Meu marido esqueceu um casaco aí ontem à noite", "general"),
    # discounts, company agreements and what is accepted are commercial conditions: policy
    # (docs/intent-labels.md), never an info_request of the dictionary's own
    ("vcs tem desconto pra estudante?", "policy"),
    ("a cooperativa onde trabalho consegue fechar convênio com vocês?", "policy"),
    ("aceitam ticket alimentação?", "policy"),
    # whether a charge applies, yes or no, is a rule of the house (docs/intent-labels.md): policy
    ("idoso paga a entrada?", "policy"),
    ("se eu remarcar em cima da hora cobram alguma coisa?", "policy"),
    ("se eu trouxer meu bolo tem alguma taxa?", "policy"),
    # how much is charged stays a price question
    ("idoso paga quanto?", "price_question"),
    ("qual a taxa pra trazer bolo?", "price_question"),
    ("cobram quanto a hora extra?", "price_question"),
    ("o bolo de fora tem taxa? de quanto?", "price_question"),
    # told, not asked: no rewrite
    ("paga na hora", "price_question"),
    # docs/intent-labels.md: discounts and promotions, and who or what they apply to, are policy
    ("o desconto de aniversario vale pro almoço tb?", "policy"),
    ("a promoção de quinta vale na filial do centro?", "policy"),
    ("os cupons valem pra entrega?", "policy"),
    ("rola um desconto pra quem paga a vista?", "policy"),
])
def test_intent_cases(text, expected):
    assert detect_intent(text).intent == expected


def test_inbox_dictionary_extends_and_overrides():
    kw = {"price_question": ["pacote"], "booking": ["reservar"]}
    assert detect_intent("Tem pacote de fim de semana?").intent == "info_request"
    assert detect_intent("Tem pacote de fim de semana?", kw).intent == "price_question"
    assert detect_intent("Quero reservar sexta", kw).intent == "booking"
    # replace: the default "cancel*" no longer means policy for this inbox
    replaced = {"policy": {"keywords": {"regulamento": 2}, "replace": True}}
    assert detect_intent("Posso cancelar?", replaced).intent != "policy"
    assert detect_intent("Onde vejo o regulamento?", replaced).intent == "policy"
    # accents in inbox keywords are folded too
    assert detect_intent("tem promocao?", {"price_question": ["promoção"]}).intent == "price_question"


def test_intent_accuracy_on_dev_questions():
    rows = [json.loads(l) for l in QUESTIONS.read_text(encoding="utf-8").splitlines() if l.strip()]
    wrong = [(r["text"], r["intent"], detect_intent(r["text"]).intent) for r in rows
             if detect_intent(r["text"]).intent != r["intent"]]
    acc = 1 - len(wrong) / len(rows)
    print(f"intent accuracy on dev questions: {acc:.3f} ({len(rows) - len(wrong)}/{len(rows)}) wrong={wrong}")
    assert acc >= 0.9


def test_strategy_table():
    assert {i: decide(i).retrieval for i in ["price_question", "info_request", "policy"]} == \
        dict.fromkeys(["price_question", "info_request", "policy"], "required")
    assert decide("objection").retrieval == decide("general").retrieval == "optional"
    assert decide("greeting").retrieval == decide("confirmation").retrieval == "none"
    assert decide("booking").retrieval == "optional"  # an inbox-defined intent
    assert not decide("greeting").retrieves and decide("general").retrieves


def test_a_choice_between_two_options_by_price_is_a_price_question_not_a_complaint():
    assert detect_intent("o que fica mais barato, o banho ou a tosa?").intent == "price_question"
    assert detect_intent("que sai mais em conta, a media ou a grande?").intent == "price_question"
    # a complaint with no choice asked stays one
    assert detect_intent("na pizzaria do lado é bem mais barato ou igual, viu").intent == "objection"
    assert detect_intent("o que vcs cobram é mais caro que o vizinho, é mais barato ir la").intent == "objection"


def test_the_composer_reads_a_charged_yes_no_as_the_charge_s_price_line():
    # the label is policy; the line that answers it names the charge's amount ("... paga mais?": "R$ 48")
    assert detect_intent("se eu buscar mais tarde paga a mais?").intent == "policy"
    assert detect_intent("se eu buscar mais tarde paga a mais?", charged_as_policy=False).intent == "price_question"


def test_an_inbox_with_price_words_of_its_own_keeps_the_price_verdict():
    assert detect_intent("idoso paga a entrada?").intent == "policy"
    assert detect_intent("idoso paga a entrada?", {"price_question": ["entrada"]}).intent == "price_question"


def test_vale_only_as_an_offer_that_applies():
    assert detect_intent("vale a pena a suite master?").intent != "policy"
    assert detect_intent("vcs vendem vale presente?").intent == "info_request"


@pytest.mark.parametrize("text,expected", [
    # putting the decision off is an objection (docs/intent-labels.md: "vou pensar")
    ("ah vou ver com meu marido primeiro, ta meio apertado esse mes", "objection"),
    ("humm deixa eu ver com o pessoal aqui... depois eu chamo", "objection"),
    # an amount repeated in disbelief, whatever else is said
    ("arre egua macho 459 na lirio?? o motel la da br cobra metade disso", "objection"),
    ("nossa R$ 790,00 pra castrar?!", "objection"),
    # "quanto que fica" asks a price, even after a story that names a policy word
    ("oi tudo bem entao minha gata ela ta no cio direto e eu queria castrar ela quanto que fica a castracao de gata",
     "price_question"),
    # a greeting with a self-introduction is still a greeting
    ("oi tudo bom? aqui é a carla, tutora da luna", "greeting"),
    ("boa noite, sou a mae do enzo", "greeting"),
])
def test_chat_forms_of_objections_prices_and_greetings(text, expected):
    assert detect_intent(text).intent == expected


@pytest.mark.parametrize("text", ["dá pra chegar 22h??", "ele tem 12kg??", "parcela em 3x??", "faz 10% pra mim??"])
def test_a_time_a_weight_or_a_share_repeated_is_no_objection(text):
    assert detect_intent(text).intent != "objection"


def test_a_greeting_asked_is_no_question_and_a_question_to_the_agent_is_small_talk():
    from streams.respond.intent import asks_a_question

    assert not asks_a_question("oi tudo bom? aqui é a carla, tutora da luna")
    assert not asks_a_question("Bom dia, como vai?")
    assert not asks_a_question("vc é atendente msm ou é uma IA? responde mto rapido kkkk")
    assert asks_a_question("oi td bem? qnto ta a brisa")            # the second sentence asks
    assert asks_a_question("oi, tudo bem? vcs abrem domingo?")
    assert asks_a_question("eu ia levar meu cachorro, pode?")       # "ia" the verb, not an AI
    assert asks_a_question("tinha marcado e ia levar ele hj, ainda da?")
    assert not asks_a_question("vc é ia?")


def test_without_a_question_mark_the_clause_that_asks_is_read_not_the_sign_off():
    from streams.respond.intent import question_clause

    letter = ("Boa tarde. Gostaria de saber, por gentileza, qual é o valor da pernoite na Suíte Coral. "
              "Desde já agradeço a atenção.")
    assert question_clause(letter) == "qual é o valor da pernoite na Suíte Coral"
    signed = "Bom dia. Gostaria de saber se o estabelecimento aceita cheque. Grato, Adalberto."
    assert question_clause(signed) == "Gostaria de saber se o estabelecimento aceita cheque"
    # no asking word: the last clause that does not thank
    assert question_clause("fechado, manda a calabresa grande entao, obg!") == "manda a calabresa grande entao"
    # with a question mark nothing changes: the clause before the first one
    assert question_clause("meu cachorro ta velhinho, vcs fazem cremação? obg") == "vcs fazem cremação?"
    assert question_clause("oxente, boa noite!!") == "oxente, boa noite"


@pytest.mark.parametrize("text,expected", [
    ("quanto é a multa se eu cancelar?", True),
    ("se eu desmarcar em cima da hora pago quanto?", True),
    ("qual o valor do sinal pra reservar a coral?", True),
    ("qnto que fica a castração", True),
    ("qual o minimo pra vcs trazerem aqui?", True),        # a minimum order is an amount
    ("qnto pra usar o karaoke da suite 🎤", True),
    ("qnto a castração de gata?", True),
    # a duration, a count, a second question's price, no amount at all
    ("quanto tempo demora a entrega?", False),
    ("quantas pessoas cabem no salao?", False),
    ("demora qnto pra chegar o delivery sexta a noite?", False),
    ("vcs entregam no jardim europa? e qnto é a taxa?", False),
    ("posso levar meu cachorro?", False),
])
def test_a_first_question_that_asks_an_amount_is_a_price_question(text, expected):
    from streams.respond.intent import asks_an_amount

    assert asks_an_amount(text) is expected


@pytest.mark.parametrize("text,expected", [
    ("putz deixa eu falar c meu marido antes", "objection"),
    ("vou conversar com a patroa e te falo", "objection"),
    ("eae td certo", "greeting"),
    ("oi, tudo certo?", "greeting"),
    ("tudo certo", "confirmation"),       # alone, an agreement
])
def test_putting_off_to_ask_someone_and_greeting_forms(text, expected):
    assert detect_intent(text).intent == expected


def test_an_apology_for_the_delay_asks_nothing_about_delays():
    assert detect_intent("kkkk desculpa a demora, tava no banho").intent == "general"
    assert detect_intent("foi mal o atraso").intent == "general"
    assert detect_intent("qnto tempo demora a entrega?").intent == "info_request"


@pytest.mark.parametrize("text,expected", [
    ("fechou, manda 1 grande de calabresa e 1 guarana 2l, vou pagar em dinheiro, troco pra 100", True),
    ("blz, obg pela info! vou retirar no balcao entao", True),
    ("ok pode marcar o banho da mel pra quinta 10h entao", True),
    ("fechado, pode reservar a coral pra sexta 22h!!! como pago o sinal?", False),   # it asks
    ("ok, vou pensar e te falo", False),                                           # it objects
    ("meu cachorro tem 10kg, fechou?", False),                                     # no opening agreement
])
def test_a_message_that_opens_agreeing_and_asks_nothing_confirms(text, expected):
    from streams.respond.intent import agrees

    assert agrees(text) is expected


@pytest.mark.parametrize("text,expected", [
    ("kkkk vc é robô ou gente?", True),
    ("vc é atendente msm ou é uma IA? responde mto rapido kkkk", True),
    ("vc é robo? qnto custa a coral 2h?", False),     # a question about the business besides
    ("qual teu nome? tu eh atendente msm?", True),    # stop 42 (probe_az): the agent's own name
    ("como vc se chama?", True),
    ("com quem eu falo?", True),
    ("qual o nome do dono?", False),                  # someone else's name
    ("qual seu nome? e qnto é a coral?", False),
    ("qnto custa a coral 2h?", False),
])
def test_a_message_asking_the_agent_only_about_itself_is_general(text, expected):
    from streams.respond.intent import about_the_agent, intent_by_form

    assert about_the_agent(text) is expected
    formed = intent_by_form(detect_intent(text), text)
    assert (formed is not None and formed.intent == "general") is expected
