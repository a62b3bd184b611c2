"""What the offline composer may quote, and how it picks what answers the question.

Knowledge chunks are Markdown cut into pieces. ``answer_units`` turns one chunk
into *units*: whole sentences of prose, whole list items ("Suíte Coral: ... 2h:
R$ 139,00 · 4h: R$ 189,00 ..."), and table rows read with their header
("Pequeno (até 10 kg) — Banho: R$ 60,00; Banho + tosa: R$ 98,00."). Headings are
never quoted: they are kept as each unit's *context* (for matching: the address
line under "## Vila Nova" is about Vila Nova). Markdown markers (``**``, ``#``,
bullets, table pipes) are removed, and pieces cut by the chunker (starting in
lower case or with punctuation, or a chunk's truncated last sentence) are dropped.

``pick_units`` scores every unit against the question:

* words: idf-weighted overlap of the question's words (chat spelling normalised)
  with the unit, and at half weight with its heading;
* meaning: cosine similarity of the unit's embedding with the message vector,
  when an embedder is given;
* the attribute asked: a price question wants an amount ("R$"), "que horas"
  wants hours ("18h"), "qual dia" a weekday, "onde fica" an address;
* the entity asked: a rare word of the question (a name that occurs in the
  knowledge: "Jade", "Vila Nova", "2h") found in the unit weighs more than
  common words, so the line of that item wins over its neighbours.

A unit is eligible only if it shares a *focus word* of the question (a word that
is not a generic question word such as "quanto", "tem", "vocês", "fazem") or its
similarity is high; and when the question names something the retrieved
knowledge never mentions at all ("catarata", "adestramento"), nothing answers it
and the composer hands over. A yes/no question whose best unit is a negative
statement ("Não aceitamos cheque.") is answered "Não, ..."; one about an act ("vcs atendem?") whose
best unit only talks around it takes the unit denying that act (``asked_acts``, ``denies_act``);
one naming a thing of several words ("pizza doce grande") takes the unit saying that name as one
and limiting it (``phrases_named``, ``limits``) over a unit naming its words apart; "vcs vendem X?"
needs a unit that sells, prices, denies or limits (``answers_a_sale``); and a unit pointing to an
item by name brings that item's line (``refers_to``).

The customer's words and the knowledge's words for the same thing meet through the
shared lexicon (``streams.learn.lexicon.CONCEPTS``, ``concept_forms``): "cachorro" finds
"cães" and "pets", "remédio" "medicamentos", "em casa" "domiciliar", "caipirinha" "drinks",
"natal" "25/12"; a verb is covered by its noun ("cortam" / "corte"). A price question about
a kind or a named item the knowledge never names ("cirurgia de catarata", "suíte
presidencial" where the suites have names) is handed over (``unknown_kind``): another
kind's price would be wrong, unless the best unit identifies the item by every other word
(``identifies_item``: "o pacote completo com aquele letreiro"). A question about what the business
offers is answered as one (or handed over) even when the intent says ``general``
(``asks_the_business``). The cheapest or dearest of a kind ("qual a suíte mais baratinha") is the
item of that kind whose prices are lowest (highest) among the units (``extreme_item``).
"""

from __future__ import annotations

import functools
import math
import re
from collections import Counter
from dataclasses import dataclass
from typing import Iterable, NamedTuple, Sequence

from streams.learn.lexicon import AT_HOME, CONCEPTS, PAYMENTS, ROLES, SPECIES, carried_home, concepts_in
from streams.respond.text import QUESTION_SENTENCE, STOPWORDS, fold, normalize_chat

_PLURALS = (("oes", "ao"), ("aes", "ao"), ("ais", "al"), ("eis", "el"), ("ns", "m"), ("res", "r"), ("zes", "z"))


#: words whose five letters would join them to an unrelated shorter word: their own longer stem
_OWN_STEMS = ("filhot",)


def stem(token: str, size: int = 5) -> str:
    """A crude stem: singular, then a prefix ("gatos" and "gato", "opções" and
    "opção", "animais" and "animal" agree)."""
    if token.startswith(_OWN_STEMS):   # "filhote" (an animal's young) is not "filho" (a person's son)
        return next(p for p in _OWN_STEMS if token.startswith(p))
    if len(token) > 3 and token.endswith("s"):
        for plural, singular in _PLURALS:
            if token.endswith(plural):
                token = token[: -len(plural)] + singular
                break
        else:
            token = token[:-1]
    return token[:size]

# ------------------------------------------------------------------ units
_SENTENCE_SPLIT = re.compile(r"(?<=[.!?])\s+(?=[A-ZÀ-Ý0-9\"“(¿¡])")
_LIST_SPLIT = re.compile(r"(?:^|\s)[-•*]\s+(?=\S)")
_TABLE_RULE = re.compile(r"\|\s*:?-{3,}")
_MARKUP = re.compile(r"\*\*|__|`")
_HEADING = re.compile(r"^\s{0,3}#{1,6}\s+")
_ITEM_END = re.compile(r"(?<=\d)\s+(?=[A-ZÀ-Ý](?:[a-zà-ý]|\s))")
_CUT_ITEM = re.compile(r"\b(com|de|do|da|dos|das|e|ou|a|o|as|os|para|pra|por|em|no|na|r|um|uma|ate|sem|mais)$")


@dataclass(frozen=True)
class Unit:
    text: str          # quotable: clean and complete
    context: str = ""  # the nearest heading above it (matching only, never quoted)
    order: int = 0     # position: chunk rank, then place in the chunk
    item: bool = False  # a list item or table row (no sentence end needed)
    label: str = ""    # the label opening its paragraph ("Estacionamento"), when not in its text


def _clean(text: str) -> str:
    text = _MARKUP.sub("", text)
    text = _HEADING.sub("", text)
    return " ".join(text.split()).strip(" -•·")


def _table_units(block: str, context: str) -> list[tuple[str, bool]]:
    cells = [c.strip() for c in block.split("|")]
    rows: list[list[str]] = [[]]
    for k, c in enumerate(cells[1:-1], start=1):
        if c == "" and rows[-1]:       # "| |": the end of one row and the start of the next
            rows.append([])
        elif c:
            rows[-1].append(c)
    rows = [r for r in rows if r and not all(re.fullmatch(r":?-{3,}:?", c) for c in r)]
    if len(rows) < 2:
        return []
    header, out = rows[0], []
    for r in rows[1:]:
        if len(r) != len(header):
            continue
        pairs = "; ".join(f"{_clean(h)}: {_clean(v)}" for h, v in zip(header[1:], r[1:]))
        out.append((f"{_clean(r[0])} — {pairs}.", True))
    return out


def _is_fragment(text: str) -> bool:
    return (not text or text[0].islower() or text[0] in ",.;:)]}»”" or len(text) < 3
            or bool(re.match(r"\d+,\d\d\b", text)))


def _block_pieces(block: str, heading: str) -> list[tuple[str, bool]]:
    """A block's raw pieces: (text, is a list item or table row)."""
    if _TABLE_RULE.search(block) and block.count("|") >= 6:
        before, _, _ = block.partition("|")
        return ([(s, False) for s in _SENTENCE_SPLIT.split(before.strip()) if s.strip()]
                + _table_units(block[len(before):], heading))
    if "|" in block:  # the tail of a table cut by the chunker: keep what follows it
        block = block.rsplit("|", 1)[1]
    parts = _LIST_SPLIT.split(" " + block.replace("\n", " "))
    intro, items = parts[0], parts[1:]
    pieces = [(p, False) for s in _SENTENCE_SPLIT.split(intro.strip()) for p in _ITEM_END.split(s) if p.strip()]
    for it in items:
        # an item glued to the paragraph after it ("...: R$ 45,00 Não fazemos ...")
        head, *tail = _ITEM_END.split(it.strip(), maxsplit=1)
        if head.strip():
            pieces.append((head, True))
        for rest in tail:
            pieces += [(s, False) for s in _SENTENCE_SPLIT.split(rest.strip()) if s.strip()]
    return pieces


def _unquotable(text: str, item: bool) -> bool:
    """A piece that cannot stand alone: a fragment, or a list line whose subject is elsewhere."""
    orphan = not item and bool(re.match(r"\d+\s*\w{0,3}\s*:", text))  # "2h: R$ 219,00 ...": whose?
    return orphan or (_is_fragment(text) and not (item and text and text[0].isalnum()))


def _was_cut(text: str, item: bool, last_piece: bool) -> bool:
    """The chunker cut this piece: never quote half of it."""
    return bool((item and _CUT_ITEM.search(fold(text))) or (not item and not re.search(r"[.!?):]$", text))
                or (item and last_piece and not re.search(r"[.!?;)%\d]$", text)))


def _split_heading(block: str, heading: str) -> tuple[str, str]:
    """(the block without its heading line, the heading in force)."""
    if _HEADING.match(block):
        first, _, rest = block.partition("\n")
        return rest.strip(), _clean(first)
    return block, heading


def _rejoin_blocks(chunk_text: str) -> list[str]:
    """The chunk's paragraphs; one that starts in lower case continues the one before
    (the chunker put a paragraph break inside a sentence: "Não aceitamos fêmeas no" / "cio.")."""
    blocks: list[str] = []
    for b in chunk_text.replace("\r\n", "\n").split("\n\n"):
        if not b.strip():
            continue
        if blocks and b.lstrip()[0].islower():
            blocks[-1] = blocks[-1].rstrip() + " " + b.strip()
        else:
            blocks.append(b)
    return blocks


_BOLD_LABEL_AFTER_END = re.compile(r"(?<=[.!?;])[ \t]+(?=\*\*[^*\n]{1,80}(?:\*\*\s*:|:\*\*))")
_ITEM_LABEL = re.compile(r"^([A-ZÀ-Ý][\wÀ-ÿ&-]*(?: [\wÀ-ÿ&-]+){0,4})\s*(?::|—|–)\s")
_LEAD_LABEL = re.compile(r"^([A-ZÀ-Ý][\wÀ-ÿ&]*(?: [\wÀ-ÿ&]+){0,3}):\s+\S")


def _read(chunk_text: str, rank: int = 0, heading: str = "") -> tuple[list[Unit], str, tuple[str, bool] | None]:
    """(units, the chunk's leading fragment, its cut last piece and whether it is a list item)."""
    units: list[Unit] = []
    head_fragment, tail_cut = "", None
    # the chunker may have joined a paragraph to the line before it ("... não é devolvido.
    # **Discrição na cobrança**: ..."): a bold label after a sentence end opens a paragraph
    blocks = _rejoin_blocks(_BOLD_LABEL_AFTER_END.sub("\n\n", chunk_text))
    for bi, block in enumerate(blocks):
        block, heading = _split_heading(block.replace("**", "").replace("__", "").strip(), heading)
        if not block:
            continue
        pieces = _block_pieces(block, heading)
        label = ""
        # a paragraph opened by a label ("Estacionamento: não temos ... Na unidade Centro existe
        # convênio ..."): its later sentences are about that label too
        lead = _LEAD_LABEL.match(_clean(block))
        para = lead.group(1) if lead and not _LIST_SPLIT.match(block) else ""
        for pi, (raw, item) in enumerate(pieces):
            text = _clean(raw)
            if item:   # the sentences after a list item are about that item ("Quarta do Rodízio: ...
                # Bebidas à parte. Só no salão, não vale para delivery.")
                named = _ITEM_LABEL.match(text)
                para = named.group(1) if named else ""
            last_piece = bi == len(blocks) - 1 and pi == len(pieces) - 1
            if (not item and pi + 1 < len(pieces) and pieces[pi + 1][1] and len(text.split()) <= 5
                    and not re.search(r"[.!?;,]$", text) and text[:1].isupper()):
                label = text.rstrip(":").strip()   # "**Pratos**" over its list: the list's label
                continue
            if _unquotable(text, item):
                if bi == 0 and pi == 0 and text:
                    head_fragment = text
                continue
            if _was_cut(text, item, last_piece):
                if last_piece:
                    tail_cut = (text, item)
                continue
            if text.endswith(":"):
                label = text[:-1].strip()  # the label of the list that follows
                continue
            if not re.search(r"[.!?]$", text):
                text = text.rstrip(";,") + "."
            ctx = label if (item and label) else heading
            units.append(Unit(text, ctx, rank * 1000 + len(units), item, para if (pi and not item) else ""))
    return units, head_fragment, tail_cut


@functools.lru_cache(maxsize=16384)
def _read_cached(chunk_text: str, rank: int, heading: str) -> tuple[tuple[Unit, ...], str, tuple[str, bool] | None]:
    """``_read`` once per chunk text: the same chunks are read for message after message
    (units are frozen; callers get their own list)."""
    units, head, tail = _read(chunk_text, rank, heading)
    return tuple(units), head, tail


def answer_units(chunk_text: str, rank: int = 0, heading: str = "") -> list[Unit]:
    """The quotable units of one chunk, in reading order."""
    return list(_read_cached(chunk_text, rank, heading)[0])


def units_of_chunks(texts: Sequence[str], documents: Sequence[object] | None = None) -> list[Unit]:
    """Units of the retrieved chunks (best chunk first), without repeats: chunks
    overlap, and a unit inside a longer one is the same text cut shorter.

    When ``documents`` (one key per chunk) shows two chunks of one document, one
    ending in a piece the chunker cut ("Não aceitamos fêmeas no") and the other
    starting with the rest ("cio."), the two halves are joined back into the
    sentence they were."""
    out: list[Unit | None] = []
    seen: dict[str, int] = {}
    heads: dict[object, list[tuple[int, str]]] = {}
    tails: dict[object, list[tuple[int, str, bool]]] = {}

    def add(u: Unit) -> None:
        key = fold(u.text)
        if key in seen or any(key in k for k in seen):
            return
        for k in [k for k in seen if k in key]:  # a longer version replaces the shorter
            out[seen.pop(k)] = None
        seen[key] = len(out)
        out.append(u)

    for rank, t in enumerate(texts):
        units, head, tail = _read_cached(t, rank, "")
        for u in units:
            add(u)
        if documents is not None:
            if head:
                heads.setdefault(documents[rank], []).append((rank, head))
            if tail:
                tails.setdefault(documents[rank], []).append((rank, *tail))
    for doc, ts in tails.items():
        hs = [h for h in heads.get(doc, []) if h[0] != ts[0][0]]
        if len(ts) == 1 and len(hs) == 1:
            rank, text, item = ts[0]
            joined = _clean(f"{text} {hs[0][1]}")
            if re.search(r"[.!?]$", joined):
                add(Unit(joined, "", rank * 1000 + 999, item))
    return [u for u in out if u is not None]


# -------------------------------------------------------------- questions
# Words that ask rather than name what is asked about.
GENERIC = frozenset("""
quanto quanta quantos quantas custa custam custar fica ficaria sai valor valores preco precos
cobra cobram cobrado paga pago pagar taxa qual quais que como onde quando quem porque tem temos
tenho voces voce fazem faz fazer aceita aceitam atende atendem vende vendem pode posso podem
consigo consegue da dar dao precisa preciso levar leva levam trazer existe algum alguma alguem coisa coisas algo
hora horas horario abre abrem fecha fecham funciona funcionam dia dias semana unidade unidades
ate ai la sobre gostaria saber informar informacao ola oi gente favor ainda tipo sei nossa hein
entao mesmo assim tambem agora depois antes hoje amanha seu sua meu minha ele ela eles elas
tempo antecedencia prazo durante pedir moro mora morar
sou somos estou estamos era eram problema problemas for forem formos fosse fossem fossemos
diferenca diferencas rola sera proprio propria pegar so quer
estabelecimento
perco perde perder cima
num numa nuns numas dum duma tal
oxente oxe vixe eita bah uai arre egua visse tche oia ixi aff affs poxa puxa caramba mds rsrs haha hehe
painho mainha
""".split())   # "perco o sinal?", "em cima da hora": the rule asked, not a thing; the last lines: interjections
#                and forms of address ("oxente", "bah", "arre egua", "painho")

_PRICE_Q = re.compile(r"\b(quanto|quanta|valor|valores|preco|precos|custa|custam|cobra|cobram|taxa|sai por|orcamento)\b")
_HOURS_Q = re.compile(r"\b(que horas|horario|horarios|abre|abrem|fecha|fecham|funciona|funcionam|ate quando)\b")
_HOURS_NAMED = re.compile(r"\b(horario|horarios)\b")


def _asks_hours(norm: str) -> bool:
    """Hours asked: "que horas abrem", "qual o horário"; not "vcs abrem domingo?", a yes/no question
    on whether they open (answered by "Domingos: fechado", which states no hours)."""
    if not _HOURS_Q.search(norm):
        return False
    return bool(_WH.search(norm) or _HOURS_NAMED.search(norm))
_DAY_Q = re.compile(r"\b(qual dia|que dia|quais dias|dia da semana|dias da semana|quando)\b")
_ADDRESS_Q = re.compile(r"\b(onde fica|onde ficam|endereco|localizacao|como chego|onde e)\b")
# "até que horas dá pra pedir": a deadline ("30 minutos antes do fechamento"), not opening hours
_DEADLINE_Q = re.compile(r"\b(ate que horas|ate quando|ate que dia|prazo|antecedencia|com quanto tempo)\b")
# "qual o nome da veterinária", "quem atende": a person's name
_NAME_Q = re.compile(r"\b(qual (e )?o nome|quais (sao )?os nomes|como se chama|como chama|quem (e|sao|atende|faz|cuida))\b")
# "quanto tempo demora", "quantos dias": a duration ("30 minutos", "1h30 a 2h"), not a price
_DURATION_Q = re.compile(r"\b(quanto tempo|quantos minutos|quantas horas|quantos dias|quantas semanas|quantos meses|"
                         r"demora|demoram|demorar|dura|duram|duracao|leva quanto)\b")
_WH = re.compile(r"\b(quanto|quanta|quantos|quantas|qual|quais|que horas|que dias?|onde|quando|como|quem|porque|por que|o que)\b")

_HOURS_A = re.compile(r"\b\d{1,2}h(\d{2})?\b|\b\d{1,2}:\d{2}\b")
_DAY_A = re.compile(r"\b(segunda|terca|quarta|quinta|sexta|sabado|domingo)s?(-feiras?)?\b")
_ADDRESS_A = re.compile(r"\b(rua|r(?!\$)|av|avenida|rodovia|estrada|travessa|alameda|praca|(?<!\d )km)\b.{0,40}\d")   # "km 32", not "3 km a 6 km"; "R$" is no "r."
_DURATION_A = re.compile(r"\b\d+\s*(h\d{0,2}|min|minutos?|horas?|dias?|semanas?|meses)\b")
# what answers a price question without an amount: "sem custo", "grátis", "não cobramos"
# what answers any price question without an amount: a quote on request
_QUOTE_A = re.compile(r"\b(orcamento|sob consulta|a combinar)\b")
_FREE_A = re.compile(r"\b(sem custo|gratis|gratuit[oa]s?|sem taxa|de graca|sem cobranca|nao (paga|pagam|cobra|cobram|cobramos)|"
                     r"sem diferenca de (preco|valor)|mesmo (valor|preco))\b")
_DEADLINE_A = re.compile(r"\b\d+\s*(minutos?|min|horas?|h|dias?)\s+(antes|de antecedencia)\b|\bate as \d|\bantecedencia\b")
_PERSON_A = re.compile(r"\b(Dra?\.|Doutora?|veterin[áa]ri[oa]|m[ée]dic[oa]|tosador[a]?|atendente|gerente|"
                       r"respons[áa]vel|pizzaiolo|chef)\s+(?:[a-zà-ÿ-]+\s+){0,2}?[A-ZÀ-Ý][a-zà-ÿ]{2,}\b")
_NEGATIVE = re.compile(r"\b(nao|nem|nunca|proibid[oa]s?|somente|apenas|so)\b")
_NEGATIVE_START = re.compile(r"^(nao|nem|nunca|proibid|e proibido)\b")


_NUMBER_WORDS = {"uma": "1", "um": "1", "duas": "2", "dois": "2", "tres": "3", "quatro": "4", "cinco": "5",
                 "seis": "6", "oito": "8", "dez": "10", "doze": "12", "quinze": "15", "trinta": "30"}
_COUNTED = re.compile(r"\b(" + "|".join(_NUMBER_WORDS) + r")(?= (?:horas?|horinhas?|hrs?|hs|dias?|minutos|km|kg|kgs|kilos?|quilos?|pessoas|meses)\b)")
_HOURS_WORD = re.compile(r"\b(\d+) (?:horas?|horinhas?|hrs?|hs)\b")
_WEIGHT_WORD = re.compile(r"\b(\d+) ?(?:kilos?|quilos?|kgs|kilogramas?|quilogramas?)\b")


def _measures(folded: str) -> str:
    """One spelling per quantity: "24 horas", "24 hrs", "2 horinhas" and "24h" are one word ("24h"), "32
    quilos" and "6 kilos" are "kg", and a number written out before a unit is a digit ("quatro
    horas" → "4h", "duas pessoas" → "2 pessoas")."""
    folded = _COUNTED.sub(lambda m: _NUMBER_WORDS[m.group(1)], folded)
    folded = _WEIGHT_WORD.sub(r"\1 kg", folded)   # "32 quilos", "6 kilos": the knowledge's "kg"
    return _HOURS_WORD.sub(r"\1h", folded)


def concept_forms(message: str) -> dict[str, set[str]]:
    """Per customer's word that the knowledge may name otherwise (``lexicon.CONCEPTS``:
    "cachorro" → "cão", "pet"; "remédio" → "medicamento"; "natal" → "25/12"), the stem of
    that word (its last content word for a phrase: "casa" of "em casa") → the stems of all its names."""
    return {k: set(v) for k, v in _concept_forms(message)}


@functools.lru_cache(maxsize=4096)
def _concept_forms(message: str) -> tuple[tuple[str, frozenset[str]], ...]:
    out: dict[str, set[str]] = {}
    for word, others in concepts_in(_measures(normalize_chat(message))):
        own = [t for t in word.split() if t not in STOPWORDS]
        key = stem(own[-1]) if own else stem(word.split()[-1])
        forms = out.setdefault(key, {key})
        for o in others:
            parts = [t for t in _measures(fold(o)).split() if t not in STOPWORDS]
            forms |= {stem(t) for t in parts}
            if len(parts) == 2 and all(len(t) <= 3 for t in parts):
                forms.add(" ".join(parts))   # "wi fi" (Wi-Fi): its two pieces together name it
    # a short infinitive names its noun ("tosar" → "tosa", "lavar" → "lava..."): its five letters are
    # the whole verb, so the stem alone never meets the noun the knowledge writes
    for t in normalize_chat(message).split():
        if len(t) == 5 and t.endswith(("ar", "er", "ir")) and t not in GENERIC and t not in STOPWORDS:
            out.setdefault(t, {t}).add(t[:-1])
    # an age under 18 said in years ("meu filho de 16 anos") is a minor: the knowledge writes its rule
    # for "menores de 18 anos" / "menor de idade", never the customer's age
    if _MINOR_AGE.search(normalize_chat(message)):
        out.setdefault(stem("anos"), {stem("anos")}).add(stem("menores"))
    return tuple((k, frozenset(v)) for k, v in out.items())


def phrase_forms(message: str) -> dict[str, set[str]]:
    """``concept_forms`` of the customer's phrases only ("em casa" → "domiciliar", "a domicilio"): a phrase
    has one meaning its other name carries, where a single word's other names are often a wider kind
    ("gato" → "pet", "animal") that most of the knowledge names."""
    out: dict[str, set[str]] = {}
    for word, others in concepts_in(_measures(normalize_chat(message))):
        if len(word.split()) < 2:
            continue
        own = [t for t in word.split() if t not in STOPWORDS]
        key = stem(own[-1]) if own else stem(word.split()[-1])
        for o in others:
            out.setdefault(key, set()).update(stem(t) for t in _measures(fold(o)).split() if t not in STOPWORDS)
    return out


# ... or by the birthday ("fez 17 mas ...", "tem 16, pode?": no thing counted after it), or 18 still to come ("faz 18 so
# em dezembro", "vai fazer 18", "ainda nao fez 18")
_MINOR_AGE = re.compile(r"\b(?:[1-9]|1[0-7]) (?:anos|aninhos)\b"
                        r"|\b(?:fez|faz|tem|completou|completa) (?:[1-9]|1[0-7])(?= (?:mas|e|so|pode|podem|ja|ainda|agora|ontem|"
                        r"semana|mes|ano|entra|entram|nao)\b|$)"
                        r"|\b(?:faz 18 so|so faz 18|vai fazer 18|nao fez 18|nao tem 18|completa 18 so)\b")


# "levar o cachorro pra vacinar", "deixar ele aí pra tosar": the errand a pet or a person is taken on;
# "precisa de jejum pra castrar" names the procedure an attribute is about, and "dá pra parcelar" is
# the question itself ("can I"): neither is an errand
_PURPOSE = re.compile(r"\b(?:levar|leva|levo|trazer|traz|trago|deixar|deixa|deixo|mandar|manda|mando)\b"
                      r"(?:\s+\S+){0,4}?\s+(?:pra|para) ([a-z]{3,}(?:ar|er|ir))\b")


def purpose_words(message: str) -> list[str]:
    """The errand of a message ("levar o cachorro pra vacinar" → "vacinar"), words that ask or
    name nothing (``GENERIC``: "pra pegar") left out."""
    norm = unframed(normalize_chat(message))
    return [m.group(1) for m in _PURPOSE.finditer(norm) if m.group(1) not in GENERIC and m.group(1) not in STOPWORDS]


def expanded_focus(message: str) -> set[str]:
    """The focus stems of a message and the other names of its words (``concept_forms``)."""
    _, focus = question_words(message)
    for forms in concept_forms(message).values():
        focus |= forms
    return focus


def question_words(message: str) -> tuple[set[str], set[str]]:
    """(all content stems, focus stems) of a customer's message (sets of the caller's own)."""
    all_stems, focus = _question_words(message)
    return set(all_stems), set(focus)


# "minha namorada quer saber se tem sauna", "minha mãe queria saber o cardiologista atende ...":
# who wants to know frames the question; the question is what follows "saber"
_FRAME = re.compile(r"^(?:.*?\s)?(?:quer|queria|querem|queriam|gostaria|gostariam|precisa|preciso|pediu pra|mandou)"
                    r"(?: de)? saber(?: se)?\s+(?=\S)")


# a letter's closing and the signature after it ("... aceita cheque. Grato, Adalberto.", "Att., Iolanda"),
# and its salutation ("Prezados, boa tarde."): the form of the message, never what it asks about
_CLOSING = re.compile(r"(?:^|[\s.,;!?])(?:grato|grata|gratos|atenciosamente|att|atte|cordialmente|respeitosamente|"
                      r"abracos|saudacoes)\b[\s.,;!]*(?:\S+[\s.,;!]*){0,3}$")
_SALUTATION = re.compile(r"^(?:prezad[oa]s?)(?: senhor(?:es|a|as)?)?\b[\s.,;!]*")


def unframed(norm: str) -> str:
    """A normalised message without the frame of a reported question ("minha mae quer saber se
    tem sauna" → "tem sauna") and without a letter's salutation, closing and signature; as given
    when there is none."""
    norm = _SALUTATION.sub("", _CLOSING.sub("", norm, count=1), count=1) or norm
    return _FRAME.sub("", norm, count=1)


_HOME = re.compile(r"\b(?:em casa|na minha casa)\b")


def _without_carried_home(norm: str) -> str:
    """"vcs buscam o cachorro em casa?": the customer's home is where the pet is fetched (``carried_home``),
    the place of the pick-up, no thing the knowledge names ("voltam para casa" answers nothing of it)."""
    return _HOME.sub(lambda m: " " if carried_home(norm, m.start()) else m.group(0), norm)


@functools.lru_cache(maxsize=1024)
def _question_words(message: str) -> tuple[frozenset[str], frozenset[str]]:
    # one message is read here a dozen times while its reply is made
    norm = _without_carried_home(_measures(unframed(normalize_chat(message))))
    tokens = [t for t in norm.split() if t not in STOPWORDS and len(t) > 1]
    return frozenset(stem(t) for t in tokens), frozenset(stem(t) for t in tokens if t not in GENERIC and not t.isdigit())


_DEAL = re.compile(r"\b(desconto|promoc\w*|metade do preco|gratis|de graca|em dobro|fidelidade|cupom|"
                   r"sem custo|sem taxa|sem juros|pacote|combo|rodizio|mais em conta)\b")


#: A deal given for the business's own failure ("se a entrega passar de 80 minutos, o cliente ganha um cupom"):
#: a compensation, no way for the customer to pay less.
_COMPENSATION = re.compile(r"\b(?:atraso|atrasos|atrasar|atrasou|atrasad[oa]|erro|errad[oa]|defeito|passar de \d+ ?(?:min|minutos|h|horas))\b")


def offers_deal(text: str) -> bool:
    """A promotion, discount or cheaper option (what answers "tá caro"); not one denied ("não
    oferecemos outros descontos", "as promoções não são cumulativas"), nor a compensation for a failure
    (``_COMPENSATION``: "Atraso: se a entrega passar de 80 minutos, o cliente ganha um cupom")."""
    folded = fold(text)
    if _COMPENSATION.search(folded):
        return False
    for m in _DEAL.finditer(folded):
        before, after = folded[:m.start()].split()[-4:], folded[m.end():].split()[:2]
        if not ({"nao", "nem", "nenhum", "nenhuma"} & set(before + after)):
            return True
    return False


def asks_price(message: str) -> bool:
    """"quanto custa", "qual o valor"; not "com quanto tempo de antecedência" (a deadline)
    nor "quanto tempo demora" (a duration)."""
    norm = normalize_chat(message)
    return bool(_PRICE_Q.search(norm)) and not _DEADLINE_Q.search(norm) and not _DURATION_Q.search(norm)


# "quantas pessoas", "quantos kg": a count or a measure, not a price
_COUNT_Q = re.compile(r"\bquant[oa]s (?!reais\b|real\b|pila\b|conto\b)[a-z]{3,}")


_COUNTED_THING = re.compile(r"\bquant[oa]s ([a-z]{3,})")
_MEASURE_NOUN = re.compile(r"^(?:reais|real|pila|conto|horas?|hrs?|dias?|minutos?|min|vezes|meses|anos|semanas|"
                           r"kg|km|kilos?|quilos?|metros?|litros?|ml|cm)$")
_COUNT_WORD = r"(?:\d+|uma?|duas|dois|tres|quatro|cinco|seis|sete|oito|nove|dez|onze|doze|vinte|trinta|cem)"


def uncounted_thing(message: str, texts: Sequence[str]) -> bool:
    """"quantas suites tem na unidade praia?": a count of a thing (not a measure: hours, days, times) asked,
    and none of ``texts`` states a number of it ("12 suítes") — what they say of it answers something else."""
    m = _COUNTED_THING.search(normalize_chat(message))
    if m is None or _MEASURE_NOUN.match(m.group(1)):
        return False
    key = stem(m.group(1))
    pattern = re.compile(_COUNT_WORD + r"(?:\s+\S+){0,2}?\s+(\w+)")
    return not any(stem(w) == key for t in texts for w in pattern.findall(_measures(fold(t))))


def wants_price(message: str, price_intent: bool = False) -> bool:
    """The answer must state a price: the question asks one, or the intent says so,
    unless the question asks a deadline, a duration ("qnto tempo demora") or a count
    ("quantas pessoas podem ficar")."""
    norm = normalize_chat(message)
    if _DEADLINE_Q.search(norm) or _DURATION_Q.search(norm) or (_COUNT_Q.search(norm) and not _PRICE_Q.search(
            _COUNT_Q.sub(" ", norm))):
        return False
    return price_intent or bool(_PRICE_Q.search(norm) or _AMOUNT_Q.search(norm))


# an amount asked without a price word: "qual o pedido mínimo?", "o que sai mais barato, X ou Y?" (asked
# this way, the question wants the line with the amount whether its intent was read as price or not)
_AMOUNT_Q = re.compile(r"\b(pedido minimo|mais (barat[oa]s?|baratinh[oa]s?|car[oa]s?|carinh[oa]s?|em conta))\b")


_DIFFERENCE_Q = re.compile(r"\b(diferenca|diferencas|muda|mudam)\b")


def asks_difference(message: str) -> bool:
    """"qual a diferença de preço da tosa na máquina pra tesoura?": a comparison, which "sem
    diferença de preço" or "mesmo valor" answers as surely as two amounts."""
    return bool(_DIFFERENCE_Q.search(normalize_chat(message)))


def asks_duration(message: str) -> bool:
    norm = normalize_chat(message)
    return bool(_DURATION_Q.search(norm)) and not _DEADLINE_Q.search(norm)


_DISCOUNT_A = re.compile(r"\d+\s*%\s*(?:de\s+)?(?:desconto|off)\b", re.I)
# a share of a price charged ("gera cobrança de 50% do valor do serviço", "multa de 20% da diária")
_SHARE_CHARGED_A = re.compile(r"\b\d+\s*%\s*(?:do|da) (?:valor|servi[cç]o|total|di[aá]ria|pacote|reserva)\b|"
                              r"\b(?:cobran[cç]a|multa|taxa) de \d+\s*%", re.I)   # read unfolded: "%" kept


def carries_price(text: str, free_answers: bool = False) -> bool:
    """An amount ("R$ 40,00"), or, when ``free_answers`` (a yes/no question: "o retorno
    é cobrado?", "se eu for buscar fica mais barato?"), an explicit "free" ("sem custo", "grátis"), a
    discount in percent ("ganha 5% de desconto") or a share of a price charged ("cobrança de 50% do valor") too;
    "qual o valor" wants an amount."""
    return "R$" in text or bool(_QUOTE_A.search(fold(text))) or (free_answers and bool(
        _FREE_A.search(fold(text)) or _DISCOUNT_A.search(text) or _SHARE_CHARGED_A.search(text)))


def asks_deadline(message: str) -> bool:
    """"até que horas dá pra pedir", "com quanto tempo de antecedência": a limit, not opening hours."""
    return bool(_DEADLINE_Q.search(normalize_chat(message)))


def carries_deadline(text: str) -> bool:
    return bool(_DEADLINE_A.search(fold(text)))


def asks_name(message: str) -> bool:
    """"qual o nome da veterinária", "quem atende": the answer must name someone."""
    return bool(_NAME_Q.search(normalize_chat(message)))


def names_someone(text: str) -> bool:
    """A title or a role followed by a name ("Dra. Helena", "a veterinária Marta",
    "médico responsável Paulo"); a role word in a name ("Hospital Veterinário Vila Sul") is capitalised and is not a person,
    nor is a title in a place's name ("Rua Doutor Amâncio", "Praça Dr. Lima")."""
    return any(not _PLACE_BEFORE.search(text[:m.start()]) for m in _PERSON_A.finditer(text))


_PLACE_BEFORE = re.compile(r"\b(Rua|R\.|Av\.|Avenida|Travessa|Alameda|Praça|Rodovia|Estrada|Largo|Hospital|Clínica|Escola|"
                           r"Colégio|Edifício|Shopping|Parque)\s*$")


def asks_attribute(message: str) -> bool:
    """Whether the question asks an attribute by its form: a deadline, a duration, hours, a day, an
    address ("com qnto tempo tenho q pedir", "que horas abre", "onde fica")."""
    q = _asked(normalize_chat(message))
    return q.deadline or q.duration or q.hours or q.day or q.address


def carries_asked_attribute(message: str, text: str) -> bool | None:
    """Does ``text`` carry what the question asks for (an address for "onde
    fica", hours for "que horas", a weekday for "qual dia", a deadline for "até
    que horas")? None: the question asks for none of these."""
    norm, folded = _measures(normalize_chat(message)), fold(text)
    if _DEADLINE_Q.search(norm) and _DEADLINE_A.search(folded):
        return True
    if _DURATION_Q.search(norm) and not _DEADLINE_Q.search(norm):
        return bool(_DURATION_A.search(folded))
    checks = [(_ADDRESS_Q.search(norm), _ADDRESS_A), (_asks_hours(norm), _HOURS_A), (_DAY_Q.search(norm), _DAY_A)]
    asked = [a for q, a in checks if q]
    if not asked:
        return None
    return any(a.search(folded) for a in asked)


_OFFERING = frozenset("""temos tem fazemos aceitamos servimos vendemos atendemos trabalhamos oferecemos recebemos
hospedamos permitimos possuimos existe existem e sao ha fica ficam""".split())


# verbs after "não" that deny the subject itself ("Animais não são permitidos", "a Vitral não é alugada")
_STATE = frozenset("""e sao pode podem entra entram vale valem funciona funcionam abre abrem fica ficam esta estao
foi sera serao""".split())


#: "não é possível / permitido cancelar": the act after it is what is denied
_POSSIBLE = frozenset({"possivel", "permitido", "permitida", "autorizado", "autorizada"})


def says_no(text: str, focus: set[str], asked: set[str] | None = None) -> bool:
    """Does ``text`` deny something the question asks about ("Não temos sauna",
    "não aceitamos cheque", "é proibido fumar", "não são permitidos")? With ``asked`` (all the
    question's stems): not a denial of another act ("Não parcelamos no cartão" for "aceita
    cartão?") nor of a narrower thing than the one asked, when the text goes on to name it ("Não
    temos piscina coletiva; a única piscina é a privativa" for "tem quarto com piscina?")."""
    words = fold(text).split()
    for k, w in enumerate(words):
        if (w in ("nao", "nem", "nunca") or w.startswith("proibid")) and not (k and words[k - 1] == "se"):
            verb = words[k + 1] if k + 1 < len(words) else ""
            if asked is not None and verb.endswith("mos") and verb not in _OFFERING and stem(verb) not in asked:
                continue
            window = words[max(0, k - 4):k + 6]
            hits = [j for j in range(max(0, k - 4), min(len(words), k + 6)) if stem(words[j]) in focus]
            # "as pizzas veganas não contêm lactose": what is denied is the object, not the subject
            if asked is not None and hits and all(j < k for j in hits) and verb and verb not in _STATE \
                    and stem(verb) not in asked and k + 2 < len(words) and words[k + 2] not in STOPWORDS:
                continue
            # "depois que a pizza entra no forno, não é possível cancelar" for "a pizza é no forno a lenha?": what is
            # impossible is another act than the one asked, the words asked only set the scene before it
            if asked is not None and hits and all(j < k for j in hits) and verb in ("e", "eh") \
                    and k + 3 < len(words) and words[k + 2] in _POSSIBLE and stem(words[k + 3]) not in asked:
                continue
            # "não temos piscina coletiva; a única piscina é a privativa": the kind asked is there,
            # only a narrower one is denied (the word comes back outside the denial)
            if asked is not None and hits and all(
                    j > k and j + 1 < len(words) and words[j + 1] not in STOPWORDS and len(words[j + 1]) > 3
                    and stem(words[j + 1]) not in asked and not words[j + 1].isdigit()
                    and any(stem(x) == stem(words[j]) for x in words[j + 2:]) for j in hits):
                continue
            if not focus or any(stem(x) in focus for x in window):
                return True
    return False


def denies_whole_kind(text: str, other_names: set[str], asked: set[str] | None = None) -> bool:
    """``says_no`` through another name of the customer's word, only when it denies the whole
    kind ("Não servimos drinks nem destilados" for a caipirinha), not a qualified part of it
    ("Não fazemos cirurgias ortopédicas" says nothing of a castration)."""
    if not other_names:
        return False
    for clause in re.split(r"[,:;.!?()]", text):   # a word ending its clause is unqualified
        words = fold(clause).split()
        for k, w in enumerate(words):
            if (w in ("nao", "nem", "nunca") or w.startswith("proibid")) and not (k and words[k - 1] == "se"):
                verb = words[k + 1] if k + 1 < len(words) else ""
                if asked is not None and verb.endswith("mos") and verb not in _OFFERING and stem(verb) not in asked:
                    continue   # "não sedamos animais": another act than the one asked ("dão banho em gato?")
                for j in range(k + 1, min(len(words), k + 6)):
                    if stem(words[j]) in other_names:
                        after = words[j + 1] if j + 1 < len(words) else ""
                        if not after or after in STOPWORDS or after in ("nem", "ou", "e"):
                            return True
    return False


# a line break ends a clause too (one chat line, one thought); a title's period ("a Dra. Helena atende sabado?") does not
_CLAUSE_END = re.compile(r"(?<=[?!.])(?<![Dd]r\.)(?<![Dd]ra\.)(?<![Ss]r\.)(?<![Ss]ra\.)\s+|\s*\n\s*")


# what thanks, acknowledges or greets ("ok obrigado!", "blz valeu", "perfeito"), besides the stopwords
_COURTESY = frozenset("""ok okay okk blz beleza valeu vlw obrigado obrigada obrigadao obg obgd grato grata agradeco certo
certinho combinado perfeito otimo show entendi top massa legal opa eai salve fechou fechado tchau""".split())


def _courtesy(clause: str) -> bool:
    """A clause made of greeting, thanks and acknowledgement only ("ok obrigado!", "oi boa tarde tudo bem?")."""
    return all(t in STOPWORDS or t in _COURTESY or len(t) < 2 for t in normalize_chat(clause).split())


def question_part(message: str) -> str:
    """The clauses of a message that ask something, when it also tells things around the
    question ("tem elevador? minha esposa tem problema no joelho", "vcs vendem vale presente?
    queria dar pra minha sogra"): the ones with a question mark, a question word or a price
    asked ("cobra alguma coisa"). Courtesy naming nothing ("oi boa tarde tudo bem?") is left out
    first: "oi tudo bem? queria saber se rola pagar com vale refeição" asks its second clause. The told part is context: it may help to pick the answer,
    but what the knowledge does not say about it is no reason to hand over. A message with no
    question mark, or with nothing else, is returned whole."""
    clauses = [c for c in _CLAUSE_END.split(message.strip()) if c.strip()]
    # courtesy ("oi boa tarde tudo bem?", "obg!", "ok obrigado!") names nothing: it is never the question; a
    # clause that asks with common words only ("vcs abrem amanha?") still asks
    said = [c for c in clauses if not _courtesy(c) and (_question_words(c)[1] or "?" in c
                                                        or _PRICE_Q.search(normalize_chat(c)))]   # "cobra alguma coisa" asks
    if said and len(said) < len(clauses):
        clauses = said
        message = " ".join(said)
    if len(clauses) < 2 or not any("?" in c for c in clauses):
        return buried_question(message)
    asked = [c for c in clauses if "?" in c or _WH.search(normalize_chat(c)) or _PRICE_Q.search(normalize_chat(c))]
    return buried_question(" ".join(asked) if asked and len(asked) < len(clauses) else message)


# "é king ou queen?", "sao 110 ou 220?", "cremoso ou fatiado?": the question ends in a choice between two
_EITHER_OR = re.compile(r"(\w+) ou (?:e |eh |sao |tem |vem )?(\w+)(?: \w+)?\s*$")


def alternatives(message: str) -> tuple[str, str] | None:
    """The two options a single question ends with ("a borda de cheddar é cremoso ou fatiado?" →
    ("cremoso", "fatiado")), content words both; None for anything else (two questions, no choice)."""
    pieces = [p for p in message.split("?")[:-1] if p.strip()]
    if len(pieces) != 1:
        return None
    norm = normalize_chat(pieces[0]).strip()
    m = _EITHER_OR.search(norm)
    if m is None:
        # two ways put as a choice ("o motoboy sobe até o apartamento ou tenho que descer na portaria?", "vem com
        # açúcar ou é natural puro?"): the last thing each side names
        sides = norm.split(" ou ")
        last = [[w for w in side.split() if w not in STOPWORDS and w not in GENERIC and len(w) >= 4
                 and not w.isdigit()] for side in sides]
        return (last[0][-1], last[1][-1]) if len(sides) == 2 and all(last) else None
    if any(w in STOPWORDS or len(w) < 3 for w in m.groups()):
        return None
    return m.group(1), m.group(2)


def names_an_alternative(options: tuple[str, str], texts: Sequence[str]) -> bool:
    """Whether any of ``texts`` names one of the options (by a word starting with its stem)."""
    stems = [o if o.isdigit() else stem(o) for o in options]
    return any(any(w == s or (not s.isdigit() and w.startswith(s)) for s in stems)
               for t in texts for w in normalize_chat(fold(t)).split())


# an order asking for information ("manda o pix", "me passa o endereço", "me fala o valor")
_REQUEST = re.compile(r"^(?:me |nos )?(?:manda|mande|passa|passe|envia|envie|fala|fale|diz|diga|informa|informe)\b")


_BOOKING = re.compile(r"\b(?:pode |podem |vou |quero )?(?:reserva|reservar|reserve|agenda|agendar|agende|marca|marcar|marque|"
                      r"(?:fica )?(?:reservad|agendad|marcad)[oa]s?)\b|"
                      # "fechou coral sabado 22h": agreeing, then the booking told without a verb
                      r"^(?:fechou|fechado|combinado|perfeito|beleza|ok)\b")


def booking_order(message: str) -> str:
    """The clause of a confirmation that books a day or a time ("fechou, pode agendar o banho do Rex sabado
    9h. obrigada!!", "reserva a jade pra sexta 22h que eu mando o sinal"): what the business says about
    booking that (the deposit asked, the hours of that day) answers it; "" when the message books nothing,
    or names no day nor time ("fechado, pode reservar" confirms only)."""
    for clause in re.split(r"[.!?\n]+|,", message):
        norm = normalize_chat(clause)
        m = _BOOKING.search(norm)
        if m and (_DAY_A.search(norm[m.end():]) or clock_asked(norm) or re.search(r"\b\d{1,2}h\b", norm[m.end():])):
            return clause.strip()
        if _PICKUP.search(norm) or _PAYS_BY.search(norm):
            return clause.strip()
    return ""


def fetches_order(piece: str) -> bool:
    """Whether a confirmation's piece says the customer will fetch the order ("vou retirar no balcao")."""
    return bool(_PICKUP.search(normalize_chat(piece)))


def names_pickup(words: Iterable[str]) -> bool:
    """Whether folded words (a line's, with its label's) name fetching an order ("retirada", "retirar")."""
    return any(w.startswith("retir") for w in words)


def pickup_deal(units: Sequence["Unit"]) -> "Unit | None":
    """The line on fetching the order that gives a deal for it ("Retirada no balcão: ... 5% de desconto"), if any."""
    return next((u for u in pickup_lines(units) if offers_deal(u.text)), None)


def pickup_lines(units: Sequence["Unit"]) -> list["Unit"]:
    """The units on fetching an order (``names_pickup`` in the line or its label), those stating how long it
    takes first ("A pizza fica pronta em cerca de 25 minutos", under "Retirada no balcão"), then reading order."""
    return sorted((u for u in units if names_pickup(unit_words(u))),
                  key=lambda u: (not _DURATION_A.search(fold(u.text)), u.order))


# the customer fetching the order ("vou retirar no balcao entao", "faz uma grande pra retirada q eu passo ai"; not "vou
# buscar", which at a clinic fetches the pet): what the business says about a pick-up (how long it takes, where)
# answers it as a booked day's hours answer a booking
_PICKUP = re.compile(r"\b(?:vou retirar|eu retiro|retiro ai|retiro no balcao|pra retirada|para retirada|pra retirar|"
                     r"na retirada)\b")


# the customer telling how the order will be paid ("pago no pix", "vou pagar em dinheiro, troco pra 100", "faço o pix
# ja ja"; not the deposit of a booking, "mando o pix do sinal", which the booking's rule answers): what the business
# says of paying that way (the Pix key sent on confirming, the change it carries) answers it
_PAYS_BY = re.compile(r"\b(?:(?:pago|pagar|pagando|pagamento|pgto|pagto)\s+(?:no|na|em|com|via|pelo|pela|de)?|"
                      r"(?:vai ser|e|eh)\s+(?:no|na|em|via|pelo|pela))\s*"
                      r"(?:o |a )?(pix|cartao|credito|debito|dinheiro|especie)\b|"
                      r"\b(?:faco|fazer|mando|mandar|manda|passo|passa)\s+(?:o |um |a chave do )?(pix)\b(?!\s+(?:d[oa]s?|de)\b)")


def payment_told(piece: str) -> str:
    """The way of paying a confirmation's piece tells ("vou pagar no pix" → "pix"); "" when it tells none."""
    m = _PAYS_BY.search(normalize_chat(piece))
    return (m.group(1) or m.group(2)) if m else ""


def states_payment(method: str, text: str) -> bool:
    """Whether ``text`` is the business's word on paying by ``method`` ("Pix (a chave é enviada pelo atendente
    na confirmação do pedido)", "Para pagar em dinheiro, informe o valor ... levamos troco"): it names the
    method and is no deposit asked to book ("sinal de R$ 50,00 via Pix")."""
    named = next((p for _, p in PAYMENTS if re.search(p, method)), None)   # the lexicon's way of naming it
    folded = fold(text)
    return named is not None and bool(re.search(named, folded)) and not _DEPOSIT.search(folded)


def payment_lines(method: str, units: Sequence["Unit"]) -> list["Unit"]:
    """The units on paying by ``method`` (``states_payment``), those under a heading or label on payment
    first, then the shorter, then reading order."""
    found = [u for u in units if states_payment(method, u.text)]
    return sorted(found, key=lambda u: (not any(w.startswith("pag") for w in _stems(f"{u.context} {u.label or ''}")),
                                        len(u.text), u.order))


# one bill paid two ways ("metade no pix e metade no cartão", "parte no dinheiro e o resto no cartão", "dá pra dividir
# em dois cartões?"): a line allowing or refusing it says so ("aceitamos até duas formas de pagamento"); a line that
# only lists the ways, or refuses instalments or paying later, does not answer it
_SPLIT_PAYMENT = re.compile(r"\b(?:metade|parte|um pouco|uma parte)\s+(?:no|na|em|com)\s+\w+\s+e\s+(?:a\s+)?"
                            r"(?:outra\s+)?(?:metade|parte|resto|o resto)\b|"
                            r"\bdividir\s+(?:o pagamento|a conta|o valor)?\s*(?:em|entre)\s+(?:dois|duas|2)\s+"
                            r"(?:cartoes|formas|pagamentos)\b|\b(?:dois|2)\s+cartoes\b")
_STATES_SPLIT = re.compile(r"\b(?:duas|mais de uma|2)\s+formas\b|\bdois cartoes\b|\bdivid\w*\s+(?:o pagamento|a conta|"
                           r"o valor)|\bcombinar\s+formas\b|\bpagamento (?:misto|dividido)\b")


def unstated_split_payment(message: str, units: Sequence["Unit"]) -> bool:
    """The message asks to pay one bill two ways (``_SPLIT_PAYMENT``) and no unit says whether that is done."""
    return bool(_SPLIT_PAYMENT.search(normalize_chat(message))) and not any(
        _STATES_SPLIT.search(fold(u.text)) for u in units)


def hours_of_booked_day(piece: str, text: str) -> bool:
    """Whether ``text`` states the hours of a day the booking ``piece`` names ("pode agendar sabado 9h" /
    "Sábado: das 8h às 14h"): what answers a booking put as an order, the business's word on that day's
    hours; a rule on deposits or a price line does not confirm a booking."""
    booked = {m.group(1) for m in _DAY_A.finditer(normalize_chat(piece))}
    folded = fold(text)
    return bool(booked) and _carried(text).hours and any(m.group(1) in booked for m in _DAY_A.finditer(folded))


_BOOKING_ACT = re.compile(r"\b(reserv|agend|marc)[a-z]*\b")
_ASKED_AMOUNT = re.compile(r"R\$\s*\d|\d+\s*%")


#: The roots of every booking act: what a booking told without a verb ("fechou coral sabado 22h") may be.
BOOKING_ROOTS = ("agend", "marc", "reserv")


def booking_acts(piece: str) -> list[str]:
    """The roots of the booking acts a piece names ("pode reservar a brisa pra sexta" → ["reserv"]); a booking
    told without a verb ("fechou coral sabado 22h": ``booking_order``) may be any of them (``BOOKING_ROOTS``)."""
    named = sorted({m.group(1) for m in _BOOKING_ACT.finditer(normalize_chat(piece))})
    if named or payment_told(piece):   # "vou pagar no pix" books nothing
        return named
    return list(BOOKING_ROOTS) if piece and piece == booking_order(piece) else []


def states_booking_rule(piece: str, text: str) -> bool:
    """Whether ``text`` is the business's condition for booking what ``piece`` books ("pode reservar a
    brisa pra sexta 22h" / "Para reservar, pedimos um sinal de 30% do valor, pago via Pix."): it names the
    booking act of the piece (reservar, agendar, marcar: by its root) and asks an amount (R$ or %)."""
    acts = set(booking_acts(piece))
    return bool(acts) and bool({m.group(1) for m in _BOOKING_ACT.finditer(fold(text))} & acts) \
        and bool(_ASKED_AMOUNT.search(text))


_DEPOSIT = re.compile(r"\b(?:sinal|entrada|antecipad|adiantad|caucao)")


def asks_deposit_to_book(piece: str, text: str) -> bool:
    """A booking condition (``states_booking_rule``) that is a deposit ("pedimos um sinal de 30%", "com
    sinal de R$ 50,00"): not a price line that happens to need an appointment ("Gatos: banho R$ 90,00,
    somente com hora marcada")."""
    return states_booking_rule(piece, text) and bool(_DEPOSIT.search(fold(text)))


def booking_rule(piece: str, units: Sequence["Unit"]) -> list["Unit"]:
    """The unit stating the condition for booking what a confirmation books (``states_booking_rule``): the
    first in reading order, [] when none does."""
    return next(([u] for u in sorted(units, key=lambda x: x.order) if states_booking_rule(piece, u.text)), [])


def carried_question(message: str) -> tuple[str, str] | None:
    """A confirmation or a greeting that carries a question to the business ("fechado, pode reservar a
    coral pra sexta 22h!!! como pago o sinal?", "bom dia! vcs abrem domingo?"): (the asking piece, the
    intent the keyword dictionary gives that piece alone) when the piece (``question_part``) is not the
    whole message, asks (``asks_a_question``) or, as the last sentence, asks by an order ("manda o pix do
    sinal", ``_REQUEST``), and wants knowledge (a price, information, a policy);
    None otherwise ("oiii tudo bem?" asks nothing of the business)."""
    from streams.respond import intent as i

    piece = question_part(message).strip()
    if not piece or piece == message.strip() or not i.asks_a_question(piece):
        # a request put as an order, in a sentence of its own ("fechado, vou reservar a coral. manda o pix do
        # sinal"): asked as a question is
        # (or in a clause after the confirmation: "fechou, manda a chave pix entao")
        sentences = [x.strip() for x in re.split(r"[.!?\n]+", message) if x.strip()]
        if len(sentences) == 1:
            sentences = [x.strip() for x in sentences[0].split(",") if x.strip()]
        last = sentences[-1] if len(sentences) >= 2 else ""
        if _REQUEST.match(normalize_chat(last)):
            piece = last
        else:
            piece = booking_order(message)
            if not piece:
                return None
            wanted = i.detect_intent(piece, charged_as_policy=False).intent
            # a booking asks what the business says about it, whatever the dictionary reads in it
            return (piece, wanted if wanted in (i.PRICE, i.INFO, i.POLICY) else i.INFO)
    wanted = i.detect_intent(piece, charged_as_policy=False).intent
    return (piece, wanted) if wanted in (i.PRICE, i.INFO, i.POLICY) else None


BURIED_AFTER = 12   # words told before the last piece of a long question, at least
_CONDITION = re.compile(r"\b(?:se|caso|quando|qdo|qnd)\b")


_RUN_ON_BREAK = re.compile(r"[,.;:!?\n]")
_OPENS_QUESTION = frozenset({"quanto", "quanta", "quantos", "quantas", "qual", "quais", "onde", "quando", "como", "quem"})


def _run_on_question(body: str) -> str | None:
    """"oi tudo bem entao minha gata ela ta no cio direto e eu queria castrar ela quanto que fica a castracao de
    gata": a story told in one breath, as an audio is transcribed, with its question at the end and no mark
    between them; the question is from its last question word on, on the same terms as ``buried_question``
    (a long story before it, four words at least, no condition in the story, something named)."""
    words = body.split()
    at = [k for k, w in enumerate(words) if normalize_chat(w) in _OPENS_QUESTION]
    if not at:
        return None
    told, last = " ".join(words[:at[-1]]), " ".join(words[at[-1]:])
    if at[-1] < BURIED_AFTER or len(normalize_chat(last).split()) < 4 or \
            _CONDITION.search(normalize_chat(told)) or not _question_words(last)[1]:
        return None
    return last


def buried_question(text: str) -> str:
    """"eu e minha esposa moramos com a sogra ... fico com medo de verem o carro, a unidade do centro tem
    garagem privativa?": a long story and, after its last comma, a question of its own (at least four
    words, ending in "?"): that piece is what is asked; the rest is told. Not when the story sets a
    condition the question depends on ("se eu for buscar às 3 da tarde, cobra taxa?")."""
    body = text.strip()
    if body.count("?") <= 1 and not _RUN_ON_BREAK.search(body.rstrip("?")):
        return _run_on_question(body) or text
    if "?" not in body:   # "... fiquei doido na piscina... qnto fica a pernoite na lirio": asked last, unmarked
        last = _run_on_question(body)
        return last if last and not _RUN_ON_BREAK.search(last) else text
    if not body.endswith("?") or body.count("?") > 1 or "," not in body:
        return text
    told, _, last = body.rpartition(",")
    if len(told.split()) < BURIED_AFTER or len(normalize_chat(last).split()) < 4 or \
            _CONDITION.search(normalize_chat(told)) or not _question_words(last)[1]:
        return text
    return last.strip()


def unit_words(unit: "Unit") -> frozenset[str]:
    """The stems a unit names, with its heading's and its list's label."""
    return _stems(unit.text) | _stems(unit.context) | (_stems(unit.label) if unit.label else frozenset())


_OPENING_DAY = re.compile(r"\b(?:abre|abrem|atende|atendem|funciona|funcionam|trabalha|trabalham)\b(?:\s+\S+){0,2}?\s+"
                          r"(?:no |na |aos |nos |de |dia de )?(domingos?|segundas?|tercas?|quartas?|quintas?|sextas?|"
                          r"sabados?|feriados?)\b")


def opening_day_asked(message: str) -> set[str]:
    """Whether they open on a day, asked ("vcs abrem domingo?", "atendem no feriado?"): the stems of
    the days asked (empty when no such question: "qual dia abre a sauna" asks which day)."""
    return {stem(m.group(1)) for m in _OPENING_DAY.finditer(normalize_chat(question_part(message)))}


_AND = re.compile(r"(?:\s*,\s*|\s+)e\s+", re.I)


def _asks(text: str) -> bool:
    norm = normalize_chat(text)
    return bool(_WH.search(norm) or _PRICE_Q.search(norm))


def and_questions(clause: str) -> list[str]:
    """A clause joining two questions with "e" and no mark between them ("qnto sai o pacote de 10
    creches e vale por qnto tempo"): each question, when the side after "e" has a question word and
    the side before asks too (a question word or a price asked); "e" joining two things asked of one
    question ("qnto custa o banho e a tosa", "quanto e a taxa") stays."""
    parts = _AND.split(clause.strip())
    out = [parts[0]]
    for p in parts[1:]:
        # a question word, or "se" opening a reported yes/no question ("... e se o café tá incluso")
        # ... or two reported yes/no questions ("queria saber se tem desconto na consulta e se da pra pagar
        # no boleto": the first is asked by the frame "saber se")
        reported = re.match(r"se\s", normalize_chat(p)) and _FRAME.search(normalize_chat(out[-1]))
        if (_WH.search(normalize_chat(p)) or re.match(r"se\s", normalize_chat(p))) and (_asks(out[-1]) or reported):
            out.append(p)
        else:
            out[-1] = f"{out[-1]} e {p}"
    return out


def question_clauses(message: str) -> list[str]:
    """The separate questions of a message that asks more than one ("vcs entregam no jardim
    europa? e qnto é a taxa", "qnto custa o pacote e precisa pedir com qnto tempo antes?"): its
    clauses with a question mark or a question word, each cut where "e" joins two questions
    (``and_questions``); [] when it asks one thing."""
    asked = []
    for clause in (c for c in _CLAUSE_END.split(message.strip()) if c.strip()):
        parts = and_questions(clause)   # each part of a cut clause asks (that is why it was cut)
        asked += parts if len(parts) > 1 else [c for c in parts if "?" in c or _WH.search(normalize_chat(c))
                                               or (asked and _follow_on(c))]
    return asked if len(asked) >= 2 else []


#: "e a antirrabica", "e pra gato", "e a batata": a short clause opening with "e" asks the question before it
#: again, of another thing
_FOLLOW_ON = re.compile(r"^e\s+(?!(?:eu|vc|voce|vcs|voces|tu|ele|ela|eles|elas|nos|a gente)\b)(?:\S+\s+){0,3}\S+[\s.!?]*$")


def _follow_on(clause: str) -> bool:
    """A clause after a question that asks it again of another thing, without a mark ("qnto ta a v10? e a
    antirrabica"): "e" and at most four words, none of them a person telling something ("e vc", "e eu amei")."""
    return bool(_FOLLOW_ON.match(normalize_chat(clause).strip()))


_OPTIONS = re.compile(r"^(.*?),?\s+ou\s+([^?,;.!]+?)\s*\?\s*$", re.S)


def option_questions(message: str) -> list[str]:
    """A question between two options ("o que sai mais barato, uma broto doce ou uma broto
    tradicional?"): the question asked of each, the second option put in the place of the
    first, which is as many words as the second (["o que sai mais barato, uma broto doce?", "o
    que sai mais barato, uma broto tradicional?"]); [] when the message offers no such choice
    ("... ou não?", a second option longer than four words)."""
    asked = question_part(message).strip()
    m = _OPTIONS.match(asked)
    if not m:
        return []
    before, second = m.group(1).rstrip(" ,"), m.group(2).split()
    if not 1 <= len(second) <= 4 or fold(second[0]) in {"nao", "n", "sim"}:
        return []
    words = before.split()
    if len(words) <= len(second):
        return []
    head = " ".join(words[: -len(second)])
    return [f"{before}?", f"{head} {' '.join(second)}?"]


_PAIR = re.compile(r"^(.*\b(?:a|o|as|os)) (\S+) e (?:a|o|as|os) (.+?)\s*\??$")


def paired_items(message: str) -> list[str]:
    """A price asked of two items at once ("qnto é a v10 e a antirrábica pro meu dog"): the question
    asked of each, the second item in the place of the first (["qnto é a v10", "qnto é a antirrabica
    pro meu dog"]); [] when the message asks no price or names no such pair."""
    norm = normalize_chat(question_part(message))
    if not _PRICE_Q.search(norm):
        return []
    m = _PAIR.match(norm)
    if m is None or not _PRICE_Q.search(m.group(1)) or any(
            w in STOPWORDS or w in GENERIC for w in (m.group(2), m.group(3).split()[0])):
        return []   # "qnto custa a pernoite e o que inclui": a second question, not a second item
    return [f"{m.group(1)} {m.group(2)}", f"{m.group(1)} {m.group(3)}"]


_COMPARED = re.compile(r"^(.*?\b(?:diferenca|diferencas|muda|mudam)\b.*?)\s(?:d[ao]s?|entre (?:[ao]s? )?)\s*(.+?)\s+"
                       r"(?:pra|para|pro|e|e (?:d[ao]s?|[ao]s?))\s+(?:[ao]s?\s+)?(.+?)\s*\??$")


def compared_items(message: str) -> list[str]:
    """A difference asked between two items ("qual a diferença de preço da média tradicional pra
    média especial?", "o que muda entre a suíte brisa e a coral"): the question asked of each, the
    second item in the place of the first (["qual a diferenca de preco da media tradicional", "qual
    a diferenca de preco da media especial"]); [] when no difference is asked or the message names
    no such pair (an item of more than four words is a clause, not a name)."""
    norm = normalize_chat(question_part(message))
    m = _COMPARED.match(norm)
    if m is None:
        return []
    head, first, second = m.group(1), m.group(2), m.group(3)
    if not (1 <= len(first.split()) <= 4 and 1 <= len(second.split()) <= 4) or not question_words(second)[1]:
        return []
    # "da media pra grande na especial": the qualifier said after the second item is the first's too
    shared = _SHARED_QUALIFIER.search(second)
    if shared and len(first.split()) == 1 and shared.start() > 0:
        first = f"{first} {shared.group(0).strip()}"
    return [f"{head} da {first}", f"{head} da {second}"]


_SHARED_QUALIFIER = re.compile(r"\s(?:na|no|nas|nos)\s+\S+(?:\s+\S+)?$")


_ACT_VERB = re.compile(r"^[a-z]{4,}(am|em)$")   # "atendem", "parcelam", "vendem": what the business does


_LIMITS = frozenset({"nao", "nem", "nunca", "so", "somente", "apenas", "exceto"})


def asked_acts(message: str) -> set[str]:
    """The roots of the acts a yes/no question asks the business about ("atend" of "vcs
    atendem?", "vend" of "vendem coleira?"): its verbs in the third person plural."""
    if not is_yes_no(message):
        return set()
    return {t[:-2] for t in normalize_chat(question_part(message)).split() if _ACT_VERB.match(t)}


def opens_with_no(text: str) -> bool:
    """A statement that opens with a denial ("Não temos ...", "Nem ...", "É proibido ...")."""
    return bool(_NEGATIVE_START.match(fold(text)))


def denies_act(text: str, acts: set[str], focus: set[str] = frozenset()) -> bool:
    """A statement that opens with a denial of one of ``acts`` ("Não temos pronto-socorro nem
    atendimento 24 horas." for "atend"): the honest "não" to a question about that act. When the
    act is the denying verb itself ("Não vendemos medicamentos controlados"), what it denies must
    be what was asked (a stem of ``focus``): another object's denial says nothing of a coleira."""
    words = fold(text).split()
    if not acts or not words or words[0] not in ("nao", "nem"):
        return False
    for j, w in enumerate(words[1:], start=1):
        if any(w.startswith(a) for a in acts):
            if j > 1 or any(stem(x) in focus for x in words[2:6]):
                return True
    return False


def names_act(text: str, acts: set[str]) -> bool:
    return any(w.startswith(a) for w in fold(text).split() for a in acts)


@functools.lru_cache(maxsize=32768)
def _pairs(text: str, generic: bool = True) -> frozenset[tuple[str, str]]:
    """Stems of the content words that follow each other in ``text`` across stopwords ("pizza
    doce", "pizza de calabresa"): a name of several words. ``generic=False``: neither word is a
    generic question word."""
    toks = [t for t in _measures(normalize_chat(text)).split() if t not in STOPWORDS and t.isalnum()]
    return frozenset((stem(a), stem(b)) for a, b in zip(toks, toks[1:])
                     if generic or (a not in GENERIC and b not in GENERIC))


def phrases_named(message: str, text: str) -> frozenset[tuple[str, str]]:
    """The question's names of several words ("pizza doce") that ``text`` says as one."""
    return _pairs(message, False) & _pairs(text)


# where the customer lives or is ("moro na vila operaria", "to ali no centro", "fico perto da bela vista"):
# the place whose service is asked about ("vcs buscam em casa?", "entregam aqui?")
_TOLD_PLACE = re.compile(r"\b(?:moro|mora|moramos|morando|resido|fico|ficamos|to|tou|estou|estamos)"
                         r"(?: aqui| ali| la)?(?: perto| pertinho| do lado| ao lado)?"
                         r" (?:no|na|nos|nas|em|do|da|de) ((?:[a-z0-9]+ ?){1,3})")
_PLACE_STOP = re.compile(r"\b(?:e|mas|vcs|voces|voce|vc|ai|aqui|entao|tipo|q|que|pra|para|com|se|perto|hj|hoje|"
                         r"agora|tb|tbm|tambem|kk+|sera|ne|mesmo|casa|duvida)\b")


def told_place(message: str) -> tuple[str, ...]:
    """The words of the place the customer says they live or are at ("moro na vila operaria, vcs
    buscam?" → ("vila", "operaria")); () when none is told. The words stop at the first word that
    is no part of a name ("moro na bela vista e queria saber" → ("bela", "vista")); "to em casa" and
    "to na duvida" tell no place."""
    for piece in re.split(r"[?!.,;\n]+", message):
        m = _TOLD_PLACE.search(normalize_chat(piece))
        if m is None:
            continue
        words = []
        for w in m.group(1).split():
            if _PLACE_STOP.fullmatch(w) or w in STOPWORDS:
                break
            words.append(w)
        if words:
            return tuple(words)
    return ()


_AT_UNIT = re.compile(r"\b(?:na|nas|da|das|pra|para) (?:unidade|unidades|filial|loja) (?:d[oa]s? |de )?([a-z]{3,}(?: [a-z]{3,})?)")
_UNIT_LIMIT = re.compile(r"\b(?:apenas|somente|so|exclusivamente)\b(?: \S+){0,2}? (?:na|nas|em) (?:unidade|unidades|filial|loja)\b")


def asks_at_a_unit(message: str) -> bool:
    """A yes/no question naming one of the business's units ("tem na unidade do centro tb?")."""
    return is_yes_no(message) and bool(_AT_UNIT.search(normalize_chat(message)))


def unit_place_words(message: str) -> set[str]:
    """Stems of the unit's name and the word unit in such a question ("unidade do centro" → unida, centr)."""
    out: set[str] = set()
    for m in _AT_UNIT.finditer(normalize_chat(message)):
        out |= {stem(w) for w in m.group(0).split()}
    return out


def limits_to_units(text: str) -> bool:
    """A line limiting something to some units ("funcionam apenas na unidade Jardim América")."""
    return bool(_UNIT_LIMIT.search(fold(text)))


def names_place(text: str, place: Sequence[str]) -> bool:
    """Whether ``text`` writes the told place as a proper name: its words one after the other,
    capitalised ("Vila Operária", "Centro"), not a word of a sentence ("pré-operatória", "centro
    cirúrgico" in lower case)."""
    if not place:
        return False
    pattern = r"(?<![\w-])" + r"\s+".join(r"[A-ZÀ-Ý]\w*" for _ in place) + r"(?![\w-])"
    return any(tuple(fold(w).lower() for w in m.group(0).split()) == tuple(place)
               for m in re.finditer(pattern, text))


# how many people a party is ("eu e mais 4 amigas", "somos em 5", "pode os 3 na mesma suite", "6 pessoas")
_PARTY_NUMBER = r"(\d{1,2}|" + "|".join(sorted(set(_NUMBER_WORDS) - {"um", "uma"}, key=len, reverse=True)) + r")"
_PARTY_PEOPLE = r"(?:pessoas|amig[oa]s|adultos|criancas|convidad[oa]s|colegas|primas?|primos?|irmas|irmaos|gente)"
_PARTY = [
    (re.compile(r"\beu e (?:mais )?" + _PARTY_NUMBER + r"\b"), 1),                      # "eu e mais 4": 5
    (re.compile(r"\b(?:eu|eu e minh[ao]s?|nos) (?:\w+ )?(?:com|e) (?:mais )?" + _PARTY_NUMBER + r" " + _PARTY_PEOPLE), 1),
    (re.compile(r"\b(?:somos|seremos|sao|vamos ser|vamos em|vamos|iremos|vai ser|vao ser) (?:em )?" + _PARTY_NUMBER
                + r"\b(?! (?:horas?|h|dias?|noites?|reais|minutos?|carros?|motos?)\b)"), 0),
    # "a gente é em 3", "a gente vai em 4": the party said with its subject
    (re.compile(r"\b(?:a gente|agente|nos) (?:e|eh|sera|vai ser|vai|vamos) (?:em )?" + _PARTY_NUMBER
                + r"\b(?! (?:horas?|h|dias?|noites?|reais|minutos?|carros?|motos?)\b)"), 0),
    (re.compile(r"\b(?:os|as|nos|a gente|agente) " + _PARTY_NUMBER + r"\b(?= (?:juntos|juntas|na|no|numa|num|em|pode|podemos|"
                r"dorme|dormir|entra|entrar|ficar|fica)\b)"), 0),
    (re.compile(r"\b(?:pra|para|de|com|em) " + _PARTY_NUMBER + r" " + _PARTY_PEOPLE), 0),
    (re.compile(r"(?<!\d )\b" + _PARTY_NUMBER + r" pessoas\b"), 0),
    # "da pra ir em 3?", "podemos entrar em 4?": going in a number is a party of that many
    (re.compile(r"\b(?:ir|irmos|entrar|entrarmos|ficar|ficarmos|vir|virmos|chegar|chegarmos) em " + _PARTY_NUMBER
                + r"\b(?! (?:horas?|h|dias?|noites?|reais|minutos?|carros?|motos?)\b)"), 0),
]


def party_size(message: str) -> int | None:
    """The number of people the customer says will come together ("eu e mais 4 amigas numa suíte" → 5,
    "pode os 3 na mesma suíte?" → 3, "somos em 6" → 6, "mesa pra 8 pessoas" → 8); None when no
    party is counted ("2 horas", "os 2 quartos" are no people)."""
    norm = normalize_chat(message)
    for rx, me in _PARTY:
        m = rx.search(norm)
        if m:
            n = m.group(1)
            return int(_NUMBER_WORDS.get(n, n)) + me
    return None


_PARTY_LIMIT = re.compile(r"\b(maximo|no maximo|limite|ate|capacidade (?:para|de|pra)|acima de|mais de|minimo|a partir de)"
                          r"(?: de)? (\d{1,3}|" + "|".join(_NUMBER_WORDS) + r") pessoas?\b")
_FROM_BELOW = ("acima", "mais", "minimo", "a partir")


def states_party_limit(text: str, size: int | None = None) -> bool:
    """Whether ``text`` states how many people something holds or needs ("Máximo de 2 pessoas por
    suíte", "reservas para grupos acima de 10 pessoas", "até 4 pessoas"); "pessoa física" is no limit.
    With ``size`` (a party counted), only a limit that concerns it: a cap always (it holds the party or
    not), a rule from a number up only when the party reaches it (8 people are no "grupo acima de 10")."""
    for m in _PARTY_LIMIT.finditer(fold(text)):
        n = m.group(2)
        bound = int(_NUMBER_WORDS.get(n, n))
        if size is None or not m.group(1).startswith(_FROM_BELOW) or size >= bound + (m.group(1) in ("acima", "mais")):
            return True
    return False


# a question from someone looking for work, not for a service: "vcs tao contratando motoboy?", "to procurando
# emprego", "vcs precisam de ajudante?", "aceitam curriculo?", "queria trabalhar ai"
_ROLE = r"(?:funcionari[oa]s?|gente|alguem|pessoal|ajudante|[a-z]+(?:boy|eiro|eira|ista|dor|dora|ente|olo)s?)"
_WORK_Q = re.compile(r"\b(?:emprego|empregos|curriculo|curriculos|contrat(?:ando|am)(?: (?:um |uma )?" + _ROLE + r"|$)|"
                     r"vagas? (?:de|pra|para) (?:emprego|trabalho|trabalhar)|trabalhar (?:ai|ai com|com|pra|para) "
                     r"(?:voces|vcs|ces)|trabalhar ai|procurando (?:emprego|trabalho|servico|bico)|"
                     r"(?:voces|vcs|ces) (?:tao |estao |ta |esta )?precis(?:ando|am) de (?:um |uma )?" + _ROLE + r")\b")
# the knowledge speaks of hiring
_WORK_A = re.compile(r"\b(curricul\w*|contrata\w*|vagas? de (?:emprego|trabalho)|trabalhe conosco|empregos?|"
                     r"processo seletivo|recrutamento)\b")


def asks_for_work(message: str) -> bool:
    """Whether the message asks for a job at the business ("vcs tao contratando motoboy?", "meu filho ta
    procurando serviço, vcs precisam de ajudante?"), not for what the business sells: the line on the
    delivery man ("o motoboy leva maquininha") does not answer it."""
    return any(_WORK_Q.search(normalize_chat(piece).strip()) for piece in re.split(r"[?!.,;\n]+", message))


def speaks_of_hiring(text: str) -> bool:
    """Whether a line of the knowledge says something about jobs (curriculum, hiring, vacancies)."""
    return bool(_WORK_A.search(fold(text)))


# a pet (or a person) in an urgency, told in the message: a symptom that cannot wait
_URGENCY = re.compile(r"\b(?:vomit\w*|sangr\w*|passando mal|convuls\w*|engasg\w*|atropel\w*|envenen\w*|desmai\w*|"
                      r"emergencia|urgencia|urgente)\b")
_EMERGENCY = re.compile(r"\b(?:emergencia|emergencias|urgencia|urgencias)\b")
_REFUSAL = re.compile(r"\b(?:nao|nem|fechad[oa]s?)\b")


def tells_urgency(message: str) -> bool:
    """The message tells an urgency ("meu cachorro ta vomitando desde cedo", "ela ta sangrando")."""
    return bool(_URGENCY.search(normalize_chat(message)))


_PET_WORDS = frozenset(w for words in SPECIES.values() for w in words) | {"pet", "bicho", "bichinho"}


def tells_of_a_pet_when_closed(message: str) -> bool:
    """"vcs abrem domingo? meu cachorro ta meio caidinho": whether they open on a day is asked and, apart from
    the question, the customer tells something of their pet (a symptom said any way: "comeu uma meia",
    "ta meio caidinho"); a closed day is then answered with where to go meanwhile, as an attendant would."""
    if not opening_day_asked(message):
        return False
    asked = set(normalize_chat(question_part(message)).split())
    told = set(normalize_chat(message).split()) - asked
    return bool(told & _PET_WORDS)


def speaks_of_emergency(text: str) -> bool:
    """A line on what is done in an emergency ("Em caso de emergência ... indicamos o Hospital ...")."""
    return bool(_EMERGENCY.search(fold(text)))


def refuses(text: str) -> bool:
    """A line saying no or closed ("Não temos pronto-socorro", "Domingos e feriados: fechado.")."""
    return bool(_REFUSAL.search(fold(text)))


_ONLY = frozenset({"so", "somente", "apenas", "exclusivamente"})


def only_some(text: str) -> bool:
    """A line keeping something to some cases ("só", "somente", "apenas"), not a plain "no"."""
    return bool(_ONLY & set(fold(text).split()))


def limits(text: str) -> bool:
    """A denial or a limit ("não", "só", "somente", "apenas", "exceto")."""
    return bool(_LIMITS & set(fold(text).split()))


#: Lower-case words a proper name may hold between its capitalised ones ("Pacote Pedido de Casamento").
_NAME_CONNECTORS = frozenset({"de", "da", "do", "das", "dos", "e"})


def item_name(unit: Unit) -> str:
    """The proper name a list item is about ("Suíte Lírio" of "Suíte Lírio: piscina aquecida ..."):
    its label of two or more words, each capitalised but the connectors ("Pacote Pedido de Casamento"); ""
    otherwise."""
    if not unit.item:
        return ""
    m = _ITEM_LABEL.match(unit.text)
    name = m.group(1).strip() if m else ""
    words = name.split()
    return name if len(words) >= 2 and words[0][0].isupper() and words[-1][0].isupper() \
        and all(w[0].isupper() or w in _NAME_CONNECTORS for w in words) else ""


def refers_to(text: str, unit: Unit) -> bool:
    """Does ``text`` name the item ``unit`` is about ("a única piscina é a privativa da Suíte Lírio"),
    in full or by its proper name alone, capitalised ("Suíte Coral: tudo o que a Brisa tem" names
    "Suíte Brisa")?"""
    name = item_name(unit)
    if not name or fold(text).startswith(fold(name)):
        return False
    proper = name.split()[1:]
    return fold(name) in fold(text) or all(re.search(rf"\b{re.escape(w)}\b", text) for w in proper)


SALE_ACTS = frozenset({"vend", "comercializ"})


def answers_a_sale(text: str) -> bool:
    """Can ``text`` answer "vcs vendem X?": it speaks of selling (vend*), states a price, or denies
    or limits ("Não trabalhamos com fiado", "Pizza doce só é feita nos tamanhos broto e média").
    "Cães devem estar de coleira e guia" names a coleira but says nothing of selling one."""
    words = fold(text).split()
    return "R$" in text or any(w.startswith(a) for w in words for a in SALE_ACTS) or bool(_LIMITS & set(words))


def is_yes_no(message: str) -> bool:
    return not _WH.search(normalize_chat(message))


@functools.lru_cache(maxsize=32768)
def _stems(text: str) -> frozenset[str]:
    """Cached: knowledge units and chunks are stemmed for message after message."""
    return frozenset(stem(t) for t in _measures(fold(text)).split() if t not in STOPWORDS and len(t) > 1)


def chunk_words(text: str) -> frozenset[str]:
    """The stems a knowledge text offers to ``question_words`` (same stemming)."""
    return _stems(text)


_MEASURE = r"(km|kg|kgs|kilos?|quilos?|cm|h|horas?|min|minutos?|pessoas|dias|anos|meses|fatias)"
_NUM = r"(\d+(?:[.,]\d+)?)"
_Q_AMOUNT = re.compile(_NUM + r"\s*" + _MEASURE + r"\b")
_RANGES = [
    # "até 24 horas antes da entrada": a deadline, so 24 hours before or more; "até 10 kg": 10 or less
    (re.compile(r"\bate " + _NUM + r"\s*" + _MEASURE + r"\b(?=\s+(?:antes|de antecedencia))"), lambda a: (a, math.inf)),
    (re.compile(r"\bate " + _NUM + r"\s*" + _MEASURE + r"\b(?!\s+(?:antes|de antecedencia))"), lambda a: (0.0, a)),
    (re.compile(r"\bmenos de " + _NUM + r"\s*" + _MEASURE), lambda a: (0.0, a)),
    # "acima de 6 km", "se a entrega passar de 80 minutos": a limit from below
    (re.compile(r"\b(?:acima de|mais de|a partir de|passar de|passa de|passe de|ultrapassar|ultrapassa) " + _NUM
                + r"\s*" + _MEASURE), lambda a: (a, math.inf)),
]
# a length of time told in hours and minutes ("1h30", "1h 30min", "2 horas"), not a time of day ("às 10h20")
_HOURS_MINUTES = re.compile(r"(?<!as )(?<!umas )(?<!pelas )(?<!das )(?<!ate )\b(\d{1,2}) ?h(?:oras?)? ?(\d{2})?(?: ?min(?:utos)?)?\b")
_BETWEEN = re.compile(r"\b(?:de )?" + _NUM + r"\s*" + _MEASURE + r"? a " + _NUM + r"\s*" + _MEASURE)


def _num(x: str) -> float:
    return float(x.replace(".", "").replace(",", ".")) if "," in x else float(x)


def _unit_of(m: str) -> str:
    return {"hora": "h", "horas": "h", "kgs": "kg", "kilo": "kg", "kilos": "kg", "quilo": "kg", "quilos": "kg",
            "minuto": "min", "minutos": "min"}.get(m, m)


def _asked_amounts(question_norm: str) -> list[tuple[float, str]]:
    """The quantities a question states, each with its measure; a length of time in hours is in minutes
    too ("1h30" → 90 min), so a limit stated in minutes ("passar de 80 minutos") holds it or not."""
    asked = [(_num(a), _unit_of(m)) for a, m in _Q_AMOUNT.findall(question_norm)]
    asked += [(int(h) * 60 + int(mm or 0), "min") for h, mm in _HOURS_MINUTES.findall(question_norm)]
    asked += [(v * 24, "h") for v, m in asked if m in ("dia", "dias")]   # "2 dias antes": 48 hours before
    return asked


def range_match(question_norm: str, unit_folded: str) -> bool:
    """Does a quantity of the question ("5 km", "7kg", "32 kg") fall in a range
    the unit states ("de 3 km a 6 km", "até 10 kg", "acima de 25 kg")?"""
    return range_fit(question_norm, unit_folded) is True


_BEFORE_Q = re.compile(r"\b(?:antes|antecedencia|vespera)\b")


def range_fit(question_norm: str, unit_folded: str) -> bool | None:
    """True: a quantity of the question falls in a range the unit states; False: the unit
    states ranges of that measure and none holds it ("até 15 kg" for "30kg"); None: no
    quantity asked or no range of its measure stated."""
    asked = _asked_amounts(question_norm)
    if not asked:
        return None
    spans: list[tuple[float, float, str]] = []
    # a time before asked ("com 2 dias de antecedência", "umas 10 horas antes") is held by a rule on the time
    # before, never by a period after it ("o sinal vira crédito para usar em até 60 dias")
    before = bool(_BEFORE_Q.search(question_norm))
    for rx, make in _RANGES:
        for m in rx.finditer(unit_folded):
            if before and unit_folded[:m.start()].endswith("em "):
                continue
            lo, hi = make(_num(m.group(1)))
            spans.append((lo, hi, _unit_of(m.group(2))))
    for a, m1, b, m2 in _BETWEEN.findall(unit_folded):
        spans.append((_num(a), _num(b), _unit_of(m2)))
    same = [(v, lo, hi) for v, mu in asked for lo, hi, su in spans if mu == su]
    if not same:
        return None
    return any(lo <= v <= hi for v, lo, hi in same)


def range_measures(unit_folded: str) -> set[str]:
    """The measures the unit states a range of ("até 3 km: R$ 6,00" → {"km"}; "de 10 a 20 kg" → {"kg"})."""
    out = {_unit_of(m.group(2)) for rx, _ in _RANGES for m in rx.finditer(unit_folded)}
    return out | {_unit_of(m2) for _, _, _, m2 in _BETWEEN.findall(unit_folded)}


def tells_amount(message: str) -> bool:
    """Whether the message states a quantity with its measure ("uns 4km", "12kg", "1h30")."""
    return bool(_asked_amounts(_measures(normalize_chat(message))))


# a time of day asked: "às 3 da tarde", "as tres da tarde", "umas 15h", "às 15:30", "meio-dia"
_CLOCK_NUMBERS = {"uma": 1, "duas": 2, "tres": 3, "quatro": 4, "cinco": 5, "seis": 6, "sete": 7, "oito": 8,
                  "nove": 9, "dez": 10, "onze": 11, "doze": 12}
_PERIOD = r"(?:\s+(?:da|de) (manha|tarde|noite|madrugada))"
_CLOCK_Q = re.compile(r"\b(?:as|umas|pelas|la pelas|depois das|antes das|ate as)\s+(\d{1,2}|" + "|".join(_CLOCK_NUMBERS)
                      + r")(?:h(\d{2})?|:(\d{2})|\s+horas?)?" + _PERIOD + r"?\b|\b(meio ?dia|meia ?noite)\b")
# a rule on the time of day in the knowledge: "depois das 12h", "após as 18h", "a partir das 14h", "antes das
# 10h", "até as 12h" (not "até 5 horas", a length of time)
_CLOCK_RULE = re.compile(r"\b(depois d[ao]s?|apos (?:as|o)|a partir d[ao]s|antes d[ao]s?|ate (?:as|o))\s+"
                         r"(?:(\d{1,2})(?:h(\d{2})?|:(\d{2}))|(meio dia|meia noite))")


def clock_asked(norm: str) -> list[float]:
    """The times of day a question names, in hours from midnight ("as tres da tarde" → 15.0, "umas
    23h" → 23.0, "meio dia" → 12.0); a bare number needs "às" and "h", ":", "horas" or a period of the
    day ("às 3 da tarde"), so "as 2 pizzas" or "de 2h" (a length) are no time."""
    out = []
    for m in _CLOCK_Q.finditer(norm.replace("-", " ")):
        num, mins, mins2, period, named = m.groups()
        if named:
            out.append(12.0 if named.startswith("meio") else 24.0)
            continue
        said_as_time = period or mins or mins2 or re.search(r"(h|:\d\d|horas?)$", m.group(0))
        if not said_as_time:
            continue
        hour = float(_CLOCK_NUMBERS.get(num, num) if not num.isdigit() else int(num))
        if period in ("tarde", "noite") and hour < 12:
            hour += 12
        if 0 <= hour <= 24:
            out.append(hour + int(mins or mins2 or 0) / 60)
    return out


def clock_fit(norm: str, unit_folded: str) -> bool | None:
    """True: a time of day the question names falls under a rule on the time of day the unit states
    ("se eu buscar às 3 da tarde" and "Saída depois das 12h acrescenta meia diária"); False: the unit
    states such rules and none holds it; None: no time asked or no rule stated."""
    asked = clock_asked(norm)
    if not asked:
        return None
    rules = []
    for word, h, m1, m2, named in _CLOCK_RULE.findall(unit_folded.replace("-", " ")):
        at = (12.0 if named.startswith("meio") else 24.0) if named else int(h) + int(m1 or m2 or 0) / 60
        after = word.startswith(("depois", "apos", "a partir"))
        rules.append((at, after))
    if not rules:
        return None
    return any((v > at) if after else (v <= at) for v in asked for at, after in rules)


@dataclass(frozen=True)
class _Asked:
    """What kinds of answer a question asks for (read once per question)."""

    price: bool
    timed: bool
    yes_no: bool
    duration: bool
    hours: bool
    deadline: bool
    day: bool
    address: bool
    amounts: bool
    clock: bool


@functools.lru_cache(maxsize=1024)
def _asked(q: str) -> _Asked:
    deadline = bool(_DEADLINE_Q.search(q))
    duration = bool(_DURATION_Q.search(q))
    return _Asked(price=bool(_PRICE_Q.search(q)), timed=deadline or duration, yes_no=not _WH.search(q),
                  duration=duration and not deadline, hours=_asks_hours(q), deadline=deadline,
                  day=bool(_DAY_Q.search(q)), address=bool(_ADDRESS_Q.search(q)), amounts=bool(_asked_amounts(q)),
                  clock=bool(clock_asked(q)))


@dataclass(frozen=True)
class _Carried:
    """What kinds of answer a text carries (read once per text: the same chunks and units
    are scored for message after message)."""

    amount: bool     # "R$"
    quote: bool      # "sob orçamento"
    free: bool       # "sem custo", "grátis"
    duration: bool
    hours: bool
    deadline: bool
    day: bool
    address: bool


@functools.lru_cache(maxsize=32768)
def _carried(text: str) -> _Carried:
    folded = fold(text)
    return _Carried(amount="R$" in text, quote=bool(_QUOTE_A.search(folded)), free=bool(_FREE_A.search(folded)),
                    duration=bool(_DURATION_A.search(folded)), hours=bool(_HOURS_A.search(folded)),
                    deadline=bool(_DEADLINE_A.search(folded)), day=bool(_DAY_A.search(folded)),
                    address=bool(_ADDRESS_A.search(folded)))


def attribute_bonus(question_norm: str, text: str, wants_price: bool = False) -> float:
    """How well ``text`` carries the kind of answer the question asks for: an
    amount for a price, hours for "que horas", a weekday for "qual dia", an
    address for "onde fica", a range holding the quantity asked ("5 km")."""
    q, a = _asked(question_norm), _carried(text)
    bonus = 0.0
    # carries_price(text, free_answers=yes/no question)
    if (wants_price or q.price) and not q.timed and (a.amount or a.quote or (q.yes_no and a.free)):
        bonus += 2.0 if a.amount else 1.0  # an amount answers more surely than "sob orçamento"
    if q.duration and a.duration:
        bonus += 1.5
    if q.hours and a.hours:
        bonus += 1.5
    if q.deadline and a.deadline:
        bonus += 2.0
    if q.day and a.day:
        bonus += 1.5
    if q.address and a.address:
        bonus += 2.0
    fit = range_fit(question_norm, fold(text)) if q.amounts else None
    if fit is not None:  # the range holding the quantity asked, never one that excludes it
        bonus += 3.0 if fit else -3.0
    clock = clock_fit(question_norm, fold(text)) if q.clock else None
    if clock is not None:   # a rule on the time of day asked ("às 3 da tarde": "saída depois das 12h ...")
        bonus += 3.0 if clock else 1.5   # answers it either way; the rule it falls under answers it best
    return bonus


@functools.lru_cache(maxsize=8192)   # read for every unit of every scoring of a message
def heading_asked(norm: str, heading: str) -> bool:
    """Whether the question (chat-normalised) names ``heading`` word for word, a heading of two words or more
    that is no name ("taxa de entrega" in "qnto fica a taxa de entrega pro centro?"; not "Vila Nova")."""
    words = [w for w in heading.split() if w not in STOPWORDS]
    if len(heading.split()) < 2 or all(w[:1].isupper() for w in words):
        return False   # a name ("Vila Nova", "Suíte Lírio") places the lines under it; it is not what they say
    h = normalize_chat(heading).strip(" :")
    return re.search(r"\b" + re.escape(h) + r"\b", norm) is not None


@dataclass(frozen=True)
class Scored:
    unit: Unit
    score: float
    lexical: float
    similarity: float | None
    focus_hits: int


def score_units(message: str, units: Sequence[Unit], *, wants_price: bool = False,
                sims: Sequence[float] | None = None, hint: str = "",
                lexical_weight: float = 0.1, asked: Sequence[str] = ()) -> list[Scored]:
    """Every unit with its score for ``message`` (unsorted). ``asked``: the words that decided
    the question's intent ("parcelar" of "da pra parcelar uma castração?"): what is asked
    about, beyond the things named (a unit carrying them counts them once more)."""
    if not units:
        return []
    q_all, focus = question_words(message)
    groups = concept_forms(message)
    other_names = set().union(*groups.values()) - q_all if groups else set()
    q_all, focus = q_all | other_names, focus | other_names
    norm = normalize_chat(message)
    texts = [_stems(u.text) for u in units]
    ctxs = [_stems(u.context) - t for u, t in zip(units, texts)]
    n = len(units)
    df = Counter(s for t, c in zip(texts, ctxs) for s in (t | c))

    def idf(s: str) -> float:
        return 1.0 + math.log(n / df[s]) if df[s] else 0.0

    hint_terms = _stems(hint) - q_all
    asked_terms = _asked_stems(asked) & focus
    # a phrase of the customer's the unit says by its other name ("em casa" → "atendimento domiciliar") is
    # named as a whole, where the bare word ("voltam para casa") may mean something else: once more
    phrase_names = set().union(*phrase_forms(message).values()) - question_words(message)[0] if groups else set()
    longs = long_words(norm)
    out = []
    for k, u in enumerate(units):
        clash = stem_clashes(longs, u)
        if clash:   # "vila operaria" is not "pré-operatória": those stems name nothing of the question here
            texts[k], ctxs[k] = texts[k] - clash, ctxs[k] - clash
        lex = sum(idf(s) for s in q_all & texts[k]) + 0.5 * sum(idf(s) for s in q_all & ctxs[k])
        if ctxs[k] and heading_asked(norm, u.context):
            # "qual a taxa de entrega?" asks by the very name of the heading over the lines ("Taxa de entrega:"
            # over "- até 3 km: R$ 6,00"): those lines are what it is about, more than one naming it in passing
            lex += sum(idf(s) for s in q_all & ctxs[k])
        # the rare words of the question (names, periods: "coral", "2h") count double,
        # and a name in the item's own label ("Suíte Brisa: ...") once more
        lex += sum(idf(s) for s in focus & texts[k] if df[s] <= max(1, n // 4))
        if u.item and ":" in u.text[:60]:
            lex += sum(idf(s) for s in focus & _stems(u.text.split(":", 1)[0]))
        bonus = attribute_bonus(norm, u.text, wants_price)
        if hint_terms:
            bonus += 0.75 * sum(idf(s) for s in hint_terms & texts[k])
        bonus += sum(idf(s) for s in asked_terms if names_asked(u, [s]))
        bonus += sum(idf(s) for s in phrase_names & texts[k])
        hits = len(focus & (texts[k] | ctxs[k] | (_stems(u.label) if u.label else set())))
        if clock_asked(norm) and clock_fit(norm, fold(u.text)):
            hits += 1   # a rule the time asked falls under names it ("às 3 da tarde": "depois das 12h")
        if range_match(norm, fold(u.text)):
            hits += 1   # a line whose range holds the quantity told names it ("7km": "De 5 a 10 km")
        sim = None if sims is None else float(sims[k])
        score = (sim if sim is not None else 0.0) + lexical_weight * (lex + bonus) if sims is not None \
            else lex + bonus
        out.append(Scored(u, score, lex, sim, hits))
    return out


def long_words(norm: str) -> dict[str, frozenset[str]]:
    """The question's long words (8 letters or more) by their five-letter stem."""
    out: dict[str, set[str]] = {}
    for t in _measures(fold(norm)).split():
        if len(t) >= 8 and t not in STOPWORDS:
            out.setdefault(stem(t), set()).add(t)
    return {k: frozenset(v) for k, v in out.items()}


def stem_clashes(longs: dict[str, frozenset[str]], unit: Unit) -> set[str]:
    """The stems a long word of the question shares with the unit only by its first five letters: every word of
    the unit with that stem is as long and parts from it at the sixth ("operaria" and "pré-operatória", where
    "parcelar" and "parcelamento" agree), and is no slip of it either ("antirabica" is "antirrábica"). Two long
    words that part so late are two words, not one inflected."""
    if not longs:
        return set()
    words = _unit_words(unit.text, unit.context)
    out = set()
    for s, asked in longs.items():
        same = [w for w in words if stem(w) == s]
        if same and all(len(w) >= 8 and all(long_stem(w) != long_stem(t) and not _one_edit(w, t) for t in asked)
                        for w in same):
            out.add(s)
    return out


@functools.lru_cache(maxsize=32768)
def _unit_words(text: str, context: str) -> frozenset[str]:
    return frozenset(_measures(fold(f"{text} {context}")).split())


def _asked_stems(asked: Sequence[str]) -> set[str]:
    return {stem(t) for a in asked for t in _measures(fold(a)).split()
            if t not in STOPWORDS and t not in GENERIC and len(t) > 2}


def long_stem(word: str) -> str:
    """Five letters, or six for a long word: "parcelar" and "parcelamento" agree, "parceiros" not."""
    return stem(word, 6) if len(word) >= 8 else stem(word)


def names_asked(unit: Unit, asked: Sequence[str]) -> bool:
    """Does the unit (or its heading, or its paragraph's label: "Os períodos de 2h e 4h são cobrados à vista."
    under "Parcelamento") name one of the words the question is about (``asked``: the keywords that decided its
    intent, or their stems)?"""
    words = _unit_words(unit.text, f"{unit.context} {unit.label}")
    for a in asked:
        for t in _measures(fold(a)).split():
            if t in STOPWORDS or t in GENERIC or len(t) <= 2:
                continue
            key = long_stem(t) if len(t) >= 8 else stem(t)
            if any((long_stem(w) if len(t) >= 8 else stem(w)) == key for w in words):
                return True
    return False


def _one_edit(a: str, b: str) -> bool:
    """``a`` and ``b`` differ by one letter dropped, added, changed or two swapped ("grnde" /
    "grande", "tossa" / "tosa", "clabresa" / "calabresa")."""
    if a == b or abs(len(a) - len(b)) > 1:
        return False
    if len(a) > len(b):
        a, b = b, a
    i = 0
    while i < len(a) and a[i] == b[i]:
        i += 1
    if len(a) < len(b):
        return a[i:] == b[i + 1:]
    return a[i + 1:] == b[i + 1:] or (i + 1 < len(a) and a[i] == b[i + 1] and a[i + 1] == b[i] and a[i + 2:] == b[i + 2:])


_DIMINUTIVE = re.compile(r"^([a-z]{2,}?)z?inh([oa]s?)$")


def _spelling_of(word: str, vocab: frozenset[str]) -> str:
    """The knowledge's word for a customer's word it does not know: the word it is a
    diminutive of ("horinhas" → "horas", "banhozinho" → "banho") or the one word (by its stem)
    one slip of the finger away ("grnde" → "grande", "tossa" → "tosa"), the first letter kept;
    "" when there is none or more than one."""
    m = _DIMINUTIVE.match(word)
    if m:
        for base in (m.group(1) + m.group(2), m.group(1) + m.group(2)[0], m.group(1)):
            if base in vocab and len(base) >= 3:
                return base
    if len(word) < 5:
        return ""
    near = {w for w in vocab if w[0] == word[0] and len(w) >= 4 and _one_edit(word, w)}
    return min(near) if len({stem(w) for w in near}) == 1 else ""


_WORD = re.compile(r"[A-Za-zÀ-ÿ]+")
# the words of the lexicon's phrases ("parar o carro"): words of the language, never a slip of another
# one the knowledge writes ("carro" is no "caro"), so ``respelled`` leaves them for ``concept_forms``
_LEXICON_WORDS = frozenset(w for k in CONCEPTS for w in k.split() if len(w) >= 4)


# "metade calabresa metade mussarela", "meia quatro queijos e meia frango": two halves of two flavours,
# what a menu calls "meio a meio" (the flavours are the halves, not the question)
# a flavour may be written with a digit ("metade calabresa metade 4 queijos")
# ... but two halves of a time ("metade hj e metade no dia 5", "meia hora"): a payment or a wait split in two, no pizza
_TIME_WORDS = (r"(?!(?:hj|hoje|amanha|amanhã|agora|depois|antes|ja|já|no|na|dia|semana|mes|mês|hora|horas|ano|quando|"
               r"segunda|terca|terça|quarta|quinta|sexta|sabado|sábado|domingo)\b)")
_HALVES = re.compile(r"\b(?:metade|meia|meio) (?!a\b)(?:de )?" + _TIME_WORDS + r"(?:\d+ )?[a-zà-ÿ]+(?: [a-zà-ÿ]+)??"
                     r"(?:,| e| com)? (?:a )?(?:outra )?(?:metade|meia|meio) (?:de )?" + _TIME_WORDS + r"(?:\d+ )?[a-zà-ÿ]+",
                     re.I)


def halves_named(message: str) -> str:
    """The message with two halves of two flavours said as "meio a meio" ("da pra fazer uma broto
    metade calabresa metade mussarela?" → "da pra fazer uma broto meio a meio?")."""
    return _HALVES.sub("meio a meio", message)


def respelled(message: str, units: Sequence[Unit]) -> str:
    """``message`` with each word the retrieved knowledge does not know, not even by its stem, put
    as the knowledge writes it when it is plainly a slip or a diminutive of one of its words
    (``_spelling_of``: "qnto ta a grnde de calabresa" → "... a grande de ..."). Question words,
    chat spellings and numbers are left as typed; so is the message when nothing changes."""
    vocab = frozenset(w for u in units for w in _unit_words(u.text, u.context) if w.isalpha())
    stems = {stem(w) for w in vocab}

    def fix(m: re.Match) -> str:
        word = fold(m.group(0))
        norm = normalize_chat(word)
        if norm != word or word in STOPWORDS or word in GENERIC or word in vocab or stem(word) in stems \
                or word in _LEXICON_WORDS or any(word in w for w in vocab):
            return m.group(0)
        spelled = _spelling_of(word, vocab)
        # a slip never changes what kind of thing is asked: "sauna a vapor" is no "sauna a valor"
        # (a word one letter from a price, hours or day cue is taken as typed)
        if not spelled or any(cue.search(spelled) for cue in _KIND_CUES):
            return m.group(0)
        return spelled
    return _WORD.sub(fix, message)


_KIND_CUES = (_PRICE_Q, _HOURS_Q, _DAY_Q, _ADDRESS_Q, _DEADLINE_Q, _DURATION_Q)


_ALTERNATIVE_SEP = re.compile(r"[,;()]|\bou\b")


def without_alternatives(text: str) -> str:
    """``text`` up to a list of three or more alternatives it goes on to give ("Vinhos e espumantes
    (garrafa): espumante nacional R$ 98,00; vinho rosé R$ 105,00; vinho tinto R$ 115,00" → "Vinhos e
    espumantes", "Suco natural 500 ml (laranja, maracujá ou abacaxi)" → "Suco natural 500 ml"); the
    whole text when it lists nothing."""
    parts = [x for x in _ALTERNATIVE_SEP.split(_AMOUNT.sub(" ", text)) if x.strip(" .:")]
    # alternatives are names (a few words each), not the clauses of a sentence
    listed = len(parts) >= 3 and all(len(x.split()) <= 4 for x in parts[1:])
    return parts[0] if listed else text


_VERB_END = re.compile(r"(am|em|ar|er|ir)$")


_COMPOUND = re.compile(r"\b([a-zà-ÿ]{2,})-([a-zà-ÿ]{4,})\b")


def other_head_of_compound(message: str, text: str) -> set[str]:
    """Stems of the message's words that name a hyphenated compound of ``text`` by another head: the
    customer writes the head and its qualifier ("ticket refeição", "cartão alimentação") where the text
    writes the same qualifier with its own head ("vale-refeição"), one name for one thing. Only the
    first word of the pair (the head; Portuguese puts it first) is covered, and only when its qualifier
    follows it at once: "vinho branco" is not said by "vinho-rosé" (the qualifier differs: a sibling)."""
    compounds = {(fold(h), fold(q)) for h, q in _COMPOUND.findall(text.lower())}
    if not compounds:
        return set()
    tokens = normalize_chat(message).split()
    out: set[str] = set()
    for head, qualifier in zip(tokens, tokens[1:]):
        if head in STOPWORDS or len(head) < 3:
            continue
        if any(q == qualifier and h != head for h, q in compounds):
            out.add(stem(head))
    return out



# the people a customer speaks of as theirs ("meu namorado é vegano", "minha sobrinha é celíaca"): who the
# question is for, never the thing it asks about (``lexicon.ROLES``, pets left out: they are served)
_PEOPLE = frozenset(w for role, words in ROLES.items() if role != "pet" for w in words)
_THEIR_PERSON = re.compile(r"\b(?:meu|minha|meus|minhas) ([a-z]+)")


def told_people(message: str) -> set[str]:
    """The stems of the people a message speaks of as the customer's own ("minha mae nao pode" → "mae")."""
    return {stem(m.group(1)) for m in _THEIR_PERSON.finditer(normalize_chat(message)) if m.group(1) in _PEOPLE}


# a sum said in words of money ("250 reais", "uns 50 conto", "20 pila"): the knowledge writes it "R$"
_MONEY_STEMS = frozenset(stem(w) for w in ("reais", "real", "conto", "contos", "pila", "pilas"))


def uncovered_focus(message: str, units: Sequence[Unit]) -> set[str]:
    """Focus words of the question that no retrieved unit mentions, not even by prefix; the customer's
    people (``told_people``) are who it is for, not what it asks, and never counted."""
    _, focus = question_words(message)
    focus -= told_people(message)
    words: set[str] = set()
    for u in units:
        words |= _unit_words(u.text, u.context)
    stems = {stem(w) for w in words}
    if any("R$" in u.text for u in units):   # "uma conta de 250 reais": a sum, where the knowledge writes R$
        stems |= _MONEY_STEMS
    norm = _measures(normalize_chat(message))
    in_range = {stem(f"{a}{m}") for a, m in _Q_AMOUNT.findall(norm)} \
        if any(range_match(norm, fold(u.text)) for u in units) else set()  # "30kg" → "acima de 15 kg"
    forms = concept_forms(message)
    roots = {stem(t): t[:-2] for t in norm.split() if _VERB_END.search(t) and len(t) >= 6}

    # a long word needs a longer stem in common: "parcelar" (and "parcela") is not "parceiros"
    long_stems = {stem(t): stem(t, 6 if len(t) < 10 else 7) for t in norm.split() if len(t) >= 7 and t not in STOPWORDS}
    stems6 = {stem(w, 6) for w in words} | {stem(w, 7) for w in words}

    def covered(f: str) -> bool:
        # inside a compound ("hipoalergênico"); a word of three letters is no piece of another ("ver" in "houver")
        if f in in_range or (len(f) > 3 and any(f in w[1:] for w in words)):
            return True
        return long_stems[f] in stems6 if f in long_stems else f in stems

    def names_any(names) -> bool:  # another name, as a word of its own ("mar" is not in "margherita")
        return any(x in stems or (len(x) >= 4 and any(w.startswith(x) for w in words))
                   or (" " in x and set(x.split()) <= words) for x in names)

    def named_otherwise(f: str) -> bool:
        return names_any(forms.get(f, ()))

    def same_root(f: str) -> bool:  # a verb and its noun: "cortam" / "corte", "hospedam" / "hospedagem"
        return f in roots and any(w.startswith(roots[f]) for w in words)

    out = {f for f in focus if not covered(f) and not named_otherwise(f) and not same_root(f)}
    # a customer's phrase named otherwise is named whole: "room" of "room service" when "entrega" is written; not by
    # the wider kind it is one of ("shih tzu" is no "pet" the business has)
    for key, parts in _phrase_words(message):
        if key in focus and names_any(forms.get(key, set()) - {key} - _KIND_STEMS):
            out -= parts
    return out


#: The wider kinds the lexicon gives a breed or a species as other names ("shih tzu" → "cão", "pet", "animal").
_KIND_STEMS = frozenset(stem(w) for w in ("pet", "pets", "animal", "cao", "cachorro", "gato", "felino", "bicho"))


@functools.lru_cache(maxsize=4096)
def _phrase_words(message: str) -> tuple[tuple[str, frozenset[str]], ...]:
    """Per customer's phrase the lexicon names otherwise ("room service"): its key stem (``concept_forms``) and the
    stems of all its words. Cached like ``concept_forms``: the composer asks it per candidate set of units."""
    out: dict[str, set[str]] = {}
    for word, _ in concepts_in(_measures(normalize_chat(message))):
        own = [t for t in word.split() if t not in STOPWORDS]
        if len(own) >= 2:
            out.setdefault(stem(own[-1]), set()).update(stem(t) for t in own)
    return tuple((k, frozenset(v)) for k, v in out.items())


def unnamed_phrases(message: str, units: Sequence[Unit]) -> set[str]:
    """Focus words of a customer's phrase whose other name no retrieved unit writes ("atendem em casa?"
    with only "voltam para casa" retrieved, where the knowledge says "domiciliar"): the bare word is
    there, the phrase's meaning is not (``phrase_forms``)."""
    _, focus = question_words(message)
    words: set[str] = set()
    for u in units:
        words |= _unit_words(u.text, u.context)
    stems = {stem(w) for w in words}

    def named(x: str) -> bool:
        return x in stems or (len(x) >= 4 and any(w.startswith(x) for w in words))
    return {t for t, names in phrase_forms(message).items()
            if t in focus and names - {t} and not any(named(x) for x in names - {t})}


def says_asked_phrase(message: str, unit: Unit) -> bool:
    """A yes/no question naming a service by where it is done ("vcs atendem em casa?", "pode vir aqui em casa?"),
    in the clauses that ask it: does ``unit`` name that service as the knowledge does ("Não fazemos atendimento
    domiciliar"), by the phrase's other name (``lexicon.concepts_in``, which reads the verb: "buscam o cachorro
    em casa" is a pick-up), not by the bare word it shares ("voltam para casa")?"""
    part = question_part(message)
    if not is_yes_no(part):
        return False
    names = {stem(t) for word, others in concepts_in(normalize_chat(part)) if word in AT_HOME
             for o in others for t in fold(o).split()}
    return bool(names & unit_words(unit))


_OFFER_VERB = re.compile(r"\b(tem|tem ai|vende|vendem|aceita|aceitam|faz|fazem|serve|servem|trabalha com|trabalham com|cobra|cobram|"
                         r"aplica|aplicam|atende|atendem|oferece|oferecem|possui|possuem|usa|usam|utiliza|utilizam)\b(.*)$")


# the item ends where its purpose, company, time or place begins ("sauna na unidade da praia"), or how it is charged
# ("cobram a borda a parte?")
_ITEM_STOP = re.compile(r"[?,.;!]|\b(pra|para|pro|com|que|porque|pq|se|quando|mesmo|hoje|amanha|ai|na|no|nas|nos|em|"
                        r"a parte|separad[oa]s?|por fora)\b")


def _asked_offer(message: str, norm: str) -> tuple[str, str] | None:
    """In a yes/no question whether they have or do a thing, what follows the offer verb and the item
    it names (``norm`` is the question's normalised text); None for other questions."""
    if not is_yes_no(message):
        return None
    m = _OFFER_VERB.search(norm)
    # "minha sobrinha tem doença celíaca": what the customer's own person has is told, not asked;
    # "a suíte q tem varanda ...": a relative clause describes the item asked about, it asks no offer
    while m is not None and (_PERSON_BEFORE.search(norm[:m.start()]) or _RELATIVE_BEFORE.search(norm[:m.start()])):
        m = _OFFER_VERB.search(norm, m.end(1))
    if m is None:
        return None
    item = _ITEM_STOP.split(m.group(2), maxsplit=1)[0]  # "shampoo" of "shampoo pra cachorro com alergia"
    if re.match(r"\s*\d", item):  # "já faz 20 min": time gone by, not an item
        return None
    return m.group(2), item


def unknown_object(message: str, units: Sequence[Unit]) -> set[str]:
    """In a yes/no question about an item ("vcs vendem ração royal canin?", "tem
    vacina contra leishmaniose?"), the words of the item that no retrieved unit
    mentions, not even by prefix. The knowledge talks about the category (ração,
    vacina) but never names this one: quoting the category would answer another
    question, so the composer hands over."""
    first = message.split("?")[0]
    # "vcs fazem cirurgia de catarata? qnto custa?": the first question asks the offer, the next ones ask
    # about the thing it names (its price), so the first one's item decides
    asked = _asked_offer(message if "?" not in message.strip()[:-1] else first + "?", normalize_chat(first))
    if asked is None:
        return set()
    after, item = asked
    _, focus = question_words(item)
    qualifiers = narrowing_words(after[len(item):])
    missing = (focus | qualifiers) & uncovered_focus(message, units)
    head = next((t for t in normalize_chat(item).split() if stem(t) in focus), None)
    if missing and head is not None and stem(head) not in missing \
            and any(denies_outright(u.text, stem(head)) for u in units):
        # "tem sauna a vapor?" and "Não temos sauna em nenhuma unidade": no such thing at all denies
        # every variant of it too (the honest no), whatever the unknown qualifier
        return set()
    if missing and head is not None and missing <= qualifiers - focus and any(
            keeps_to_some(u.text, stem(head)) or closes_the_list(u.text, stem(head)) for u in units):
        # "tem desconto pra idoso?" and "os únicos descontos são os descritos": the thing is kept to the kinds
        # the knowledge lists, which answers any other kind of it (the honest no)
        return set()
    if missing:
        return missing
    # "cerveja sem álcool" where the knowledge names a "cerveja long neck" and, elsewhere, "bebidas alcoólicas":
    # the item and what "com" / "sem" add to it, each named somewhere but never together
    joined = _JOINED.match(normalize_chat(after))
    return unnamed_variant(item, units) or (unnamed_variant(f"{joined.group(1)} {joined.group(2)}", units)
                                            if joined else set())


_JOINED = re.compile(r"\s*(?:(?:o|a|os|as|um|uma)\s+)?([a-z]{3,})\s+(?:com|sem)\s+([a-z]{4,})")


#: The thing a price is asked of, right after the asking words: "qnto custa a limpeza de tartaro", "qnto vcs cobram de
#: rolha", "qnto ta o refri de 600ml", "qual o valor do kit festa" (normalised text; the item runs to ``_ITEM_STOP``
#: and to ``_WHOSE``).
_PRICE_ASKED_OF = re.compile(r"\b(?:quanto (?:que )?(?:voces? )?(?:custa|custam|sai|saem|fica|ficam|ta|esta|cobra|"
                             r"cobram)(?: (?:de|do|da|pelo|pela|por))?|(?:voces? )?cobra[m]? (?:de|do|da|pelo|pela|por)|"
                             r"qual (?:e |eh )?(?:o )?(?:valor|preco) (?:de|do|da|dos|das))"
                             r"\s+(?:(?:o|a|os|as|um|uma|aquele|aquela|esse|essa|seu|sua)\s+)?([a-z0-9][a-z0-9 ]*)")
# where whose (or on whom) the priced thing is begins: "o banho de um shih tzu", "banho e tosa nele", "num cachorro
# pequeno" (the knowledge may price by size, never by breed)
_WHOSE = re.compile(r"\b(?:(?:de|do|da|dos|das|pro|pra) (?:um|uma|uns|umas|meu|minha|meus|minhas|seu|sua|nosso|nossa)|"
                    r"num|numa|nuns|numas|nele|nela|neles|nelas|dele|dela)\b")


def unknown_priced(message: str, units: Sequence[Unit]) -> set[str]:
    """In a question asking the price of a thing, the thing's name or the kind a "de" gives it ("qnto vcs cobram de
    rolha se eu levar meu vinho?", "qnto ta a limpeza de tartaro num cachorro pequeno?", "qnto ta o refri de 600ml?")
    when no retrieved unit mentions it, not even by prefix: the lines on the wine list or on the bath prices answer
    another question, so the composer hands over. A word describing the thing ("o pacote completo", "a consulta
    normal") is no other thing (``unknown_kind`` weighs those), nor is a count ("as duas"). Empty when the price
    asked names no thing ("qnto fica pra 2h?")."""
    m = _PRICE_ASKED_OF.search(normalize_chat(question_part(message).split("?")[0]))
    if m is None:
        return set()
    words = _WHOSE.split(_ITEM_STOP.split(m.group(1), maxsplit=1)[0], maxsplit=1)[0].split()
    _, focus = question_words(" ".join(words))
    head = next((w for w in words if stem(w) in focus), None)
    if head is None or head in _NUMBER_WORDS or head.isdigit():
        return set()
    named = {stem(head)} | {stem(w) for before, w in zip(words, words[1:]) if before in ("de", "do", "da", "dos", "das")}
    return named & focus & uncovered_focus(message, units)


_ONLY_BEFORE = frozenset({"unico", "unica", "unicos", "unicas", "so", "somente", "apenas", "exclusivamente"})


def keeps_to_some(text: str, head: str) -> bool:
    """A clause of ``text`` keeps the thing of stem ``head`` to what it lists ("os únicos descontos são os
    descritos", "a carta de vinhos tem somente o tinto da casa"): an "only" word near the thing."""
    for clause in re.split(r"[,:;.!?()]", text):
        words = fold(clause).split()
        at = [k for k, w in enumerate(words) if stem(w) == head]
        if any(w in _ONLY_BEFORE and any(abs(k - a) <= 3 for a in at) for k, w in enumerate(words)):
            return True
    return False


def closes_the_list(text: str, head: str) -> bool:
    """A clause of ``text`` says the things of stem ``head`` it lists are all there are: "os únicos descontos são os
    descritos", "não oferecemos outros descontos" (not a mere "só", which keeps one item to its sizes: "pizza doce
    só é feita nos tamanhos broto e média")."""
    for clause in re.split(r"[,:;.!?()]", text):
        words = fold(clause).split()
        for a in (k for k, w in enumerate(words) if stem(w) == head and k > 0):
            if words[a - 1] in _SOLE or (words[a - 1] in _OTHER and any(w in ("nao", "nem") for w in words[:a - 1])):
                return True
    return False


_SOLE = frozenset({"unico", "unica", "unicos", "unicas"})
_OTHER = frozenset({"outro", "outra", "outros", "outras"})


# "suíte com cama redonda", "cerveja sem álcool", "vaga pra van": a preposition and the thing that narrows the
# item asked; "shampoo pra passar no cachorro" (a purpose: a verb) or "pra minha mãe" (who it is for) narrow nothing
_NARROWING = re.compile(r"^\s*(?:com|sem|pra|para|pro)\s+(?:(?:o|a|os|as|um|uma)\s+)?([a-z]{3,})(?:\s+([a-z]{3,}))?")


def narrowing_words(tail: str) -> set[str]:
    """The stems of the thing a preposition right after the item asked brings in (``tail``: the question's
    words after the item), up to two words, none a verb's infinitive, a person or a word that asks."""
    m = _NARROWING.match(tail)
    if m is None:
        return set()
    out = set()
    for w in (g for g in m.groups() if g):
        if w in STOPWORDS or w in GENERIC or w in _PEOPLE or w in _QUALIFYING or w in _CONTRACTED \
                or _INFINITIVE.search(w) or _ITEM_STOP.fullmatch(w):
            break
        out.add(stem(w))
    return out


_INFINITIVE = re.compile(r"(?:ar|er|ir|or)$")
_CONTRACTED = frozenset("pros pras pelo pela pelos pelas num numa dele dela deles delas".split())


def denies_outright(text: str, head: str) -> bool:
    """A clause of ``text`` denies the thing of stem ``head`` itself, as the object of the "no"
    ("Não temos sauna em nenhuma unidade", "não servimos sobremesa."): not a narrower kind of it
    ("Não temos piscina coletiva", "não vendemos pizza por fatia"), nor a thing named after what is denied ("Não temos opções
    veganas no cardápio" says nothing of a children's menu)."""
    for clause in re.split(r"[,:;.!?()]", text):
        words = fold(clause).split()
        for k, w in enumerate(words[:-1]):
            if w not in ("nao", "nem") or words[k + 1] not in _OFFERING:
                continue
            j = k + 2
            # "não trabalhamos com fiado": the thing after the verb's preposition is the object denied
            while j < len(words) and words[j] in ("o", "a", "os", "as", "um", "uma", "nenhum", "nenhuma", "com"):
                j += 1
            if j < len(words) and stem(words[j]) == head:
                after = words[j + 1] if j + 1 < len(words) else ""
                # "não vendemos pizza por fatia", "não temos quarto com piscina": a way or a kind of it is
                # denied (a qualifier follows), not the thing; "não temos sauna em nenhuma unidade" denies it
                return not after or (after in STOPWORDS and after not in _QUALIFYING) or after in ("nem", "ou", "e")
    return False


_QUALIFYING = frozenset("de do da dos das por com sem".split())


def offered_object(message: str) -> set[str]:
    """In a yes/no question about whether they have or do a thing ("a suíte do andar de cima tem
    elevador?", "vcs aceitam vale transporte?"), the stem of that thing (the first word naming
    something after the verb) with its other names (``concept_forms``); the things said around it
    ("a suíte do andar de cima") only say where it is asked. Empty for other questions."""
    asked = _asked_offer(message, normalize_chat(question_part(message).split("?")[0]))
    if asked is None:
        return set()
    asked_after_verb, item = asked
    _, focus = question_words(item)
    head = next((t for t in _measures(item).split() if stem(t) in focus), None)
    # the thing must end the question: "tem estacionamento pra moto?", "tem promoção de segunda?" ask of a
    # kind of it, which a line on the thing alone ("... o caminhão estacionado") does not answer
    if head is None or question_words(asked_after_verb)[1] - {stem(head)}:
        return set()
    return {stem(head)} | concept_forms(message).get(stem(head), set())


def named_items(message: str, units: Sequence[Unit]) -> set[str]:
    """The items of ``units`` the question names by their proper name ("a cama da orquidea" names
    "Suíte Orquídea"): their ``item_name``s, folded."""
    words = set(normalize_chat(message).split())
    out = set()
    for u in units:
        name = item_name(u)
        proper = [w for w in fold(name).lower().split()[1:] if w not in STOPWORDS]
        if name and proper and all(w in words for w in proper):
            out.add(fold(name).lower())
    return out


def sibling_item(unit: Unit, asked: set[str]) -> bool:
    """A list item about another item of the kind asked by name ("Suíte Brisa: cama queen" when the
    question names the Suíte Orquídea): the line of a sibling, which never answers for the item asked."""
    name = fold(item_name(unit)).lower()
    if not name or name in asked:
        return False
    words = set(fold(unit.text).lower().replace(":", " ").replace(",", " ").split())
    # "Suíte Coral: tudo o que a Brisa tem, mais ofurô" speaks of the Brisa too
    return not any(set(a.split()[1:]) <= words for a in asked) and any(a.split()[0] == name.split()[0] for a in asked)


_ONLY_VARIANTS = re.compile(r"\b(?:so|somente|apenas)\b[^.;]*?\b(?:nos|nas|em|no|na)\s+(?:tamanhos?|sabores?|tipos?|versoes|"
                            r"opcoes)\s+([a-z ,]+?)\s*(?:[.;]|$)")


def excluded_variant(message: str, units: Sequence[Unit]) -> Unit | None:
    """"a pizza doce grande de brigadeiro?", "dá pra pedir a de brigadeiro no tamanho grande?": a unit limiting
    a thing to some variants ("Pizza doce só é feita nos tamanhos broto e média.") while the question asks it
    in another variant of the same list (the knowledge lists "Grande" beside "Broto" and "Média"): that
    limit is the answer, whatever price or line the other words find. The thing is named by the question
    or by the heading of a line naming a word of the question ("Brigadeiro, ..." under "Pizzas doces");
    None when no unit limits what the question asks."""
    _, focus = question_words(question_part(message))
    if not focus:
        return None
    for u in units:
        folded = fold(u.text).lower()
        m = _ONLY_VARIANTS.search(folded)
        if m is None:
            continue
        options = {stem(w.strip()) for w in re.split(r",|\s+e\s+|\s+ou\s+", m.group(1)) if w.strip()}
        subject = _stems(folded[:m.start()])
        # ... by the heading of a line naming a word of the question other than the thing's own ("brigadeiro")
        own = set(focus) | {s for v in units if (focus - subject) & _stems(v.text) for s in _stems(v.context)}
        if not subject or not subject <= own:
            continue
        # a variant of the list: an item labelled by the word beside items labelled by the options
        labelled = {stem(fold(v.text.split(":", 1)[0]).lower()): v.context for v in units
                    if ":" in v.text[:20] and len(v.text.split(":", 1)[0].split()) == 1}
        contexts = {labelled[o] for o in options if o in labelled}
        asked = [f for f in focus - options - subject if labelled.get(f) in contexts]
        if contexts and asked:
            return u
    return None


# a noun and a relative pronoun just before a verb: "a suíte q tem", "o quarto que tem"
_RELATIVE_BEFORE = re.compile(r"\b(?:o|a|os|as|um|uma) [a-z]{3,} (?:q|que)\s*$")
# the customer's own person just before a verb: its subject ("meu filho tem", "minha mãe faz"), or the customer
# ("a gente tem uma shih tzu, ela pode ficar ...?": told, not asked)
_PERSON_BEFORE = re.compile(r"\b(?:(?:meu|minha|meus|minhas) (?:" + "|".join(sorted(_PEOPLE)) + r")|a gente|nos)\s*$")


def unnamed_variant(item: str, units: Sequence[Unit]) -> set[str]:
    """"cerveja artesanal" where the knowledge names a "cerveja long neck" and, elsewhere, a
    "linguiça artesanal": a noun and the word right after it that qualifies it, each named
    somewhere but never together. The item asked is not one the knowledge offers: the
    qualifier's stem (empty when some unit names both, or the item is a single word)."""
    words = [t for t in _measures(normalize_chat(item)).split() if len(t) > 1]
    if len(words) < 2 or words[0] in STOPWORDS or words[1] in STOPWORDS or words[0] in GENERIC \
            or words[1] in GENERIC or words[1].isdigit() or words[0].isdigit():
        return set()
    head, qual = stem(words[0]), stem(words[1])
    named = [_stems(f"{u.text} {u.context}") for u in units]
    if not any(head in n for n in named) or not any(qual in n for n in named):
        return set()
    if any(head in n and qual in n for n in named):
        return set()
    # "tem prato vegano?" and "Não temos opções veganas": a no to the qualifier answers it (the honest no)
    return set() if any(says_no(u.text, {qual}) for u in units) else {qual}


_KIND_OF = re.compile(r"\b(?:custa|custam|custaria|valor|preco|sai|fica|cobra|cobram|ta|esta)\s+(?:a |o |um |uma |da |do |de |na |no )?"
                      r"([a-z]{3,}) (?:(?:de|do|da|contra|pra|para) )?([a-z]{4,})\b")


_ACT_PRICED = re.compile(r"\b(?:custa|custam|cobra|cobram|sai|fica|preco|valor)\b(?: \S+){0,3}? (?:pra|para) "
                         r"([a-z]{3,}(?:ar|er|ir))(?: e [a-z]{3,}(?:ar|er|ir))? (?:um |uma |o |a |os |as |minha |meu )?"
                         r"([a-z]{4,})\b")
_PRICED = re.compile(r"(?:custa|custam|custaria|valor|preco|sai|fica|cobra|cobram)\b")   # "ta espirrando" prices nothing


# qualifiers of the plain item itself ("consulta normal"): no variant of it
_PLAIN = frozenset("normal normais comum comuns simples basico basica padrao tradicional tradicionais".split())


def unknown_kind(message: str, units: Sequence[Unit]) -> set[str]:
    """In a price question, the kind of a thing the knowledge prices, when it never names that
    kind ("quanto custa uma cirurgia de catarata": cirurgia yes, catarata never): quoting the
    price of another kind would state a wrong price, so the composer hands over. The same for
    a named variant ("quanto custa a suíte presidencial")."""
    _, focus = question_words(message)
    missing = uncovered_focus(message, units)
    if not missing:
        return set()
    out = set()
    named = _named_heads(units)
    for m in _KIND_OF.finditer(_measures(normalize_chat(message))):
        head, kind = m.group(1), m.group(2)
        if stem(head) in focus and stem(head) in missing and _PRICED.match(m.group(0)):
            # "qnto custa o kit de massagem?", "qnto sai o combo pizza ...?": the very thing priced is a word no
            # retrieved unit writes; a price of anything else around it is another thing's price
            out.add(stem(head))
            continue
        if stem(head) not in focus or stem(head) in missing or stem(kind) not in missing:
            continue
        # "cirurgia de catarata": a kind; "suíte presidencial": a name, where the knowledge names
        # its items ("Suíte Brisa", "Suíte Coral"); "consulta normal" is neither
        if " de " in m.group(0) or " do " in m.group(0) or " da " in m.group(0) or stem(head) in named \
                or kind not in _PLAIN:
            out.add(stem(kind))
    for m in _ACT_PRICED.finditer(normalize_chat(message)):
        # "qnto cobram pra alugar um projetor ...?", "quanto vcs cobram pra lavar e passar uma peça?": the thing
        # the priced act is done to, named by no unit
        if stem(m.group(2)) in focus and stem(m.group(2)) in missing:
            out.add(stem(m.group(2)))
    return out


IDENTIFYING_WORDS = 3   # focus words one unit must name to identify an item without the unknown qualifier


def identifies_item(message: str, units: Sequence[Unit], top: Unit) -> bool:
    """The best unit names every focus word of the question that the retrieved knowledge names,
    at least ``IDENTIFYING_WORDS`` of them ("qnto fica o pacote completo com aquele letreiro, pro
    pedido de casamento?": "Pacote Pedido de Casamento — R$ 390,00: ... letreiro luminoso"): the
    item is identified by the kind's head and the other words said of it, so an unknown qualifier
    ("completo") describes it rather than names another variant. "a suíte presidencial" (the head
    alone) or "cirurgia de catarata no gato" (two words) stay unknown kinds (``unknown_kind``)."""
    _, focus = question_words(message)
    missing = uncovered_focus(message, [top])
    return missing == uncovered_focus(message, units) and len(focus - missing) >= IDENTIFYING_WORDS


# ("qual o telefone fixo da unidade?": the attribute may carry one qualifier after it)
_WHICH_ATTRIBUTE = re.compile(r"\bqua(?:l|is)(?: (?:e|eh|era|seria))? (?:o|a|os|as) ([a-z]{3,})(?: [a-z]{3,})? (?:d[oa]s?|de)\b")
# the item first, the attribute after: "o chopp é de qual marca?", "a ração é de que marca", "o vinho é qual
# safra" (the question ends on the attribute: "é de qual unidade o telefone?" names its item after it)
_ITEM_THEN_ATTRIBUTE = re.compile(r"\b(?:e|eh|sao|seria|era) (?:de |da |do )?(?:qual|quais|que) ([a-z]{3,})$")
_PIECE_END = re.compile(r"[?!.,;\n]+")
# "a piscina tem quantos metros de comprimento?", "a agua fica a quantos graus?": a measure asked, which a line
# answers only by writing that measure; time and people are counted by lines in their own forms ("2h", "até 4")
_HOW_MANY = re.compile(r"\bquant[oa]s ([a-z]{3,})")
# the brand of what is sold or served ("vcs vendem racao? qual marca?", "qual marca de ração premium vcs dão?", "tem da
# marca que o meu come?"): a line naming the thing answers it only by naming a brand, which it would write as "marca"
_BRAND = re.compile(r"\b(?:qual|quais|que|da|de|dessa|desta|na)\s+(marca)s?\b")
_COUNTED_ANYWHERE = frozenset({"horas", "hora", "horinhas", "minutos", "dias", "dia", "semanas", "meses", "anos",
                               "vezes", "pessoas", "pessoa", "criancas", "adultos", "reais", "conto", "pila"})


def unknown_attribute(message: str, units: Sequence[Unit]) -> set[str]:
    """In a "qual é o X de Y" question ("qual a marca da ração premium?", "qual a senha do
    wifi?"), the attribute X when no retrieved unit mentions it, not even by prefix: the
    knowledge talks about Y but never says its X, so quoting it would answer another question."""
    norm = normalize_chat(message)
    m = _WHICH_ATTRIBUTE.search(norm) or next(
        (m for piece in _PIECE_END.split(message) if (m := _ITEM_THEN_ATTRIBUTE.search(normalize_chat(piece).strip()))),
        None)
    if m is None:
        m = _HOW_MANY.search(norm)
        if m is not None and m.group(1) in _COUNTED_ANYWHERE:
            m = None
    if m is None:
        m = _BRAND.search(norm)
    if m is None:
        return set()
    word = m.group(1)
    if word == "nome":  # a name is answered by a unit naming someone (``names_someone``), not by the word
        return set()
    words: set[str] = set()
    for u in units:
        words |= _unit_words(u.text, u.context)
    # the word itself or its plural: "marca" is not "marcada"
    if {word, word + "s", word + "es", word[:-1] if word.endswith("s") else word} & words:
        return set()
    # "qual o endereço da unidade da rodovia?": the attribute is one the composer reads by its form
    # (an address, hours, a day), and a unit carries it ("Rodovia SP-191, km 34"): it is there
    if any(carries_asked_attribute(message, u.text) for u in units):
        return set()
    return {stem(word)} & question_words(message)[1]


# "qual a suíte mais baratinha", "o mais em conta", "qual dos pacotes é o mais caro": the extreme of
# a kind by price (a determiner before "mais", not a comparison "mais barato que" / "X ou Y")
_EXTREME_PRICE = re.compile(r"\b(?:o|a|os|as|qual|quais)((?: [a-z]+){0,3}) (?:mais|menos) (barat[a-z]*|em conta|economic[a-z]*|"
                            r"acessive[a-z]*|car[oa]s?|salgad[oa]s?)\b(?: (?:d[oa]s?|de) ([a-z]{3,}))?(?! (?:que|do que)\b)")
_AMONG = re.compile(r"\bqua(?:l|is) d[oa]s ([a-z]{3,})")
_CHEAP = ("barat", "em conta", "economic", "acessive")
# words that name no kind ("qual é a opção mais em conta pra 2h?" asks the cheapest of whatever is priced for 2h)
_ANY_KIND = frozenset({"opcao", "opcoes", "alternativa", "alternativas", "coisa", "coisas", "algo", "item", "itens"})
_AMOUNT = re.compile(r"R\$\s*(\d+(?:\.\d{3})*(?:,\d{1,2})?)")


def extreme_price(message: str) -> tuple[str, frozenset[str]] | None:
    """("min" | "max", the stems of the kind asked) when the question asks for the cheapest or
    the dearest of a kind ("qual a suíte mais baratinha" → min, {suite}; "o mais em conta" → min,
    no kind; "qual dos pacotes é o mais caro" → max, {pacot}); "menos caro" is the cheapest. None
    for a comparison ("é mais caro que...?", "a broto ou a média?") or no superlative at all."""
    norm = normalize_chat(question_part(message))
    if " ou " in f" {norm} ":
        return None
    m = _EXTREME_PRICE.search(norm)
    if m is None:
        return None
    cheap = m.group(2).startswith(_CHEAP)   # else "caro", "salgado" (price slang): the dearest
    direction = "min" if cheap != (" menos " in m.group(0)) else "max"
    among = _AMONG.search(norm)   # "qual dos pacotes é o mais caro"
    words = (m.group(1) or "").split() + [g for g in (m.group(3), among and among.group(1)) if g]
    kind = frozenset(stem(w) for w in words if w not in STOPWORDS and w not in GENERIC and w not in _ANY_KIND
                     and len(w) > 2)
    return direction, kind


_PERIOD_LABEL = re.compile(r"^(?:\d{1,2}h|pernoite|diaria)$")


def price_labels_asked(message: str) -> list[str]:
    """The price labels a question names as a list's prices write them ("2h" of "qual sai mais em conta pra ficar
    4h?", "pernoite"), in order."""
    return [t for t in _measures(normalize_chat(question_part(message))).split() if _PERIOD_LABEL.match(t)]


def _amounts(text: str) -> list[float]:
    return [float(a.replace(".", "").replace(",", ".")) for a in _AMOUNT.findall(text)]


# "o q eu faço?", "e agora, como resolvo?", "e agora?": asked at the end of a sentence, after a story, it asks
# what to do about what was told (not "como faço pra agendar?": something follows the verb)
_WHAT_TO_DO = re.compile(r"(?:^|\b)(?:e agora |e ai |entao )?(?:o que|como|que) (?:(?:eu|a gente|agente|nos|"
                         r"que eu|q eu) )?(?:devo |posso |tenho que |preciso )?(?:faco|fasso|fazemos|faz|fazer|"
                         r"resolvo|resolvemos|resolve|resolver|procedo|proceder)(?: (?:agora|entao|nesse caso|"
                         r"com isso|ai|isso|dai))?$"
                         # a bare "e agora?" after the story asks the same ("veio a pizza errada!!! e agora???")
                         r"|^e agora$")
# what a business writes on a problem with an order or a service ("Pedido errado ou com problema:
# refazemos...", "Reclamações: ...", "produto com defeito")
PROBLEM_STEMS = ("problem", "errad", "reclam", "defeit")


def asks_what_to_do(message: str) -> bool:
    """Whether a sentence of the message ends in "what do I do (now)?" with a story told before it
    (at least three words): the question is about the problem told ("a pizza chegou fria, o que eu
    faço?"); "como faço pra agendar?" (something follows the verb), a bare "oq eu faço?" and a wish
    told ("quero marcar um banho, como faço?") are not."""
    pieces = [normalize_chat(p).strip() for p in re.split(r"[?!.\n,;]+", message)]
    told = 0
    for p in filter(None, pieces):
        m = _WHAT_TO_DO.search(p)
        if m and told + len(p[: m.start()].split()) >= 3:
            # ... a story, not a wish ("quero marcar um banho, como faço?" asks how to book)
            return not _WISH.search(" ".join(pieces))
        told += len(p.split())
    return False


_WISH = re.compile(r"\b(?:quero|queria|quer|queremos|gostaria|pretendo|preciso|precisava|vou|vamos)\b(?! (?:q|que)\b)")


def addresses_problem(text: str) -> bool:
    """A unit on what the business does about a problem (it names one: "problema", "errado",
    "reclamação", "defeito")."""
    return any(w.startswith(PROBLEM_STEMS) for w in fold(text).split())


def unit_amounts(text: str) -> list[float]:
    """The amounts in reais a unit states ("R$ 1.250,00" → 1250.0)."""
    return _amounts(text)


# a bare amount in a message ("459", "86 reais", "R$ 58", "58,90"): not a time, a weight, a count of
# days, years or people, a percentage or a phone number (a number of at most five digits)
_NAMED_AMOUNT = re.compile(
    r"(?<![\d:.,/-])(?:r\$\s*)?(\d{2,5}(?:,\d{2})?)(?![\d:/-]|[.,]\d|\s*(?:%|x\b|h\b|hs?\b|hrs?\b|horas?\b|min|kg|quilo|"
    r"g\b|gramas?\b|km|m\b|metros?\b|anos?\b|mes|meses\b|dias?\b|semanas?\b|pessoas?\b|vezes\b|pizzas?\b|"
    r"unidades?\b|[ºª°]))",
    re.IGNORECASE)


def amounts_named(message: str) -> set[float]:
    """The amounts of money a message may name as bare numbers ("459 na lírio??" → {459.0},
    "86 reais numa família" → {86.0}); times, weights, ages and counts are not amounts. An amount told of
    another business ("no motel da esquina 2h sai 60 conto") is its price, not one of ours
    (``elsewhere``)."""
    out = set()
    for clause in _CLAUSES.split(message):
        if elsewhere(clause):
            continue
        for m in _NAMED_AMOUNT.finditer(clause):
            v = float(m.group(1).replace(",", "."))
            if v >= 10:
                out.add(v)
    return out


_CLAUSES = re.compile(r"[;!?\n]+|(?<!\d),|,(?!\d)|\.(?!\d)")   # not the comma or point of "99,90"
# another business of the kind, where the customer says it costs less: "no motel da esquina", "no outro motel",
# "no da marginal", "la na concorrente", "na pizzaria do lado"
_ELSEWHERE = re.compile(r"\b(?:no|na|o|a)\s+(?:outr[oa]\s+)?(?:motel|pizzaria|clinica|veterinaria|pet ?shop|hotel|hotelzinho)"
                        r"\s+(?:da|do|de|ali|la|perto)\b(?!\s+(?:vcs|voces|voce|vc)\b)"
                        r"|\b(?:no|na|o|a|do|da)\s+outr[oa]\s+(?:motel|pizzaria|clinica|veterinaria|pet ?shop|hotel|lugar)\b"
                        r"|\bconcorr[a-z]*|\bn[oa]\s+d[ao]\s+(?:esquina|marginal|br|estrada|lado|frente|rodovia)\b")


def elsewhere(clause: str) -> bool:
    """Whether a clause speaks of another business of the kind ("no motel da esquina 2h sai 60 conto")."""
    return bool(_ELSEWHERE.search(normalize_chat(clause)))


def tells_of_elsewhere(message: str) -> bool:
    """Whether any clause of the message speaks of another business of the kind (``elsewhere``)."""
    return any(elsewhere(c) for c in _CLAUSES.split(message))


def labels_named(message: str, units: Sequence[Unit]) -> set[str]:
    """The price labels of ``units`` the message names ("2h" of "... 2h sai 60 conto", "pernoite")."""
    words = set(_measures(normalize_chat(message)).split())
    return {label for u in units for label, _ in labelled_prices(u.text) if label in words}


def cheapest_at(label: str, units: Sequence[Unit]) -> Unit | None:
    """The named item (``item_head``) with the lowest price under ``label`` ("2h"), None when no item has one."""
    best = None
    for u in units:
        if not item_head(u):
            continue
        price = dict(labelled_prices(u.text)).get(label)
        if price is not None and (best is None or (price, u.order) < best[0]):
            best = ((price, u.order), u)
    return best[1] if best else None


def item_head(unit: Unit) -> str:
    """The stem of the first word of a list item's label ("suite" of "Suíte Brisa: ...", "pacot"
    of "Pacote Pétalas — R$ 120,00: ..."); "" for prose."""
    if not unit.item:
        return ""
    words = re.findall(r"[A-Za-zÀ-ÿ]+", unit.text[:40])
    return stem(fold(words[0])) if words else ""


def extreme_item(message: str, units: Sequence[Unit]) -> Unit | None:
    """The cheapest (or dearest) item of the kind asked among ``units`` (``extreme_price``): the
    priced list items whose label opens with the kind ("Suíte Brisa ... 2h: R$ 89,00"), each
    compared by its lowest price for the cheapest and its highest for the dearest. With no kind
    said, the priced items of one kind only (all their labels open alike). None unless two or
    more such items are there to compare: one item is no answer to "which is the cheapest"."""
    asked = extreme_price(message)
    if asked is None:
        return None
    direction, kind = asked
    priced = [(u, item_head(u), _amounts(u.text)) for u in units]
    priced = [(u, h, a) for u, h, a in priced if h and a]
    if kind:
        priced = [(u, h, a) for u, h, a in priced if h in kind]
    elif len({h for _, h, _ in priced}) != 1:
        return None
    if len(priced) < 2:
        return None
    key = (lambda x: (min(x[2]), x[0].order)) if direction == "min" else (lambda x: (-max(x[2]), x[0].order))
    return min(priced, key=key)[0]


def _named_heads(units: Sequence[Unit]) -> set[str]:
    """Stems of the words the knowledge follows with a proper name ("Suíte Brisa", "Pacote Pétalas")."""
    out = set()
    for u in units:
        for m in re.finditer(r"\b([A-Za-zÀ-ÿ]{3,}) [A-ZÀ-Ý][a-zà-ÿ]{2,}", u.text):
            out.add(stem(fold(m.group(1))))
    return out


_TO_THE_AGENT = re.compile(r"\b(voce|vc) (e|eh|ta|esta|tem|sabe|entende|gosta)\b")

#: Small talk with the people at the business about themselves or the day, not about what it offers: their football
#: team ("vc torce pra qual time?", "vcs torcem pra Bahia ou Vitória?"), how long one has worked there ("vc trabalha ai
#: faz tempo?"), which of two things they like ("vcs gostam mais de gato ou de cachorro?"), the weather ("vcs viram q
#: o tempo vai virar amanha?"). Eight tuning questions of eight writers ask it, all labelled general and answerable
#: with no knowledge: the knowledge has nothing to quote and nothing is handed over to the team.
_SMALL_TALK = re.compile(r"\b(?:voce|voces|tu|vc|vcs) (?:torce|torcem|torces)\b|\bqual (?:e |eh )?(?:o )?(?:seu|teu) time\b|"
                         r"\b(?:voce|tu|vc) (?:trabalha|trabalhas) (?:ai|aqui|la) (?:faz|ha) (?:muito |quanto )?tempo\b|"
                         r"\bha quanto tempo (?:voce|tu|vc) (?:trabalha|trabalhas)\b|"
                         r"\b(?:voce|voces|vc|vcs|tu) (?:gosta|gostam|gostas) mais de \w+ ou\b|"
                         r"\b(?:tempo|clima) vai (?:virar|mudar|fechar)\b|\bvai chover\b")


def small_talk(message: str) -> bool:
    """Every question the message asks (each sentence ending in "?"; the whole message when it has none) is small
    talk (``_SMALL_TALK``): "vc torce pra qual time? aqui é Fortaleza kkk" is; "vc torce pra qual time? e qnto ta a
    brisa?" asks the business too."""
    asked = QUESTION_SENTENCE.findall(message) or [message]
    return all(_SMALL_TALK.search(normalize_chat(q)) for q in asked)


#: What may open a clause before its question word when a question is asked without a "?": a conjunction or
#: filler ("e quando", "oi, quem"), a preposition of the question itself ("pra quem eu mando", "com quem falo").
_OPENS_A_QUESTION = re.compile(r"^(?:(?:e|mas|ai|entao|tipo|gente|oi|ola|ei|so)\b ?)*(?:pra|para|com|de|a|em|por)?$")
#: The asker's frame right before it ("queria saber quando", "vc sabe quem", "me fala quando", "sabe quando").
_ASKING_FRAME = re.compile(r"(?:^|\s)(?:saber|(?:me )?(?:diz|fala|informa|avisa|explica|confirma)\w*|"
                           r"(?:voce|voces|vc|vcs|tu) \w+|(?:quero|queria|gostaria|preciso|pode|podem|poderia|consegue) "
                           r"\w+|^sabe\w*)(?: (?:pra|para|com|de|a|em|por))?$")
#: The words before a question word, from its clause's start (after a comma, stop, "!", ";" or ":").
_CLAUSE_HEAD = re.compile(r"(?:^|[,.;!:])\s*([^,.;!:]*?)\s*$")


def _connective(norm: str, m: re.Match) -> bool:
    """Whether a "quando" or "quem" in a message without a "?" joins a statement ("o zeus fica doido qdo ve a van",
    "parabens pra quem decorou", "pago no pix quando confirmar") rather than asking: something other than an
    opening filler or preposition (``_OPENS_A_QUESTION``) stands before it in its clause, and no asking frame
    (``_ASKING_FRAME``) does."""
    if m.group(0) not in ("quando", "quem"):
        return False
    head = _CLAUSE_HEAD.search(norm[:m.start()]).group(1).strip()
    return not _OPENS_A_QUESTION.match(head) and not _ASKING_FRAME.search(head)


def asks_the_business(message: str) -> bool:
    """A question about what the business offers or how something of it is ("vcs colocam
    microchip?", "o x-aurora vem com o quê?"): never small talk, whatever the intent says; not a
    question to the agent ("vc é robô?"). Without a "?", a question word that only joins a statement
    (``_connective``) asks nothing."""
    norm = normalize_chat(message)
    if "?" not in message and all(_connective(norm, m) for m in _WH.finditer(norm)):
        return False
    if _TO_THE_AGENT.search(norm):
        return False
    _, focus = question_words(message)
    return bool(focus) and bool(re.search(r"\bvoces\b", norm) or _OFFER_VERB.search(norm) or _WH.search(norm))


_ANAPHOR_OPENING = re.compile(r"^(?:passando|passado|depois|alem|apos|fora|antes|acima|abaixo) (?:disso|desse|dessa|deste|"
                              r"desta|isso|esse|essa|este|esta)\b|^(?:nesse|neste|nessa|nesta) caso\b|"
                              r"^caso contrario\b|^do contrario\b")


def opens_with_anaphor(text: str) -> bool:
    """Whether a sentence opens by pointing back at the one before it ("Passando disso, cada hora adicional
    custa R$ 40,00", "Depois disso, o atendimento pode ser remarcado", "Nesse caso, ..."): alone it says
    nothing of what "disso" is."""
    return bool(_ANAPHOR_OPENING.match(fold(text)))


#: A sentence whose subject is a pronoun standing for the thing of the sentence before it ("Sem glúten: temos massa
#: sem glúten ... Ela é preparada na mesma cozinha ...; por isso não é recomendada para celíacos").
_PRONOUN_OPENING = re.compile(r"^(?:ela|ele|elas|eles)\b")


def opens_with_pronoun(text: str) -> bool:
    return bool(_PRONOUN_OPENING.match(fold(text)))


def pronoun_antecedent(unit: Unit, units: Sequence[Unit]) -> Unit | None:
    """The unit before ``unit`` in its chunk when ``unit`` opens with a pronoun standing for its thing."""
    if not opens_with_pronoun(unit.text):
        return None
    return _in_chunk({u.order: u for u in units}, unit, -1)


def with_antecedents(picked: Sequence[Unit], units: Sequence[Unit]) -> list[Unit]:
    """The picked units, each one opening by pointing back (``opens_with_anaphor``) preceded by the unit
    before it in its chunk when that one is not picked: "Passando disso, cada hora adicional custa R$ 40,00"
    is quoted after "Tempo extra: tolerância de 15 minutos depois do fim do período."."""
    by_order = {u.order: u for u in units}
    out: list[Unit] = []
    for u in picked:   # the best unit stays first (``answer_text`` quotes in reading order)
        if u not in out:
            out.append(u)
        before = _in_chunk(by_order, u, -1)
        if (opens_with_anaphor(u.text) or opens_with_pronoun(u.text)) and before is not None and before not in picked \
                and before not in out:
            out.append(before)
    return out


def _in_chunk(by_order: dict[int, Unit], unit: Unit, step: int) -> Unit | None:
    """The unit ``step`` places from ``unit`` in reading order, when it is in the same chunk (orders are
    chunk rank × 1000 + place)."""
    other = by_order.get(unit.order + step)
    return other if other is not None and other.order // 1000 == unit.order // 1000 else None


def with_other_branch(picked: Sequence[Unit], units: Sequence[Unit]) -> list[Unit]:
    """The picked units, each one followed by the next unit of its chunk when that one goes on from it by
    pointing back (``opens_with_anaphor``): "cancelando com até 24 horas de antecedência, devolvemos o sinal"
    is half a rule without "Depois desse prazo, o sinal não é devolvido.", whichever half was asked."""
    by_order = {u.order: u for u in units}
    out: list[Unit] = []
    for u in picked:
        if u not in out:
            out.append(u)
        after = _in_chunk(by_order, u, 1)
        if after is not None and opens_with_anaphor(after.text) and after not in picked and after not in out:
            out.append(after)
    return out


#: "a pizza vegana é sem lactose?", "tem opção sem glúten?", "é livre de açúcar?": what is asked is an absence, so a
#: line denying the thing ("as pizzas veganas não contêm lactose") answers yes, never "Não".
_ABSENCE = re.compile(r"\b(?:sem|livre de|livres de|zero)\b")


def asks_an_absence(message: str) -> bool:
    """The question asks whether something comes without a thing (``_ABSENCE``)."""
    return _ABSENCE.search(normalize_chat(question_part(message))) is not None


_RANGE_OPENING = re.compile(r"^(?:ate|de|acima de|a partir de|mais de|menos de) \d")


def _opens_with_range(unit: Unit) -> bool:
    """A list row that is nothing but its range and price ("até 3 km: R$ 6,00" under "Taxa de entrega"): quoted
    alone it names nothing, so its heading goes with it."""
    return unit.item and bool(_RANGE_OPENING.match(fold(unit.text))) and bool(range_measures(fold(unit.text)))


def answer_text(message: str, picked: Sequence[Unit]) -> str:
    """The picked units in reading order, with a clear "Não" when a yes/no
    question's best unit says no, and a heading label when the unit needs it
    to name what it is about ("Vila Nova: Av. dos Ipês, 1.250.")."""
    if not picked:
        return ""
    q_all, focus = question_words(message)
    parts = []
    for u in sorted(picked, key=lambda x: x.order):
        text = u.text
        ctx_only = (focus & _stems(u.context)) - _stems(u.text)
        if u.context and len(u.context.split()) <= 4 and (ctx_only or _opens_with_range(u)):
            text = f"{u.context}: {text}"
        parts.append(text)
    if is_yes_no(message) and not asks_an_absence(message) \
            and (says_no(picked[0].text, focus, q_all | expanded_focus(message))
                               or denies_whole_kind(picked[0].text, expanded_focus(message) - focus,
                                                    q_all | expanded_focus(message))):
        lead = parts[[u for u in sorted(picked, key=lambda x: x.order)].index(picked[0])]
        parts.remove(lead)
        parts.insert(0, "Não, " + lead[0].lower() + lead[1:] if fold(lead).startswith("nao") else "Não. " + lead)
    return " ".join(parts)


# "a calabresa de vcs é apimentada?", "o suco vem adoçado?": a yes/no question whether the thing named is
# of some kind, the kind last
_PREDICATE = re.compile(r"^(?:(?:o|a|os|as) )?([a-z]{3,}(?: [a-z]{2,}){0,3}?)(?: (?:de voces|dai|daqui))? "
                        r"(?:e|eh|sao|vem|vem com|fica|ficam) (?:(?:a|de|com) )?([a-z]{4,})$")


# "a pizza de vcs é no forno a lenha?", "o pão é feito com fermento natural?": the kind is the word qualifying the
# place or means ("lenha", "natural")
_PREDICATE_MEANS = re.compile(r"^(?:(?:o|a|os|as) )?[a-z]{3,}(?: [a-z]{2,}){0,3}?(?: (?:de voces|dai|daqui))? "
                              r"(?:e|eh|sao)(?: (?:feit[oa]s?|assad[oa]s?|servid[oa]s?))? (?:no|na|num|numa|com|em) "
                              r"[a-z]{4,} (?:(?:a|de) )?([a-z]{4,})$")


def unknown_predicate(message: str, units: Sequence[Unit]) -> set[str]:
    """In a yes/no question whether a thing is of some kind ("a calabresa é apimentada?"), the kind when no
    retrieved unit writes it: the line naming the thing says nothing of that kind, so quoting it answers
    another question. Empty for other questions."""
    part = question_part(message)
    if not is_yes_no(part):
        return set()
    said = normalize_chat(part).rstrip("?!. ")
    m = _PREDICATE.match(said) or _PREDICATE_MEANS.match(said)
    kind = m.group(m.lastindex) if m is not None else ""
    if not kind or kind in GENERIC or kind in STOPWORDS or _INFINITIVE.search(kind):
        return set()
    return {stem(kind)} & uncovered_focus(message, units)


# "posso ficar junto durante o banho?", "da pra eu assistir a consulta?": a customer asking leave to be present at
# a service (in the first person: "pode marcar sábado?" asks the business to act). What is asked is the presence:
# a verb of staying ("ficar", "estar") is named by the word after it ("junto", "olhando", "do lado"; ``respelled``
# may have put it as the knowledge inflects it, "ficam"), a verb of presence by itself. Any other act asked leave
# for ("posso acertar metade agora?") is often the knowledge's act in other words ("pagamento posterior"), and is
# left to the score
_PERMISSION = re.compile(r"^(?:e |mas |ai |entao )?(?:(?:eu )?posso|podemos|(?:a gente|nos) pode(?:mos)?|"
                         r"(?:da|dar|tem como) (?:pra )?(?:eu|a gente)|e permitido|(?:voces )?deixam (?:eu|a gente)) "
                         r"(?:(?:fica|esta|permanece)[rm]? (?:(?:do|ao|no|na|de) )?([a-z]{4,})|"
                         r"(acompanhar|assistir|presenciar|olhar|entrar junto))\b")


_STAYING = frozenset(stem(w) for w in ("fica", "ficar", "ficam", "esta", "estar", "estao", "permanecer", "permanecem"))


def names_the_occasion(message: str, acts: set[str], unit: Unit) -> bool:
    """Whether ``unit`` names something of the question besides the presence asked (``acts``) and the verb of staying:
    the service it is asked at ("banho", "tosa", "consulta")."""
    _, focus = question_words(message)
    return bool((focus - acts - _STAYING - told_people(message)) & _stems(f"{unit.text} {unit.context}"))


def unknown_permitted_act(message: str, units: Sequence[Unit]) -> set[str]:
    """In a question asking leave to be present at a service ("posso ficar junto durante o banho?"), the presence
    asked when no retrieved unit names it: a rule on the bath ("não sedamos animais para banho") says nothing of
    staying beside the pet, so quoting it answers another question. Empty for other questions."""
    part = question_part(message)
    if not is_yes_no(part):
        return set()
    m = _PERMISSION.match(normalize_chat(part).rstrip("?!. "))
    act = m and (m.group(1) or m.group(2).split()[0])
    if not act or act in STOPWORDS or act in GENERIC:
        return set()
    return {stem(act)} & uncovered_focus(message, units)


# ---------------------------------------------------------------- what concedes on a price objected to
# "459 na lírio?? tá puxado": after the price confirmed, an attendant offers what applies to that price: paying
# it in instalments, when the business allows it for that amount and that period, and the same kind of item
# for less ("a Suíte Brisa sai R$ 199,00 a pernoite").

# "2h: R$ 219,00 · 4h: R$ 289,00 · Pernoite: R$ 459,00": each label and its amount (a label is the few words
# before a colon, after the start of the line or a separator)
_LABELLED_PRICE = re.compile(r"(?:^|[·•|;:]\s*|\.\s+)([^:·•|;.\n]{1,24}?):\s*R\$\s*(\d+(?:\.\d{3})*(?:,\d{1,2})?)")
_INSTALMENTS = re.compile(r"\bparcel\w*")
_INSTALMENT_TERMS = re.compile(r"\bsem juros\b|\b\d{1,2}\s*x\b|\bvezes\b")
_MINIMUM = re.compile(r"\b(?:acima|a partir|partir) de r\$\s*(\d+(?:\.\d{3})*(?:,\d{1,2})?)")


def labelled_prices(text: str) -> list[tuple[str, float]]:
    """The labelled amounts of a price line, folded label first ("Suíte Lírio: ... 2h: R$ 219,00 ·
    Pernoite: R$ 459,00" → [("2h", 219.0), ("pernoite", 459.0)])."""
    return [(fold(m.group(1)).strip(), float(m.group(2).replace(".", "").replace(",", ".")))
            for m in _LABELLED_PRICE.finditer(text)]


def label_of(text: str, amount: float) -> str:
    """The label of ``amount`` in a line with several labelled amounts ("pernoite" for 459 in the Suíte
    Lírio's line); "" when the line has fewer than two labels or none with that amount."""
    prices = labelled_prices(text)
    if len(prices) < 2:
        return ""
    return next((label for label, value in prices if value == amount), "")


class ObjectedPrice(NamedTuple):
    """The price a message objects to on a line ("459 na lírio??" on the Suíte Lírio's line): the amount, its
    label on that line ("pernoite"; "" on a line with one price) and every label of the line."""

    amount: float
    label: str
    labels: tuple[str, ...]


def objected_price(message: str, unit: Unit) -> ObjectedPrice | None:
    """The price of ``unit`` that ``message`` names (the largest, when it names several); None when it names
    none of them. A message naming no amount objects to the one price of the item it names by its proper
    name ("achei salgado o pacote do pedido de casamento": the Pacote Pedido de Casamento's R$ 390,00,
    ``named_item_price``)."""
    named = amounts_named(message) & set(unit_amounts(unit.text))
    if not named and not amounts_named(message):
        named = named_item_price(message, unit)
    if not named:
        return None
    amount = max(named)
    return ObjectedPrice(amount, label_of(unit.text, amount), tuple(x for x, _ in labelled_prices(unit.text)))


def named_item_price(message: str, unit: Unit) -> set[float]:
    """The one price of a list item the message names by its proper name ("o pacote do pedido de casamento"
    names "Pacote Pedido de Casamento — R$ 390,00: ..."); empty for a line with several prices (which of
    them is meant is not said) or an item not named."""
    prices = set(unit_amounts(unit.text))
    if len(prices) != 1 or not named_items(message, [unit]):
        return set()
    return prices


def is_delivery_fee(unit: Unit) -> bool:
    """Whether ``unit`` prices delivering the order ("Taxa de entrega: de 3 km a 6 km: R$ 10,00", under "Delivery";
    "até 4 km: R$ 7,00" under "Frete")."""
    return names_delivery_fee(f"{unit.text} {unit.context} {unit.label or ''}")


def names_delivery_fee(text: str) -> bool:
    """Whether ``text`` names the delivery fee: a fee and the delivery ("taxa de entrega"), or the freight ("frete")."""
    words = _measures(normalize_chat(text)).split()
    return (any(w.startswith("taxa") for w in words) and any(w.startswith(("entreg", "deliv")) for w in words)) \
        or any(w.startswith("frete") for w in words)


def offers_instalments(text: str) -> bool:
    """A line letting one pay in instalments ("a pernoite pode ser parcelada em até 3x sem juros",
    "Parcelamento em até 3x sem juros no cartão de crédito, para valores acima de R$ 300,00"); not one
    refusing it ("não parcelamos")."""
    folded = fold(text)
    m = _INSTALMENTS.search(folded)
    return bool(m and _INSTALMENT_TERMS.search(folded)) and not re.search(
        r"\b(?:nao|nem)\b(?:\s+\w+){0,2}\s+parcel", folded)


def instalments_apply(text: str, amount: float, label: str, labels: Sequence[str] = ()) -> bool:
    """Whether an instalment line (``offers_instalments``) covers ``amount``: at least the minimum it states
    ("para valores acima de R$ 300,00"), and, when it names some of the price line's labels ("a pernoite pode
    ser parcelada"; the line also prices 2h and 4h), the label of that amount among them."""
    if not offers_instalments(text):
        return False
    folded = fold(text)
    least = [float(x.replace(".", "").replace(",", ".")) for x in _MINIMUM.findall(folded)]
    if least and amount < min(least):
        return False
    return applies_to_label(text, label, labels)


def names_label(text: str, label: str) -> bool:
    """Whether ``text`` names the price label ``label`` ("grande" in "na compra de uma pizza grande"; plurals too)."""
    return bool(re.search(rf"\b{re.escape(fold(label))}(?:s|es)?\b", fold(text)))


def applies_to_label(text: str, label: str, labels: Sequence[str]) -> bool:
    """Whether a rule or a deal covers the priced ``label`` of a line with ``labels``: it names none of them,
    or that one among those it names ("Tarde Aurora: 20% de desconto nos períodos de 2h e 4h" covers 2h, not
    the pernoite)."""
    folded = fold(text)
    named = {x for x in labels if re.search(rf"\b{re.escape(x)}(?:s|es)?\b", folded)}
    return not named or label in named


def cheaper_alternative(quoted: Unit, amount: float, units: Sequence[Unit]) -> Unit | None:
    """The item of the same kind as ``quoted`` (a list item whose label opens alike, priced under the same
    labels: another suite with "2h / 4h / Pernoite") with the lowest price for the label of ``amount``, when
    lower than it (items with one price and a proper name: ``_cheaper_named_item``); None when the quoted line
    is not such an item or nothing of its kind costs less."""
    label = label_of(quoted.text, amount)
    head = item_head(quoted)
    if not head:
        return None
    if not label:
        return _cheaper_named_item(quoted, amount, head, units)
    labels = {x for x, _ in labelled_prices(quoted.text)}
    best = None
    for u in units:
        if u == quoted or u.text == quoted.text or item_head(u) != head:
            continue
        prices = dict(labelled_prices(u.text))
        if set(prices) != labels or prices[label] >= amount:
            continue
        if best is None or prices[label] < best[0]:
            best = (prices[label], u)
    return best[1] if best else None


def _cheaper_named_item(quoted: Unit, amount: float, head: str, units: Sequence[Unit]) -> Unit | None:
    """``cheaper_alternative`` for items with one price each and a proper name ("Pacote Pedido de Casamento —
    R$ 390,00" → "Pacote Pétalas — R$ 120,00"): the cheapest named item of the same kind. Lines whose label is
    a thing for someone ("Castração de gata: R$ 520,00" beside the cão's) name no variant of one offer, and
    are never each other's alternative."""
    if not item_name(quoted) or set(unit_amounts(quoted.text)) != {amount}:
        return None
    best = None
    for u in units:
        if u.text == quoted.text or item_head(u) != head or not item_name(u):
            continue
        prices = set(unit_amounts(u.text))
        if len(prices) == 1 and min(prices) < amount and (best is None or min(prices) < best[0]):
            best = (min(prices), u)
    return best[1] if best else None


def names_outside_options(message: str, text: str) -> bool:
    """Whether ``text`` names a focus word of the question outside its parentheses: "Borda recheada (catupiry,
    cheddar ou cream cheese): acréscimo de R$ 9,00" names "cream cheese" only as an option of the crust."""
    return bool(focus_named(message, re.sub(r"\([^)]*\)", " ", text)))


def focus_named(message: str, text: str) -> frozenset[str]:
    """The question's focus words (stems) that ``text`` names."""
    return question_words(message)[1] & _stems(text)


# "posso levar meu vinho? cobra rolha?", "a gente pode levar um bolo de casa?": whether one may bring one's own
# thing; what answers it is the business's rule on things brought from outside ("Trazer de fora: é permitido
# trazer bebidas, com taxa de rolha ..."), never the price of the same thing sold there
_MAY_BRING = re.compile(r"\b(?:posso|pode|podemos|podem|da pra|dar pra|tem como|e permitido|permitem|deixam|libera|"
                        r"liberam)\b(?:\s+\S+){0,3}?\s+(?:levar|trazer|entrar com)\b")
_BROUGHT = re.compile(r"\bde fora\b|\brolha\b|\b(?:trazer|levar|traga|traz)\w*\b(?:\s+\S+){0,4}\s+(?:de casa|proprio|propria)\b")


# "levar o cachorro pra vacinar", "trazer o carro pra lavar": an errand; "levar um vinho pra tomar aí", "trazer um bolo
# pra cantar parabéns" name what the thing is for, not a service done to it
_ERRAND = re.compile(r"\b(?:levar|trazer)\b(?:\s+\S+){0,3}?\s+(?:pra|para|p/|pro)\s+"
                     r"(?!(?:tomar|beber|comer|brindar|comemorar|servir|dividir|cantar|partir|usar|ouvir|tocar)\b)"
                     r"\w+(?:ar|er|ir)\b")


_BRING_WORDS = frozenset({"levar", "traze", "traz", "leva", "levo", "trago", "entra", "casa", "fora", "propr"})
_LIVING = frozenset(stem(w) for w in ("pet", "pets", "animal", "animais", "cao", "caes", "gato", "gatos", "crianca",
                                      "filho", "filha", "bebe"))


def brought_thing(message: str) -> tuple[frozenset[str], frozenset[str]] | None:
    """What a message asks whether one may bring of one's own ("posso levar minha cerveja?", "da pra trazer bolo
    de casa?"): (its stems, those with their other names: "cerveja" → "bebida", "alcoolica"); None when it asks
    no such thing, asks to take something somewhere for a service ("pode levar o cachorro pra vacinar?"), or the
    thing is a pet or a person (whether they may come in is another rule)."""
    norm = normalize_chat(message)
    if not _MAY_BRING.search(norm) or _ERRAND.search(norm):
        return None
    part = question_part(message)
    thing = frozenset(question_words(part)[1] - _BRING_WORDS)
    # the thing ends where what it is for or where it goes begins ("meu proprio vinho pra tomar ai na mesa"): a line
    # on the table is no rule on the wine
    norm_part = normalize_chat(part)
    verb = _MAY_BRING.search(norm_part)
    said = _ITEM_STOP.split(norm_part[verb.end():], maxsplit=1)[0] if verb else ""
    thing = (frozenset(question_words(said)[1] - _BRING_WORDS) & thing) or thing
    forms = set(thing)
    for word, other in concept_forms(part).items():
        if stem(word) in thing or word in thing:
            forms |= other
    if not thing or {stem(x) for x in forms} & _LIVING:
        return None
    return thing, frozenset(forms)


def asks_to_bring(message: str) -> bool:
    """Whether the message asks if one may bring a thing of one's own (``brought_thing``)."""
    return brought_thing(message) is not None


def states_bringing(text: str) -> bool:
    """Whether a line is a rule on things brought from outside ("é permitido trazer bebidas, com taxa de
    rolha", "o cliente pode trazer bolo de fora, com taxa de bolo")."""
    return bool(_BROUGHT.search(fold(text)))


_TITLED = re.compile(r"\b(?:dr|dra|doutor|doutora|dotora)\.?\s+([a-z]{3,})")


def unknown_titled_person(message: str, units: Sequence[Unit]) -> str:
    """The name of a doctor the question asks about ("a Dra. Helena atende sabado?") when no unit names that
    person: what the business says of its other doctors or of its hours is not said of her; "" otherwise."""
    names = {m.group(1) for m in _TITLED.finditer(normalize_chat(question_part(message)))} - STOPWORDS - GENERIC
    if not names:
        return ""
    said = {w.strip(".,;:!?()") for u in units for w in fold(u.text).split()}
    return next((n for n in sorted(names) if n not in said), "")
