"""Small text helpers shared by the respond flow (accent folding, tokens)."""

from __future__ import annotations

import re
import unicodedata

_NON_WORD = re.compile(r"[^0-9a-z$]+")


def fold(text: str) -> str:
    """Lower-case, strip accents, keep letters/digits/``$``, single spaces."""
    decomposed = unicodedata.normalize("NFKD", text.casefold())
    ascii_only = "".join(c for c in decomposed if not unicodedata.combining(c))
    return _NON_WORD.sub(" ", ascii_only).strip()


# Short Portuguese function words that carry no topic.
STOPWORDS = frozenset(
    """a o e as os um uma uns umas de do da dos das no na nos nas em por para pra pro
    com sem que se ou mas como mais menos muito muita ja nao sim eu voce voces vc vcs
    me te lhe nos meu minha seu sua meus minhas seus suas isso isto esse essa este esta
    aquele aquela ai la aqui ha tem ter ser estar esta sao foi vai vou qual quais quando
    onde quanto quanta ate ao aos the of and to is it dia hoje tambem entao ola oi bom boa
    noite tarde obrigado obrigada por favor ne ta to tudo bem pode posso queria quero""".split()
)


def content_tokens(text: str) -> list[str]:
    """Folded tokens minus stopwords (order kept)."""
    return [t for t in fold(text).split() if t not in STOPWORDS and len(t) > 1]


def stem(token: str, size: int = 5) -> str:
    """A crude prefix stem: good enough to match ``parcelar``/``parcelamento``."""
    return token[:size]
