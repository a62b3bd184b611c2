"""Intent detection from a keyword dictionary (docs/architecture.md §4C).

Matching is accent- and case-insensitive and word-boundary aware: both the
message and every keyword are folded (``fold``) and a keyword matches only as
a whole phrase. A keyword ending in ``*`` matches any word starting with it
(``parcel*`` matches ``parcelar`` and ``parcelamento``).

Every keyword carries a weight; the intent with the highest total wins and
ties go to the more specific intent (``PRIORITY``). Greeting and confirmation
words weigh little, so "Boa noite, quanto custa..." is a price question; and
they only win when little else is said (``MAX_SMALL_TALK_REST_WORDS``),
otherwise the message is ``general``.

An inbox's ``intent_keywords`` (JSON) extends or overrides the defaults::

    {"price_question": ["pacote", "combo"],                # extend (weight 3)
     "policy": {"keywords": {"regra": 2}, "replace": true}, # replace the defaults
     "booking": ["reservar", "reserva"]}                    # a new intent

Inbox keywords weigh ``INBOX_WEIGHT`` by default so an operator's word beats
the shipped lexicon.

Chat spelling: message and keywords are both passed through
``normalize_chat`` (``qnto`` → ``quanto``, ``vcs`` → ``voces``, ``q`` → ``que``,
``blz`` → ``beleza``, repeated letters squeezed), so the dictionary matches what
people type.

What the dictionary leaves open is decided from the message's embedding (the
vector the responder computes anyway), by :class:`IntentExamples`:

* with the **learnt classifier** (:class:`LearntIntent`, ``data/intent_model.*``,
  ``make train`` → ``streams.respond.train_intent``): a multinomial logistic
  regression trained on the example phrases (``data/intent_examples.json``), the
  dev questions and the training questions. With ``keyword_scale`` > 0 its input is
  the embedding plus what the default dictionary says (``keyword_features``: each
  intent's keyword total and the verdict), so it learns when a keyword misleads. With
  ``clause_scale`` > 0 the embedding of the clause that carries the first question
  (``question_clause``: "meu dog ta velhinho, vcs fazem cremação?" → "vcs fazem cremação?";
  of two questions the first) follows: a story or a second question weighs less. It is
  embedded apart only when it is not the whole message.
  With ``neighbour_scale`` > 0, last come the question clause's similarities to the clauses of
  the phrases and questions it was trained on (``neighbour_similarities``: per intent, the mean
  cosine of the ``NEIGHBOURS`` nearest), so a wording close to a few known ones of one intent ("a promoção vale
  no domingo?" next to "o rodízio vale no delivery?") weighs as such even where the linear reading
  of the embedding blurs two intents (policy and info_request, mostly).
  With ``clause_keyword_scale`` > 0, last comes what the dictionary says about the question clause
  alone and whether a price is asked only after the first question (``clause_keyword_features``):
  "vcs fazem cremação? e qnto custa?" is labelled by its first question (docs/intent-labels.md),
  which the whole message's keywords outvoted.
  It decides when the dictionary says ``general`` or its total weight is below
  the artefact's ``strong`` (chosen by cross-validation; it may be above any
  total) and its most probable intent reaches the artefact's ``floor``. An
  inbox's own intents and any inbox keyword match stay the dictionary's;
* without it (another embedder, or custom example phrases): the nearest example
  phrase, if its similarity clears ``EXAMPLE_THRESHOLD``, and only for what the
  dictionary leaves ``general``.
"""

from __future__ import annotations

import json
import re
import threading
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np

from streams.respond.text import QUESTION_SENTENCE, normalize_chat

PRICE = "price_question"
INFO = "info_request"
POLICY = "policy"
GREETING = "greeting"
OBJECTION = "objection"
CONFIRMATION = "confirmation"
GENERAL = "general"

INTENTS = (PRICE, INFO, POLICY, GREETING, OBJECTION, CONFIRMATION, GENERAL)
SMALL_TALK = frozenset({GREETING, CONFIRMATION})
# Ties are broken in this order (most specific first).
PRIORITY = (OBJECTION, POLICY, PRICE, INFO, CONFIRMATION, GREETING)
INBOX_WEIGHT = 3.0
# Greeting/confirmation win only if at most this many other words remain.
MAX_SMALL_TALK_REST_WORDS = 4

# Portuguese defaults. Weights: 3 = decisive, 2 = strong, 1 = hint, 0.5 = small talk.
DEFAULT_KEYWORDS: dict[str, dict[str, float]] = {
    PRICE: {
        "quanto custa": 2, "quanto custam": 2, "quanto fica": 2, "quanto ficaria": 2,
        "quanto e": 2, "quanto sai": 2, "quanto que fica": 2, "quanto que custa": 2, "quanto que sai": 2,
        "quanto que e": 2, "quanto cobra*": 2, "quanto vou pagar": 2,
        "quanto": 1.5, "de quanto": 2, "sai quanto": 2, "fica quanto": 2, "sai por quanto": 2,
        "qual o valor": 2, "qual valor": 2, "valor*": 1.5, "preco*": 2, "tarifa*": 2,
        "taxa": 2, "taxas": 2, "orcamento": 2, "cotacao": 2, "custa": 1.5, "custo": 1.5,
        "paga": 1, "pagam": 1, "cobra": 1.5, "cobram": 1.5, "cobrado": 1.5, "r$": 1,
        "reais": 1, "tabela": 1, "pedido minimo": 2,
        # asking whether one option costs more is a price question, not a complaint
        "e mais caro": 3.5, "e mais cara": 3.5, "fica mais caro": 3.5, "sai mais caro": 3.5,
        "fica mais cara": 3.5, "sai mais cara": 3.5,
    },
    OBJECTION: {
        "caro": 3, "cara": 2, "caros": 3, "caras": 2, "carissim*": 3, "salgado": 2,
        "mais barat*": 3, "barato": 1.5, "barata": 1.5, "mais em conta": 3,
        "em conta": 1.5, "muito alto": 2, "nao compensa": 3, "nao vale": 2,
        "absurdo": 2, "concorrente": 2, "achei melhor": 2,
        "fora do orcamento": 3, "nao cabe no bolso": 3, "vou pensar": 2,
        "nao tenho certeza": 1.5, "muito dinheiro": 2, "puxado": 2, "pesado": 1.5,
        "mais barato": 3, "te falo": 1, "te aviso": 1,
        # putting the decision off ("vou ver com meu marido", "deixa eu ver aqui... depois eu chamo"): hesitation
        "vou ver com": 2, "deixa eu ver": 2, "vou ver aqui": 2, "vou ver em outro*": 2, "vou ver outro*": 2,
        "depois eu chamo": 2, "depois te chamo": 2, "depois eu falo": 1.5, "depois falo": 1.5, "volto a falar": 2,
        "vou consultar": 1.5, "metade disso": 2,
        "deixa eu falar": 2, "vou falar com": 2, "preciso falar com": 1.5, "vou conversar com": 2,
        "deixa eu conversar": 2, "preciso ver com": 2, "tenho que ver com": 2,
    },
    POLICY: {
        "cancel*": 3, "desist*": 3, "reembols*": 3, "estorno": 3, "multa": 3,
        "remarc*": 2.5, "perco": 2, "sinal": 1.5, "politica*": 3, "regra*": 2.5,
        "permitid*": 2.5, "proibid*": 2.5, "check in": 2.5, "checkin": 2.5,
        # (no pet word alone, "cachorro", "gato", "pet": what the message is about, not what it asks; as policy cues
        # they cost 5 questions of leave-one-probe-out over the 35 readable probes, stop 38)
        "check out": 2.5, "checkout": 2.5, "posso levar": 2, "pode levar": 2,
        "posso trazer": 2, "pode trazer": 2, "ate que horas posso": 2,
        "ate quando posso": 2,
        "fumar": 2, "menor de idade": 2,
        "documento": 1.5, "aceitam pet*": 2, "antecedencia": 1.5, "cheque": 2.5,
        "parcel*": 2.5, "fiado": 2.5, "fidelidade": 2.5, "por fatia": 2, "no cio": 2,
        "atendem": 1, "aceitam": 1.5, "aceita": 1.5, "pode entrar": 2, "vale refeicao": 2,
        # discounts and company agreements are commercial conditions (docs/intent-labels.md)
        "tem desconto": 2.5, "desconto": 1.5, "convenio": 1.5,
        # whether an offer or a condition applies somewhere ("a promo vale pro delivery?"): a commercial condition
        "vale pra": 2, "vale pro": 2, "vale para": 2, "vale no": 2, "vale na": 2, "vale nos": 2, "vale nas": 2,
        "vale em": 2, "valem pra": 2, "valem pro": 2, "valem no": 2, "valem na": 2,
    },
    INFO: {
        "que horas": 1, "horario*": 1, "abre": 1.5, "abrem": 1.5, "fecha": 1.5,
        "funciona": 1.5, "funcionam": 1.5, "funcionamento": 1.5, "endereco": 2,
        "onde fica": 2, "localiza*": 2, "como chego": 2, "estacion*": 1.5, "vaga": 1,
        "vagas": 1, "cartao": 1.5, "entregam": 2, "entrega no": 1.5, "quanto tempo": 2,
        "demora": 2, "demoram": 2, "demorar": 2,
        "vendem": 1, "qual dia": 1.5, "que dia": 1.5, "feito na casa": 1, "qual o nome": 1.5, "pix": 1.5, "forma de pagamento": 2,
        "formas de pagamento": 2, "tem": 0.5, "voces tem": 1,
        "vcs tem": 1, "possui": 1, "possuem": 1, "oferece*": 1, "disponive*": 1,
        "como faco": 1.5, "como funciona": 1.5, "servido": 1, "cafe da manha": 1,
        "cardapio": 1.5, "wifi": 1.5, "wi fi": 1.5,
        "informac*": 1.5, "alugam": 1, "organizam": 1, "fazem": 0.5, "da pra": 0.5,
        "existe": 1,
    },
    GREETING: {
        "oi": 0.5, "ola": 0.5, "opa": 0.5, "eai": 0.5, "e ai": 0.5, "bom dia": 0.5,
        "boa tarde": 0.5, "boa noite": 0.5, "tudo bem": 0.5, "tudo bom": 0.5,
        "hello": 0.5, "hi": 0.5, "salve": 0.5, "tudo certo": 0.5, "eae": 0.5,
    },
    CONFIRMATION: {
        "ok": 0.6, "okay": 0.6, "certo": 0.6, "combinado": 0.6, "fechado": 0.6,
        "perfeito": 0.6, "beleza": 0.6, "blz": 0.6, "obrigad*": 0.6, "valeu": 0.6,
        "pode confirmar": 0.8, "confirmad*": 0.6, "confirmo": 0.6, "pode ser": 0.6,
        "sim": 0.6, "isso": 0.3, "otimo": 0.6, "show": 0.6, "agradeco": 0.6,
        "pode fechar": 0.8, "fechou": 0.6, "entendi": 0.6, "ta bom": 0.6, "pode reservar": 0.8,
        "pode agendar": 0.8, "pode mandar": 0.8, "manda o pix": 1.0, "pode marcar": 0.8,
        "isso mesmo": 0.6,
        "ate mais": 0.6, "ate logo": 0.6, "tchau": 0.6,
    },
}


#: An amount the customer repeats back in disbelief ("459 na lirio??", "nossa 790 pra castrar?!"): an objection. Not
#: a time, a weight, a distance, an age, a share or a count of instalments. Every one of the 52 such messages of the
#: tuning writers is labelled ``objection``.
_INCREDULOUS_AMOUNT = re.compile(
    r"(?<![\w:/])(?:r\$\s*)?\d{2,5}(?:[.,]\d{2})?(?!\s*(?:h\b|hs\b|hrs?\b|horas?\b|min|kg|km|m\b|anos?\b|meses\b|dias\b|%|x\b"
    r"|[:/ºª°]))[^?\n]{0,40}(?:\?{2,}|\?\s*!|!\s*\?)", re.IGNORECASE)
INCREDULOUS_WEIGHT = 3.0
INCREDULOUS_KEYWORD = "valor??"


#: An apology for the customer's own delay ("desculpa a demora", "foi mal o atraso"): courtesy, not a question about
#: how long something takes; taken out before the dictionary reads the message.
_APOLOGY = re.compile(r"\b(?:desculp\w*|perdao|foi mal)(?: ai)?(?: (?:a|pela|pelo|o))? (?:demora|atraso|sumico)\b")


def _folded(text: str) -> str:
    """``normalize_chat`` without the customer's apologies (``_APOLOGY``): what the dictionary reads."""
    return _APOLOGY.sub(" ", normalize_chat(text))


def _incredulous(text: str) -> bool:
    return _INCREDULOUS_AMOUNT.search(text) is not None


_ASKS_WHICH = re.compile(r"\b(qual|quais|quanto|quanta|quantos|quantas)\b")
# "o que sai mais barato, a broto doce ou a tradicional?": a choice between two named options
_ASKS_CHOICE = re.compile(r"\b(o que|que)\b.*\b(mais|menos)\b.*\bou\b")


@dataclass(frozen=True)
class IntentResult:
    intent: str
    score: float
    matched: tuple[str, ...]


@dataclass(frozen=True)
class _Lexicon:
    patterns: tuple[tuple[str, str, float, re.Pattern[str]], ...]  # intent, keyword, weight, regex
    # per pattern, its longest word: a text without it cannot match (a substring test
    # spares the ~200 regular expressions most messages have nothing for)
    literals: tuple[str, ...]


def _compile(keyword: str) -> re.Pattern[str] | None:
    prefix = keyword.strip().endswith("*")
    folded = normalize_chat(keyword.strip().rstrip("*"))
    if not folded:
        return None
    body = r"\s+".join(re.escape(w) for w in folded.split())
    tail = r"\w*" if prefix else ""
    return re.compile(rf"(?<![\w$]){body}{tail}(?![\w$])")


def _as_weights(value: Any, default_weight: float) -> tuple[dict[str, float], bool]:
    """Normalise one inbox entry to ({keyword: weight}, replace)."""
    replace = False
    if isinstance(value, Mapping) and "keywords" in value:
        replace = bool(value.get("replace", False))
        value = value["keywords"]
    if isinstance(value, str):
        value = [value]
    if isinstance(value, Mapping):
        return {str(k): float(w) for k, w in value.items()}, replace
    return {str(k): default_weight for k in (value or [])}, replace


def build_lexicon(inbox_keywords: Mapping[str, Any] | None = None) -> _Lexicon:
    merged: dict[str, dict[str, float]] = {i: dict(kw) for i, kw in DEFAULT_KEYWORDS.items()}
    for intent, value in (inbox_keywords or {}).items():
        weights, replace = _as_weights(value, INBOX_WEIGHT)
        if replace or intent not in merged:
            merged[intent] = {}
        merged[intent].update(weights)
    # Keywords that read the same once chat spelling is normalised ("vcs tem" and
    # "voces tem") are one keyword: counted once, at the larger weight.
    best: dict[tuple[str, str], tuple[str, float, re.Pattern[str]]] = {}
    for intent, kws in merged.items():
        for kw, w in kws.items():
            rx = _compile(kw)
            if rx is None:
                continue
            seen = best.get((intent, rx.pattern))
            if seen is None or w > seen[1]:
                best[(intent, rx.pattern)] = (kw, w, rx)
    patterns = tuple((intent, kw, w, rx) for (intent, _), (kw, w, rx) in best.items())
    return _Lexicon(patterns, tuple(max(normalize_chat(kw.strip().rstrip("*")).split(), key=len)
                                    for _, kw, _, _ in patterns))


@lru_cache(maxsize=256)
def _cached_lexicon(key: str) -> _Lexicon:
    import json

    return build_lexicon(json.loads(key) if key else None)


def lexicon_for(inbox_keywords: Mapping[str, Any] | None) -> _Lexicon:
    """The compiled lexicon of an inbox (cached by the dictionary's content)."""
    import json

    key = json.dumps(inbox_keywords, sort_keys=True, ensure_ascii=False) if inbox_keywords else ""
    return _cached_lexicon(key)


def _rank(intent: str) -> int:
    return PRIORITY.index(intent) if intent in PRIORITY else -1  # custom intents first


#: Keyword totals above this count as this much in the learnt classifier's features.
KEYWORD_CAP = 6.0


def keyword_features(text: str, detected: IntentResult | None = None) -> np.ndarray:
    """What the default dictionary says about ``text``, as features for the learnt classifier:
    per intent (``INTENTS`` order) its keyword total (capped at ``KEYWORD_CAP``, over 3), then
    the dictionary's verdict one-hot. The classifier learns how far to trust each."""
    folded = _folded(text)
    lexicon = lexicon_for(None)
    totals = dict.fromkeys(INTENTS, 0.0)
    for (intent, _kw, weight, rx), literal in zip(lexicon.patterns, lexicon.literals):
        if literal in folded and rx.search(folded):
            totals[intent] += weight
    if _incredulous(text):
        totals[OBJECTION] += INCREDULOUS_WEIGHT
    verdict = (detected or detect_intent(text)).intent
    return np.asarray([min(totals[i], KEYWORD_CAP) / 3.0 for i in INTENTS]
                      + [1.0 if verdict == i else 0.0 for i in INTENTS], dtype=np.float32)


#: The value of ``clause_keyword_features``' last entry when a price is asked only after the first question.
LATER_PRICE = 6.0


def clause_keyword_features(text: str) -> np.ndarray:
    """``keyword_features`` of the message's question clause (``question_clause``): the first
    question's own words, apart from a story's or a second question's; then whether a price is asked
    only after the first question ("vcs fazem cremação? e qnto custa?": ``LATER_PRICE``, else 0), which
    the writers label by the first question (43 of the 45 such messages of the tuning sets)."""
    clause = question_clause(text)
    mark = text.find("?")
    later = text[mark + 1:] if mark >= 0 else ""
    asks_later = (re.search(r"\w", later) is not None and detect_intent(later).intent == PRICE
                  and detect_intent(clause).intent != PRICE)
    return np.append(keyword_features(clause), np.float32(LATER_PRICE if asks_later else 0.0))


# where a clause ends inside a question's segment: a sentence end, a line break, a comma before a space
_CLAUSE_BREAK = re.compile(r"[.!;\n]+|,\s+")
#: A last clause shorter than this (words) takes the clause before it along ("vcs buscam?" after "moro no centro").
SHORT_CLAUSE_WORDS = 3


#: The question words (``_WH_WORD``, ``_ASKING``).
_WH_WORDS = r"quanto|quanta|quantos|quantas|qual|quais|que horas|onde|quando|como|quem|porque|por que|o que|da pra"
#: Asking words that mark the clause a message without a ``?`` asks in ("Gostaria de saber, por gentileza, qual é o
#: valor da pernoite. Desde já agradeço"): the question words, a reported question ("saber se"), "será que".
_ASKING = re.compile(rf"\b({_WH_WORDS}|saber|sera que)\b")
#: A clause that signs off or thanks ("Desde já agradeço a atenção", "Atenciosamente, Sr. Osvaldo", "obg!"): the
#: letter's form, never what it asks.
_SIGN_OFF = re.compile(r"^(?:grato|grata|gratos|atenciosamente|att|atte|cordialmente|respeitosamente|abracos|saudacoes|"
                       r"desde ja|sr|sra|dr|dra|obrigad\w*|muito obrigad\w*|valeu|agradec\w*)\b")


def _asked_clause(clauses: list[str]) -> int:
    """Which of a ``?``-less segment's clauses it asks in: the last with an asking word (``_ASKING``) that is
    no sign-off, else the last that is no sign-off or thanks, else the last."""
    folded = [normalize_chat(c) for c in clauses]
    signs_off = [_SIGN_OFF.match(f) is not None for f in folded]
    for wanted in ([bool(_ASKING.search(f)) and not s for f, s in zip(folded, signs_off)], [not s for s in signs_off]):
        if any(wanted):
            return max(k for k, w in enumerate(wanted) if w)
    return len(clauses) - 1


def question_clause(text: str) -> str:
    """The clause that carries the message's first question: the text up to its first ``?``, from
    the last clause break before it ("meu cachorro ta velhinho, vcs fazem cremação? …" →
    "vcs fazem cremação?"); a clause under ``SHORT_CLAUSE_WORDS`` words takes the clause
    before it along. Without a ``?`` the last clause with an asking word, else the last that does not sign off
    or thank (``_asked_clause``: "Gostaria de saber se há elevador na unidade Praia. Atenciosamente, Sr.
    Osvaldo." → its first sentence). ``text`` itself when that is all the
    message is (one clause, one question), so its vector is the message's own. A question that is
    only small talk ("oi tudo bem? queria saber se aceita VR") is no real question: the clause is
    sought after it."""
    start = 0
    while True:
        mark = text.find("?", start)
        segment = text[start:mark] if mark >= 0 else text[start:]
        clauses = [c.strip() for c in _CLAUSE_BREAK.split(segment) if c.strip()]
        if not clauses:
            return text
        k = len(clauses) - 1 if mark >= 0 else _asked_clause(clauses)
        out = clauses[k]
        if len(out.split()) < SHORT_CLAUSE_WORDS and k > 0:
            out = f"{clauses[k - 1]}, {out}"
        out = out + "?" if mark >= 0 else out
        rest = text[mark + 1:] if mark >= 0 else ""
        if mark < 0 or not re.search(r"\w", rest) or detect_intent(out).intent not in SMALL_TALK:
            return text if out == text.strip() else out
        start = mark + 1


def detect_intent(text: str, inbox_keywords: Mapping[str, Any] | None = None,
                  charged_as_policy: bool = True) -> IntentResult:
    """The message's intent, or ``general`` when no keyword matches. ``charged_as_policy``: a yes/no
    about whether something is charged ("criança paga?") is ``policy``, its label; False keeps it a
    price question, for a caller choosing the line that answers it (a charge's amount answers it)."""
    folded = _folded(text)
    lexicon = lexicon_for(inbox_keywords)
    scores: dict[str, float] = {}
    matched: dict[str, list[str]] = {}
    spans: dict[str, list[tuple[int, int]]] = {}
    for (intent, kw, weight, rx), literal in zip(lexicon.patterns, lexicon.literals):
        if literal not in folded:
            continue
        hits = list(rx.finditer(folded))
        if not hits:
            continue
        scores[intent] = scores.get(intent, 0.0) + weight
        matched.setdefault(intent, []).append(kw)
        spans.setdefault(intent, []).extend(m.span() for m in hits)
    if _incredulous(text):
        scores[OBJECTION] = scores.get(OBJECTION, 0.0) + INCREDULOUS_WEIGHT
        matched.setdefault(OBJECTION, []).append(INCREDULOUS_KEYWORD)
    if not scores:
        return IntentResult(GENERAL, 0.0, ())
    best = sorted(scores, key=lambda i: (-scores[i], _rank(i)))[0]
    if best == OBJECTION and (_ASKS_WHICH.search(folded) or ("?" in text and _ASKS_CHOICE.search(folded))):
        # "qual a suíte mais barata?": asking for the cheaper option is a price question
        return IntentResult(PRICE, scores[best], tuple(matched[best]))
    if charged_as_policy and best == PRICE and "?" in text and not (inbox_keywords or {}).get(PRICE) \
            and _charged_yes_no(matched[best], folded):
        # "criança paga?", "se eu faltar sem avisar cobra?": whether a charge applies is a rule of the house
        return IntentResult(POLICY, scores[best], tuple(matched[best]))
    if best in SMALL_TALK:
        rest = _remove_spans(folded, [s for i in SMALL_TALK for s in spans.get(i, [])]
                             + [m.span() for m in _SELF_INTRODUCTION.finditer(folded)])
        if len(rest.split()) > MAX_SMALL_TALK_REST_WORDS:
            return IntentResult(GENERAL, 0.0, tuple(matched[best]))
        # "Ok, obrigada! Bom dia" → whichever small talk weighs more.
    return IntentResult(best, scores[best], tuple(matched[best]))


# the customer saying who they are ("aqui é a carla", "sou o pai do enzo", "tutora da luna"): part of a greeting
_SELF_INTRODUCTION = re.compile(r"\b(?:aqui e|aqui quem fala e|eu sou|sou|meu nome e|me chamo)\s+(?:o |a )?\w+|"
                                r"\b(?:tutor|tutora|dono|dona|pai|mae)\s+d[oa]\s+\w+")


#: The default price keywords that say only that something is charged ("paga", "cobra", "taxa"), not how much.
CHARGE_WORDS = frozenset({"paga", "pagam", "cobra", "cobram", "cobrado", "taxa", "taxas"})
# an amount asked: how much, which value, a price, a cost, how it is charged
_ASKS_AMOUNT = re.compile(r"\b(quanto|quanta|quantos|quantas|qual|quais|valor\w*|preco\w*|custa\w*|custo\w*|como|"
                          r"tabela|tarifa\w*)\b")


def _charged_yes_no(price_matched: Sequence[str], folded: str) -> bool:
    """Whether a price verdict rests only on the default charge words and asks no amount ("criança paga?",
    "cobra alguma coisa?", "tem alguma taxa?"): a yes/no about whether a charge applies, which
    docs/intent-labels.md labels ``policy`` (23 of the 24 such questions of the tuning writers). Only for the
    default price keywords: an inbox with price keywords of its own keeps the dictionary's price verdict."""
    return (bool(price_matched) and all(kw in CHARGE_WORDS for kw in price_matched)
            and not _ASKS_AMOUNT.search(folded))


def _remove_spans(text: str, spans: list[tuple[int, int]]) -> str:
    keep = [True] * len(text)
    for a, b in spans:
        for i in range(a, b):
            keep[i] = False
    return "".join(c if k else " " for c, k in zip(text, keep))


# ------------------------------------------------------ similarity fallback
EXAMPLES_FILE = Path(__file__).with_name("data") / "intent_examples.json"
# Chosen by cross-validation on the dev questions (streams/respond/evaluate_intent.py).
EXAMPLE_THRESHOLD = 0.65


def load_examples(path: str | Path = EXAMPLES_FILE) -> dict[str, list[str]]:
    raw = json.loads(Path(path).read_text(encoding="utf-8"))
    return {k: [str(x) for x in v] for k, v in raw.items() if not k.startswith("_")}


INTENT_MODEL = Path(__file__).with_name("data") / "intent_model"
#: How many nearest training phrases per intent ``neighbour_similarities`` averages.
NEIGHBOURS = 3


def _unit(m: np.ndarray) -> np.ndarray:
    m = np.asarray(m, dtype=np.float32)
    m = m.reshape(1, -1) if m.ndim == 1 else m
    n = np.linalg.norm(m, axis=1, keepdims=True)
    return m / np.where(n == 0, 1, n)


def neighbour_similarities(vectors, references: np.ndarray, labels: Sequence[str],
                           exclude_self: bool = False, k: int = NEIGHBOURS,
                           references_unit: bool = False) -> np.ndarray:
    """Per row of ``vectors`` and per intent (``INTENTS`` order): the mean cosine similarity of its
    ``k`` most similar ``references`` of that intent (0 for an intent without references).
    ``exclude_self``: ``vectors`` are the references themselves (training), each row skips itself.
    ``references_unit``: the references are unit vectors already (a loaded classifier's, normalised
    once), so they are not normalised again on every message."""
    sims = _unit(vectors) @ (references if references_unit else _unit(references)).T
    if exclude_self:
        np.fill_diagonal(sims, -1.0)
    labels = np.asarray(list(labels))
    out = np.zeros((sims.shape[0], len(INTENTS)), dtype=np.float32)
    for j, intent in enumerate(INTENTS):
        cols = np.flatnonzero(labels == intent)
        if cols.size:
            top = -np.sort(-sims[:, cols], axis=1)[:, :k]
            out[:, j] = top.mean(axis=1)
    return out


@dataclass
class LearntIntent:
    """Multinomial logistic regression over the message's embedding (see the module docstring)."""

    weights: np.ndarray          # (n_classes, dim)
    bias: np.ndarray             # (n_classes,)
    classes: list[str]
    strong: float                # a dictionary verdict at or above this weight stands
    meta: dict
    floor: float = 0.0           # below this probability the dictionary's verdict stands
    # > 0: the dictionary's per-intent totals and verdict (``keyword_features``), times this,
    # follow the embedding in the classifier's input; 0: the embedding alone
    keyword_scale: float = 0.0
    # > 0: the embedding of the clause that carries the first question (``question_clause``),
    # times this, comes last: what is asked weighs apart from the story or the second question
    clause_scale: float = 0.0
    # > 0: the question clause's ``neighbour_similarities`` to ``references`` (unit vectors of the
    # training phrases' and questions' clauses, labelled ``reference_labels``), times this, come last
    neighbour_scale: float = 0.0
    references: np.ndarray | None = None
    reference_labels: tuple[str, ...] = ()
    # > 0: what the dictionary says about the question clause alone (``keyword_features`` of
    # ``question_clause``), times this, comes last: a price asked in a second question ("vcs fazem
    # cremação? e qnto custa?") or a story's words weigh apart from those of the first question
    clause_keyword_scale: float = 0.0

    def __post_init__(self):
        # normalised once here, not on every message (``features``)
        if self.references is not None:
            self.references = _unit(self.references)

    def decides(self, detected: IntentResult) -> bool:
        if detected.intent == GENERAL:
            return True
        if detected.intent not in self.classes:
            return False  # an inbox's own intent
        defaults = DEFAULT_KEYWORDS.get(detected.intent, {})
        if any(kw not in defaults for kw in detected.matched):
            return False  # an inbox keyword matched: the operator's word stands
        return detected.score < self.strong

    def clause_for(self, text: str | None) -> str | None:
        """The clause whose own embedding this classifier reads (``question_clause``), when it is not
        the whole message (then the message's vector serves); None otherwise."""
        if (self.clause_scale <= 0 and self.neighbour_scale <= 0) or text is None:
            return None
        clause = question_clause(text)
        return None if clause == text else clause

    def features(self, vector, text: str | None = None, detected: IntentResult | None = None,
                 clause_vector=None) -> np.ndarray:
        v = np.asarray(vector, dtype=np.float32).reshape(-1)
        parts = [v]
        if self.keyword_scale > 0 or self.clause_scale > 0 or self.neighbour_scale > 0 or self.clause_keyword_scale > 0:
            if text is None:
                raise ValueError("this intent classifier reads the message's text too: pass it")
        if self.keyword_scale > 0:
            parts.append(keyword_features(text, detected) * np.float32(self.keyword_scale))
        if self.clause_scale > 0 or self.neighbour_scale > 0:
            if clause_vector is None:
                if self.clause_for(text) is not None:
                    raise ValueError("this intent classifier reads the question clause's vector: pass it")
                clause_vector = v  # the message is its own question clause
            clause_vector = np.asarray(clause_vector, dtype=np.float32).reshape(-1)
        if self.clause_scale > 0:
            parts.append(clause_vector * np.float32(self.clause_scale))
        if self.neighbour_scale > 0:
            parts.append(neighbour_similarities(clause_vector, self.references, self.reference_labels,
                                                references_unit=True)[0]
                         * np.float32(self.neighbour_scale))
        if self.clause_keyword_scale > 0:
            parts.append(clause_keyword_features(text) * np.float32(self.clause_keyword_scale))
        return np.concatenate(parts) if len(parts) > 1 else v

    def probabilities(self, vector, text: str | None = None, detected: IntentResult | None = None,
                      clause_vector=None) -> np.ndarray | None:
        v = np.asarray(vector, dtype=np.float32).reshape(-1)
        width = self.weights.shape[1] - (2 * len(INTENTS) if self.keyword_scale > 0 else 0) \
            - (len(INTENTS) if self.neighbour_scale > 0 else 0) - (2 * len(INTENTS) + 1 if self.clause_keyword_scale > 0 else 0)
        if self.clause_scale > 0:
            width //= 2
        if v.shape[0] != width:
            return None
        z = self.weights @ self.features(v, text, detected, clause_vector) + self.bias
        e = np.exp(z - z.max())
        return e / e.sum()

    def classify(self, vector, exclude: str | None = None, text: str | None = None,
                 detected: IntentResult | None = None, clause_vector=None) -> IntentResult | None:
        """The most probable intent (``exclude``: the most probable other than it, floor aside)."""
        p = self.probabilities(vector, text, detected, clause_vector)
        if p is None:
            return None
        if exclude is not None and exclude in self.classes and len(self.classes) > 1:
            p = p.copy()
            p[self.classes.index(exclude)] = -1.0
            k = int(np.argmax(p))
            return IntentResult(self.classes[k], float(p[k]), ("~learnt",))
        k = int(np.argmax(p))
        if float(p[k]) < self.floor:
            return None
        return IntentResult(self.classes[k], float(p[k]), ("~learnt",))

    def save(self, path: Path = INTENT_MODEL) -> None:
        extra = {}
        if self.neighbour_scale > 0:
            extra = {"references": _unit(self.references).astype(np.float16),
                     "reference_labels": np.asarray([INTENTS.index(x) for x in self.reference_labels], np.int8)}
        np.savez_compressed(path.with_suffix(".npz"), weights=self.weights.astype(np.float16),
                            bias=self.bias.astype(np.float32), **extra)
        meta = dict(self.meta, classes=list(self.classes), strong=self.strong, floor=self.floor,
                    keyword_scale=self.keyword_scale, clause_scale=self.clause_scale,
                    neighbour_scale=self.neighbour_scale, clause_keyword_scale=self.clause_keyword_scale)
        path.with_suffix(".json").write_text(json.dumps(meta, ensure_ascii=False, indent=1) + "\n")

    @classmethod
    def load(cls, path: Path = INTENT_MODEL) -> "LearntIntent | None":
        npz, js = path.with_suffix(".npz"), path.with_suffix(".json")
        if not npz.exists() or not js.exists():
            return None
        meta = json.loads(js.read_text())
        with np.load(npz) as z:
            refs = z["references"].astype(np.float32) if "references" in z.files else None
            ref_labels = tuple(INTENTS[i] for i in z["reference_labels"]) if "reference_labels" in z.files else ()
            return cls(z["weights"].astype(np.float32), z["bias"].astype(np.float32), list(meta["classes"]),
                       float(meta["strong"]), meta, float(meta.get("floor", 0.0)),
                       float(meta.get("keyword_scale", 0.0)), float(meta.get("clause_scale", 0.0)),
                       float(meta.get("neighbour_scale", 0.0)), refs, ref_labels,
                       float(meta.get("clause_keyword_scale", 0.0)))


class IntentExamples:
    """Nearest example phrase per intent, by cosine similarity of embeddings.

    The examples are embedded once per embedder (lazily, thread-safe); a
    message is compared through the vector the caller already has, so the
    fallback costs one small matrix product, never a second embedding.
    """

    def __init__(self, embedder, examples: Mapping[str, Sequence[str]] | None = None,
                 threshold: float = EXAMPLE_THRESHOLD, learnt: LearntIntent | None | bool = True):
        self.embedder = embedder
        self.examples = dict(examples) if examples is not None else load_examples()
        self.threshold = threshold
        # The learnt classifier was trained on the shipped phrases with one embedder: used
        # only with both (``learnt=False`` turns it off; an instance is used as given).
        if learnt is True:
            model = LearntIntent.load() if examples is None else None
            learnt = model if model is not None and model.meta.get("embedder") == getattr(embedder, "name", None) \
                else None
        self.learnt: LearntIntent | None = learnt or None
        self._matrix: np.ndarray | None = None
        self._labels: list[str] = []
        self._lock = threading.Lock()

    @property
    def model(self) -> str:
        return self.embedder.name

    def _ensure(self) -> tuple[np.ndarray, list[str]]:
        with self._lock:
            if self._matrix is None:
                labels, texts = [], []
                for intent, phrases in self.examples.items():
                    for p in phrases:
                        labels.append(intent)
                        texts.append(p)
                m = np.asarray(self.embedder.embed_passages(texts), dtype=np.float32)
                norms = np.linalg.norm(m, axis=1, keepdims=True)
                self._matrix, self._labels = m / np.where(norms == 0, 1, norms), labels
        return self._matrix, self._labels

    def nearest(self, vector) -> tuple[str, float]:
        """(intent of the most similar example, its cosine similarity)."""
        m, labels = self._ensure()
        v = np.asarray(vector, dtype=np.float32).reshape(-1)
        n = float(np.linalg.norm(v))
        if n == 0.0 or v.shape[0] != m.shape[1]:
            return GENERAL, 0.0
        sims = m @ (v / n)
        k = int(np.argmax(sims))
        return labels[k], float(sims[k])

    def decides(self, detected: IntentResult) -> bool:
        if self.learnt is not None:
            return self.learnt.decides(detected)
        return detected.intent == GENERAL

    def clause_for(self, text: str | None) -> str | None:
        """The question clause the learnt classifier reads apart (``LearntIntent.clause_for``)."""
        return self.learnt.clause_for(text) if self.learnt is not None else None

    def classify(self, vector, exclude: str | None = None, text: str | None = None,
                 detected: IntentResult | None = None, clause_vector=None) -> IntentResult | None:
        """The embedding's verdict; None when the learnt classifier is unsure (below its floor)
        or cannot read the vector: the dictionary's verdict then stands. ``exclude``: the best
        verdict other than that intent. ``text``/``detected``: the message and the default
        dictionary's verdict, which a classifier with ``keyword_scale`` reads too;
        ``clause_vector``: the question clause's vector (``clause_for``), embedded here when not given."""
        if self.learnt is not None:
            clause = self.learnt.clause_for(text)
            if clause is not None and clause_vector is None:
                clause_vector = np.asarray(self.embedder.embed_queries([clause])[0], dtype=np.float32)
            return self.learnt.classify(vector, exclude, text, detected, clause_vector)
        if exclude is not None:
            m, labels = self._ensure()
            v = np.asarray(vector, dtype=np.float32).reshape(-1)
            n = float(np.linalg.norm(v))
            if n == 0.0 or v.shape[0] != m.shape[1]:
                return None
            sims = m @ (v / n)
            keep = [k for k, lab in enumerate(labels) if lab != exclude]
            if not keep:
                return None
            k = max(keep, key=lambda j: sims[j])
            return IntentResult(labels[k], float(sims[k]), ("~example",))
        intent, sim = self.nearest(vector)
        if sim < self.threshold:
            return IntentResult(GENERAL, 0.0, ())
        return IntentResult(intent, sim, ("~example",))


_WH_WORD = re.compile(rf"\b({_WH_WORDS})\b")
# a question to the agent itself ("vc é robô?", "vc sabe...?") is small talk, not about the business
_TO_THE_AGENT = re.compile(r"\b(voce|voces) (e|eh|ta|esta|sabe|entende|gosta) (robo|gente|pessoa|humano|de verdade)\b|"
                           r"\b(robo|robozinho|bot|chat ?bot|gente de verdade|pessoa de verdade|quem (ta|esta) falando)\b|"
                           r"\b(uma|um) ia\b|\b(voce|voces) (e|eh|sao) (uma |um )?ia\b|\binteligencia artificial\b|"
                           r"\batendente (de verdade|real|humano|humana|mesmo)\b|\b(pessoa|gente) (real|mesmo)\b|"
                           # the agent's own name ("qual teu nome?", "como vc se chama?", "com quem eu falo?")
                           r"\bqual (e |eh )?(o )?(seu|teu) nome\b|\bcomo (voce|tu) se chama\b|"
                           r"\bcom quem (eu )?(falo|to falando|estou falando)\b")


def asks_a_question(text: str) -> bool:
    """A question (a question mark, or a question word) that is not addressed to the agent
    itself: a customer asking it wants something of the business, never small talk. A sentence
    that only greets with a question mark ("oi tudo bom?", "e ai, td certo?": the dictionary reads it
    as small talk) asks nothing, and its words ("como vai?") are no question words."""
    norm = normalize_chat(text)
    if _TO_THE_AGENT.search(norm):
        return False
    courtesy = []
    for m in QUESTION_SENTENCE.finditer(text):
        if detect_intent(m.group(0)).intent not in SMALL_TALK:
            return True
        courtesy.append(m.span())   # "oi tudo bom?", "td certo?": a greeting asked, not a question
    rest = _remove_spans(text, courtesy) if courtesy else text
    return bool(_WH_WORD.search(normalize_chat(rest)))


#: The first question asks an amount ("quanto é a multa se eu cancelar?", "se eu desmarcar pago quanto?", "qual o
#: valor do sinal?"): a price question, whatever it is the amount of (docs/intent-labels.md). Not a duration or a
#: count ("quanto tempo", "quantas pessoas", "demora quanto"). Every such question of the tuning writers is labelled
#: ``price_question`` (500 of 500 at stop 39, with the minimum asked and "qnto pra / qnto o …"); a price asked only in a
#: second question takes the first question's intent.
_ASKS_AN_AMOUNT = re.compile(
    r"\b(?:quanto (?:que )?(?:e|eh|custa\w*|fica\w*|sai|saira|cobra\w*|pago|paga\w*|vou pagar|seria|da|deu|ta|esta|"
    r"vai (?:dar|ficar|sair|custar|ser))|quantos reais|de quanto|"
    r"(?:sai|fica|paga|pago|cobra\w*|custa\w*|e|eh|seria|ta) (?:por )?quanto|"
    r"qual (?:e |eh )?(?:o |a )?(?:valor|preco|taxa|multa|(?:pedido |valor |consumo )?minim[oa])|"
    r"(?<!demora )(?<!demoram )(?<!leva )(?<!dura )quanto (?:o|a|os|as|pra|para|cada)\b|quanto\s*$)\b")


def asks_an_amount(text: str) -> bool:
    """Whether the message's first question (``question_clause``) asks an amount (``_ASKS_AN_AMOUNT``)."""
    return _ASKS_AN_AMOUNT.search(normalize_chat(question_clause(text).rstrip("?"))) is not None


#: A message that opens by agreeing ("fechou, manda 1 grande de calabresa...", "blz, obg pela info! vou retirar no
#: balcao entao"): with no question and no objection in it, a confirmation, however much it goes on to tell.
#: All 84 such messages of the tuning writers are labelled ``confirmation``.
_OPENS_AGREEING = re.compile(r"^(?:(?:ah|ai|entao|ta|ok|okay)\s+)?(?:fechou|fechado|beleza|perfeito|combinado|ok|okay|"
                             r"pode ser|show|certo|otimo|firmeza|demorou|bora|fechamos|ta bom|ta otimo|maravilha|top|"
                             r"massa|sim|isso|pode|entendi)\b")


def agrees(text: str, detected: IntentResult | None = None) -> bool:
    """The message opens by agreeing (``_OPENS_AGREEING``), asks nothing (``asks_a_question``) and objects to
    nothing (the default dictionary's verdict, ``detected`` when given, is no objection)."""
    return (_OPENS_AGREEING.search(normalize_chat(text)) is not None and not asks_a_question(text)
            and (detected or detect_intent(text)).intent != OBJECTION)


def about_the_agent(text: str) -> bool:
    """The message asks the agent about itself ("vc é robô ou gente?", "vc é atendente msm ou é uma IA?":
    ``_TO_THE_AGENT``) and asks nothing else (the rest, its sentences naming the agent left out, asks no
    question). All 30 such questions of the tuning writers are labelled ``general`` (docs/intent-labels.md)."""
    norm = normalize_chat(text)
    if not _TO_THE_AGENT.search(norm):
        return False
    spans = [m.span() for m in QUESTION_SENTENCE.finditer(text) if _TO_THE_AGENT.search(normalize_chat(m.group(0)))]
    return not asks_a_question(_remove_spans(text, spans) if spans else text)


#: The customer puts the decision off ("vou pensar", "vou ver em outro lugar", "deixa eu ver com a patroa"): an objection
#: (docs/intent-labels.md: hesitation), whatever price or fee it names ("hmm taxa de 10 reais pra entregar... vou
#: pensar"), unless a question follows it ("vou pensar, mas tem desconto no pix?"), an amount is asked
#: (``asks_an_amount`` decides first) or what is thought over is a choice ("vou pensar no sabor"). All 44 such
#: messages of the tuning writers are labelled ``objection`` (stop 41; two were read as price questions by the fee,
#: one as general).
_PUTS_OFF = re.compile(r"\b(?:vou|vamos|deixa eu|deixa eu dar uma|preciso|tenho que) (?:pensar|dar uma pensada|"
                       r"ver em outro lugar|ver em outra|pesquisar mais|ver outros lugares)\b(?! (?:no|na|nos|nas|num|numa|qual|quais)\b)|"
                       r"\b(?:vou|deixa eu|preciso|tenho que) (?:ver|falar|conversar|combinar) (?:c|com|co) "
                       r"(?:ele|ela|eles|elas|meu|minha|meus|minhas|o|a|os|as)\b")


def puts_off(text: str) -> bool:
    """The message defers the decision (``_PUTS_OFF``) and asks nothing from the sentence saying so on ("nossa 790
    pra castrar? vou pensar" puts off; "vou pensar, mas tem desconto no pix?" asks)."""
    said = next((m for m in _SENTENCE.finditer(text) if _PUTS_OFF.search(normalize_chat(m.group(0)))), None)
    return said is not None and not asks_a_question(text[said.start():])


_SENTENCE = re.compile(r"[^.!?\n]+[.!?\n]*")


#: A first question asking whether something is offered ("vcs fazem limpeza de tártaro?", "tem pizza vegana?") and a
#: later one asking its price ("qnto custa?"): the first real question decides (docs/intent-labels.md: "vcs tem tosa
#: na tesoura? é mais caro?" stays info_request), unless it asks a rule ("tem desconto pra estudante? qnto?").
#: All 7 such questions of the tuning writers are labelled ``info_request`` (stop 40).
_ASKS_IF_OFFERED = re.compile(r"^(?:(?:oi|ola|bom dia|boa tarde|boa noite)\s+)?(?:voces\s+|voce\s+)?"
                              r"(?:fazem|faz|tem|dao|da|vendem|vende|oferecem|trabalham com)\b")


def asks_if_offered_then_price(text: str) -> bool:
    """Whether the first question asks if something is offered (``_ASKS_IF_OFFERED``, not a rule by the default
    dictionary) and a later one asks an amount."""
    first = question_clause(text)
    if first == text or not _ASKS_IF_OFFERED.search(normalize_chat(first)):
        return False
    # what is asked after it: the text past the "?" that closes it (the clause may carry the one before it along)
    end = text.find("?", text.find(first.rstrip("?").split(", ")[-1]))
    if end < 0:
        return False
    return _ASKS_AN_AMOUNT.search(normalize_chat(text[end + 1:])) is not None and detect_intent(first).intent != POLICY


def intent_by_form(detected: IntentResult, text: str | None, default: IntentResult | None = None) -> IntentResult | None:
    """The verdict the message's form gives before any classifier reads it: a first question asking an amount
    (``asks_an_amount``) is a price question, one asking whether a thing is offered before its price is asked
    (``asks_if_offered_then_price``) an info request, a message opening by agreeing that asks nothing (``agrees``) a
    confirmation, a message asking the agent only about itself (``about_the_agent``) general, a message putting the decision off
    and asking nothing after it (``puts_off``) an objection; None otherwise.
    ``default``: the default dictionary's verdict on ``text``, when the caller has it."""
    if text is None:
        return None
    if asks_an_amount(text):
        return IntentResult(PRICE, max(detected.score, 1.0), detected.matched + ("~amount",))
    if puts_off(text):
        return IntentResult(OBJECTION, max(detected.score, 1.0), detected.matched + ("~puts_off",))
    if asks_if_offered_then_price(text):
        return IntentResult(INFO, max(detected.score, 1.0), detected.matched + ("~offered",))
    if agrees(text, default):
        return IntentResult(CONFIRMATION, max(detected.score, 1.0), detected.matched + ("~agrees",))
    if about_the_agent(text):
        return IntentResult(GENERAL, max(detected.score, 1.0), detected.matched + ("~agent",))
    return None


#: The learnt classifier's probability of ``general`` at or above which a question stays ``general`` (a question
#: about the weather or the agent's day: "nossa choveu mt ai hj?"). Below it a question takes the best other intent.
#: Leave-one-probe-out over the 35 readable probes (stop 38): the same 2089/2127 from 0.4 to 0.8 (two weather
#: questions right that were forced to info_request or greeting), 2088 at 0.9, 2087 without it.
GENERAL_STANDS = 0.7


def refine_intent(detected: IntentResult, vector, examples: "IntentExamples | LearntIntent | None",
                  text: str | None = None, clause_vector=None) -> IntentResult:
    """The dictionary's verdict, or, when it leaves the question open (``general``; with
    the learnt classifier also a verdict of weak hints only), the embedding's one. With
    ``text``: a question about the business (``asks_a_question``) that would end ``general``
    takes the embedding's best other intent (questions are never small talk), unless the embedding reads it as
    ``general`` with a probability of at least ``GENERAL_STANDS``. The message's form decides before any
    classifier reads it (``intent_by_form``). ``clause_vector``:
    the vector of ``examples.clause_for(text)`` when the classifier reads one (an
    ``IntentExamples`` embeds it itself when it is not given)."""
    if examples is None or vector is None or not examples.decides(detected):
        return detected
    default = detect_intent(text) if text is not None else None  # what the features describe
    formed = intent_by_form(detected, text, default)
    if formed is not None:
        return formed
    if isinstance(examples, IntentExamples) and clause_vector is None and examples.clause_for(text) is not None:
        clause_vector = np.asarray(examples.embedder.embed_queries([examples.clause_for(text)])[0], dtype=np.float32)
    # the clause's vector only to a classifier that reads one (another classifier takes no such argument)
    extra = {} if clause_vector is None else {"clause_vector": clause_vector}
    got = examples.classify(vector, text=text, detected=default, **extra)
    out = detected if got is None else got
    if out.intent == GENERAL and text is not None and asks_a_question(text) \
            and not (got is not None and got.score >= GENERAL_STANDS):
        other = examples.classify(vector, exclude=GENERAL, text=text, detected=default, **extra)
        if other is not None:
            return other
    return out
