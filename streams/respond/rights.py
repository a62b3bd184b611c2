"""The customer's rights on the channel: to know, to be forgotten, to opt out.

    kinds = detect_requests(text, embedder)   # {"access"} / {"erasure"} / {"opt_out"} / set()

Detection is robust to chat spelling: the text is folded (case, accents) and
chat abbreviations are expanded (``vcs`` → ``voces``, ``oq`` → ``o que``,
``d`` → ``de``...). A request must then pass two tests:

1. a cheap gate: a word about *me* (``mim``, ``meus``, ``eu``...) and a word
   about *knowing/keeping data* (access) or *deleting/forgetting* (erasure);
2. similarity, with the configured embedder, to example requests higher than
   to example look-alikes ("vocês sabem se tem vaga?", "apaga a mensagem
   anterior") and above ``MIN_SIMILARITY``.

So "vocês sabem se tem vaga?" fails the gate (nothing about *me*), and "vcs
sabem o horário da minha reserva?" passes the gate but is nearer a look-alike.
Opt-out ("parar", "não quero receber promoções") is a plain pattern: the
phrases are short and fixed.

The replies are plain language: the contact's own live facts (their
``content``, never the evidence, never another contact's), and how to ask
for deletion. Both work whether or not the account's memory recall is on:
they are rights, not features.
"""

from __future__ import annotations

import logging
import re
import threading
from typing import Iterable, Sequence

import numpy as np

from streams.respond.text import fold

log = logging.getLogger(__name__)

ACCESS = "access"
ERASURE = "erasure"
OPT_OUT = "opt_out"

# chat spelling → words (applied token by token after folding)
ABBREVIATIONS = {
    "vc": "voce", "vcs": "voces", "vces": "voces", "voceis": "voces", "ceis": "voces", "cs": "voces",
    "q": "que", "oq": "o que", "oque": "o que", "qq": "qualquer", "d": "de", "mt": "muito", "mto": "muito",
    "tb": "tambem", "tbm": "tambem", "pq": "porque", "pfv": "por favor", "pf": "por favor", "msg": "mensagem",
    "msgs": "mensagens", "info": "informacao", "infos": "informacoes", "inf": "informacoes", "n": "nao",
    "naum": "nao", "ñ": "nao", "sab": "sabem", "qto": "quanto", "td": "tudo", "tds": "todos", "dps": "depois",
    "apg": "apaga", "mi": "mim", "min": "mim", "sobri": "sobre", "esquecam": "esquecam",
}

SELF = re.compile(r"\b(?:mim|meu|meus|minha|minhas|eu|me|comigo)\b")
KNOW = re.compile(r"\b(?:sabe|sabem|sabia|sabiam|saber|sabendo|conhec\w*|guard\w*|armazen\w*|dados|dado|informac\w*|registr\w*|cadastr\w*|"
                  r"memoria|lembr\w*|ficha|perfil|anotad\w*|anotaram|coletad\w*)\b")
FORGET = re.compile(r"\b(?:apag\w*|delet\w*|exclu\w*|remov\w*|esquec\w*|limp\w*|elimin\w*|apaguem|"
                    r"descart\w*)\b")
FORGET_OBJECT = re.compile(r"\b(?:tudo|todos|dados|dado|informac\w*|mim|meus|minhas|cadastro|historico|"
                           r"memoria|ficha|perfil|registro\w*)\b")

OPT_OUT_WHOLE = re.compile(r"^(?:parar|pare|stop|sair|cancelar|descadastrar|nao quero mais|chega)$")
OPT_OUT_VERB = (r"(?:nao quero (?:mais )?(?:receber|ganhar)|nao (?:me )?(?:mand\w*|envi\w*)|"
                r"(?:para|pare|parem|parar) de (?:me )?(?:mand\w*|envi\w*)|chega de|cancel\w*|descadastr\w*|"
                r"(?:quero )?sair da lista|nao tenho interesse em|tira\w* (?:meu numero|eu) da lista)")
OPT_OUT_OBJECT = r"(?:promoc\w*|oferta\w*|propaganda\w*|marketing|novidade\w*|anuncio\w*|publicidade|lista)"
OPT_OUT = re.compile(rf"\b{OPT_OUT_VERB}\b(?:\s+\w+){{0,4}}?\s*\b{OPT_OUT_OBJECT}\b|\bsair da lista\b")

ACCESS_EXAMPLES = (
    "o que voces sabem sobre mim",
    "quais dados voces tem meus",
    "quais informacoes voces tem sobre mim",
    "o que voces guardam sobre mim",
    "que dados meus voces tem guardados",
    "voces tem algum registro sobre mim",
    "o que voces sabem de mim",
    "quero saber quais dados meus voces armazenam",
    "me mostra o que voces tem salvo sobre mim",
    "o que voce tem anotado sobre mim",
)
ERASURE_EXAMPLES = (
    "apaga tudo que voces sabem de mim",
    "quero que voces esquecam meus dados",
    "apaguem meus dados",
    "exclua todas as minhas informacoes",
    "quero que voces apaguem tudo sobre mim",
    "esquece tudo sobre mim",
    "remove meus dados do sistema",
    "deletem meu cadastro",
)
# Look-alikes: they pass the word gate but are not requests about one's data.
NOT_A_REQUEST = (
    "voces sabem se tem vaga hoje",
    "voces sabem o horario da minha reserva",
    "voce sabe me dizer o preco do pernoite",
    "voces sabem onde fica a entrada",
    "preciso de informacoes sobre a suite para mim e minha esposa",
    "me manda as informacoes de pagamento",
    "quero informacoes sobre o pernoite",
    "apaga a mensagem anterior que eu mandei errado",
    "esqueci minha carteira ai ontem",
    "esqueci meu carregador no quarto",
    "voces lembram se eu deixei um casaco",
    "voces lembram de mim",
    "lembra de mim? ja fui ai",
    "meus dados do cartao estao certos na reserva",
    "pode me mandar os dados para o pix",
    "remove o cafe da manha da minha reserva",
    "quero cancelar minha reserva",
)
MIN_SIMILARITY = 0.55


def normalise(text: str) -> str:
    """Folded text with chat abbreviations expanded and letters repeated 3+ times squeezed."""
    words = []
    for w in fold(text).split():
        w = re.sub(r"(\w)\1{2,}", r"\1", w)  # tudooo → tudo
        words.append(ABBREVIATIONS.get(w, w))
    return " ".join(words)


def gate_in(n: str) -> str | None:
    """The word gate on normalised text."""
    if FORGET.search(n) and FORGET_OBJECT.search(n) and (SELF.search(n) or re.search(r"\btudo\b", n)):
        return ERASURE
    if SELF.search(n) and KNOW.search(n):
        return ACCESS
    return None


def gate(text: str) -> str | None:
    """The cheap word test alone (no embedding): ACCESS, ERASURE or None."""
    return gate_in(normalise(text))


class ExampleVectors:
    """The example requests' vectors under one embedder, computed on first use and kept by their
    owner (the ``Acts`` the container builds), not by this module."""

    def __init__(self, embedder):
        self.embedder = embedder
        self._vectors: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None
        self._lock = threading.Lock()

    def get(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        with self._lock:
            if self._vectors is None:
                def emb(texts: Iterable[str]) -> np.ndarray:
                    v = np.asarray(self.embedder.embed_queries(list(texts)), dtype=np.float32)
                    return v / np.maximum(np.linalg.norm(v, axis=1, keepdims=True), 1e-9)
                self._vectors = emb(ACCESS_EXAMPLES), emb(ERASURE_EXAMPLES), emb(NOT_A_REQUEST)
            return self._vectors


def classify(text: str, embedder, examples: ExampleVectors | None = None) -> tuple[str | None, float]:
    """(ACCESS | ERASURE | None, best similarity to the kind's examples); ``examples`` are the
    caller's vectors of the example requests under ``embedder`` (computed here when not given)."""
    n = normalise(text)
    kind = gate_in(n)
    if kind is None:
        return None, 0.0
    access, erasure, negatives = (examples or ExampleVectors(embedder)).get()
    v = np.asarray(embedder.embed_queries([n])[0], dtype=np.float32)
    v = v / max(float(np.linalg.norm(v)), 1e-9)
    pos = float(np.max((erasure if kind == ERASURE else access) @ v))
    neg = float(np.max(negatives @ v))
    log.debug("rights classify kind=%s pos=%.3f neg=%.3f text=%r", kind, pos, neg, n)
    if pos >= MIN_SIMILARITY and pos > neg:
        return kind, pos
    return None, pos


def opt_out_in(n: str) -> bool:
    """Opt-out on normalised text."""
    return bool(OPT_OUT_WHOLE.match(n) or OPT_OUT.search(n))


def is_opt_out(text: str) -> bool:
    return opt_out_in(normalise(text))


def detect_requests(text: str, embedder) -> set[str]:
    kinds: set[str] = set()
    kind, _ = classify(text, embedder)
    if kind:
        kinds.add(kind)
    if is_opt_out(text):
        kinds.add(OPT_OUT)
    return kinds


# ------------------------------------------------------------------ replies
HOW_TO_DELETE = ('Se quiser que a gente apague essas informações, é só escrever '
                 '"apaga tudo que vocês sabem de mim".')


def access_reply(facts: Sequence[str]) -> str:
    if not facts:
        return ("Não guardamos nenhuma informação sobre você além do histórico das nossas conversas. "
                + HOW_TO_DELETE)
    lines = "\n".join(f"• {f}" for f in facts)
    return (f"Aqui está o que guardamos sobre você para te atender melhor:\n{lines}\n"
            f"Também guardamos o histórico das nossas conversas. {HOW_TO_DELETE}")


def erasure_reply(forgotten: int) -> str:
    what = ("as informações que tínhamos guardado sobre você" if forgotten != 1
            else "a informação que tínhamos guardado sobre você")
    return (f"Pronto: apagamos {what} e não vamos mais usá-las nas conversas. "
            "Sua solicitação foi registrada e a nossa equipe pode apagar também o histórico das conversas, "
            "se você quiser.")


OPT_OUT_REPLY = "Pronto, você não vai mais receber nossas promoções. Se mudar de ideia, é só avisar por aqui."
