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
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Mapping

from streams.respond.text import fold

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
        "quanto e": 2, "quanto sai": 2, "quanto cobra*": 2, "quanto vou pagar": 2,
        "qual o valor": 2, "qual valor": 2, "valor*": 1.5, "preco*": 2, "tarifa*": 2,
        "taxa": 2, "taxas": 2, "orcamento": 2, "cotacao": 2, "custa": 1.5, "custo": 1.5,
        "paga": 1, "pagam": 1, "cobra": 1.5, "cobram": 1.5, "cobrado": 1.5, "r$": 1,
        "reais": 1, "tabela": 1,
    },
    OBJECTION: {
        "caro": 3, "cara": 2, "caros": 3, "caras": 2, "carissim*": 3, "salgado": 2,
        "mais barat*": 3, "barato": 1.5, "barata": 1.5, "mais em conta": 3,
        "em conta": 1.5, "muito alto": 2, "nao compensa": 3, "nao vale": 2,
        "absurdo": 2, "desconto": 1.5, "concorrente": 2, "achei melhor": 2,
        "fora do orcamento": 3, "nao cabe no bolso": 3, "vou pensar": 2,
        "nao tenho certeza": 1.5, "muito dinheiro": 2,
    },
    POLICY: {
        "cancel*": 3, "desist*": 3, "reembols*": 3, "estorno": 3, "multa": 3,
        "remarc*": 2.5, "perco": 2, "sinal": 1.5, "politica*": 3, "regra*": 2.5,
        "permitid*": 2.5, "proibid*": 2.5, "check in": 2.5, "checkin": 2.5,
        "check out": 2.5, "checkout": 2.5, "posso levar": 2, "pode levar": 2,
        "posso trazer": 2, "pode trazer": 2, "ate que horas posso": 2,
        "ate quando posso": 2, "cachorro": 1, "gato": 1, "gata": 1, "pet": 1,
        "pets": 1, "animal": 1, "animais": 1, "fumar": 2, "menor de idade": 2,
        "documento": 1.5, "aceitam pet*": 2, "antecedencia": 1.5,
    },
    INFO: {
        "que horas": 1, "horario*": 1, "abre": 1.5, "abrem": 1.5, "fecha": 1.5,
        "funciona": 1.5, "funcionam": 1.5, "funcionamento": 1.5, "endereco": 2,
        "onde fica": 2, "localiza*": 2, "como chego": 2, "estacion*": 1.5, "vaga": 1,
        "vagas": 1, "parcel*": 2, "cartao": 1.5, "pix": 1.5, "forma de pagamento": 2,
        "formas de pagamento": 2, "aceita*": 1, "tem": 0.5, "voces tem": 1,
        "vcs tem": 1, "possui": 1, "possuem": 1, "oferece*": 1, "disponive*": 1,
        "como faco": 1.5, "como funciona": 1.5, "servido": 1, "cafe da manha": 1,
        "cardapio": 1.5, "wifi": 1.5, "wi fi": 1.5,
        "informac*": 1.5, "alugam": 1, "organizam": 1, "fazem": 0.5, "da pra": 0.5,
        "existe": 1, "convenio": 1,
    },
    GREETING: {
        "oi": 0.5, "ola": 0.5, "opa": 0.5, "eai": 0.5, "e ai": 0.5, "bom dia": 0.5,
        "boa tarde": 0.5, "boa noite": 0.5, "tudo bem": 0.5, "tudo bom": 0.5,
        "hello": 0.5, "hi": 0.5, "salve": 0.5,
    },
    CONFIRMATION: {
        "ok": 0.6, "okay": 0.6, "certo": 0.6, "combinado": 0.6, "fechado": 0.6,
        "perfeito": 0.6, "beleza": 0.6, "blz": 0.6, "obrigad*": 0.6, "valeu": 0.6,
        "pode confirmar": 0.8, "confirmad*": 0.6, "confirmo": 0.6, "pode ser": 0.6,
        "sim": 0.6, "isso": 0.3, "otimo": 0.6, "show": 0.6, "agradeco": 0.6,
        "pode fechar": 0.8, "fechou": 0.6, "entendi": 0.6, "ta bom": 0.6,
        "ate mais": 0.6, "ate logo": 0.6, "tchau": 0.6,
    },
}


@dataclass(frozen=True)
class IntentResult:
    intent: str
    score: float
    matched: tuple[str, ...]


@dataclass(frozen=True)
class _Lexicon:
    patterns: tuple[tuple[str, str, float, re.Pattern[str]], ...]  # intent, keyword, weight, regex


def _compile(keyword: str) -> re.Pattern[str] | None:
    prefix = keyword.strip().endswith("*")
    folded = fold(keyword.strip().rstrip("*"))
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
    patterns = []
    for intent, kws in merged.items():
        for kw, w in kws.items():
            rx = _compile(kw)
            if rx is not None:
                patterns.append((intent, kw, w, rx))
    return _Lexicon(tuple(patterns))


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


def detect_intent(text: str, inbox_keywords: Mapping[str, Any] | None = None) -> IntentResult:
    """The message's intent, or ``general`` when no keyword matches."""
    folded = fold(text)
    lexicon = lexicon_for(inbox_keywords)
    scores: dict[str, float] = {}
    matched: dict[str, list[str]] = {}
    spans: dict[str, list[tuple[int, int]]] = {}
    for intent, kw, weight, rx in lexicon.patterns:
        hits = list(rx.finditer(folded))
        if not hits:
            continue
        scores[intent] = scores.get(intent, 0.0) + weight
        matched.setdefault(intent, []).append(kw)
        spans.setdefault(intent, []).extend(m.span() for m in hits)
    if not scores:
        return IntentResult(GENERAL, 0.0, ())
    best = sorted(scores, key=lambda i: (-scores[i], _rank(i)))[0]
    if best in SMALL_TALK:
        rest = _remove_spans(folded, [s for i in SMALL_TALK for s in spans.get(i, [])])
        if len(rest.split()) > MAX_SMALL_TALK_REST_WORDS:
            return IntentResult(GENERAL, 0.0, tuple(matched[best]))
        # "Ok, obrigada! Bom dia" → whichever small talk weighs more.
    return IntentResult(best, scores[best], tuple(matched[best]))


def _remove_spans(text: str, spans: list[tuple[int, int]]) -> str:
    keep = [True] * len(text)
    for a, b in spans:
        for i in range(a, b):
            keep[i] = False
    return "".join(c if k else " " for c, k in zip(text, keep))
