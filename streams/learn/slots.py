"""Slot logic shared by the rule-based extractor and the rules contradiction check.

A *slot* is a snake_case ``memory_key`` (``preferred_room``, ``allergy``,
``partner``...) with a normalised value. The extractor derives slots from a
customer's sentence; the contradiction checker derives them from a stored
fact's content (third person: "Prefere a suíte Hidro"), with the same
lexicons, so both sides agree on what "the same attribute" means.

All patterns run on ``fold``-ed text (lower case, no accents, same length as
the original). WhatsApp abbreviations are part of the patterns.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from streams.learn.text import fold

# ---------------------------------------------------------------------------
# Small vocabularies
# ---------------------------------------------------------------------------
NEG = r"(?:nao|n|nunca|nem|not|never|no longer|don'?t|do not)"
NUMBERS = {
    "um": 1, "uma": 1, "dois": 2, "duas": 2, "tres": 3, "quatro": 4, "cinco": 5,
    "one": 1, "two": 2, "three": 3, "four": 4, "five": 5,
}
MONTHS = {
    "janeiro": 1, "fevereiro": 2, "marco": 3, "abril": 4, "maio": 5, "junho": 6,
    "julho": 7, "agosto": 8, "setembro": 9, "outubro": 10, "novembro": 11, "dezembro": 12,
    "january": 1, "february": 2, "march": 3, "april": 4, "may": 5, "june": 6,
    "july": 7, "august": 8, "september": 9, "october": 10, "november": 11, "december": 12,
    "jan": 1, "fev": 2, "feb": 2, "mar": 3, "abr": 4, "apr": 4, "jun": 6, "jul": 7,
    "ago": 8, "aug": 8, "set": 9, "sep": 9, "out": 10, "oct": 10, "nov": 11, "dez": 12, "dec": 12,
}
_MONTH_ALT = "|".join(sorted(MONTHS, key=len, reverse=True))
DATE_RE = re.compile(
    r"\b(?P<d>[0-3]?\d)\s*[/.-]\s*(?P<m>[01]?\d)(?:\s*[/.-]\s*\d{2,4})?\b"
    rf"|\b(?P<d2>[0-3]?\d)(?:o|º|st|nd|rd|th)?\s+(?:de\s+|of\s+)?(?P<mon>{_MONTH_ALT})\b"
    rf"|\b(?P<mon2>{_MONTH_ALT})\s+(?P<d3>[0-3]?\d)(?:st|nd|rd|th)?\b"
)

WEEKDAYS = {
    "segunda": "seg", "terca": "ter", "quarta": "qua", "quinta": "qui", "sexta": "sex",
    "sabado": "sab", "domingo": "dom", "monday": "seg", "tuesday": "ter", "wednesday": "qua",
    "thursday": "qui", "friday": "sex", "saturday": "sab", "sunday": "dom",
}
WEEKDAY_RE = re.compile(r"\b(" + "|".join(WEEKDAYS) + r")s?\b")
HOUR_RE = re.compile(
    r"\b(?P<h>[012]?\d)\s*(?:h|:|hs|horas?)\s*(?P<m>[0-5]\d)?\b(?!\s*(?:anos|dias))"
    r"|\b(?P<h2>1[0-2]|[1-9])\s*(?P<ap>am|pm)\b"
)
PERIODS = [
    ("madrugada", r"madrugada|depois da meia-?noite|meia-?noite|late night|after midnight|dawn"),
    ("manha", r"\bmanha\b|cedo|morning|early"),
    ("tarde", r"\btarde\b|afternoon"),
    ("noite", r"\bnoite\b|evening|night"),
]

# Relations: stem → (slot, normalised status)
RELATIONS: list[tuple[str, str, str]] = [
    (r"namorad[oa]s?|boyfriend|girlfriend", "partner", "dating"),
    (r"noiv[oa]s?|fiance[e]?", "partner", "engaged"),
    (r"espos[oa]|marido|mulher|wife|husband|conjuge", "partner", "married"),
    (r"companheir[oa]|parceir[oa] de vida|partner", "partner", "partner"),
    (r"filh[oa]s?|criancas|kids|children|son|daughter", "child", "child"),
    (r"mae|pai|mother|father|mom|dad", "parent", "parent"),
    (r"irma[o]?s?|brother|sister", "sibling", "sibling"),
    (r"sogr[oa]|cunhad[oa]", "in_law", "in_law"),
    (r"avo|neto|neta", "grandfamily", "grandfamily"),
]
REL_ALT = "|".join(r[0] for r in RELATIONS)


def relation_of(word: str) -> tuple[str, str] | None:
    for pattern, key, status in RELATIONS:
        if re.fullmatch(pattern, word):
            return key, status
    return None


# ---------------------------------------------------------------------------
# Preference attributes: (key, value, pattern). Order = priority.
# ---------------------------------------------------------------------------
CHANNELS = [
    ("email", r"e-?mail|email"),
    ("whatsapp", r"whats\w*|\bzap\b|\bwpp\b|(?:mand\w*|envi\w*|fal\w*|cham\w*|contat\w*|respond\w*|cotac\w*|orcamento\w*)[\w ]{0,30}\bpor aqui|pelo chat"),
    ("phone", r"telefone|ligacao|me liga\w*|phone|call"),
    ("sms", r"\bsms\b"),
]
PREF_ATTRS: list[tuple[str, str, str]] = [
    ("room_floor", "terreo", r"terreo|ground floor"),
    ("room_floor", "alto", r"andar(?:es)? alto|andar(?:es)? mais alto|ultimo andar|high(?:er)? floor|top floor"),
    ("room_floor", "baixo", r"andar(?:es)? baixo|primeiro andar|low(?:er)? floor"),
    ("room_position", "fundos", r"\bfundos\b|back of|longe da (?:rua|avenida)"),
    ("room_position", "frente", r"de frente (?:pra|para) (?:a )?(?:rua|avenida)|frente (?:pra|para) (?:a )?(?:rua|avenida)|street side"),
    ("room_quiet", "silencioso", r"silencios\w*|longe do elevador|longe do barulho|quiet"),
    ("room_view", "vista", r"\bvista\b|\bview\b"),
    ("bed_setup", "duas_camas", r"duas camas|2 camas|camas de solteiro|twin beds?|two beds"),
    ("bed_setup", "casal", r"cama de casal|cama king|king size|queen|double bed"),
    ("garage", "fechada", r"garagem"),
]
DRINKS = r"espumante|champanhe|champagne|prosecco|vinho|cerveja|chopp?|caipirinha|whisky|gin|vodka|drink|suco|refrigerante|agua de coco|\bwine\b|\bbeer\b|rose\b|brut\b|tinto|moscatel"
DRINK_SPECIFIC = r"rose\b|brut\b|tinto|branco|seco|suave|moscatel|prosecco|ipa\b|lager"
ROOM_WORDS = r"su[ií]te|suite|quarto|chale|cabana|apartamento|apto|room"
DRINK_RE = re.compile(DRINKS)


def channel_in(folded: str) -> list[tuple[str, int]]:
    """Channels mentioned, with position."""
    found = []
    for value, pattern in CHANNELS:
        for m in re.finditer(pattern, folded):
            found.append((value, m.start()))
    return sorted(found, key=lambda x: x[1])


def room_value(folded: str, original: str) -> str | None:
    """Which suite/room: 'hidro', '15', 'chale', 'master' … or None."""
    m = re.search(rf"\b(?:{ROOM_WORDS})\s+(?:n[ºo°.]?\s*)?(?P<v>\d+|[a-z]+)", folded)
    if m and m.group("v") not in {"de", "do", "da", "com", "no", "na", "em", "pra", "para", "que", "e", "mais", "bem", "aqui", "ai"}:
        if m.group("v").isdigit() or original[m.start("v")].isupper():
            return m.group("v")
        if m.group("v") in {"comum", "standard", "luxo", "master", "simples", "executivo", "superior", "single", "duplo"}:
            return m.group("v")
    m = re.search(r"\b(?:chale|cabana|bangalo)\b", folded)
    if m:
        return m.group(0)
    # "a Hidro", "na 15", "da Master": a capitalised word or number after an article
    for m in re.finditer(r"\b(?:a|o|na|no|da|do)\s+(?P<v>\d{1,4}\b|[a-z]\w+)", folded):
        v = m.group("v")
        if v.isdigit():
            return v
        if original[m.start("v")].isupper() and not re.match(r"(?:camila|unidade)", v):
            return v
    return None


def drink_value(folded: str) -> str | None:
    m = re.search(DRINK_SPECIFIC, folded)
    if m:
        return m.group(0).strip()
    m = DRINK_RE.search(folded)
    return m.group(0).strip() if m else None


# ---------------------------------------------------------------------------
# Complaints and praise
# ---------------------------------------------------------------------------
TOPICS: list[tuple[str, str]] = [
    ("ar_condicionado", r"ar-? ?condicionado|\bar\b|climatiza\w*|air ?con\w*|\bac\b|a/c"),
    ("wifi", r"wi-?fi|internet|\bsinal\b"),
    ("chuveiro", r"chuveiro|agua quente|ducha|shower|hot water"),
    ("portao", r"portao|garagem|\bgate\b|cancela"),
    ("barulho", r"barulh\w*|caminh(?:ao|oes)|ruido|zoada|som alto|\bnois\w*"),
    ("room_service", r"lanche|pedido|comida|cozinha|entrega|porcao|jantar|almoco|room service|\bfood\b|\border\b|delivery"),
    ("cafe_da_manha", r"cafe da manha|breakfast"),
    ("limpeza", r"suj[oa]|sujeira|limpeza|mancha|mofo|cabelo|\bdirty\b|cleaning"),
    ("cama", r"\bcama\b|colchao|travesseiro|lencol|\bbed\b|mattress|pillow"),
    ("tv", r"\btv\b|televis\w*|controle remoto"),
    ("cheiro", r"cheiro|fedor|fedia|\bsmell\w*"),
    ("banheiro", r"banheiro|descarga|\bvaso\b|\bpia\b|toalha|bathroom|toilet|towel"),
    ("cobranca", r"cobran\w*|cobrad\w*|cobraram|cobrou|conta errada|charged|\bbill\w*"),
    ("atendimento", r"atendiment\w*|recepcao|recepcionista|funcionari\w*|atendente|\bstaff\b|reception\w*"),
    ("estacionamento", r"estacionamento|vaga|parking"),
    ("elevador", r"elevador|elevator|lift"),
    ("piscina", r"piscina|pool"),
]

PROBLEM = re.compile(
    r"nao funcion\w*|n funcion\w*|parou de funcionar|quebrad\w*|estragad\w*|pingan\w*|pingou|vazan\w*|vazou|"
    r"goteira|sem pressao|deix\w* a desejar|nao foi (?:trocad|limp|arrumad)\w*|manchad\w*|entupid\w*|suj[oa]\b|sujeira|\bmofo|demor\w*|eternidade|atrasad\w*|atrasou|so sai\w* agua|"
    r"agua (?:fria|morna|gelada)|sem agua|fedor|fedia|pessim\w*|horrivel|horroros\w*|\bruim\b|"
    r"dormi (?:muito |mto |super )?mal|nao (?:consegui|conseguimos) dormir|nao (?:veio|vieram|chegou|tinha|tem|ligava|liga|abre|abria|fecha|fechava|esquent\w*|gela\w*|sai\w*)|"
    r"faltou|faltando|grosseir\w*|mal educad\w*|mal[- ]?atendid\w*|errad[oa]|a mais\b|decepcion\w*|"
    r"passa\w* caminh\w*|muito barulh\w*|barulhent\w*|barulho (?:a|de|na) (?:noite|madrugada)|"
    r"broken|didn'?t work|did not work|not working|doesn'?t work|dirty|noisy|leak\w*|\bslow\b|rude|terrible|awful|cold water|stain\w*"
)
RESOLVED = re.compile(
    r"consertad\w*|resolvid\w*|arrumad\w*|trocad\w*|funcionando|\bnormal\b|ficou otim\w*|agora (?:esta|ta) bom|"
    r"\bfixed\b|resolved|working (?:fine|now)"
)
POSITIVE = re.compile(
    r"elogi\w*|foi um amor|um amor\b|atencios\w*|excelente|\botim[oa]\b|maravilh\w*|incrivel|\bo melhor\b|\ba melhor\b|"
    r"melhor coisa|lind[oa] demais|ficou lind[oa]|perfeit[oa]\b|adorei|adoramos|amei|amamos|muito bo[am]\b|nota 10|"
    r"sensacional|impecavel|caprich\w*|delicios\w*|gentil|gentileza|prestativ\w*|feliz da vida|show de bola|top demais|"
    r"simpatic\w*|querid[oa]|\bgreat\b|amazing|excellent|wonderful|\bloved\b|awesome|the best|super legal|fantastic\w*|"
    r"agradec\w* (?:a|o|ao|à|pel[oa])|gela rapido"
)
STAFF = r"recepcao|recepcionista|camareir\w*|\bchef\b|cozinheir\w*|garcom|garconete|atendente|\bmoca\b|\brapaz\b|funcionari\w*|equipe|\bpessoal\b|manobrista|porteiro|gerente|\bdona [a-z]+|\bseu [a-z]+|\bstaff\b|receptionist|housekeep\w*|waiter|waitress|massagista|motorista"
THINGS = r"chale|su[ií]te|quarto|\bcafe\b|\bpao\b|jantar|almoco|comida|decoracao|piscina|\bcama\b|ar-? ?condicionado|banheiro|hidro|escondidinho|lanche|atendimento|limpeza|vista|lareira|arrum\w*|breakfast|\broom\b|\bfood\b|service|\bbolo\b|drink|massagem|\bspa\b|sobremesa|torta|cafe da manha|estadia|hospedagem"


def topic_of(folded: str) -> str | None:
    for topic, pattern in TOPICS:
        if re.search(pattern, folded):
            return topic
    return None


# ---------------------------------------------------------------------------
# Restrictions
# ---------------------------------------------------------------------------
FOOD_KEYS = {"allergy", "intolerance", "diabetes", "diet", "celiac"}


def date_value(folded: str) -> str | None:
    m = DATE_RE.search(folded)
    if not m:
        return None
    if m.group("d"):
        d, mo = int(m.group("d")), int(m.group("m"))
    elif m.group("d2"):
        d, mo = int(m.group("d2")), MONTHS[m.group("mon")]
    else:
        d, mo = int(m.group("d3")), MONTHS[m.group("mon2")]
    if not (1 <= d <= 31 and 1 <= mo <= 12):
        return None
    return f"{d:02d}-{mo:02d}"


def hours_in(folded: str) -> list[float]:
    out = []
    for m in HOUR_RE.finditer(folded):
        if m.group("h") is not None:
            h = int(m.group("h"))
            mins = int(m.group("m") or 0)
        else:
            h = int(m.group("h2")) % 12 + (12 if m.group("ap") == "pm" else 0)
            mins = 0
        if 0 <= h <= 24:
            out.append(h + mins / 60)
    if re.search(r"meia-?noite|midnight", folded):
        out.append(0.0)
    return out


def period_of(folded: str, hours: list[float]) -> str | None:
    for name, pattern in PERIODS:
        if re.search(pattern, folded):
            return name
    if hours:
        h = hours[0]
        return "madrugada" if h < 5 else "manha" if h < 12 else "tarde" if h < 18 else "noite"
    return None


def weekdays_in(folded: str) -> list[str]:
    return [WEEKDAYS[m.group(1)] for m in WEEKDAY_RE.finditer(folded)]


FREQUENCY_PATTERNS = [
    ("weekly", r"toda(?:s as)? semanas?|semanalmente|every week|weekly|toda (?:segunda|terca|quarta|quinta|sexta|sabado|domingo)|todo (?:sabado|domingo)"),
    ("biweekly", r"a cada (?:15|quinze) dias|de (?:15|quinze) em (?:15|quinze) dias|quinzena\w*|a cada duas semanas|every (?:two|2) weeks|biweekly"),
    ("monthly", r"todo mes|uma vez por mes|mensalmente|every month|monthly|a cada (?:30|trinta) dias"),
    ("weekends", r"todo (?:fim|final) de semana|fins de semana|every weekend"),
]


def frequency_of(folded: str) -> str | None:
    for name, pattern in FREQUENCY_PATTERNS:
        if re.search(pattern, folded):
            return name
    m = re.search(r"a cada (\d+) (dias|semanas|meses)|every (\d+) (days|weeks|months)", folded)
    if m:
        n = m.group(1) or m.group(3)
        unit = (m.group(2) or m.group(4))[0]
        return f"every_{n}{unit}"
    return None


# ---------------------------------------------------------------------------
# Names
# ---------------------------------------------------------------------------
NOT_NAMES = {
    "eu", "ele", "ela", "boa", "bom", "oi", "ola", "obrigado", "obrigada", "agora", "sim", "nao", "a", "o",
    "e", "da", "de", "do", "que", "pode", "vou", "mas", "tudo", "ja", "isso", "hoje", "amanha", "aqui",
    "dona", "seu", "sr", "sra", "dr", "dra", "pix", "whatsapp", "wi", "ok", "show", "valeu", "the", "i", "my",
}
NAME_RE = re.compile(r"[A-ZÀ-Ý][\wÀ-ÿ'’-]*")
ORG_RE = re.compile(r"[A-ZÀ-Ý][\wÀ-ÿ&'’.-]*(?:\s+(?:(?:de|da|do|das|dos|&)\s+)?[A-ZÀ-Ý0-9][\wÀ-ÿ&'’.-]*)*")


def name_at(original: str, pos: int) -> str | None:
    """A capitalised person name starting exactly at ``pos``."""
    m = NAME_RE.match(original, pos)
    if not m or fold(m.group(0)) in NOT_NAMES:
        return None
    return m.group(0)


def org_at(original: str, pos: int) -> str | None:
    m = ORG_RE.match(original, pos)
    if not m:
        return None
    org = m.group(0).rstrip(".")
    if fold(org.split()[0]) in NOT_NAMES | {"unidade", "suite", "quarto", "rua", "avenida", "cidade"}:
        return None
    return org


@dataclass(frozen=True)
class Slot:
    key: str
    value: str | None       # None: the slot as a whole ("any allergy")
    negated: bool = False
    subject: str | None = None  # who it is about, when not the customer


SINGLE_VALUED = {
    "preferred_room", "contact_channel", "preferred_drink", "room_floor", "room_position", "preferred_unit",
    "bed_setup", "partner", "children_count", "birthday", "birthday_partner", "birthday_child",
    "wedding_anniversary", "dating_anniversary", "arrival_time", "visit_frequency", "morning_routine",
    "employer", "occupation", "work_shift", "city", "drinking",
}
