"""Small text helpers shared by the respond flow (accent folding, tokens)."""

from __future__ import annotations

import functools
import re
import unicodedata

_WORD_CHARS = frozenset("0123456789abcdefghijklmnopqrstuvwxyz$")


def fold_char(c: str) -> str:
    """One character as ``fold`` sees it: case-folded, compatibility-decomposed,
    combining marks dropped, and every remaining character that is not a letter,
    digit or ``$`` turned into a space."""
    decomposed = unicodedata.normalize("NFKD", c.casefold())
    return "".join(x if x in _WORD_CHARS else " " for x in decomposed if not unicodedata.combining(x))


class _FoldTable(dict):
    """``str.translate`` table filled on first sight of each code point. Case
    folding and NFKD decomposition act character by character and the marks they
    leave are dropped, so translating through it and collapsing the spaces equals
    folding the whole string (tests/respond/test_text_fold.py); it avoids two
    passes in Python and a regex over every character: the responder folds each
    retrieved chunk several times per message, and that loop was its largest CPU
    cost under load."""

    def __missing__(self, code: int) -> str:
        out = fold_char(chr(code))
        if len(self) < 65536:
            self[code] = out
        return out


_FOLD = _FoldTable()


@functools.lru_cache(maxsize=16384)
def fold(text: str) -> str:
    """Lower-case, strip accents, keep letters/digits/``$``, single spaces.

    Cached: the same knowledge chunks are folded for message after message."""
    return " ".join(text.translate(_FOLD).split())


# Short Portuguese function words that carry no topic.
STOPWORDS = frozenset(
    """a o e as os um uma uns umas de do da dos das no na nos nas em por para pra pro
    com sem que se ou mas como mais menos muito muita ja nao sim eu voce voces vc vcs
    me te lhe nos meu minha seu sua meus minhas seus suas isso isto esse essa este esta
    aquele aquela ai la aqui ha tem ter ser estar esta sao foi vai vou qual quais quando
    onde quanto quanta ate ao aos the of and to is it dia hoje tambem entao ola oi bom boa
    noite tarde obrigado obrigada por favor ne ta to tudo bem pode posso queria quero
    aqueles aquelas esses essas estes estas naquele naquela naqueles naquelas daquele daquela daqueles
    daquelas nesse nessa neste nesta desse dessa deste desta""".split()
)


def content_tokens(text: str) -> list[str]:
    """Folded tokens minus stopwords (order kept)."""
    return [t for t in fold(text).split() if t not in STOPWORDS and len(t) > 1]


def stem(token: str, size: int = 5) -> str:
    """A crude prefix stem: good enough to match ``parcelar``/``parcelamento``."""
    return token[:size]


def _shared_spellings() -> dict[str, str]:
    """The learning flow's WhatsApp spellings (``streams.learn.lexicon.ABBREVIATIONS``: one
    table for the product), without the ones the responder reads as typed: short words
    that are already standard or ambiguous here ("to", "ta", "pra", "num" = "em um"), and
    relation slang ("boy", "mozão"), which recall reads as relation words."""
    from streams.learn.lexicon import ABBREVIATIONS

    as_typed = {"to", "ta", "tá", "pro", "pra", "pros", "é", "eh", "nao", "num", "ñ", "pq?", "ce",
                "boy", "mozao", "mozão", "mô", "bb", "cel", "fone"}
    return {k: v for k, v in ABBREVIATIONS.items() if k not in as_typed}


# WhatsApp spellings → the standard folded word (whole tokens only, after ``fold``):
# the shared table plus the responder's own (question words, courtesy).
CHAT_SPELLINGS = {**_shared_spellings(), 
    "qnto": "quanto", "qnt": "quanto", "qto": "quanto", "qnta": "quanta", "qntos": "quantos",
    "qntas": "quantas", "qnts": "quantos", "qts": "quantos", "qtos": "quantos", "qtas": "quantas", "qta": "quanta",
    "qndo": "quando", "qlq": "qualquer", "qq": "qualquer", "vc": "voce", "vcs": "voces", "q": "que", "oq": "o que",
    "pq": "porque", "tb": "tambem", "tbm": "tambem", "tmb": "tambem", "mto": "muito", "mt": "muito",
    "mta": "muita", "mtos": "muitos", "mtas": "muitas", "blz": "beleza", "hj": "hoje",
    "msm": "mesmo", "td": "tudo", "tds": "todos", "obg": "obrigado", "obgd": "obrigado",
    "obgda": "obrigada", "vlw": "valeu", "cmg": "comigo", "ctz": "certeza", "pfv": "por favor",
    "pf": "por favor", "pfvr": "por favor", "n": "nao", "nn": "nao", "kd": "cade", "dps": "depois",
    "qdo": "quando", "qnd": "quando", "sla": "sei la", "agr": "agora", "niver": "aniversario",
    "fds": "fim de semana", "vdd": "verdade", "ngm": "ninguem", "hr": "hora", "hrs": "horas",
    "tah": "ta", "eh": "e", "neh": "ne", "vo": "vou", "d": "de", "tô": "to", "ok": "ok", "okk": "ok", "flw": "falou", "bjs": "beijos", "add": "adicionar",
}
_REPEATS = re.compile(r"([a-z])\1{2,}")
#: Emojis that stand for a word in a question ("posso levar meu 🐶?", "qnto ta a 🍕 grande?"), as that word.
EMOJI_WORDS = {
    "🐶": "cachorro", "🐕": "cachorro", "🐩": "cachorro", "🐱": "gato", "🐈": "gato", "🍕": "pizza", "🎂": "bolo",
    "🍺": "cerveja", "🍻": "cerveja", "🍷": "vinho", "🍾": "espumante", "🥂": "espumante", "🚗": "carro",
    "🏍": "moto", "🛵": "moto", "💳": "cartao", "🎈": "balao", "🌹": "rosa", "🚬": "cigarro",
}
_EMOJI = re.compile("|".join(map(re.escape, EMOJI_WORDS)))


#: One sentence that ends in a question mark ("oi tudo bom?", "qnto sai a coral?").
QUESTION_SENTENCE = re.compile(r"[^.!?\n]*\?+")


def normalize_chat(text: str) -> str:
    """``fold`` plus WhatsApp spelling made standard: "qnto vcs cobram?" →
    "quanto voces cobram", "oiii" → "oi", "blz" → "beleza", "🐶" → "cachorro". For matching only."""
    if _EMOJI.search(text):
        text = _EMOJI.sub(lambda m: f" {EMOJI_WORDS[m.group(0)]} ", text)
    folded = _REPEATS.sub(r"\1", fold(text))
    return " ".join(CHAT_SPELLINGS.get(t, t) for t in folded.split())
