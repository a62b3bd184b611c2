"""Memory recall scoring (pure): which of a contact's live facts to inject.

A fact is *compatible* with a conversation when its scope is ``global``, or
its scope is ``unit`` and it was learnt in the conversation's own unit. A
unit-scoped fact is never shown in another unit's conversation, and a
conversation without a unit sees no unit-scoped fact at all. A fact without
an embedding (embedding failed) or whose vector has another dimension (a
different model) is invisible.

score = (cosine similarity + word evidence, lifted) × weight (weight 0.7 once a
"reduce weight" TTL expired). Word evidence (``word_evidence``, when the
message text is given) adds what a sentence embedding misses in chat: a name
the customer types ("vou levar o Vitor") and the people behind relation words
("a patroa", "o véio", "os meninos", "meu bebê de quatro patas" → the spouse,
the children, the pet, and every fact naming them); when the customer refers to someone,
a fact about another person or pet the facts introduce scores a little less (``OTHER_PARTY``:
"minha cachorrinha" is not the cat, "minha peluda" not "um gato"); a fact naming someone only by
relation ("O marido é diabético") is about the one person of that relation the facts introduce
("Casada com o Otávio": ``resolve_roles``), so "uma doce pro otavio" finds it. Then rules of
kind: a payment fact (``vinculo_comercial``) scores less when the message says nothing
about paying (``talks_payment``); a fact about where the customer lives or goes scores
more when the message is about a place (``talks_place``: "onde deixo", "entrega aqui",
"tem ... aí?"); the fact that says who someone is ("Tem um labrador chamado Thor",
"Tem um filho de 4 anos chamado Miguel") comes along with a well-matched fact about them
(``anchor_lift``); and a fact told in the past imperfect or about an ex ("Morava no Centro",
"Trabalhava de caminhoneiro", "A Paula gostava de balões brancos") is history, kept below the
current ones (``is_history``, ``HISTORY_OFF``; "Parou de beber" and "Não é mais vegana" are
current), and so is a state a change of state replaces, told in the present ("É vegana" beside "Não é
mais vegana, voltou a comer queijo": ``superseded``). An optional second encoder's cosines can be fused
in (``second``, ``SECOND_WEIGHT``; 0, off: multilingual-e5-small lost out of set, see the quality log). A
message that speaks of a professional by trade ("a vet de sempre", "a mesma prof", "aquele fisio")
lifts the facts naming one ("Só quer ser atendida pela Dra. Helena": ``talks_professional``,
``names_professional``, ``PRO_BONUS``). A breed is a pet ("Tem um border collie chamado Guri"), another person's pet ("o cachorro da
irmã") is not the one asked about; a pronoun with no one named in the message ("algo pra ela") points
to the one person of its sex the facts introduce (``pronoun_referent``); a birthday said in chat ("faz
aninho", "faz niver", "faz anos") lifts the birthday facts (``talks_birthday``), a message about paying
the payment facts (``PAYMENT_ON``), and asking what a referred person "pode" have lifts that person's
restrictions (``MAY_BONUS``). With the labelled recall cases, a learnt re-weighting of the cosine, their
vote and their type prior, and a learnt reading of the message's and the facts' vectors, is added last
(``score_parts``, ``recall_examples.rerank_weights``, ``recall_examples.Rerank``). Measured on the ``examples/`` recall cases of dev, train, probe_a and probe_c (never
held-out). Vectors are L2-normalised by the embedders, but we normalise again
so a store returning raw pgvector values cannot skew the ranking.

``min_score`` is an optional relevance floor. Measured on the dev recall set
(``python -m streams.respond.evaluate_recall``): a floor cannot raise
recall@5, it only trims; the default keeps none (``DEFAULT_MIN_SCORE``),
see that module's output for the trade-off per embedder.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from typing import NamedTuple, Sequence

import numpy as np

from streams.learn.lexicon import (
    AMBIGUOUS_ROLES,
    BIRTH_ORDER_WORDS,
    DETERMINED_ROLES,
    PAYING_WORDS,
    PLACE_FACT_WORDS,
    PLACE_QUESTION_WORDS,
    RECALL_ROLES,
    ROLES,
    SPECIES,
    USUAL_WORDS,
)
from streams.respond.compose import stem
from streams.respond.text import STOPWORDS, fold, normalize_chat

TOP_K = 5
PART_MIN_WORDS = 3
PART_WEIGHT = 0.3
_PART_SPLIT = re.compile(r"[,;.!?]|\s+e\s+|\s+mas\s+|\s+porque\s+|\s+pq\s+")
DEFAULT_MIN_SCORE: float | None = None
SECOND_WEIGHT = 0.0   # weight of a second encoder's cosine deviation (``_fuse_second``)


@dataclass(frozen=True)
class MemoryFact:
    id: int
    memory_type: str
    content: str
    confidence: float
    scope: str  # "global" | "unit"
    source_unit_id: int | None
    weight: float = 1.0
    embedding: Sequence[float] | np.ndarray | None = None


@dataclass(frozen=True)
class ScoredFact:
    fact: MemoryFact
    similarity: float
    score: float


def compatible(fact: MemoryFact, unit_id: int | None) -> bool:
    """Tenant rule for units: global facts everywhere, unit facts only at home."""
    if fact.scope == "global":
        return True
    if fact.scope == "unit":
        return unit_id is not None and fact.source_unit_id == unit_id
    return False  # an unknown scope is treated as the most restrictive


def message_parts(text: str) -> list[str]:
    """The parts of a message that asks or tells several things ("vou levar o Vitor hj, separa
    aquela dose q ele gosta e o quarto do espelho"): its clauses of at least ``PART_MIN_WORDS``
    words, split at punctuation and "e"; [] for a message of one part."""
    parts = [p.strip() for p in _PART_SPLIT.split(text) if p and len(p.split()) >= PART_MIN_WORDS]
    return parts if len(parts) >= 2 else []


def score_memories(query_vec: Sequence[float] | np.ndarray, facts: Sequence[MemoryFact],
                   unit_id: int | None, top_k: int = TOP_K,
                   min_score: float | None = DEFAULT_MIN_SCORE,
                   query_text: str | None = None, part_vecs=None, examples=None,
                   second: Sequence[float | None] | None = None,
                   second_weight: float | None = None) -> list[ScoredFact]:
    """The at most ``top_k`` compatible facts, best first (ties: higher confidence, lower id).
    ``part_vecs``: vectors of the message's parts (``message_parts``): a fact matching one part
    well scores by that part too (``PART_WEIGHT`` of its excess over the whole message).
    ``examples``: labelled recall cases (``recall_examples.RecallExamples``): a fact like one that
    queries like this message needed scores their vote more, and a fact of a type such queries needed
    scores their type prior more (``RecallExamples.type_prior``); the learnt re-weighting of the
    score's parts (``RecallExamples.rerank``, ``recall_examples.RERANK_FEATURES``) is added last."""
    if top_k <= 0:
        return []
    rows = score_parts(query_vec, facts, unit_id, query_text, part_vecs, examples, second, second_weight)
    learnt = getattr(examples, "rerank", None) if examples is not None else None
    if learnt is not None and rows:
        w = learnt.parts
        mean = sum(r.similarity for r in rows) / len(rows)
        extra = _vector_reading(learnt, query_vec, [facts[r.index] for r in rows])
        rows = [r._replace(base=r.base + float(w[0]) * (r.similarity - mean) + float(w[1]) * r.vote
                           + float(w[2]) * r.prior + x) for r, x in zip(rows, extra)]
    scored: list[ScoredFact] = []
    for r in rows:
        fact = facts[r.index]
        score = r.base * float(fact.weight)
        if min_score is not None and score < min_score:
            continue
        scored.append(ScoredFact(fact, r.similarity, score))
    scored.sort(key=lambda s: (-s.score, -s.fact.confidence, s.fact.id))
    return scored[:top_k]


def _vector_reading(learnt, query_vec, facts: Sequence[MemoryFact]) -> list[float]:
    """What the learnt re-weighting reads off the vectors themselves (``recall_examples.Rerank.interaction``),
    per fact; zeros without that part (another embedder's vectors, or none fitted)."""
    if getattr(learnt, "match", None) is None:
        return [0.0] * len(facts)
    q = np.asarray(query_vec, dtype=np.float32).reshape(-1)
    F = np.stack([np.asarray(f.embedding, dtype=np.float32).reshape(-1) for f in facts])
    if F.shape[1] != q.shape[0]:
        return [0.0] * len(facts)
    q = q / max(float(np.linalg.norm(q)), 1e-9)
    F = F / np.maximum(np.linalg.norm(F, axis=1, keepdims=True), 1e-9)
    return learnt.interaction(q.astype(np.float64), F.astype(np.float64), [f.memory_type for f in facts]).tolist()


class ScoreParts(NamedTuple):
    """One compatible fact's hand-built score (``base``, before its weight) and the parts a learnt
    re-weighting reads: its cosine with the message (parts included), the labelled cases' vote and
    type prior (0 without ``examples``)."""

    index: int
    similarity: float
    base: float
    vote: float
    prior: float


def score_parts(query_vec, facts: Sequence[MemoryFact], unit_id: int | None, query_text: str | None = None,
                part_vecs=None, examples=None, second: Sequence[float | None] | None = None,
                second_weight: float | None = None) -> list[ScoreParts]:
    """The hand-built score of each compatible fact, in fact order (see ``score_memories``)."""
    evidence, others = evidence_and_others(query_text, [f.content for f in facts], [f.memory_type for f in facts]) \
        if query_text else (None, None)
    q = np.asarray(query_vec, dtype=np.float32).reshape(-1)
    qn = float(np.linalg.norm(q))
    if qn == 0.0:
        return []
    q = q / qn
    parts = None
    if part_vecs is not None and len(part_vecs):
        parts = np.asarray(part_vecs, dtype=np.float32).reshape(len(part_vecs), -1)
        parts = parts / np.maximum(np.linalg.norm(parts, axis=1, keepdims=True), 1e-9)
        if parts.shape[1] != q.shape[0]:
            parts = None
    live = [(k, sim, sim + (evidence[k] if evidence is not None else 0.0))
            for k, sim in _similarities(q, facts, unit_id, parts)]   # (index, similarity, + word evidence)
    if second is not None and live:
        live = _fuse_second(live, second, SECOND_WEIGHT if second_weight is None else second_weight)
    votes = [0.0] * len(live)
    if examples is not None and live:
        votes = examples.votes(q, [facts[k].content for k, _, _ in live], [facts[k].embedding for k, _, _ in live])
        if others is not None:   # never a vote for a fact about someone else than the one asked about
            votes = [min(v, 0.0) if others[k] else v for (k, _, _), v in zip(live, votes)]
        live = [(k, sim, b + v) for (k, sim, b), v in zip(live, votes)]
    if query_text and not talks_payment(query_text):
        live = [(k, sim, b - PAYMENT_OFF if is_payment_fact(facts[k]) else b) for k, sim, b in live]
    if not (query_text and looks_back(query_text)):   # history, and the states a change of state replaced
        old = superseded([facts[k] for k, _, _ in live])
        live = [(k, sim, b - HISTORY_OFF if is_history(facts[k].content) or n in old else b)
                for n, (k, sim, b) in enumerate(live)]
    if query_text:
        live = _kind_lifts(query_text, facts, live)
    lifted = anchor_lift([facts[k] for k, _, _ in live], [b for _, _, b in live])
    prior = [0.0] * len(live)
    if examples is not None and live:   # what kinds of fact queries like this one needed
        prior = examples.type_prior(q, [facts[k].memory_type for k, _, _ in live])
        lifted = [b + t for b, t in zip(lifted, prior)]
    return [ScoreParts(k, sim, b, v, t) for (k, sim, _), b, v, t in zip(live, lifted, votes, prior)]


def _kind_lifts(query_text: str, facts: Sequence[MemoryFact],
                live: list[tuple[int, float, float]]) -> list[tuple[int, float, float]]:
    """The lifts of a kind of message for a kind of fact: a place, a birthday, paying, the usual, a
    professional by trade (each rule's words are in its ``talks_*`` / ``asks_*`` function)."""
    if talks_place(query_text):
        live = [(k, sim, b + PLACE_BONUS if is_place_fact(facts[k].content) else b) for k, sim, b in live]
    if talks_birthday(query_text):
        live = [(k, sim, b + BIRTHDAY_BONUS if is_birthday_fact(facts[k]) else b) for k, sim, b in live]
    if talks_payment(query_text):
        live = [(k, sim, b + PAYMENT_ON if is_payment_fact(facts[k]) else b) for k, sim, b in live]
    if asks_usual(query_text):
        live = [(k, sim, b + USUAL_BONUS if is_own_usual(facts[k]) else b) for k, sim, b in live]
    if PRO_BONUS and talks_professional(query_text):
        served = serving_facts([facts[k] for k, _, _ in live])
        live = [(k, sim, b + PRO_BONUS if names_professional(facts[k].content) or n in served else b)
                for n, (k, sim, b) in enumerate(live)]
    return live


def _fuse_second(live: list[tuple[int, float, float]], second: Sequence[float | None],
                 w: float) -> list[tuple[int, float, float]]:
    """A second encoder's cosines (``second[k]`` for fact ``k``; None: no vector) added at weight
    ``w`` as their deviation from the mean over the facts that have one (its cosines sit in a
    narrow band of their own, so only the spread between the contact's facts is read)."""
    got = [second[k] for k, _, _ in live if k < len(second) and second[k] is not None]
    if not got or not w:
        return live
    mean = sum(got) / len(got)
    return [(k, sim, b + w * (second[k] - mean)) if k < len(second) and second[k] is not None else (k, sim, b)
            for k, sim, b in live]


def _similarities(q: np.ndarray, facts: Sequence[MemoryFact], unit_id: int | None,
                  parts: np.ndarray | None) -> list[tuple[int, float]]:
    """(index, cosine similarity with the unit query ``q``) of each compatible fact with a non-zero
    vector of ``q``'s size; with ``parts``, a fact matching one part better than the whole message
    scores ``PART_WEIGHT`` of the excess more. The vectors as one matrix: one product for all the
    facts (this runs on the event loop, once per message)."""
    keep: list[int] = []
    rows: list[np.ndarray] = []
    for k, fact in enumerate(facts):
        if fact.embedding is None or not compatible(fact, unit_id):
            continue
        e = np.asarray(fact.embedding, dtype=np.float32).reshape(-1)
        if e.shape == q.shape:
            keep.append(k)
            rows.append(e)
    if not rows:
        return []
    E = np.stack(rows)
    norms = np.linalg.norm(E, axis=1)
    nonzero = norms != 0.0
    safe = np.where(nonzero, norms, 1.0)
    sims = ((E @ q) / safe).astype(np.float64)   # float32 products, then Python-float arithmetic
    if parts is not None:
        best = ((E @ parts.T).max(axis=1) / safe).astype(np.float64)
        sims = sims + PART_WEIGHT * np.maximum(0.0, best - sims)
    return [(k, sim) for k, ok, sim in zip(keep, nonzero.tolist(), sims.tolist()) if ok]


def talks_payment(query_text: str) -> bool:
    """The message is about paying (a method, instalments, a receipt): what makes the
    customer's payment facts (``vinculo_comercial``) worth recalling."""
    return bool(PAYING_WORDS.search(normalize_chat(query_text)))


# "faz aninho", "faz niver", "faz anos", "fazer 60 anos", "completa 3 aninhos": a birthday, said in chat
_BIRTHDAY = re.compile(r"\b(?:aninhos?|aniversario|niver|(?:faz|fara|fazer|completa|completar)\s+(?:\d+\s+)?anos)\b")
_BIRTHDAY_FACT = re.compile(r"\b(?:aniversario|niver|nasceu|faz \d* ?anos)\b")


def talks_birthday(query_text: str) -> bool:
    """The message is about someone's birthday, however it is said ("o peludo faz aninho", "faz
    niver semana que vem", "ela faz anos sábado")."""
    return bool(_BIRTHDAY.search(normalize_chat(query_text)))


def is_birthday_fact(fact: "MemoryFact") -> bool:
    """A date fact that is a birthday ("Aniversário do Guri em 8 de setembro", "A mãe faz 60 anos em julho")."""
    return fact.memory_type == "data_comemorativa" and bool(_BIRTHDAY_FACT.search(fold(fact.content)))


USUAL_TYPES = frozenset({"preferencia", "padrao_comportamental"})


def asks_usual(query_text: str) -> bool:
    """The customer asks for their usual ("a de sempre", "do jeito que eu gosto"): their
    preferences and habits (``USUAL_TYPES``) are what answers it."""
    return bool(USUAL_WORDS.search(normalize_chat(query_text)))


def is_own_usual(fact: "MemoryFact") -> bool:
    """A preference or habit of the customer's own (not "A namorada gosta de ...")."""
    return fact.memory_type in USUAL_TYPES and not _profile(fact.content).roles


# the professionals who serve a customer, by trade or title ("a prof", "o fisio", "a vet", "Dra. Helena")
_PRO = (r"prof|profe|professor\w*|instrutor\w*|vet|veterinari\w*|dra|dr|doutor\w*|fisio|fisioterapeuta|"
        r"cabeleireir\w*|barbeir\w*|manicure|personal|coach|tatuador\w*|massagista|treinador\w*|dentista|"
        r"esteticista|tosador\w*|nutricionista|psicolog\w*|terapeuta|mecanico|atendente|garcom|garconete|manobrista|"
        r"recepcionista|enfermeir\w*|medic[oa]|pizzaiolo|chef|teacher|depiladora|maquiador\w*")
_PRO_WORD = re.compile(rf"\b(?:{_PRO})\b")
_PRO_NAMED = re.compile(rf"\b(?:{_PRO})\s+([a-z]+)")


# ... or by who serves them: "com quem sempre faz", "com quem ela gosta", "o mesmo moço da outra vez",
# "a menina de sempre"
_SERVER = re.compile(r"\b(?:com quem (?:(?:ela|ele|eu) )?(?:sempre )?(?:faz|fez|gosta|cuida|atende|atendeu|corta|cortou)|"
                     r"(?:mesmo|mesma) (?:moco|moca|menino|menina|rapaz|pessoa|mocinha|cara|mina|guria|guri|senhor|senhora)|"
                     r"(?:moco|moca|menino|menina|rapaz|mocinha) de sempre)\b")


def talks_professional(query_text: str) -> bool:
    """The message speaks of one of the business's professionals by trade ("com a vet de sempre",
    "a mesma prof no próximo módulo", "aquele fisio") or by who serves the customer ("com quem ela
    gosta", "o mesmo moço da outra vez", "a menina de sempre")."""
    text = normalize_chat(query_text)
    return bool(_PRO_WORD.search(text) or _SERVER.search(text))


@functools.lru_cache(maxsize=16384)
def names_professional(content: str) -> bool:
    """The fact names a professional the customer deals with ("Só quer ser atendida pela Dra. Helena",
    "Elogiou o instrutor Neto", "Treina com o personal Caio"): a trade or title followed by a name."""
    names = _profile(content).names
    return any(m.group(1) in names for m in _PRO_NAMED.finditer(fold(content)))


_SERVED_TYPES = frozenset({"preferencia", "feedback_positivo", "padrao_comportamental", "reclamacao"})
_PERSON_BEFORE = frozenset({"a", "o", "na", "no", "da", "do", "pela", "pelo", "com", "ao"})


def serving_names(profiles: Sequence["_Profile"], types: Sequence[str]) -> set[str]:
    """The names of people who serve the customer, though no trade is said ("Só confia na Kátia para
    o banho", "Faz a unha com a Kelly toda sexta", "Elogio ao banho feito pelo Renan"): named after an
    article or preposition in a preference, habit or feedback about no relation or pet, and none of
    the customer's people or pets. A name is one of those when a fact that introduces people
    introduces it, or holds it beside a relation or pet word ("Namora a Bruna", "Tem uma poodle, a
    Pipoca"); a name after no article ("a suíte Orquídea") is a thing's."""
    all_names = set().union(*(p.names for p in profiles)) if profiles else set()
    kin: set[str] = set()
    for p, t in zip(profiles, types):
        if t in _INTRO_TYPES:
            kin |= introduced(p.words, all_names)
        if p.roles or p.species:
            kin |= p.names
    out: set[str] = set()
    for p, t in zip(profiles, types):
        if t in _SERVED_TYPES and not p.roles and not p.species:
            ws = p.words
            out |= {w for k, w in enumerate(ws) if w in all_names and w not in kin and k and ws[k - 1] in _PERSON_BEFORE}
    return out


def serving_facts(facts: Sequence["MemoryFact"]) -> set[int]:
    """Indices of the facts naming someone who serves the customer (``serving_names``)."""
    profiles = [_profile(f.content) for f in facts]
    served = serving_names(profiles, [f.memory_type for f in facts])
    return {n for n, (f, p) in enumerate(zip(facts, profiles))
            if f.memory_type in _SERVED_TYPES and not p.roles and not p.species and p.names & served}


def is_payment_fact(fact: "MemoryFact") -> bool:
    """A commercial fact about paying ("Paga com Pix", "Pede nota fiscal no CNPJ"); not a
    service the customer uses or a deal they have ("Usa o leva e traz", "Tem convênio pela empresa")."""
    return fact.memory_type == "vinculo_comercial" and bool(PAYING_WORDS.search(fold(fact.content)))


def talks_place(query_text: str) -> bool:
    """The message is about a place: where to go or to deliver ("onde deixo", "entrega aqui em
    casa", "tem brinquedo aí?")."""
    return bool(PLACE_QUESTION_WORDS.search(normalize_chat(query_text)))


@functools.lru_cache(maxsize=16384)
def is_place_fact(content: str) -> bool:
    """Where the customer lives or which unit they go to ("Mora no Jardim Europa", "Prefere a unidade Rodovia")."""
    return bool(PLACE_FACT_WORDS.search(fold(content)))


_PAST = re.compile(r"\b(?:\w{3,}avam?|era|eram|tinha|tinham|antigamente|ex)\b")


@functools.lru_cache(maxsize=16384)
def is_history(content: str) -> bool:
    """A fact told in the past imperfect or about an ex ("Morava no Centro", "Trabalhava de
    caminhoneiro", "A Paula gostava de balões brancos", "Era vegana"): a state that held before,
    kept as history, not what the customer is now. "Não ... mais"/"Parou de" facts are current
    states ("Parou de beber álcool") and do not count."""
    return bool(_PAST.search(fold(content)))


def looks_back(query_text: str) -> bool:
    """The message itself speaks of how things were ("como antigamente", "eu ia sempre na outra
    unidade", "quando eu morava no centro"): the history facts are what it asks about, so they are
    not kept below the current ones. Read with the same past-tense pattern as the facts, but for
    "tava"/"estava" ("tava vendo aqui", "a pizza de ontem tava boa": what just happened)."""
    return any(w not in _JUST_NOW for w in _PAST.findall(normalize_chat(query_text)))


_JUST_NOW = frozenset({"estava", "estavam", "tava", "tavam"})


def fact_passage_text(memory_type: str, content: str) -> str:
    """The text a fact is embedded from (learning and ranking must agree).

    Only the content: measured on the dev recall set, prefixing the type
    label did not help (see ``evaluate_recall --variants``).
    """
    return content


# ---------------------------------------------------------------- word evidence
# Relation words and pet species come from the shared lexicon (``streams.learn.lexicon``).
_ROLE_OF = {w: r for r, ws in ROLES.items() for w in ws}
_ROLE_OF.update({w: r for r, ws in RECALL_ROLES.items() for w in ws})
_SPECIES_OF = {w: k for k, ws in SPECIES.items() for w in ws}
for _w in _SPECIES_OF:
    _ROLE_OF.setdefault(_w, "pet")
NAME_BONUS = 0.15      # a name the customer typed, found in the fact
PAYMENT_OFF = 0.1      # a payment fact when the message says nothing about paying
PAYMENT_ON = 0.05      # ... and more when it does ("faturamento como de costume", "passa no cartão")
BIRTHDAY_BONUS = 0.05
MAY_BONUS = 0.05       # the referred person's restriction, when the customer asks what they "pode" have  # a birthday fact when the message speaks of a birthday (``talks_birthday``)
HISTORY_OFF = 0.1      # a fact told in the past imperfect or about an ex: a superseded state (``is_history``)
OTHER_PARTY = 0.08     # the customer refers to someone, and the fact is about another person or pet (or,
#                        speaking only of themself, about anyone: ``speaks_of_self``)
ANCHOR_LIFT = 0.5      # share of the gap to the best fact about a person that the fact introducing them closes
ANCHOR_MIN = 0.15      # ... when that fact itself matches the message at least this well
PLACE_BONUS = 0.08     # where the customer lives or goes, when the message is about a place
PRO_BONUS = 0.08      # a fact naming a professional, when the message speaks of one by trade (as ROLE_BONUS)
USUAL_BONUS = 0.08     # a preference or habit, when the customer asks for their usual
ROLE_BONUS = 0.08      # the fact holds the role the customer referred to
LINK_BONUS = 0.08      # the fact names a person of that role
WORD_BONUS = 0.04      # per rare content word shared (stemmed)


_WORD = re.compile(r"[A-Za-zÀ-ÿ]+")


def _names(text: str) -> set[str]:
    """Capitalised words that are not the first of the text (people, pets, places). In a run of
    capitalised words the first one names the kind ("Suíte Orquídea", "Vila Nova", "Tarde Aurora",
    "Dra Helena"), not the one: a customer's "qual suíte" or "fim da tarde" is no name of it."""
    words = list(_WORD.finditer(text))
    out = set()
    for k, m in enumerate(words):
        w = m.group()
        if k == 0 or not w[0].isupper() or len(w) <= 2:
            continue
        nxt = words[k + 1] if k + 1 < len(words) else None
        if nxt is not None and nxt.group()[0].isupper() and not text[m.end():nxt.start()].strip():
            continue   # the head of a multi-word name
        out.add(fold(w))
    return out


SELF_WORDS = frozenset({"mim", "eu", "me", "comigo", "estou", "to"})   # chat: "tô"/"to"/"tou" = "estou"
_THIRD_PERSON = frozenset({"ele", "ela", "eles", "elas", "dele", "dela", "deles", "delas", "nele", "nela"})


def speaks_of_self(words: Sequence[str]) -> bool:
    """The customer speaks of themself ("pra mim", "eu curto", "me dá enxaqueca", "comigo", "tô com
    dor nas costas") and of no one else ("um vinho pra mim e algo pra ela" speaks of two)."""
    return any(w in SELF_WORDS for w in words) and not any(w in _THIRD_PERSON for w in words)


_COUPLE_WORDS = frozenset({"juntos", "juntas", "casal", "nosso", "nossos", "nossas"})


def speaks_as_couple(query_text: str) -> bool:
    """The customer speaks for two ("nosso aniversário", "a gente", "meio século juntos"):
    the partner is in the question although no relation word names them. "nossa" counts
    only before a noun, not as the exclamation that opens a message ("nossa, tá caro")."""
    words = normalize_chat(query_text).split()
    return any(w in _COUPLE_WORDS or (w == "nossa" and 0 < k < len(words) - 1)
               or (w == "gente" and k and words[k - 1] in ("a", "pra", "para"))
               for k, w in enumerate(words))


_FEMININE = frozenset({"a", "uma", "minha", "da", "na", "sua", "essa", "esta", "dela"})
_MASCULINE = frozenset({"o", "um", "meu", "do", "no", "seu", "esse", "este", "dele"})


def pet_gender(words: Sequence[str]) -> str | None:
    """"f" or "m": the sex of the first pet word, by the article or possessive before it
    ("minha peluda", "Tem um labrador") or its ending ("cachorrinha", "gato"); None if unknown."""
    for k, w in enumerate(words):
        if _ROLE_OF.get(w) != "pet":
            continue
        before = words[k - 1] if k else ""
        if before in _FEMININE:
            return "f"
        if before in _MASCULINE:
            return "m"
        return "f" if w.endswith("a") else "m" if w.endswith("o") else None
    return None


_INTRO_TYPES = frozenset({"vinculo_social", "contexto_pessoal"})
_INTRO_WORDS = frozenset({"chamado", "chamada", "chamados", "chamadas", "com"})
_INTRO_WINDOW = 3


def introduced(words: Sequence[str], names: set[str]) -> set[str]:
    """The names a fact's (folded) words introduce: within a few words after "chamado",
    "com" or a relation word ("Casado com a Renata", "Tem dois filhos, Enzo e Valentina",
    "Tem um labrador chamado Thor"); not a name further on ("Mora com a mãe, que busca o Thor")."""
    out: set[str] = set()
    for k, w in enumerate(words):
        if w in _INTRO_WORDS or w in _ROLE_OF:
            out |= {x for x in words[k + 1:k + 1 + _INTRO_WINDOW] if x in names}
    return out


def _unnamed_roles(words: Sequence[str], names: set[str]) -> set[str]:
    """Roles a fact refers to without a name right after ("O filho de 4 anos é alérgico")."""
    return {_ROLE_OF[w] for k, w in enumerate(words)
            if w in _ROLE_OF and not any(x in names for x in words[k + 1:k + 3])}


def anchor_lift(facts: Sequence["MemoryFact"], scores: Sequence[float]) -> list[float]:
    """Scores after the fact that says who someone is comes along with the facts about them.

    A fact of the types that introduce people and pets (``vinculo_social``, ``contexto_pessoal``)
    naming them ("Casada com Carol", "Tem um labrador de 35 kg chamado Thor", "Tem um filho de
    4 anos chamado Miguel") closes ``ANCHOR_LIFT`` of its gap to the best other fact about the
    same person, by name or, when that fact names no one, by relation ("O filho de 4 anos é
    alérgico a perfume"): the agent should know who "a Carol" or "o Thor" is."""
    if len(facts) < 2:
        return list(scores)
    profiles = [_profile(f.content) for f in facts]
    words = [p.words for p in profiles]
    all_names = set().union(*(p.names for p in profiles))
    intro = [introduced(ws, all_names) if f.memory_type in _INTRO_TYPES else set()
             for f, ws in zip(facts, words)]
    keys = []
    for ws, names in zip(words, intro):
        if names:   # an introducing fact: the names it introduces and the relations it holds
            keys.append(names | {_ROLE_OF[w] for w in ws if w in _ROLE_OF})
        else:       # any other: the names it holds, and the relations it leaves unnamed
            keys.append((set(ws) & all_names) | _unnamed_roles(ws, all_names))
    out = list(scores)
    for i, names in enumerate(intro):
        if not names:
            continue
        best = max((scores[j] for j in range(len(facts)) if j != i and not intro[j] and keys[j] & keys[i]),
                   default=None)
        if best is not None and best >= ANCHOR_MIN and best > scores[i]:
            out[i] = scores[i] + ANCHOR_LIFT * (best - scores[i])
    return out


# a fact that says a state changed: "Não é mais vegana", "O filho não tem mais alergia a leite", "Agora
# prefere aula presencial", "Voltou a comer carne", "Foi liberado para ração normal", "Joelho recuperado"
_UPDATE = re.compile(r"\b(?:nao(?:\s+\w+){0,3}\s+mais|agora|voltou a|volta a|liberad[oa]s?|parou de|deixou de|"
                     r"recuperad[oa]s?|curad[oa]s?)\b")


def is_update(content: str) -> bool:
    """The fact says a state changed ("não ... mais", "agora", "voltou a", "liberado", "parou de")."""
    return bool(_UPDATE.search(fold(content)))


@functools.lru_cache(maxsize=16384)
def _subject_stems(content: str) -> frozenset[str]:
    """A fact's content stems but for names, relation and species words: what the fact is about."""
    p = _profile(content)
    drop = {fold(n) for n in p.names} | set(_ROLE_OF) | set(_SPECIES_OF)
    return frozenset(stem(w) for w in p.words if w not in STOPWORDS and len(w) > 2 and w not in drop
                     and not _UPDATE.fullmatch(w))


def _partner(i: int, subj: Sequence[frozenset[str]], profiles: Sequence["_Profile"], types: Sequence[str]) -> int | None:
    """The one other fact of the same memory type about the same party (the same names, relations
    and species) sharing most of fact ``i``'s subject stems; None when no fact shares one or two
    share as many ("Voltou a comer peixe, por orientação médica" does not update "É médica")."""
    party = lambda j: (types[j], profiles[j].names, profiles[j].roles, profiles[j].species)  # noqa: E731
    counts = sorted(((len(subj[i] & subj[j]), j) for j in range(len(subj))
                     if j != i and party(j) == party(i)), reverse=True)
    if not counts or counts[0][0] == 0 or (len(counts) > 1 and counts[1][0] == counts[0][0]):
        return None
    return counts[0][1]


def superseded(facts: Sequence["MemoryFact"]) -> set[int]:
    """Indices of the facts a change of state replaces: each update fact's (``is_update``) partner
    (``_partner``), when that partner is no update itself and not already history (``is_history``):
    "É vegana" beside "Não é mais vegana, voltou a comer queijo", "O filho é alérgico a leite de vaca"
    beside "O filho não tem mais alergia a leite". Such a state is history the fact does not tell in
    the past ("Era vegana" would be ``is_history``), so it is kept below by ``HISTORY_OFF`` too."""
    profiles = [_profile(f.content) for f in facts]
    subj = [_subject_stems(f.content) for f in facts]
    out = set()
    for i, f in enumerate(facts):
        if is_update(f.content) and subj[i]:
            j = _partner(i, subj, profiles, [g.memory_type for g in facts])
            if j is not None and not is_update(facts[j].content) and not is_history(facts[j].content):
                out.add(j)
    return out


def _roles(words: Sequence[str]) -> set[str]:
    """The roles a text's relation words name; an "ex-" one ("Ex-namorada se chama Paula")
    is nobody's current partner: it holds no role."""
    return {_ROLE_OF[w] for k, w in enumerate(words)
            if w in _ROLE_OF and not (k and words[k - 1] == "ex") and _determined(words, k)}


_DETERMINERS = frozenset({"o", "a", "os", "as", "meu", "minha", "meus", "minhas", "do", "da", "no", "na", "pro",
                          "pra", "seu", "sua", "ao", "um", "uma", "nosso", "nossa"})


def _determined(words: Sequence[str], k: int) -> bool:
    """Word ``k`` names a relation where it reads as one: a word that is another word too
    (``DETERMINED_ROLES``: "a pizza veio fria") only after an article or a possessive ("o véio")."""
    return words[k] not in DETERMINED_ROLES or (k > 0 and words[k - 1] in _DETERMINERS)


def query_roles(words: Sequence[str], held: set[str]) -> set[str]:
    """The roles a message's relation words name, its word for a relation read against the relations
    the customer's facts hold (``held``): a word of several relations (``AMBIGUOUS_ROLES``: "a patroa",
    "meu velho", "minha gata") names the first of them the facts hold, and "o mais velho",
    "a mais nova" name a child by birth order."""
    out = set()
    for k, w in enumerate(words):
        before = words[k - 1] if k else ""
        if before == "mais" and w in BIRTH_ORDER_WORDS:
            out.add("child")
        elif before == "ex" or not _determined(words, k):
            continue
        elif w in AMBIGUOUS_ROLES:
            out.add(next((r for r in AMBIGUOUS_ROLES[w] if r in held), AMBIGUOUS_ROLES[w][0]))
        elif w in _ROLE_OF:
            out.add(_ROLE_OF[w])
    return out


@dataclass(frozen=True)
class _Profile:
    """What the word evidence reads in a fact's text (cached: a contact's facts come back message after message)."""

    words: tuple[str, ...]
    wordset: frozenset[str]
    names: frozenset[str]      # capitalised words, not the first (``_names``)
    stems: frozenset[str]      # content stems
    roles: frozenset[str]      # the roles its relation words name
    species: frozenset[str]
    gender: str | None         # of its first pet word (``pet_gender``)


@functools.lru_cache(maxsize=16384)
def _profile(content: str) -> _Profile:
    words = tuple(fold(content).split())
    names = frozenset(_names(content))
    return _Profile(words, frozenset(words), names,
                    frozenset(stem(w) for w in words if w not in STOPWORDS and len(w) > 2),
                    frozenset(_roles([w if w not in names else "" for w in words])),  # "o instrutor Neto": a name
                    frozenset(_SPECIES_OF[w] for w in words if w in _SPECIES_OF), pet_gender(words))


def resolve_roles(profiles: Sequence["_Profile"], fact_names: list[frozenset[str]],
                  intros: Sequence[set[str]]) -> list[frozenset[str]]:
    """Each fact's names, with the person an unnamed relation word stands for ("O marido é
    diabético" is about Otávio when "Casada com o Otávio" is the one partner the facts name):
    a role that exactly one introduced person holds resolves to that person's name.
    ``intros``: per fact, the names it introduces (``introduced``)."""
    holders: dict[str, set[str]] = {}
    for f, names in zip(profiles, intros):
        for role in f.roles:
            holders.setdefault(role, set()).update(names)
    out = []
    for f, names in zip(profiles, fact_names):
        extra = set() if names else {n for r in f.roles if len(holders.get(r, ())) == 1 for n in holders[r]}
        out.append(names | extra)
    return out


_PRONOUN_GENDER = {"ela": "f", "dela": "f", "nela": "f", "elas": "f", "delas": "f",
                   "ele": "m", "dele": "m", "nele": "m", "eles": "m", "deles": "m"}
_SPOUSE_VERBS = frozenset({"casado", "casada", "casou", "namora"})   # the customer's state, not the partner's sex


def name_gender(name: str, profiles: Sequence["_Profile"]) -> str | None:
    """"f" or "m": the sex the facts give a name, by the word before it ("a Camila", "do Guri",
    "a esposa Carol", "o marido Nilson", "chamada Laura"); None when unknown or contradictory."""
    seen = set()
    for f in profiles:
        ws = f.words
        for k, w in enumerate(ws):
            if w != name or not k:
                continue
            before = ws[k - 1]
            if before in _FEMININE or before in ("chamada", "chamadas"):
                seen.add("f")
            elif before in _MASCULINE or before in ("chamado", "chamados"):
                seen.add("m")
            elif before in _ROLE_OF and before not in _SPOUSE_VERBS and before[-1:] in ("a", "o"):
                seen.add("f" if before.endswith("a") else "m")
            elif before in ("mae", "pai"):
                seen.add("f" if before == "mae" else "m")
    return seen.pop() if len(seen) == 1 else None


def pronoun_referent(q_words: Sequence[str], profiles: Sequence["_Profile"],
                     intros: Sequence[set[str]]) -> str | None:
    """The one person or pet the facts introduce whom a third-person pronoun of the message points
    to ("algo pra ela" → "Sai com a Camila"), when the message names no one before it: the only one
    of the pronoun's sex. None when the pronouns are of both sexes or several introduced fit."""
    sexes = {_PRONOUN_GENDER[w] for w in q_words if w in _PRONOUN_GENDER}
    if len(sexes) != 1:
        return None
    sex = sexes.pop()
    fits = [n for n in sorted(set().union(*intros)) if name_gender(n, profiles) == sex] if intros else []
    return fits[0] if len(fits) == 1 else None


def _owned_pet(words: Sequence[str]) -> bool:
    """A pet word followed by whose it is ("o cachorro da irmã", "a gata do sogro")."""
    return any(_ROLE_OF.get(w) == "pet" and k + 2 < len(words) and words[k + 1] in ("da", "do", "de")
               and _ROLE_OF.get(words[k + 2], "pet") != "pet" for k, w in enumerate(words))


_MAY_WORDS = frozenset({"pode", "podem", "possa", "possam"})   # not "vocês poderiam buscar": asks the business


def asks_what_may(words: Sequence[str]) -> bool:
    """The message asks what someone may have or do ("a menina pode comer qual?", "algo que ele
    possa comer"), not what the business can do ("você pode buscar?")."""
    return any(w in _MAY_WORDS and not (k and words[k - 1] in ("voce", "voces")) for k, w in enumerate(words))


def word_evidence(query_text: str, contents: Sequence[str], types: Sequence[str] | None = None) -> list[float]:
    """Per fact, the bonus the customer's words give it (see ``ROLES``). ``types``: the facts'
    memory types (a restriction of the person the customer asks about is lifted when the customer
    asks what they "pode" have: ``MAY_BONUS``)."""
    return evidence_and_others(query_text, contents, types)[0]


def _holds_role(f: _Profile, q_roles: set[str], q_species: set[str], q_gender: str | None) -> bool:
    """The fact holds a role the customer referred to (a pet of another species, or of the other
    sex — "minha peluda" is not "um gato" —, or another person's pet — "o cachorro da irmã" is not
    "o peludo" — does not)."""
    if not f.roles & q_roles:
        return False
    other_pet = ((q_species and f.species and not f.species & q_species)  # the sex only where no species is said
                 or (not q_species and q_gender and f.gender and q_gender != f.gender))
    if not other_pet and f.roles & q_roles == {"pet"} and f.roles - {"pet"} - q_roles and _owned_pet(f.words):
        return False
    return not other_pet or bool((f.roles - {"pet"}) & q_roles)


_DIMINUTIVE = re.compile(r"(?:z?inh[oa]s?|z?it[oa])$")


def diminutive_of(word: str, name: str) -> bool:
    """``word`` (normalised) is ``name`` said as a diminutive: "fridinha" of "frida", "tobiazinho" of
    "tobias", "bibizinha" of "bibi"; the name keeps at least three letters before the ending."""
    if word == name or not _DIMINUTIVE.search(word):
        return False
    root = _DIMINUTIVE.sub("", word)
    return len(root) >= 3 and (name.startswith(root) or root.startswith(name)) and len(name) - len(root) <= 2


def _doc_freq(profiles: Sequence[_Profile]) -> dict[str, int]:
    """How many of the facts hold each content stem."""
    df: dict[str, int] = {}
    for f in profiles:
        for st in f.stems:
            df[st] = df.get(st, 0) + 1
    return df


def evidence_and_others(query_text: str, contents: Sequence[str],
                        types: Sequence[str] | None = None) -> tuple[list[float], list[bool]]:
    """``word_evidence``, and per fact whether it is about someone else than the one the customer
    asks about (the facts ``OTHER_PARTY`` puts below)."""

    q_list = normalize_chat(query_text).split()
    q_words = set(q_list)
    q_stems = {stem(w) for w in q_words if w not in STOPWORDS and len(w) > 2}
    profiles = [_profile(c) for c in contents]
    q_roles = query_roles(q_list, set().union(*(f.roles for f in profiles)) if profiles else set())
    if speaks_as_couple(query_text):
        q_roles.add("partner")
    q_species = {_SPECIES_OF[w] for w in q_words if w in _SPECIES_OF}
    q_gender = pet_gender(q_list)

    held = [_holds_role(f, q_roles, q_species, q_gender) for f in profiles]
    # a name is a capitalised word that is not the first of its fact; once known,
    # it is found in any position ("Casado com a Renata" / "Renata não come glúten")
    all_names = frozenset().union(*(f.names for f in profiles)) if contents else frozenset()
    # a name said as a diminutive ("a Fridinha", "o Tobiazinho") is the name
    q_words |= {n for w in q_words for n in all_names if diminutive_of(w, n)}
    fact_names = [f.wordset & all_names for f in profiles]
    intros = [introduced(f.words, all_names) for f in profiles]
    fact_names = resolve_roles(profiles, fact_names, intros)
    df = _doc_freq(profiles)
    # people of the roles the customer mentioned, and the people they named
    linked: set[str] = set()
    for h, names in zip(held, fact_names):
        if h:
            linked |= names
    linked |= {w for w in q_words if any(w in n for n in fact_names)}
    refers = bool(q_roles or (q_words & all_names))
    if not refers:   # "algo pra ela", "tem algo que ele possa comer?": the one person of that sex the facts introduce
        ref = pronoun_referent(q_list, profiles, intros)
        if ref:
            linked.add(ref)
            refers = True
    # relations named beside them ("O filho de 4 anos é alérgico a perfume; não usar perfume no Pingo")
    near = set().union(*(f.roles for f, names in zip(profiles, fact_names) if names & linked)) - {"pet"}
    # the people and pets the facts introduce ("Casado com a Renata", "Tem um gato chamado Sushi"):
    # when the customer refers to someone, a fact about another of them is about someone else
    people = set().union(*intros) if contents else set()
    if types is not None and talks_professional(query_text):   # the one who serves is no other party
        people -= serving_names(profiles, types)
    about_self = not refers and speaks_of_self(q_list)
    out, others = [], []
    rare = max(1, max(1, len(contents)) // 3)
    may = refers and asks_what_may(q_list)
    for f, names, h, rtype in zip(profiles, fact_names, held, types or [None] * len(profiles)):
        bonus = 0.0
        other = False
        if refers and names & people and not names & people & linked and not h and not f.roles & near:
            bonus -= OTHER_PARTY
            other = True
        if about_self and ((names & people) or f.roles):   # "pra mim": not the partner's or the kid's fact
            bonus -= OTHER_PARTY
            other = True
        others.append(other)
        if may and rtype == "restricao" and (h or names & linked):
            bonus += MAY_BONUS   # "minha mãe pode comer X?": what the mother may not have
        if names & q_words:
            bonus += NAME_BONUS
        if h:
            bonus += ROLE_BONUS
        if names & linked:
            bonus += LINK_BONUS
        bonus += WORD_BONUS * sum(1 for st in f.stems & q_stems if df.get(st, 0) <= rare)
        out.append(bonus)
    return out, others
