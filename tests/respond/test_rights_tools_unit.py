"""Rights/opt-out detection (real USE embedder), tool configuration, resolved
requests and the tool guard. No stack needed."""

from __future__ import annotations

from datetime import date

import pytest

from streams.respond import rights
from streams.respond.acts import Act
from streams.respond.tools import (
    ToolConfigError,
    ToolResult,
    contradicts,
    flight_key,
    parse_tools,
    resolve_arguments,
    tool_keywords,
)

ACCESS = [
    "o que vocês sabem sobre mim?", "O QUE VOCÊS SABEM SOBRE MIM", "quais dados vocês têm meus?",
    "quais dados voces tem meus", "oq vcs sabem d mim", "o q vcs sabem sobre mim??", "vcs tem meus dados?",
    "quais informações vocês guardaram sobre mim", "que dados meus vcs tem ai", "vocês guardam informação minha?",
    "Quero saber o que vocês têm registrado sobre mim", "o que vc sabe sobre mim", "quais infos vcs tem de mim",
    "voces sabem oq de mim?", "oq vcs sabem sobre mimmm",
]
ERASURE = [
    "apaga tudo que vocês sabem de mim", "apaga tudo q vcs sabem de mim", "quero q vcs esqueçam meus dados",
    "apaguem meus dados por favor", "exclui minhas informações", "esqueçam tudo sobre mim", "deleta meu cadastro",
    "quero que apaguem tudo sobre mim", "remove meus dados", "pode apagar tudo de mim?",
]
NOT_REQUESTS = [
    "vocês sabem se tem vaga?", "vcs sabem se tem vaga hj?", "vocês sabem o horário da minha reserva?",
    "quero informações sobre a suíte master pra mim e minha esposa", "me passa os dados pro pix",
    "esqueci meu carregador no quarto", "apaga a mensagem anterior", "quanto custa o pernoite?",
    "meu aniversário é dia 10/03", "vocês lembram de mim? fui aí semana passada",
    "me manda as informações de pagamento", "quero cancelar minha reserva", "sabe me dizer se tem estacionamento?",
    "minha esposa sabe o caminho", "eu sei que vocês tem promoção", "vcs tem suite com piscina pra mim hoje?",
    "quero tirar o café da manhã da minha reserva", "Oi, boa noite!", "ok obrigado",
]


@pytest.fixture(scope="module")
def use(use_embedder):
    return use_embedder


@pytest.mark.parametrize("text", ACCESS)
def test_access_requests_in_chat_spelling(use, text):
    assert rights.classify(text, use)[0] == rights.ACCESS


@pytest.mark.parametrize("text", ERASURE)
def test_erasure_requests_in_chat_spelling(use, text):
    assert rights.classify(text, use)[0] == rights.ERASURE


@pytest.mark.parametrize("text", NOT_REQUESTS)
def test_look_alikes_are_not_requests(use, text):
    assert rights.detect_requests(text, use) == set()


@pytest.mark.parametrize("text,expected", [
    ("parar", True), ("PARAR", True), ("Pare.", True), ("não quero receber promoções", True),
    ("nao quero mais receber promocao", True), ("parem de me mandar propaganda", True),
    ("quero sair da lista", True), ("n quero receber ofertas", True),
    ("para", False), ("vou parar aí amanhã", False), ("não quero cancelar", False), ("tem promoção?", False),
    ("quero a promoção do pernoite", False),
])
def test_opt_out(text, expected):
    assert rights.is_opt_out(text) is expected


def test_normalise_expands_chat_spelling():
    assert rights.normalise("OQ vcs sabem d mim???") == "o que voces sabem de mim"
    assert rights.normalise("apaga tuuudo") == "apaga tudo"


def test_replies_list_facts_and_say_how_to_delete():
    text = rights.access_reply(["Prefere a suíte Master", "Aniversário de casamento em 14/02"])
    assert "• Prefere a suíte Master" in text and "• Aniversário de casamento em 14/02" in text
    assert "apaga tudo que vocês sabem de mim" in text
    assert "Não guardamos nenhuma informação" in rights.access_reply([])
    assert "apagamos" in rights.erasure_reply(3)


# ------------------------------------------------------------------ tools
def test_parse_tools_and_errors():
    tools = parse_tools({"availability_check": {"url": "http://x/a", "keywords": ["tem vaga"], "budget_ms": 200}})
    spec = tools["availability_check"]
    assert spec.name == "availability_check" and spec.budget_ms == 200 and spec.keywords == ("tem vaga",)
    for bad in ({"a": "http://x"}, {"a": {"url": "ftp://x"}}, {"a": {"url": "http://x", "budget_ms": 0}},
                {"a": {"url": "http://x", "keywords": "vaga"}}, {"a": {"url": "http://x", "budget_ms": True}}):
        with pytest.raises(ToolConfigError):
            parse_tools(bad)
    merged = tool_keywords(tools, {"price_question": ["pacote"], "availability_check": ["livre"]})
    assert merged["availability_check"] == ["livre", "tem vaga"] and merged["price_question"] == ["pacote"]


def test_two_wordings_resolve_to_one_request():
    today = date(2026, 12, 1)  # a Tuesday
    a = resolve_arguments("Tem a suíte Master disponível dia 14/12 para pernoite?", today)
    b = resolve_arguments("a master ta livre 14/12? queria dormir aí", today)
    assert a == b == {"date": "2026-12-14", "period": "pernoite", "suite": "master"}
    assert flight_key(1, 100, "availability_check", a) == flight_key(1, 100, "availability_check", b)
    # another contact, date or suite: another key
    assert flight_key(1, 101, "availability_check", a) != flight_key(1, 100, "availability_check", a)
    c = resolve_arguments("tem master livre 15 de dezembro pernoite?", today)
    assert c["date"] == "2026-12-15" and flight_key(1, 100, "availability_check", c) != flight_key(
        1, 100, "availability_check", a)
    assert resolve_arguments("tem vaga amanhã?", today) == {"date": "2026-12-02"}
    assert resolve_arguments("e no sábado, suíte luxo 2 horas?", today) == {
        "date": "2026-12-05", "period": "periodo", "suite": "luxo"}
    assert resolve_arguments("tem vaga 10/01?", today)["date"] == "2027-01-10"  # next occurrence


def test_guard_never_contradicts_the_tool():
    yes = Act(tool=ToolResult("Sim! A suíte Master está disponível em 14/12 (pernoite).", True), tools=("t",))
    no = Act(tool=ToolResult("Infelizmente a suíte Master não está disponível em 14/12.", False), tools=("t",))
    assert contradicts("Não temos a Master nessa data.", yes.tool)
    assert not contradicts("Temos sim, pode vir!", yes.tool)
    assert contradicts("Temos sim, pode vir!", no.tool)
    # an LLM reply that contradicts → the tool's answer; one that agrees is kept
    assert yes.guard("Infelizmente não temos vaga.", offline=False) == yes.tool.answer
    assert yes.guard("Temos sim! Quer reservar?", offline=False) == "Temos sim! Quer reservar?"
    assert no.guard("Temos sim! Quer reservar?", offline=False) == no.tool.answer
    # the offline composer's sentences follow the tool's answer; a fallback is replaced
    assert yes.guard("Suíte Master: pernoite R$ 450.", offline=True).startswith(yes.tool.answer)
    from streams.respond.generate import FALLBACK_NO_KNOWLEDGE

    assert yes.guard(FALLBACK_NO_KNOWLEDGE, offline=True) == yes.tool.answer
    # the composer already copied the answer's sentence: it is not said twice
    assert yes.guard("A suíte Master está disponível em 14/12 (pernoite). Suíte Master: pernoite R$ 450.",
                     offline=True) == yes.tool.answer + " Suíte Master: pernoite R$ 450."
    assert yes.chunk().text == yes.tool.answer and yes.chunk().distance == 0.0
