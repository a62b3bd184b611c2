"""Deterministic, offline fact extraction for pt-BR (WhatsApp style) and English.

The algorithm, per contact message (agent messages are never sources):

1. split into sentences; ``fold`` each one (lower case, no accents, same length);
2. run one *rule family* per memory type over the folded sentence: a cue
   lexicon (e.g. habit cues + time expression + arrival verb for
   ``padrao_comportamental``), plus negation and one-off guards;
3. each hit yields a slot (``memory_key`` + ``normalized_value``, see
   ``slots.py``), a templated ``content`` and an evidence span cut from the
   *original* sentence (the sentence itself, or the matched phrase);
4. per conversation: a negated and a positive fact on the same single-valued
   slot are merged into one update ("Prefere a Master; não quer mais a Hidro").

The result is a ``Proposal``; ``validate`` decides what is kept.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Callable, Iterator

from streams.learn import lexicon as S
from streams.learn.model import NEGATED_PREFIX, CandidateFact, Proposal, Transcript
from streams.learn.text import Sentence, clause_around, fold, sentences, slug

NAME = "rules"
VERSION = "rules-1"

ONE_OFF = re.compile(r"\b(?:hoje|hj|amanha|essa noite|esta noite|dessa vez|desta vez|today|tonight|tomorrow)\b")
FIRST_PERSON = re.compile(r"\b(?:eu|sou|tenho|to|tou|estou|meu|minha|me|mim|pra mim|a gente|nos|nossa|nosso|i|i'm|im|my|we)\b")


@dataclass
class Hit:
    memory_type: str
    key: str
    value: str | None
    content: str
    confidence: float
    span: tuple[int, int] | None = None   # evidence span in the sentence; None = whole sentence
    extra: dict = field(default_factory=dict)


@dataclass
class Context:
    transcript: Transcript
    message: str           # the whole contact message
    previous_agent: str    # folded text of the agent message just before


Rule = Callable[[Sentence, Context], Iterator[Hit]]


def _is_question(s: Sentence, start: int, end: int) -> bool:
    lo, hi = clause_around(s, start, end)
    return s.text[lo:hi].rstrip().endswith("?") or (hi == len(s.text) and s.text.rstrip().endswith("?"))


def _obj(folded: str, start: int, max_words: int = 5) -> tuple[int, int]:
    """An object phrase starting at ``start``: up to punctuation/conjunction, ≤ max_words."""
    m = re.compile(r"[^,.;!?()]+").match(folded, start)
    if not m:
        return start, start
    end = m.end()
    cut = re.search(r"\s(?:entao|mas|porque|pq|por isso|que|so que|quando|se|and|but|so)\b", folded[start:end])
    if cut:
        end = start + cut.start()
    words = list(re.finditer(r"\S+", folded[start:end]))
    if len(words) > max_words:
        end = start + words[max_words - 1].end()
    return start, end


# ---------------------------------------------------------------------------
# restricao
# ---------------------------------------------------------------------------
ALLERGY = re.compile(
    r"(?P<neg>\b(?:nao|n)\s+(?:sou|e|eh|to|estou|tenho|tem)\s+(?:mais\s+)?(?:nenhuma\s+)?)?"
    r"\b(?:alergic[oa]s?|alergia)(?:\s+(?:a|ao|as|aos|de|com)\s+(?P<obj>\w))?"
    r"|(?P<eneg>\bnot\s+|\bno\s+)?\ballerg(?:ic|y|ies)(?:\s+to\s+(?P<eobj>\w))?"
)
INTOLERANCE = re.compile(
    r"\bintoleran(?:te|cia)\s+(?:a|ao|as|aos|à|de)\s+(?P<obj>\w)|\b(?P<eobj>\w+)\s+intolerant|intolerant to (?P<eobj2>\w)"
)
CELIAC = re.compile(r"\bceliac[oa]s?\b|doenca celiaca|\bceliac\b|coeliac")
DIABETES = re.compile(r"\bdiabetic[oa]s?\b|\bdiabetes\b|\bdiabetic\b")
DRINK_STOP = re.compile(
    r"parei de beber|parou de beber|nao (?:bebo|bebe|bebemos|posso beber|tomo bebida|consumo (?:bebida|alcool)|consome (?:bebida|alcool))"
    r"|n (?:bebo|bebe)\b|sem alcool pra mim|sem poder beber|nao (?:pode|posso|podemos) (?:mais )?(?:beber|tomar (?:bebida|alcool))|proibid\w* de beber|i don'?t drink|i do not drink|stopped drinking|quit drinking"
)
DRINK_BACK = re.compile(r"voltei a beber|voltou a beber|started drinking again|drinking again")
DIET = re.compile(r"\bsou (?P<d>vegetarian[oa]|vegan[oa])|\b(?:i'?m|i am|we'?re|we are) (?:a |both )?(?P<e>vegetarian|vegan)|nao como (?P<obj>carne|porco|carne vermelha|peixe)")
FORBIDDEN = re.compile(r"(?P<obj>[\w ]{3,30}?)\s+(?:continua|e|eh|ta|esta|sao|continuam)\s+proibid[oa]s?\s+(?:pra|para)\s+mim|nao posso comer (?P<obj2>\w)")
ACCESS = re.compile(
    r"cadeirante|cadeira de rodas|mobilidade reduzida|deficien\w* (?:visual|auditiva|fisica)|sou ceg[oa]|sou surd[oa]|"
    r"wheelchair|reduced mobility|muletas?"
)
NO_RESTRICTION = re.compile(r"nao tenho (?:nenhuma )?restric\w*|nao tem (?:nenhuma )?restric\w*|sem restric\w* aliment|no (?:dietary )?restrictions")


def _subject(s: Sentence, start: int) -> str | None:
    """A named third person the restriction is about ("a Sofia tem…", "a Lourdes é…")."""
    before = s.text[:start]
    m = re.search(r"(?:\b[oa]\s+|\b)([A-ZÀ-Ý][\wÀ-ÿ]+)\s+(?:tem|é|e|eh|has|is|ta|tá|está)\s+$", before)
    if m and fold(m.group(1)) not in S.NOT_NAMES:
        return m.group(1)
    m = re.search(rf"\b(?:meu|minha|my)\s+({S.REL_ALT})\b", fold(before))
    if m:
        return m.group(1)
    return None


def _restriction_content(label: str, subject: str | None) -> str:
    return f"{subject}: {label}" if subject else label


def _allergy_hits(s: Sentence, f: str, t: str) -> Iterator[Hit]:
    for m in ALLERGY.finditer(f):
        subject = _subject(s, m.start())
        if m.group("neg") or m.group("eneg"):
            obj_start = m.start("obj") if m.group("obj") else (m.start("eobj") if m.group("eobj") else None)
            if obj_start is None:
                yield Hit(t, "allergy", NEGATED_PREFIX + "*", _restriction_content("Não tem alergias", subject), 0.8)
            else:
                a, b = _obj(f, obj_start)
                yield Hit(t, "allergy", NEGATED_PREFIX + f[a:b].strip(),
                          _restriction_content(f"Não é (mais) alérgico(a) a {s.text[a:b].strip()}", subject), 0.8)
            continue
        obj_start = m.start("obj") if m.group("obj") else (m.start("eobj") if m.group("eobj") else None)
        if obj_start is None or _is_question(s, m.start(), m.end()):
            continue
        a, b = _obj(f, obj_start)
        yield Hit(t, "allergy", f[a:b].strip(), _restriction_content(f"Alérgico(a) a {s.text[a:b].strip()}", subject), 0.9)


def _intolerance_hits(s: Sentence, f: str, t: str) -> Iterator[Hit]:
    for m in INTOLERANCE.finditer(f):
        g = "obj" if m.group("obj") else ("eobj" if m.group("eobj") else "eobj2")
        if g == "eobj" and m.group("eobj") in {"am", "is", "are", "be", "i'm"}:
            continue
        a, b = _obj(f, m.start(g), 3) if g != "eobj" else (m.start(g), m.end(g))
        if re.match(r"\s*(?:nao|n)\b", f[max(0, m.start() - 8):m.start()][-8:]) and "nao" in f[max(0, m.start() - 8):m.start()]:
            yield Hit(t, "intolerance", NEGATED_PREFIX + f[a:b].strip(), f"Não é intolerante a {s.text[a:b].strip()}", 0.75)
            continue
        subject = _subject(s, m.start())
        yield Hit(t, "intolerance", f[a:b].strip(), _restriction_content(f"Intolerante a {s.text[a:b].strip()}", subject), 0.9)


def rule_restricao(s: Sentence, ctx: Context) -> Iterator[Hit]:
    f = s.folded
    t = "restricao"
    yield from _allergy_hits(s, f, t)
    yield from _intolerance_hits(s, f, t)
    m = CELIAC.search(f)
    if m and not _is_question(s, m.start(), m.end()):
        subject = _subject(s, m.start())
        yield Hit(t, "celiac", "gluten", _restriction_content("Celíaco(a), precisa de opções sem glúten", subject), 0.9)
    m = DIABETES.search(f)
    if m and not _is_question(s, m.start(), m.end()) and (FIRST_PERSON.search(f) or _subject(s, m.start())):
        subject = _subject(s, m.start())
        yield Hit(t, "diabetes", "diabetes", _restriction_content("Diabético(a), prefere opções sem açúcar", subject), 0.9)
    if DRINK_STOP.search(f):
        reason = " (orientação médica)" if re.search(r"medic|doutor|saude|doctor", f) else ""
        yield Hit(t, "drinking", "no", f"Não consome bebida alcoólica{reason}", 0.85)
    elif DRINK_BACK.search(f):
        yield Hit(t, "drinking", "yes", "Voltou a consumir bebida alcoólica", 0.8)
    m = DIET.search(f)
    if m:
        value = m.group("d") or m.group("e") or ("sem " + m.group("obj"))
        yield Hit(t, "diet", slug(value), f"Dieta: {value}", 0.85)
    m = FORBIDDEN.search(f)
    if m:
        g = "obj" if m.group("obj") else "obj2"
        a, b = (m.start(g), m.end(g)) if g == "obj" else _obj(f, m.start(g), 3)
        obj = re.sub(r"^(?:e|mas|lembra que|lembre que|so que)\s+", "", f[a:b].strip())
        obj = re.sub(r"^.*\b(?:que)\s+", "", obj)
        start = f.find(obj, a)
        yield Hit(t, "allergy" if "alerg" in fold(ctx.message) else "diet", obj,
                  f"Não pode consumir {s.text[start:start + len(obj)]}", 0.8)
    m = ACCESS.search(f)
    if m and not _is_question(s, m.start(), m.end()):
        value = slug(m.group(0))
        yield Hit(t, "accessibility", value, f"Acessibilidade: {s.text.strip()}", 0.9)
    if NO_RESTRICTION.search(f):
        yield Hit(t, "diet_any", NEGATED_PREFIX + "*", "Não tem restrição alimentar", 0.75)


# ---------------------------------------------------------------------------
# vinculo_social
# ---------------------------------------------------------------------------
REL_MENTION = re.compile(
    rf"\b(?:meu|minha|meus|minhas|nosso|nossa|nossos|nossas|my|our)\s+(?:(?P<count>dois|duas|tres|quatro|two|three|four|[2-6])\s+)?"
    rf"(?P<rel>{S.REL_ALT})\b,?\s*(?:(?:o|a|os|as)\s+)?"
)
SHE_IS = re.compile(rf"\b(?:ele|ela|he|she)\s+(?:agora\s+)?(?:e|eh|is|virou)\s+(?:agora\s+)?(?:meu|minha|my)\s+(?P<rel>{S.REL_ALT})\b")
WE_MARRIED = re.compile(r"\beu e (?:o|a)\s+(?P<name>\w+)\s+(?:nos\s+)?(?:casamos|casou|noivamos|ficamos noivos|estamos noivos)|\b(?:i|we) (?:and (?P<ename>\w+) )?got married")
BREAKUP = re.compile(r"terminei|terminamos|separei|separamos|divorciei|nos divorciamos|\bex-?(?:namorad|marido|mulher|espos)\w*|broke up|divorced")
STATUS_WORD = {"dating": "Namora", "engaged": "Noivo(a) de", "married": "Casado(a) com", "partner": "Companheiro(a) de"}


def _names_after(s: Sentence, pos: int, limit: int = 3) -> list[str]:
    names = []
    for m in re.finditer(r"[A-ZÀ-Ý][\wÀ-ÿ]+", s.text[pos:pos + 80]):
        n = m.group(0)
        if fold(n) in S.NOT_NAMES:
            continue
        names.append(n)
        if len(names) >= limit:
            break
    return names


def rule_vinculo_social(s: Sentence, ctx: Context) -> Iterator[Hit]:
    f = s.folded
    t = "vinculo_social"
    companion = bool(re.search(r"acompanha|vai junto|vem junto|viaja comigo|travels with me|comes with me", f))
    for m in REL_MENTION.finditer(f):
        rel = S.relation_of(m.group("rel"))
        if rel is None:
            continue
        key, status = rel
        name = S.name_at(s.text, m.end())
        count = m.group("count")
        if key == "child" and count:
            n = S.NUMBERS.get(count, int(count) if count.isdigit() else 0)
            names = _names_after(s, m.end())
            listed = f": {', '.join(names)}" if names else ""
            yield Hit(t, "children_count", str(n), f"Tem {n} filhos{listed}", 0.9)
            continue
        if not name:
            continue
        if key == "partner":
            if BREAKUP.search(f):
                yield Hit(t, "partner", NEGATED_PREFIX + f"{status}:{fold(name)}", f"Terminou relacionamento com {name}", 0.8)
                continue
            content = f"{STATUS_WORD[status]} {name}"
            yield Hit(t, "partner", f"{status}:{fold(name)}", content, 0.9)
        else:
            label = m.group("rel")
            content = f"{'Viaja com' if companion else 'Tem'} {label} {name}"
            yield Hit(t, key, fold(name), content, 0.85)
    m = SHE_IS.search(f)
    if m:
        rel = S.relation_of(m.group("rel"))
        if rel and rel[0] == "partner":
            names = [n for n in re.findall(r"\b(?:a|o|com a|com o)\s+([A-ZÀ-Ý][\wÀ-ÿ]+)", ctx.message) if fold(n) not in S.NOT_NAMES]
            name = names[0] if names else None
            value = f"{rel[1]}:{fold(name) if name else '?'}"
            content = f"{STATUS_WORD[rel[1]]} {name}" if name else f"{STATUS_WORD[rel[1]]} (nome não informado)"
            yield Hit(t, "partner", value, content, 0.92)
    m = WE_MARRIED.search(f)
    if m:
        g = "name" if m.group("name") else "ename"
        if m.group(g):
            name = S.name_at(s.text, m.start(g))
            if name:
                yield Hit(t, "partner", f"married:{fold(name)}", f"Casado(a) com {name}", 0.85,
                          span=(m.start(), m.end(g)))


# ---------------------------------------------------------------------------
# data_comemorativa
# ---------------------------------------------------------------------------
CELEBRATION = re.compile(
    r"aniversari\w*|\bniver\b|birthday|anniversary|casamos|nos casamos|casei|casad[oa]s|casamento|bodas|wedding|got married|namoro|comecamos a namorar"
)


def rule_data_comemorativa(s: Sentence, ctx: Context) -> Iterator[Hit]:
    """Each date in the sentence, read with the text since the previous date."""
    dates = list(S.DATE_RE.finditer(s.folded))
    window_start = 0
    for m in dates:
        lo = window_start
        window_start = m.end()
        f = s.folded[lo:m.end()]
        if not CELEBRATION.search(f):
            continue
        value = S.date_value(s.folded[m.start():m.end()])
        if not value:
            continue
        key, label = _celebration(f, ctx)
        d, mo = value.split("-")
        span = (lo, m.end()) if len(dates) > 1 else None
        yield Hit("data_comemorativa", key, value, f"{label} em {d}/{mo}", 0.9, span=span)


def _celebration(f: str, ctx: Context) -> tuple[str, str]:
    if re.search(r"casamos|casei|casad[oa]s|casamento|bodas|wedding|married", f):
        return "wedding_anniversary", "Aniversário de casamento"
    if re.search(r"namoro|namorar|dating", f):
        return "dating_anniversary", "Aniversário de namoro"
    if re.search(r"\b(?:meu|my) (?:aniversario|niver|birthday)|faco (?:aniversario|anos)|fazer anos|i turn", f):
        return "birthday", "Aniversário do(a) cliente"
    scope = f + " " + fold(ctx.message)
    rel = re.search(rf"\b(?:meu|minha|my)\s+({S.REL_ALT})\b", scope)
    relation = S.relation_of(rel.group(1)) if rel else None
    if relation and relation[0] == "partner":
        key = "birthday_partner"
    elif relation and relation[0] == "child":
        key = "birthday_child"
    elif relation:
        key = f"birthday_{relation[0]}"
    else:
        key = "birthday_other"
    names = [n for n in re.findall(r"[A-ZÀ-Ý][\wÀ-ÿ]+", ctx.message) if fold(n) not in S.NOT_NAMES and fold(n) not in S.MONTHS]
    who = ((rel.group(1) if rel else "") + (f" {names[0]}" if names else "")).strip()
    return key, f"Aniversário {('de ' + who) if who else 'de pessoa próxima'}"


# ---------------------------------------------------------------------------
# padrao_comportamental
# ---------------------------------------------------------------------------
HABIT = re.compile(
    r"\b(?:sempre|smp|costum\w+|normalmente|geralmente|habitualmente|de costume|toda(?:s)? (?:as )?(?:semanas?|vez|vezes|sexta|segunda|terca|quarta|quinta|sabado|domingo|noite)|"
    r"todo (?:mes|fim de semana|final de semana|sabado|domingo|dia)|a cada \d+|a cada (?:duas|tres|quinze)|de \d+ em \d+|quinzena\w*|semanalmente|mensalmente|"
    r"usually|always|every)\b"
)
TIMEY = re.compile(
    r"\b\d{1,2}\s*(?:h|hs|:)\s*\d{0,2}\b|\b\d{1,2}\s*(?:am|pm)\b|madrugada|\bmanha\b|\btarde\b|\bnoite\b|\bcedo\b|meia-?noite|semana|\bmes\b|\bmeses\b|month|"
    r"segunda|terca|quarta|quinta|sexta|sabado|domingo|fim de semana|\bdias\b|morning|afternoon|evening|night|weekend|monday|tuesday|wednesday|thursday|friday|saturday|sunday"
)
ACTION = re.compile(
    r"\b(?:cheg\w*|venh\w*|vem|vimos|viemos|vier|passo|passamos|fico|ficamos|hosped\w*|durmo|acordo|acordamos|de pe|saio|vou embora|"
    r"check-?in|check-?out|arrive\w*|come|stay\w*|visit\w*|wake|get up)\b"
)


def rule_padrao(s: Sentence, ctx: Context) -> Iterator[Hit]:
    f = s.folded
    habit = HABIT.search(f)
    if not habit or not TIMEY.search(f) or _is_question(s, habit.start(), habit.end()):
        return
    freq = S.frequency_of(f)
    action = ACTION.search(f)
    days = S.weekdays_in(f)
    if not action and not (freq and days):
        return
    if re.search(r"\bsempre que\b", f) and not S.hours_in(f):
        return
    hours = S.hours_in(f)
    period = S.period_of(f, hours)
    day_text = f" ({days[0]}–{days[-1]})" if len(days) > 1 else (f" ({days[0]})" if days else "")
    t = "padrao_comportamental"
    if freq or (days and re.search(r"semana|week", f)):
        value = f"{freq or 'weekly'}|{'-'.join(days)}"
        yield Hit(t, "visit_frequency", value, f"Frequência de visitas: {freq or 'weekly'}{day_text}", 0.85)
    elif re.search(r"acord\w*|de pe|wake|get up|cafe da manha|breakfast", f):
        hh = f" às {_fmt_hour(hours[0])}" if hours else ""
        yield Hit(t, "morning_routine", _time_value(hours, period), f"Acorda cedo / café da manhã{hh}", 0.8)
    elif action:
        hh = f" por volta das {_fmt_hour(hours[0])}" if hours else ""
        per = f" ({period})" if period else ""
        yield Hit(t, "arrival_time", _time_value(hours, period), f"Costuma chegar{hh}{per}", 0.85)


def _fmt_hour(h: float) -> str:
    hh, mm = int(h), int(round((h - int(h)) * 60))
    return f"{hh}h{mm:02d}" if mm else f"{hh}h"


def _time_value(hours: list[float], period: str | None) -> str:
    return f"{period or ''}|{','.join(_fmt_hour(h) for h in hours)}"


# ---------------------------------------------------------------------------
# preferencia
# ---------------------------------------------------------------------------
PREF_CUE = re.compile(
    r"\b(?:prefiro|preferimos|prefere|preferencia|sempre (?:a|o)\s+\w+\s+que|sempre (?:peco|pedimos|pego|escolho|quero|queremos)|"
    r"favorit[oa]|preferid[oa]|o que (?:a gente|eu|nos) mais gost\w*|(?:a gente|eu|nos) (?:gosta|gosto|gostamos|ama|amo|amamos|adora|adoro|adoramos) muito|"
    r"(?:da|na) proxima vez|nas proximas(?: vezes)?|sempre que (?:eu|a gente|nos) (?:vier|vir|voltar|viermos)|"
    r"pode continuar|agora (?:a gente|eu|nos)?\s*(?:so )?(?:quer|quero|queremos|prefiro|prefere)|agora (?:vou|vamos) (?:ficar|me hospedar|nos hospedar)|daqui (?:pra|para) frente|a partir de agora|"
    r"i prefer|we prefer|my favou?rite|next time|from now on|always (?:ask|want|get|book))\b"
)
PREF_COND = re.compile(r"\bse (?:possivel|der|tiver|puder|for possivel)\b|de preferencia|if possible")
PREF_NEG = re.compile(
    r"\b(?:cansamos|cansei|enjoei|enjoamos) d[aoe]s?\s+|nao (?:quero|queremos|gosto|gostamos) mais d?[aoe]?s?\s*|nada de\s+|parei de usar\s+|"
    r"nao uso mais\s+|no more\s+|don'?t want\s+"
)


def _preference_cues(s: Sentence, ctx: Context):
    """(cue, cond, asked, neg) when the sentence may state a preference, else None."""
    f = s.folded
    cue = PREF_CUE.search(f)
    if cue is None and S.channel_in(f):
        cue = re.search(r"\b(?:sempre|so|apenas|somente|agora|always|only)\b", f)
    cond = PREF_COND.search(f)
    asked = bool(
        re.search(r"preferencia|prefere\b|gostaria de algum|any preference", ctx.previous_agent)
        and ctx.previous_agent.rstrip().endswith("?")
    )
    neg = PREF_NEG.search(f)
    if s.text.rstrip().endswith("?") and not cue:
        return None
    if not (cue or cond or asked or neg):
        return None
    if re.search(r"\bsempre que\b", f) and not re.search(r"(?:pode|oferec|separ|reserv|coloc)", f):
        return None
    where = (cue or cond or neg)
    if where and _is_question(s, where.start(), where.end()):
        return None
    return cue, cond, asked, neg


def rule_preferencia(s: Sentence, ctx: Context) -> Iterator[Hit]:
    f = s.folded
    cues = _preference_cues(s, ctx)
    if cues is None:
        return
    cue, cond, asked, neg = cues
    found = S.pref_slots(f, s.text)
    if not found:
        if cue and re.search(r"prefiro|prefer|favorit|gost|sempre (?:peco|pedimos|pego|escolho)", f):
            a, b = _obj(f, cue.end(), 6)
            obj = s.text[a:b].strip()
            if obj and len(obj) > 2:
                yield Hit("preferencia", "preference", slug(obj)[:40], f"Prefere {obj}", 0.65)
        return
    if not cue and not neg and not (cond or asked):
        return
    if not cue and (cond or asked) and neg is None:
        # conditional / answered preferences only for room attributes
        room_named = bool(re.search(S.ROOM_WORDS, f))
        found = [x for x in found if x[0] in {"room_floor", "room_position", "room_quiet", "room_view", "bed_setup", "garage"}
                 or (x[0] == "preferred_room" and room_named)]
        if not found:
            return
    key, value, label = found[0]
    # Negated mention of this slot ("cansamos da Hidro", "parei de usar aquele e-mail", "nada de quarto comum")
    negated = None
    if neg:
        sub = S.pref_slots(f[neg.start():], s.text[neg.start():], any_polarity=True)
        if sub:
            negated = sub[0]
    if negated and not cue:
        nk, nv, nl = negated
        yield Hit("preferencia", nk, NEGATED_PREFIX + nv, f"Não quer mais {nl}", 0.75)
        return
    extras = ", ".join(l for k, _, l in found[1:3] if k != key)
    content = f"Prefere {label}" + (f" ({extras})" if extras else "")
    if negated and negated[0] == key and negated[1] != value:
        content += f"; não quer mais {negated[2]}"
    yield Hit("preferencia", key, value, content, 0.85 if cue else 0.7)


# ---------------------------------------------------------------------------
# reclamacao / feedback_positivo
# ---------------------------------------------------------------------------
HYPOTHETICAL = re.compile(r"\bseria (?:otim|bom|boa|lind|perfeit|legal)\w*|\bse (?:for|tiver|der)\b")


def rule_reclamacao(s: Sentence, ctx: Context) -> Iterator[Hit]:
    f = s.folded
    problem = S.PROBLEM.search(f)
    if not problem or _is_question(s, problem.start(), problem.end()):
        return
    if re.search(r"\blonge d[oa]\b", f) and not re.search(r"mal|nao|demor", f):
        return
    if re.search(r"nao (?:demorou|atrasou)|sem (?:demora|atraso)", f):
        return
    topic = S.topic_of(f)
    if topic is None:
        return
    if S.POSITIVE.search(f) and not re.search(r"\bmas\b|\bporem\b|\bbut\b", f) and S.RESOLVED.search(f):
        return
    lo, hi = clause_around(s, problem.start(), problem.end())
    clause = _tidy_clause(s.text[lo:hi])
    content = f"Reclamou: {clause}" if len(clause) >= 12 else f"Reclamou de {topic.replace('_', ' ')}"
    yield Hit("reclamacao", f"complaint_{topic}", "open", content[:300], 0.85)


def _tidy_clause(text: str) -> str:
    """A clause as a short statement: no leading filler ("Ah, e"), no final punctuation."""
    t = re.sub(r"^\s*(?:(?:ah|ai|e|mas|ent[aã]o|olha|ali[aá]s|s[oó] que)\b[\s,]*)+", "", text.strip(), flags=re.I)
    return t.strip().rstrip(".!?…;:").strip()


def rule_feedback(s: Sentence, ctx: Context) -> Iterator[Hit]:
    f = s.folded
    pos = S.POSITIVE.search(f)
    if not pos or _is_question(s, pos.start(), pos.end()) or HYPOTHETICAL.search(f):
        return
    if S.PROBLEM.search(f) and not re.search(r"\bmas\b|\bbut\b", f[: pos.start()]):
        if not re.search(r"\bnovo\b|\bnova\b|consert|troca", f):
            return
    staff = re.search(S.STAFF, f)
    thing = re.search(S.THINGS, f)
    names = [m for m in re.finditer(r"(?<=\s)[A-ZÀ-Ý][\wÀ-ÿ]+", s.text) if fold(m.group(0)) not in S.NOT_NAMES]
    if not (staff or thing or names):
        return
    if names:
        target_key, target = "staff", names[0].group(0)
        value = fold(target)
    elif staff:
        target_key, target = "staff", s.text[staff.start():staff.end()]
        value = fold(target)
    else:
        target_key, target = S.topic_of(f) or "service", s.text[thing.start():thing.end()]
        value = fold(target)
    lo, hi = clause_around(s, pos.start(), pos.end())
    clause = _tidy_clause(s.text[lo:hi])
    content = f"Elogiou ({target}): {clause}" if len(clause) >= 12 else f"Elogiou {target}"
    yield Hit("feedback_positivo", f"praise_{target_key}", value, content[:300], 0.85)


# ---------------------------------------------------------------------------
# vinculo_comercial
# ---------------------------------------------------------------------------
ROLE = (
    r"agente de viage\w*|motorista|funcionari[oa]|gerente|representante|vendedor[a]?|consultor[a]?|diretor[a]?|analista|"
    r"tecnic[oa]|comprador[a]?|secretari[oa]|soci[oa]|dono|dona|proprietari[oa]|supervisor[a]?|coordenador[a]?|"
    r"travel agent|driver|manager|employee|sales rep\w*"
)
EMPLOYER_PATTERNS = [
    re.compile(rf"\b(?:sou|i'?m|i am)\s+(?:(?:o|a)\s+\w+,\s*)?(?:o |a |an? )?(?P<role>{ROLE})(?:\s+(?:comercial|senior|junior|regional|tecnic[oa]|de vendas))?\s+(?:da|do|de|na|no|at|for|with|from)\s+(?P<org>\w)"),
    re.compile(rf"\b(?P<role>{ROLE})(?:\s+(?:comercial|senior|junior|regional|tecnic[oa]|de vendas))?\s+(?:da|do|na|no|at|for)\s+(?P<org>\w)"),
    re.compile(r"\b(?:trabalho|trabalhamos|i work)\s+(?:na|no|pela|pelo|para a|para o|pra|em|at|for)\s+(?P<org>\w)"),
    re.compile(r"\b(?:agora (?:eu )?(?:estou|to|tou|trabalho)|entrei|fui contratad[oa])\s+(?:na|no|pela|pelo|em)\s+(?P<org>\w)"),
    re.compile(r"\b\w+ aqui,?\s+(?:da|do)\s+(?P<org>\w)"),
    re.compile(r"\b(?:minha|a minha) empresa,?\s+(?:a\s+)?(?P<org>\w)|\bmy company,? (?P<org2>\w)"),
]
LEFT_ORG = re.compile(r"\b(?:sai|saí|deixei|left)\s+(?:da|do|a|o)\s+(?P<org>\w)|\b(?:a|o)\s+(?P<org2>\w)[\w ]{0,30}?\s+fechou\b")


def rule_vinculo_comercial(s: Sentence, ctx: Context) -> Iterator[Hit]:
    f = s.folded
    for pattern in EMPLOYER_PATTERNS:
        m = pattern.search(f)
        if not m:
            continue
        g = "org" if m.groupdict().get("org") else "org2"
        org = S.org_at(s.text, m.start(g))
        if not org:
            continue
        role = m.groupdict().get("role")
        left = []
        for lm in LEFT_ORG.finditer(f):
            lg = "org" if lm.group("org") else "org2"
            lo = S.org_at(s.text, lm.start(lg))
            if lo and lo != org and not org.startswith(lo):
                left.append(lo)
        msg = fold(ctx.message)
        deal = " (convênio/tarifa corporativa)" if re.search(r"convenio|conveniad|tarifa corporativa|corporate rate|parceir", msg) else ""
        head = f"{role.capitalize()} da {org}" if role else f"Trabalha na {org}"
        tail = f" (saiu da {left[0]})" if left else ""
        span = None
        lo, hi = clause_around(s, m.start(), m.end(g) + len(org))
        if len(s.text) > 90:
            span = (lo, hi)
        yield Hit("vinculo_comercial", "employer", fold(org), head + deal + tail, 0.9, span=span)
        return


# ---------------------------------------------------------------------------
# contexto_pessoal
# ---------------------------------------------------------------------------
PROFESSION = re.compile(rf"\b(?:sou|eu sou|trabalho como|i'?m an?|i am an?|i'?m|i am)\s+(?:um |uma )?(?P<prof>{S.PROF})\b")
SHIFT = re.compile(r"plant(?:ao|oes)\s+(?:da |de )?(?P<p>noite|dia|madrugada)|plant(?:ao|oes) (?P<p2>noturno|diurno)s?|turno da (?P<p3>noite|manha|tarde)|(?P<p4>night|day) shifts?")
CITY = re.compile(r"\b(?:moro|moramos|vivo|vivemos|resido|i live|we live)\s+(?:em|no|na|in|at)\s+(?P<city>\w)"
                  r"|\b(?:mudei|mudamos|me mudei|nos mudamos|i moved|we moved)\s+(?:pra|para|to)\s+(?P<city2>\w)")
PET_NAMED = re.compile(rf"\b(?:o|a)\s+(?P<name>\w+),?\s+(?:[^.!?]{{0,30}}?\s)?(?:meu|minha|nosso|nossa)\s+(?P<pet>{S.PET_WORDS})|\b(?:meu|minha|nosso|nossa|my)\s+(?P<pet2>{S.PET_WORDS}),?\s+(?:(?:o|a)\s+)?(?P<name2>\w+)")
PREGNANT = re.compile(r"\b(?:estou|to|tou)\s+gravida|\bgestante\b|i'?m pregnant")


def rule_contexto(s: Sentence, ctx: Context) -> Iterator[Hit]:
    f = s.folded
    t = "contexto_pessoal"
    m = PROFESSION.search(f)
    if m and not re.match(r"\s+(?:da|do|na|no)\s+[A-Z]", s.text[m.end():m.end() + 6]):
        prof = s.text[m.start("prof"):m.end("prof")]
        shift = SHIFT.search(f)
        extra = ""
        if shift:
            p = next(g for g in shift.groups() if g)
            extra = ", trabalha em turno " + {"noite": "noturno", "noturno": "noturno", "night": "noturno", "madrugada": "noturno"}.get(p, "diurno")
        pref = re.search(r"prefer\w* (.+)$", f[m.end():])
        more = f"; {s.text[m.end() + pref.start():].strip(' .,')}" if pref and not extra else ""
        yield Hit(t, "occupation", fold(prof), f"{prof.capitalize()}{extra}{more}", 0.85)
    m = CITY.search(f)
    if m:
        g = "city" if m.group("city") else "city2"
        city = S.org_at(s.text, m.start(g))
        if city:
            yield Hit(t, "city", fold(city), f"Mora em {city}", 0.85, span=(m.start(), m.start(g) + len(city)))
    m = PET_NAMED.search(f)
    if m:
        ng, pg = ("name", "pet") if m.group("name") else ("name2", "pet2")
        name = S.name_at(s.text, m.start(ng))
        if name:
            travels = bool(re.search(r"viaja\w* (?:sempre )?comigo|sempre comigo|travels with", fold(ctx.message)))
            content = f"{'Viaja sempre com' if travels else 'Tem'} o pet {name} ({m.group(pg)})"
            yield Hit(t, "pet", fold(name), content, 0.85, span=(m.start(), m.end()))
    m = PREGNANT.search(f)
    if m:
        yield Hit(t, "pregnancy", "gravida", "Está grávida", 0.8)


RULES: list[Rule] = [
    rule_restricao, rule_vinculo_social, rule_data_comemorativa, rule_padrao,
    rule_preferencia, rule_reclamacao, rule_feedback, rule_vinculo_comercial, rule_contexto,
]


class RulesExtractor:
    """The deterministic offline provider (``extraction_provider = "rules"``)."""

    name = NAME
    version = VERSION

    def propose(self, transcript: Transcript) -> Proposal:
        hits: list[tuple[Hit, Sentence]] = []
        previous_agent = ""
        for index, message in enumerate(transcript.messages):
            if message.role != "contact":
                previous_agent = fold(message.text)
                continue
            ctx = Context(transcript, message.text, previous_agent)
            for sentence in sentences(message.text, index):
                for rule in RULES:
                    for hit in rule(sentence, ctx):
                        hits.append((hit, sentence))
        return Proposal(candidates=[_candidate(h, s) for h, s in _merge(hits)])


def _merge(hits: list[tuple[Hit, Sentence]]) -> list[tuple[Hit, Sentence]]:
    """Fold a negated fact into a positive one on the same slot (an update)."""
    out: list[tuple[Hit, Sentence]] = []
    positives = {(h.memory_type, h.key): h for h, _ in hits if not (h.value or "").startswith(NEGATED_PREFIX)}
    for hit, sentence in hits:
        value = hit.value or ""
        if value.startswith(NEGATED_PREFIX) and (hit.memory_type, hit.key) in positives and value != NEGATED_PREFIX + "*":
            pos = positives[(hit.memory_type, hit.key)]
            if "não quer mais" not in pos.content and pos.value != value[len(NEGATED_PREFIX):]:
                pos.content += "; " + hit.content[0].lower() + hit.content[1:]
            continue
        out.append((hit, sentence))
    return out


def _candidate(hit: Hit, sentence: Sentence) -> CandidateFact:
    if hit.span is not None:
        evidence = sentence.text[hit.span[0]:hit.span[1]].strip(" ,;:")
    else:
        evidence = sentence.text
    return CandidateFact(
        memory_type=hit.memory_type,
        memory_key=hit.key,
        content=hit.content,
        normalized_value=hit.value,
        evidence=evidence,
        confidence=hit.confidence,
    )
