"""``fold`` (a translate table filled per code point, cached) must equal the
definition it replaced: case-fold, NFKD, drop combining marks, every run of
characters other than a-z, 0-9 and ``$`` → one space, stripped."""

from __future__ import annotations

import random
import re
import unicodedata

from streams.respond.text import fold

_NON_WORD = re.compile(r"[^0-9a-z$]+")


def reference(text: str) -> str:
    decomposed = unicodedata.normalize("NFKD", text.casefold())
    return _NON_WORD.sub(" ", "".join(c for c in decomposed if not unicodedata.combining(c))).strip()


def test_fold_equals_the_whole_string_definition():
    samples = ["Suíte Luxo: R$ 240,00 · AÇÃO ß ﬁ Ⅻ ½ İstanbul ΣΑΣ ǅ e\u0301 x\u0327 ẞ",
               "Olá, tudo bem? Quero a suíte Hidro 🙂 amanhã às 14h", "", "   ", "ABC-def_g",
               " \t\x1c a\u00a0b\u2028c ", "Ⓐⓑ ＦＵＬＬ ２４０", "n\u0303a\u0303o"]
    rnd = random.Random(7)
    samples += ["".join(chr(rnd.randrange(0x20, 0x3000)) for _ in range(40)) for _ in range(3000)]
    samples += ["".join(chr(rnd.choice([rnd.randrange(0xE000), rnd.randrange(0xE000, 0x110000)]))
                        for _ in range(12)) for _ in range(1000)]
    for s in samples:
        assert fold(s) == reference(s), s
        assert fold(s) == reference(s), s  # the cached answer too


def test_fold_examples():
    assert fold("Suíte MASTER: R$ 450,00!") == "suite master r$ 450 00"
    assert fold("Não aceitamos CÃES") == "nao aceitamos caes"
