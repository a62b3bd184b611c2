"""Memory recall scoring (pure): which of a contact's live facts to inject.

A fact is *compatible* with a conversation when its scope is ``global``, or
its scope is ``unit`` and it was learnt in the conversation's own unit. A
unit-scoped fact is never shown in another unit's conversation, and a
conversation without a unit sees no unit-scoped fact at all. A fact without
an embedding (embedding failed) or whose vector has another dimension (a
different model) is invisible.

score = (cosine similarity + word evidence) × weight (weight 0.7 once a
"reduce weight" TTL expired). Word evidence (``word_evidence``, when the
message text is given) adds what a sentence embedding misses in chat: a name
the customer types ("vou levar o Vitor") and the people behind relation words
("a patroa", "o véio", "os meninos", "meu bebê de quatro patas" → the spouse,
the children, the pet, and every fact naming them). Vectors are L2-normalised by the embedders, but we normalise again
so a store returning raw pgvector values cannot skew the ranking.

``min_score`` is an optional relevance floor. Measured on the dev recall set
(``python -m streams.respond.evaluate_recall``): a floor cannot raise
recall@5, it only trims; the default keeps none (``DEFAULT_MIN_SCORE``),
see that module's output for the trade-off per embedder.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

TOP_K = 5
DEFAULT_MIN_SCORE: float | None = None


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


def score_memories(query_vec: Sequence[float] | np.ndarray, facts: Sequence[MemoryFact],
                   unit_id: int | None, top_k: int = TOP_K,
                   min_score: float | None = DEFAULT_MIN_SCORE,
                   query_text: str | None = None) -> list[ScoredFact]:
    """The at most ``top_k`` compatible facts, best first (ties: higher confidence, lower id)."""
    evidence = word_evidence(query_text, [f.content for f in facts]) if query_text else None
    q = np.asarray(query_vec, dtype=np.float32).reshape(-1)
    qn = float(np.linalg.norm(q))
    if qn == 0.0 or top_k <= 0:
        return []
    q = q / qn
    scored: list[ScoredFact] = []
    for k, fact in enumerate(facts):
        if fact.embedding is None or not compatible(fact, unit_id):
            continue
        e = np.asarray(fact.embedding, dtype=np.float32).reshape(-1)
        if e.shape != q.shape:
            continue
        en = float(np.linalg.norm(e))
        if en == 0.0:
            continue
        sim = float(np.dot(q, e) / en)
        extra = evidence[k] if evidence is not None else 0.0
        score = (sim + extra) * float(fact.weight)
        if min_score is not None and score < min_score:
            continue
        scored.append(ScoredFact(fact, sim, score))
    scored.sort(key=lambda s: (-s.score, -s.fact.confidence, s.fact.id))
    return scored[:top_k]


def fact_passage_text(memory_type: str, content: str) -> str:
    """The text a fact is embedded from (learning and ranking must agree).

    Only the content: measured on the dev recall set, prefixing the type
    label did not help (see ``evaluate_recall --variants``).
    """
    return content


# ---------------------------------------------------------------- word evidence
# Relation words → the role they name. A query word of a role points to the
# facts holding a word of the same role, and to every fact naming the people
# those facts name ("Casado com a Renata" → "Renata faz aniversário em maio").
ROLES: dict[str, tuple[str, ...]] = {
    "partner": ("esposa", "esposo", "marido", "mulher", "patroa", "patrao", "veio", "veia", "conjuge",
                "casado", "casada", "casou", "namorado", "namorada", "namora", "noivo", "noiva", "boy",
                "mozao", "amor", "companheiro", "companheira", "altar", "bodas", "casamento"),
    "child": ("filho", "filha", "filhos", "filhas", "meninos", "meninas", "menino", "menina", "pequeno",
              "pequena", "crianca", "criancas", "gemeos", "gemeas", "neto", "neta", "netos", "moleque"),
    "pet": ("cachorro", "cachorra", "cao", "dog", "gato", "gata", "gatas", "gatos", "pet", "pets",
            "patas", "husky", "shih", "labrador", "vira", "srd", "bichinho", "lobao", "peludo",
            "cadela", "cadelinha", "cachorrinho", "cachorrinha", "gatinho", "gatinha", "filhote", "caes",
            "poodle", "golden", "bulldog", "buldogue", "pug", "pinscher", "spitz", "yorkshire", "beagle",
            "dachshund", "salsicha", "persa", "siames", "felino", "felina", "doguinho", "au"),
    "parent": ("mae", "pai", "sogra", "sogro", "coroa"),
}
_ROLE_OF = {w: r for r, ws in ROLES.items() for w in ws}
# A pet's species: a question about "minha cachorrinha" is not about the customer's cat.
SPECIES: dict[str, tuple[str, ...]] = {
    "dog": ("cachorro", "cachorra", "cao", "caes", "dog", "cadela", "cadelinha", "cachorrinho", "cachorrinha",
            "doguinho", "husky", "shih", "labrador", "vira", "srd", "lobao", "poodle", "golden", "bulldog",
            "buldogue", "pug", "pinscher", "spitz", "yorkshire", "beagle", "dachshund", "salsicha", "au"),
    "cat": ("gato", "gata", "gatos", "gatas", "gatinho", "gatinha", "persa", "siames", "felino", "felina",
            "bichano", "bichana"),
}
_SPECIES_OF = {w: k for k, ws in SPECIES.items() for w in ws}
for _w in _SPECIES_OF:
    _ROLE_OF.setdefault(_w, "pet")
NAME_BONUS = 0.15      # a name the customer typed, found in the fact
ROLE_BONUS = 0.08      # the fact holds the role the customer referred to
LINK_BONUS = 0.08      # the fact names a person of that role
WORD_BONUS = 0.04      # per rare content word shared (stemmed)


def _names(text: str) -> set[str]:
    """Capitalised words that are not the first of the text (people, pets, places)."""
    import re

    from streams.respond.text import fold

    words = re.findall(r"[A-Za-zÀ-ÿ]+", text)
    return {fold(w) for k, w in enumerate(words) if k > 0 and w[0].isupper() and len(w) > 2}


_COUPLE_WORDS = frozenset({"juntos", "juntas", "casal", "nosso", "nossos", "nossas"})


def speaks_as_couple(query_text: str) -> bool:
    """The customer speaks for two ("nosso aniversário", "a gente", "meio século juntos"):
    the partner is in the question although no relation word names them. "nossa" counts
    only before a noun, not as the exclamation that opens a message ("nossa, tá caro")."""
    from streams.respond.text import normalize_chat

    words = normalize_chat(query_text).split()
    return any(w in _COUPLE_WORDS or (w == "nossa" and 0 < k < len(words) - 1)
               or (w == "gente" and k and words[k - 1] in ("a", "pra", "para"))
               for k, w in enumerate(words))


def word_evidence(query_text: str, contents: Sequence[str]) -> list[float]:
    """Per fact, the bonus the customer's words give it (see ``ROLES``)."""
    from streams.respond.compose import stem
    from streams.respond.text import STOPWORDS, fold, normalize_chat

    q_words = set(normalize_chat(query_text).split())
    q_stems = {stem(w) for w in q_words if w not in STOPWORDS and len(w) > 2}
    q_roles = {_ROLE_OF[w] for w in q_words if w in _ROLE_OF}
    if speaks_as_couple(query_text):
        q_roles.add("partner")
    q_species = {_SPECIES_OF[w] for w in q_words if w in _SPECIES_OF}

    def holds_role(ws: set[str]) -> bool:
        """The fact holds a role the customer referred to (a pet of another species does not)."""
        if not any(_ROLE_OF.get(w) in q_roles for w in ws):
            return False
        species = {_SPECIES_OF[w] for w in ws if w in _SPECIES_OF}
        others = {_ROLE_OF.get(w) for w in ws} - {"pet"}
        return not (q_species and species and not species & q_species) or bool(others & q_roles)
    fact_words = [set(fold(c).split()) for c in contents]
    # a name is a capitalised word that is not the first of its fact; once known,
    # it is found in any position ("Casado com a Renata" / "Renata não come glúten")
    all_names = set().union(*(_names(c) for c in contents)) if contents else set()
    fact_names = [ws & all_names for ws in fact_words]
    df: dict[str, int] = {}
    for ws in fact_words:
        for st in {stem(w) for w in ws if w not in STOPWORDS and len(w) > 2}:
            df[st] = df.get(st, 0) + 1
    # people of the roles the customer mentioned, and the people they named
    linked = set()
    for ws, names in zip(fact_words, fact_names):
        if holds_role(ws):
            linked |= names
    linked |= {w for w in q_words if any(w in n for n in fact_names)}
    out = []
    n = max(1, len(contents))
    for ws, names in zip(fact_words, fact_names):
        bonus = 0.0
        if names & q_words:
            bonus += NAME_BONUS
        if holds_role(ws):
            bonus += ROLE_BONUS
        if names & linked:
            bonus += LINK_BONUS
        shared = {stem(w) for w in ws if w not in STOPWORDS and len(w) > 2} & q_stems
        bonus += WORD_BONUS * sum(1 for st in shared if df.get(st, 0) <= max(1, n // 3))
        out.append(bonus)
    return out
