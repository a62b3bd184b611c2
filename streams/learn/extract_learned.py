"""The offline fact extractor that learns from labelled conversations (provider ``rules``/``offline``).

How it proposes facts for one conversation:

1. **Candidates are verbatim spans.** Every contact message is cut into clauses
   (sentence ends, commas, semicolons, emojis, laughter, "mas", "pq", "então"...);
   a candidate is a run of one to ``MAX_WINDOW`` consecutive clauses of one sentence (a
   window never runs over ". ", "?", "!", "…" or a line break), cut from the original text,
   so its evidence is a substring of what the customer wrote by construction; a possessive
   mention ("minha namorada", "meu filho Pedro") inside a clause is a candidate too. Messages that instruct the agent yield no candidate at all: the
   explicit guard (``normalise.is_instruction``) or a message-level classifier learnt
   from the corpus's ``"instruction": true`` flags (its threshold chosen by CV).
2. **Features**: the sentence embedding of the span (USE multilingual, the memory
   embedder; it understands paraphrase; a shouted span — mostly capitals — is embedded
   lower-cased, ``embedding_text``), hashed character n-grams of the folded
   span (robust to chat spelling: "mto", "vc", missing accents), a few cues
   (question, negation, one-off words such as "hoje", first person, third party,
   habit words, length, and the word kinds the labelling guideline types by: health and
   diet, an animal, a taste, work/studies/home) and which memory types the rule-based extractor sees in
   the span (``extract_rules`` is now a feature and a slot/content normaliser, not
   the decision).
3. **Two logistic stages**, trained on the development half of ``examples/`` plus
   conversations written for the project outside the corpus
   (``tests/learn/data/conversations_written.jsonl`` and ``examples/train/``; ``make train``,
   ``streams.learn.train_extractor``): a "states a durable fact" classifier shared by
   every type times a multinomial "which type" classifier (rare types borrow the
   frequent ones' positives; a span stating two facts teaches both types); a candidate
   becomes a fact of a type when its probability reaches that type's threshold
   (chosen by cross-validation grouped by customer). Overlapping candidates of a
   type keep the most probable one; at most ``MAX_FACTS`` facts per conversation,
   most confident first.
3b. **A second-stage gate** (stop 28): the two stages propose each type's candidates at
   ``GATE_SCALE`` × its threshold, and a logistic gate learnt from every training writer's
   *out-of-source* proposals (each writer's proposals made by a model fit on the other writers)
   keeps the ones it judges right (``gate_features``: how sure the stages are, the type's margin
   over the others, other proposals of the same or a competing type in the conversation, the
   rank, the span's cues). It removes duplicates of one fact, the weaker of two competing types
   and low-ranked extras that the per-type thresholds keep, and lets the thresholds propose more.
4. **Content** is normalised, never the evidence: the rule extractor's templated
   content when it saw the same fact, otherwise the span with chat abbreviations
   expanded and dates written ``dd/mm`` (``normalise``); third parties stay in the
   content ("minha esposa curte muito vinho rosé"), and a leading "ele"/"ela" becomes the
   person named before it ("minha esposa … ela ama petit gateau" → "A esposa ama petit
   gateau"); a leading greeting is dropped. ``memory_key`` comes from the
   rule slot when there is one, else from a small per-type slot lexicon.
   Confidence maps the probability onto [0.5, 1]: the type's threshold is 0.5.

The artefact (``streams/learn/models/extractor-v1.npz`` + ``.json``) holds the
weights, thresholds, feature configuration, the training data's SHA-256 and the
cross-validated metrics; a missing artefact is an error that names the command
that builds it.
"""

from __future__ import annotations

import json
import re
import zlib
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Sequence

import numpy as np

from streams.learn import lexicon as S
from streams.learn.model import CandidateFact, Proposal, Transcript
from streams.learn.normalise import date_in, expand_chat, is_instruction, normalise_dates
from streams.learn.taxonomy import MEMORY_TYPES
from streams.learn.text import fold

NAME = "learned"
MODELS_DIR = Path(__file__).resolve().parent / "models"
ARTEFACT = MODELS_DIR / "extractor-v1"
TRAIN_COMMAND = "make train   (or: python -m streams.learn.train_extractor)"

MAX_WINDOW = 3
MAX_FACTS = 5
HASH_DIM = 4096
NGRAMS = (2, 3, 4)

# Clause boundaries (on folded text; same length as the original).
_BOUNDARY = re.compile(
    r"[.!?…;:,()\[\]\n\"“”]+|[\U0001F000-\U0001FAFF\u2600-\u27BF\uFE0F]+"
    r"|\s(?:k{3,}|(?:ha){2,}h?|(?:rs)+)\b"
    r"|\s(?:mas|pq|porque|entao|so que|ai|e ai|alias|inclusive|tipo|q|que)\s"
    r"|\se(?=\s+(?:ele|ela|eles|elas|eu|a gente)\b)"
)
_WORD = re.compile(r"\w+")

QUESTION_START = re.compile(r"^\s*(?:e\s+)?(?:tem|voces tem|vcs tem|vc tem|quanto|qnto|qual|quais|pode|posso|da pra|"
                            r"como|onde|quando|que horas|aceita|existe|sera)\b")
NEGATION = re.compile(r"\b(?:nao|n|nunca|nem|jamais|nada|nenhum|nenhuma)\b")
ONE_OFF = re.compile(r"\b(?:hoje|hj|amanha|essa noite|esta noite|dessa vez|desta vez|agora a noite|mais tarde|"
                     r"daqui a pouco|nesse sabado|neste sabado|esse fim de semana|por hora|so hoje)\b")
FIRST_PERSON = re.compile(r"\b(?:eu|sou|tenho|to|tou|estou|meu|minha|meus|minhas|me|mim|a gente|nos|nossa|nosso)\b")
THIRD_PARTY = re.compile(rf"\b(?:meu|minha|meus|minhas|nosso|nossa)\s+(?:{S.REL_ALT}|boy|mina|mozao|mozi|amor|"
                         r"namorad\w*|esposa|marido|mulher|filh\w*|mae|pai|sogr\w*|irma\w*|amig\w*|chefe|"
                         r"cachorr\w*|gat\w*|pet|dog)\b|\b(?:ele|ela|eles|elas)\b")
HABIT = re.compile(r"\b(?:sempre|toda|todo|todas|todos|costum\w*|geralmente|normalmente|de vez em quando|"
                   r"direto|vira e mexe|religiosamente|tradicao)\b")
HYPOTHETICAL = re.compile(r"\b(?:se (?:tiver|tivesse|for|fosse|der|puder)|seria|talvez|quem sabe)\b")
# Type cues: the word kinds examples/README.md's labelling guideline decides the type by (folded text).
#: Health and diet, a person's or a pet's (``restricao``): allergies, intolerances, conditions, an injury or
#: surgery, medicines, fears, diets, what one does not eat or drink.
HEALTH = re.compile(r"\b(?:alergi\w*|alergic\w*|intoleran\w*|celiac\w*|gluten|lactose|diabet\w*|vegan\w*|vegetarian\w*|"
                    r"rinite|asma|cirurgi\w*|operad[oa]|lesao|lesionad\w*|machuc\w*|fratur\w*|remedio\w*|medicament\w*|"
                    r"medicacao|dieta|jejum|pressao alta|hipertens\w*|colesterol|enxaqueca|renal|racao|pavor|medo|ansiedade|"
                    r"ansios[oa]|sem (?:acucar|sal|lactose|gluten)|nao (?:bebe|bebo|come|como|pode comer|pode beber|toma|tomo))\b")
#: An animal (a pet is ``contexto_pessoal``, its health ``restricao``; never ``vinculo_social``).
PET = re.compile(S.PET_WORDS)
#: A taste (``preferencia``): liking, loving, preferring, hating.
TASTE = re.compile(r"\b(?:gost\w*|ador\w*|amo|ama|amamos|prefir\w*|prefer\w*|curt[eo]|curtimos|odei\w*|detest\w*|"
                   r"favorit\w*|nao suport\w*|apaixonad\w*)\b")
#: The customer's life (``contexto_pessoal``): work, shifts, studies, where one lives, religion, smoking.
LIFE = re.compile(r"\b(?:trabalh\w*|emprego|profissao|plantao|plantoes|turno|faculdade|estud\w*|moro|morando|mudei|mudamos|"
                  r"aposentad\w*|igreja|fumo|fumar|fumante)\b")
N_CUES = 14


# ------------------------------------------------------------------ candidates
@dataclass(frozen=True)
class Span:
    message_index: int
    start: int
    end: int
    text: str          # the original substring (evidence)
    clauses: int = 1   # how many clauses the span runs over


# What ends a sentence (as opposed to a clause): a window of clauses never runs over it.
_SENTENCE_END = re.compile(r"[.!?…\n]")


def clauses(text: str) -> list[tuple[int, int]]:
    """Clause bounds in ``text`` (trimmed, at least one word each)."""
    folded = fold(text)
    out, pos = [], 0
    for m in list(_BOUNDARY.finditer(folded)) + [None]:
        end = m.start() if m else len(text)
        a, b = pos, end
        while a < b and not text[a].isalnum():
            a += 1
        while b > a and text[b - 1] in " \t-–—~*_'":
            b -= 1
        if _WORD.search(text[a:b]):
            out.append((a, b))
        if m:
            pos = m.end()
    return out


# A possessive noun phrase: an optional article, a possessive determiner, the next word, and a
# capitalised name after it when there is one ("a minha esposa", "meu filho Pedro", "minha gata,
# Nina"). Matched on the folded text (same length as the original); the name's capital is read
# in the original.
_POSSESSIVE = re.compile(r"\b(?:(?:a|o|as|os)\s+)?(?:meu|minha|meus|minhas|nosso|nossa|nossos|nossas)\s+\w+")
_NAME_AFTER = re.compile(r",?\s+(\w+)")


def mention_spans(text: str) -> list[tuple[int, int]]:
    """Bounds of the possessive noun phrases of ``text``: the person, pet or thing the customer
    names as theirs, a candidate of its own when a clause says more than the mention ("sou
    vegetariano e minha namorada é vegana": the clause cannot match a gold evidence that is only
    "minha namorada"). Whether a mention states a fact is the classifier's call, as for clauses."""
    folded = fold(text)
    out = []
    for m in _POSSESSIVE.finditer(folded):
        end = m.end()
        name = _NAME_AFTER.match(text, end)
        if name and name.group(1)[:1].isupper():
            end = name.end()
        out.append((m.start(), end))
    return out


def candidate_spans(text: str, message_index: int = 0, max_window: int = MAX_WINDOW) -> list[Span]:
    """Runs of 1..max_window consecutive clauses of one sentence, plus the possessive mentions
    (``mention_spans``) that are not a clause already; each a verbatim substring of ``text``."""
    cl = clauses(text)
    # A window stays inside one sentence: a clause after a sentence end (". ", "?", "!", a line
    # break) starts a new statement, and a window over both is two facts in one span or a fact
    # with the question or request next to it ("meu filho. e por favor avisa a cozinha…").
    ends = [bool(_SENTENCE_END.search(text[cl[k][1]:cl[k + 1][0]])) for k in range(len(cl) - 1)]
    out = []
    for i in range(len(cl)):
        for w in range(1, max_window + 1):
            if i + w > len(cl) or (w > 1 and ends[i + w - 2]):
                break
            a, b = cl[i][0], cl[i + w - 1][1]
            piece = text[a:b].strip()
            if piece and len(piece) <= 400:
                out.append(Span(message_index, a, a + len(piece), piece, w))
    seen = {(s.start, s.end) for s in out}
    for a, b in mention_spans(text):
        if (a, b) not in seen:
            seen.add((a, b))
            out.append(Span(message_index, a, b, text[a:b], 1))
    return out


def transcript_spans(transcript: Transcript, instruction_score=None, instruction_threshold: float = 1.0) -> list[Span]:
    """Candidates of every contact message that does not instruct the agent (the explicit
    guard, or the learnt instruction score ≥ its threshold)."""
    spans = []
    for i, m in enumerate(transcript.messages):
        if m.role != "contact" or is_instruction(m.text):
            continue
        if instruction_score is not None and instruction_score(m.text) >= instruction_threshold:
            continue
        spans.extend(candidate_spans(m.text, i))
    return spans


def message_features(texts: Sequence[str], embedder) -> np.ndarray:
    """Whole-message features of the instruction classifier: [embedding | hashed n-grams]."""
    if not texts:
        return np.zeros((0, 0), dtype=np.float32)
    emb = np.asarray(embedder.embed_passages(list(texts)), dtype=np.float32)
    return np.hstack([emb, np.stack([hashed_ngrams(t) for t in texts])])


# -------------------------------------------------------------------- features
#: A span whose letters are at least this share upper case is embedded lower-cased (``embedding_text``).
SHOUTED = 0.6


def embedding_text(text: str) -> str:
    """What the sentence embedder reads for a span: the span itself, lower-cased when it is shouted
    (at least ``SHOUTED`` of its letters, and at least four, upper case: "ODEIO CEBOLA", an elder
    writing in capitals). USE reads case: a shouted span lands far from the same words written
    plainly, and most of what the model learnt was written plainly. The evidence stays verbatim;
    only the features change, at training and at extraction alike (``featurize``)."""
    letters = [c for c in text if c.isalpha()]
    if len(letters) >= 4 and sum(c.isupper() for c in letters) >= SHOUTED * len(letters):
        return text.lower()
    return text


def hashed_ngrams(text: str, dim: int = HASH_DIM) -> np.ndarray:
    """Log-scaled, L2-normalised counts of character n-grams of the folded words (stable crc32 hash)."""
    vec = np.zeros(dim, dtype=np.float32)
    for word in fold(text).split():
        w = f" {word} "
        for n in NGRAMS:
            for k in range(max(1, len(w) - n + 1)):
                vec[zlib.crc32(w[k:k + n].encode()) % dim] += 1.0
    np.log1p(vec, out=vec)
    norm = float(np.linalg.norm(vec))
    return vec / norm if norm else vec


def cue_features(span: str, message: str) -> np.ndarray:
    f, fm = fold(span), fold(message)
    k = message.find(span)
    sentence_q = k >= 0 and message[k + len(span):].lstrip()[:1] == "?"
    return np.array([
        1.0 if f.rstrip().endswith("?") or sentence_q else 0.0,
        1.0 if QUESTION_START.search(f) else 0.0,
        1.0 if NEGATION.search(f) else 0.0,
        1.0 if ONE_OFF.search(f) else 0.0,
        1.0 if FIRST_PERSON.search(f) else 0.0,
        1.0 if THIRD_PARTY.search(f) else 0.0,
        1.0 if HABIT.search(f) else 0.0,
        1.0 if HYPOTHETICAL.search(f) else 0.0,
        min(len(f.split()), 30) / 15.0,
        1.0 if is_instruction(fm) else 0.0,
        1.0 if HEALTH.search(f) else 0.0,
        1.0 if PET.search(f) else 0.0,
        1.0 if TASTE.search(f) else 0.0,
        1.0 if LIFE.search(f) else 0.0,
    ], dtype=np.float32)


def rule_hits(transcript: Transcript) -> list[tuple[CandidateFact, int, int, int]]:
    """The rule extractor's candidates located in the messages: (candidate, message, start, end)."""
    from streams.learn.extract_rules import RulesExtractor

    out = []
    for cand in RulesExtractor().propose(transcript).candidates:
        for i, m in enumerate(transcript.messages):
            if m.role == "contact" and cand.evidence:
                k = m.text.find(cand.evidence)
                if k >= 0:
                    out.append((cand, i, k, k + len(cand.evidence)))
                    break
    return out


def _overlap(a0: int, a1: int, b0: int, b1: int) -> int:
    return max(0, min(a1, b1) - max(a0, b0))


def rule_features(span: Span, hits) -> np.ndarray:
    v = np.zeros(len(MEMORY_TYPES), dtype=np.float32)
    for cand, i, a, b in hits:
        if i == span.message_index and _overlap(a, b, span.start, span.end) > 0 and cand.memory_type in MEMORY_TYPES:
            v[MEMORY_TYPES.index(cand.memory_type)] = 1.0
    return v


def featurize(transcript: Transcript, spans: Sequence[Span], embedder, hits=None) -> np.ndarray:
    """One row per span: [embedding | hashed n-grams | cues | rule types]."""
    if not spans:
        return np.zeros((0, 0), dtype=np.float32)
    hits = rule_hits(transcript) if hits is None else hits
    emb = np.asarray(embedder.embed_passages([embedding_text(s.text) for s in spans]), dtype=np.float32)
    rows = []
    for s, e in zip(spans, emb):
        msg = transcript.messages[s.message_index].text
        rows.append(np.concatenate([e, hashed_ngrams(s.text), cue_features(s.text, msg), rule_features(s, hits)]))
    return np.stack(rows)


# ---------------------------------------------------------------------- model
@dataclass
class LinearModel:
    """Per-type logistic classifiers, or (when ``fact_weights`` is set) two stages: a
    "states a durable fact" classifier shared by every type, times a multinomial
    "which type" classifier (``weights``/``bias`` are then its class scores); the
    shared stage learns from every type's positives, so rare types borrow from the
    frequent ones."""

    types: tuple[str, ...]
    weights: np.ndarray      # (n_types, n_features)
    bias: np.ndarray         # (n_types,)
    thresholds: np.ndarray   # (n_types,)
    meta: dict
    instruction_weights: np.ndarray | None = None   # message-level "aimed at the agent" classifier
    instruction_bias: float = 0.0
    instruction_threshold: float = 1.0
    fact_weights: np.ndarray | None = None          # (n_features,) the shared "is a fact" stage
    fact_bias: float = 0.0
    gate_weights: np.ndarray | None = None          # the second-stage gate over proposals (``gate_features``)
    gate_bias: float = 0.0
    gate_threshold: float = 0.0
    gate_scale: float = 1.0

    def instruction_probability(self, X: np.ndarray) -> np.ndarray:
        if self.instruction_weights is None or X.size == 0:
            return np.zeros(len(X))
        return 1.0 / (1.0 + np.exp(-(X @ self.instruction_weights + self.instruction_bias)))

    def probabilities(self, X: np.ndarray) -> np.ndarray:
        if X.size == 0:
            return np.zeros((0, len(self.types)), dtype=np.float32)
        z = X @ self.weights.T + self.bias
        if self.fact_weights is None:
            return 1.0 / (1.0 + np.exp(-z))
        return two_stage_probabilities(X @ self.fact_weights + self.fact_bias, z)

    def save(self, path: Path = ARTEFACT) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        extra = {}
        if self.instruction_weights is not None:
            extra = dict(instruction_weights=self.instruction_weights.astype(np.float16),
                         instruction_bias=np.float32(self.instruction_bias),
                         instruction_threshold=np.float32(self.instruction_threshold))
        if self.fact_weights is not None:
            extra.update(fact_weights=self.fact_weights.astype(np.float16), fact_bias=np.float32(self.fact_bias))
        if self.gate_weights is not None:
            extra.update(gate_weights=self.gate_weights.astype(np.float32), gate_bias=np.float32(self.gate_bias),
                         gate_threshold=np.float32(self.gate_threshold), gate_scale=np.float32(self.gate_scale))
        np.savez_compressed(path.with_suffix(".npz"), weights=self.weights.astype(np.float16),
                            bias=self.bias.astype(np.float32), thresholds=self.thresholds.astype(np.float32), **extra)
        meta = dict(self.meta, types=list(self.types))
        path.with_suffix(".json").write_text(json.dumps(meta, ensure_ascii=False, indent=2) + "\n")

    @classmethod
    def load(cls, path: Path = ARTEFACT) -> "LinearModel":
        npz, js = path.with_suffix(".npz"), path.with_suffix(".json")
        if not npz.exists() or not js.exists():
            raise FileNotFoundError(
                f"the learnt extractor's artefact {npz.name} is missing from {path.parent}; build it with: {TRAIN_COMMAND}")
        meta = json.loads(js.read_text())
        with np.load(npz) as z:
            model = cls(tuple(meta["types"]), z["weights"].astype(np.float32), z["bias"], z["thresholds"], meta)
            if "instruction_weights" in z:
                model.instruction_weights = z["instruction_weights"].astype(np.float32)
                model.instruction_bias = float(z["instruction_bias"])
                model.instruction_threshold = float(z["instruction_threshold"])
            if "fact_weights" in z:
                model.fact_weights = z["fact_weights"].astype(np.float32)
                model.fact_bias = float(z["fact_bias"])
            if "gate_weights" in z:
                model.gate_weights = z["gate_weights"].astype(np.float64)
                model.gate_bias = float(z["gate_bias"])
                model.gate_threshold = float(z["gate_threshold"])
                model.gate_scale = float(z["gate_scale"])
            return model


def two_stage_probabilities(fact_z: np.ndarray, type_z: np.ndarray) -> np.ndarray:
    """P(type) = P(states a fact) × softmax(type scores): (n,) and (n, n_types) → (n, n_types)."""
    fact = 1.0 / (1.0 + np.exp(-fact_z))
    z = type_z - type_z.max(axis=1, keepdims=True)
    e = np.exp(z)
    return fact[:, None] * (e / e.sum(axis=1, keepdims=True))


# ---------------------------------------------------------------- selection
@dataclass
class Scored:
    span: Span
    memory_type: str
    probability: float
    confidence: float


def select_type(spans: Sequence[Span], probs: np.ndarray, t: int, name: str, threshold: float,
                length_penalty: float = 0.0) -> list[Scored]:
    """One type's facts: candidates at or above ``threshold``, overlapping ones collapsed to the
    best (probability minus ``length_penalty`` per extra clause: the tightest span that states the
    fact wins over a window around it). Independent of the other types' thresholds, so threshold
    tuning computes it once per (type, threshold) and combines (``combine``)."""
    thr = float(threshold)
    above = [k for k in range(len(spans)) if probs[k, t] >= thr]
    above.sort(key=lambda k: -(float(probs[k, t]) - length_penalty * (spans[k].clauses - 1)))
    kept: list[Span] = []
    chosen: list[Scored] = []
    for k in above:
        p = float(probs[k, t])
        s = spans[k]
        if any(o.message_index == s.message_index and _overlap(o.start, o.end, s.start, s.end) > 0 for o in kept):
            continue
        kept.append(s)
        conf = 0.5 + 0.5 * (p - thr) / max(1e-6, 1.0 - thr)
        chosen.append(Scored(s, name, p, round(min(1.0, conf), 4)))
    return chosen


def combine(per_type: Sequence[list[Scored]], max_facts: int = MAX_FACTS) -> list[Scored]:
    """The types' facts (in type order), the ``max_facts`` most confident first (stable on ties)."""
    chosen = [c for cs in per_type for c in cs]
    chosen.sort(key=lambda c: -c.confidence)
    return chosen[:max_facts]


def select(spans: Sequence[Span], probs: np.ndarray, types: Sequence[str], thresholds: np.ndarray,
           max_facts: int = MAX_FACTS, length_penalty: float = 0.0) -> list[Scored]:
    """Per type: candidates at or above the threshold, overlapping ones collapsed to the
    best (``select_type``); then the ``max_facts`` most confident."""
    return combine([select_type(spans, probs, t, name, thresholds[t], length_penalty)
                    for t, name in enumerate(types)], max_facts)


# ------------------------------------------------------------ the gate
#: The gate's proposals: each type's candidates at this fraction of its threshold (the gate then
#: drops the ones it judges false, so the first stage can propose more than it would keep alone).
GATE_SCALE = 0.8
N_GATE = 16 + 2 * len(MEMORY_TYPES)


def gate_features(spans: Sequence[Span], probs: np.ndarray, X: np.ndarray, chosen: Sequence[Scored],
                  thresholds: np.ndarray, n_messages: int, types: Sequence[str] = MEMORY_TYPES) -> np.ndarray:
    """One row per proposed fact, for the second-stage "is this proposal right" gate: how sure the
    two stages are (probability, its ratio to the type's threshold, the fact stage, the type's share
    and its margin over the best other type), competition in the conversation (proposals of another
    type on an overlapping span and their probability, proposals of the same type, the rank by
    confidence, how many proposals), the span (clauses, words, where in the conversation), the
    chosen type (one-hot, and one-hot × probability: each type its own calibration), and the span's
    cue and rule-type features (the last columns of ``featurize``'s rows)."""
    n_types = len(types)
    if not chosen:
        return np.zeros((0, N_GATE + N_CUES + n_types), dtype=np.float64)
    index = {(s.message_index, s.start, s.end): k for k, s in enumerate(spans)}
    ranks = sorted((c.confidence for c in chosen), reverse=True)
    tail = X.shape[1] - N_CUES - n_types
    rows = []
    for i, c in enumerate(chosen):
        k = index[(c.span.message_index, c.span.start, c.span.end)]
        t = types.index(c.memory_type)
        p = probs[k]
        fact = float(p.sum())
        share = p / max(fact, 1e-9)
        other = float(np.max(np.delete(share, t))) if n_types > 1 else 0.0
        rivals = [o.probability for j, o in enumerate(chosen) if j != i and o.memory_type != c.memory_type
                  and o.span.message_index == c.span.message_index
                  and _overlap(o.span.start, o.span.end, c.span.start, c.span.end) > 0]
        same = sum(o.memory_type == c.memory_type for o in chosen) - 1
        q = min(max(c.probability, 1e-6), 1 - 1e-6)
        one_hot = np.zeros(n_types)
        one_hot[t] = 1.0
        head = [c.probability, c.probability / max(float(thresholds[t]), 1e-6), np.log(q / (1 - q)), fact, share[t],
                share[t] - other, float(share[t] >= other), len(rivals), max(rivals, default=0.0),
                float(c.probability >= max(rivals, default=0.0)), min(ranks.index(c.confidence), 10) / 10,
                min(len(chosen), 12) / 12, same / 5, c.span.clauses / 3, min(len(c.span.text.split()), 30) / 15,
                c.span.message_index / max(1, n_messages)]
        rows.append(np.concatenate([head, one_hot, one_hot * c.probability, X[k, tail:]]))
    return np.asarray(rows, dtype=np.float64)


def gate_probability(features: np.ndarray, weights: np.ndarray, bias: float) -> np.ndarray:
    if features.size == 0:
        return np.zeros(len(features))
    return 1.0 / (1.0 + np.exp(-(features @ weights + bias)))


def gated_proposals(spans: Sequence[Span], probs: np.ndarray, types: Sequence[str], thresholds: np.ndarray,
                    length_penalty: float = 0.0, scale: float = GATE_SCALE) -> list[Scored]:
    """Every type's candidates at ``scale`` × its threshold (overlaps of a type collapsed), most
    confident first, uncapped: what the gate judges."""
    return combine([select_type(spans, probs, t, name, float(thresholds[t]) * scale, length_penalty)
                    for t, name in enumerate(types)], max_facts=10**6)


def select_gated(spans: Sequence[Span], probs: np.ndarray, X: np.ndarray, types: Sequence[str],
                 thresholds: np.ndarray, gate_weights: np.ndarray, gate_bias: float, gate_threshold: float,
                 n_messages: int, length_penalty: float = 0.0, scale: float = GATE_SCALE,
                 max_facts: int = MAX_FACTS) -> list[Scored]:
    """``gated_proposals`` whose gate probability reaches ``gate_threshold``, the ``max_facts``
    most confident."""
    chosen = gated_proposals(spans, probs, types, thresholds, length_penalty, scale)
    q = gate_probability(gate_features(spans, probs, X, chosen, thresholds * scale, n_messages, types),
                         gate_weights, gate_bias)
    return [c for c, g in zip(chosen, q) if g >= gate_threshold][:max_facts]


# ------------------------------------------------------------------ content
_KEYWORD_SLOTS: dict[str, list[tuple[str, str]]] = {
    "restricao": [("allergy", r"alerg"), ("intolerance", r"intoleran|lactose|gluten"), ("celiac", r"celiac"),
                  ("diet", r"vegetarian|vegan|carne|dieta|low carb|jejum"), ("diabetes", r"diabet|acucar"),
                  ("alcohol", r"beb|alcool|cerveja|vinho|drink"), ("mobility", r"muleta|cadeira|escada|joelho|coluna|mobilidade"),
                  ("fear", r"medo|pavor|fobia")],
    "contexto_pessoal": [("pet", r"cachorr|gat[oa]|\bpet\b|\bdog\b|cadel|filhote|vira ?lata|\bpit\b|poodle|golden|shih"),
                         ("occupation", r"trabalh|sou (?:medic|enfermeir|professor|motoboy|advogad|engenheir|dentist)|"
                                        r"emprego|plantao|turno|profiss|estud|faculdade|formei|formou"),
                         ("residence", r"\bmoro\b|moramos|mudei|mudamos|bairro|cidade"),
                         ("pregnancy", r"gravid|gestante|bebe"), ("health", r"cirurgia|operei|tratamento|saude|remedio")],
    "vinculo_social": [("partner", r"namorad|noiv|espos|marido|mulher|\bboy\b|mozao|companheir|casad"),
                       ("child", r"filh|crianca"), ("parent", r"\bmae\b|\bpai\b"), ("sibling", r"irma"),
                       ("friend", r"amig")],
    "data_comemorativa": [("wedding_anniversary", r"casamento|casamos|casad"),
                          ("dating_anniversary", r"namoro|junto|juntos"),
                          ("birthday", r"aniversari|niver|anos")],
    "vinculo_comercial": [("employer", r"empresa|trabalho na|trabalho no|firma|ltda|cnpj|corporativ"),
                          ("billing", r"nota|fatura|boleto|faturad")],
    "preferencia": [("payment", r"pix|cartao|dinheiro|boleto|parcel"), ("drink", S.DRINKS),
                    ("room", S.ROOM_WORDS), ("schedule", r"\d+h|horario|manha|tarde|noite"),
                    ("channel", r"whats|zap|e-?mail|liga")],
    "padrao_comportamental": [("visit_time", r"\d+h|noite|tarde|manha|madrugada|sexta|sabado|domingo|fim de semana"),
                              ("order", r"pede|peco|pedimos|pizza|sabor|borda")],
}


def slot_key(memory_type: str, text: str) -> str:
    """The fact's ``memory_key``: a single-valued slot the contradiction lexicon reads in the
    text first ("agora estou de motorista de aplicativo aqui na cidade" is an occupation, so
    it meets the "Caminhoneiro" it replaces), else the first keyword slot, else the type."""
    single = next((s.key for s in S.parse_slots(memory_type, text) if S.single_valued(s.key)), None)
    if single is not None:
        return single
    f = fold(text)
    for key, pattern in _KEYWORD_SLOTS.get(memory_type, []):
        if re.search(pattern, f):
            return key
    return memory_type


# "meu marido", "minha esposa", "o boy", "a mozi", "minha gata, a Frida": who "ele"/"ela" may be.
_PERSON = re.compile(rf"\b(?P<det>meu|minha|o|a)\s+(?P<who>{S.REL_ALT}|boy|mozao|mozi|mo|crush|ficante|patroa|mina|"
                     r"amig[oa]|chefe|socio|socia|cachorr[oa]|gat[oa]|dog|cadela)\b")
_LEADING_PRONOUN = re.compile(r"^(?:e\s+)?(?P<p>ele|ela)\b\s*", re.IGNORECASE)


def third_party_before(text: str) -> str | None:
    """The last person named before a span ("minha esposa" → "a esposa"), or None."""
    found, folded = None, fold(text)
    same_length = len(folded) == len(text)
    for m in _PERSON.finditer(folded):
        det = "o" if m.group("det") in ("meu", "o") else "a"
        who = text[m.start("who"):m.end("who")] if same_length else m.group("who")
        found = f"{det} {who}"
    return found


def resolve_pronoun(text: str, before: str) -> str:
    """"ela ama petit gateau" after "minha esposa…" → "A esposa ama petit gateau": the content
    keeps the third party the customer spoke of (the evidence stays verbatim)."""
    m = _LEADING_PRONOUN.match(text)
    who = third_party_before(before) if m else None
    if not m or not who or (who[0] == "o") != (m.group("p").lower() == "ele"):
        return text
    return f"{who} {text[m.end():]}"


_GREETING = re.compile(r"^(?:(?:oi+e*|ola|opa|eai|e ai|bom dia|boa tarde|boa noite)\b[\s,!.]*)+",
                       re.IGNORECASE)


def date_with_lead(text: str, lead: str, sent_at: datetime | None) -> str:
    """``text`` (a span) with its date written ``dd/mm``, read with the words of its message before it
    (``lead``): "mês que vem faz 3 anos de namoro, dia 14" → the span "faz 3 anos de namoro, dia 14" gets
    next month's 14th, not this month's. The lead's own date expressions are never written into the span."""
    lead = f"{lead.rstrip()} " if lead.strip() else ""
    if lead:
        found = date_in(f"{lead}{text}", sent_at)
        if found and found[1][0] >= len(lead):   # the date expression itself is in the span
            value, (a, b) = found
            return f"{text[:a - len(lead)]}{value}{text[b - len(lead):]}"
    return normalise_dates(text, sent_at)


def content_of(span: Span, memory_type: str, sent_at: datetime | None, before: str = "", lead: str = "") -> str:
    """The fact's content: the span in standard spelling, without a greeting, a leading "ele"/"ela" resolved to the
    person named ``before`` it, dates of a celebration written ``dd/mm`` (read with ``lead``, its message's words
    before the span: ``date_with_lead``)."""
    text = expand_chat(span.text)
    greeting = _GREETING.match(fold(text))
    if greeting and greeting.end() < len(text) and len(fold(text)) == len(text):
        text = text[greeting.end():]
    text = resolve_pronoun(text, before)
    if memory_type == "data_comemorativa":
        text = date_with_lead(text, expand_chat(lead), sent_at)
    text = text.strip(" ,;:.-")
    return (text[:1].upper() + text[1:]) if text else span.text


# ---------------------------------------------------------------- extractor
class LearnedExtractor:
    """``FactExtractor`` over the trained artefact (see the module docstring)."""

    name = NAME

    def __init__(self, embedder=None, artefact: Path = ARTEFACT, model: LinearModel | None = None):
        """``embedder``: the one the artefact was trained with (its ``meta["embedder"]``), built and
        handed in by the composition root (``Container.extractor``); this class builds none."""
        self.model = model or LinearModel.load(artefact)
        self.version = str(self.model.meta.get("version", "learned-v1"))
        expected = self.model.meta.get("embedder", {}).get("model", "use-multilingual-v3")
        if embedder is None:
            raise TypeError(f"LearnedExtractor needs the {expected} embedder it was trained with: "
                            "build it in the composition root (Container.extractor) and pass it in")
        if getattr(embedder, "name", None) != expected:
            raise ValueError(f"the extractor was trained with the {expected} embedder, got "
                             f"{getattr(embedder, 'name', type(embedder).__name__)}")
        self.embedder = embedder

    def instruction_score(self, text: str) -> float:
        return float(self.model.instruction_probability(message_features([text], self.embedder))[0])

    def propose(self, transcript: Transcript) -> Proposal:
        scorer = self.instruction_score if self.model.instruction_weights is not None else None
        spans = transcript_spans(transcript, scorer, self.model.instruction_threshold)
        if not spans:
            return Proposal()
        hits = rule_hits(transcript)
        X = featurize(transcript, spans, self.embedder, hits)
        probs = self.model.probabilities(X)
        penalty = float(self.model.meta.get("length_penalty", 0.0))
        m = self.model
        if m.gate_weights is not None:
            chosen = select_gated(spans, probs, X, m.types, m.thresholds, m.gate_weights, m.gate_bias,
                                  m.gate_threshold, len(transcript.messages), penalty, m.gate_scale)
        else:
            chosen = select(spans, probs, m.types, m.thresholds, length_penalty=penalty)
        return Proposal(candidates=[self._candidate(c, transcript, hits) for c in chosen])

    def _candidate(self, c: Scored, transcript: Transcript, hits) -> CandidateFact:
        s = c.span
        rule = next((cand for cand, i, a, b in hits if i == s.message_index and cand.memory_type == c.memory_type
                     and _overlap(a, b, s.start, s.end) > 0), None)
        sent_at = transcript.messages[s.message_index].sent_at
        if rule is not None:
            key, value, content = rule.memory_key, rule.normalized_value, rule.content
        else:
            lead = transcript.messages[s.message_index].text[:s.start]   # the span's message before it
            before = " ".join([m.text for m in transcript.messages[:s.message_index] if m.role == "contact"] + [lead])
            key, value, content = slot_key(c.memory_type, s.text), None, content_of(s, c.memory_type, sent_at, before,
                                                                                  lead)
        return CandidateFact(memory_type=c.memory_type, memory_key=key, content=content, normalized_value=value,
                             evidence=s.text, confidence=c.confidence)
