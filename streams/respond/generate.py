"""Reply generators: an OpenAI-compatible chat model, or an offline composer.

Both implement the ``Generator`` port: ``generate(ReplyRequest) -> Generation``.

The offline composer is deterministic and grounded: apart from a few fixed
Portuguese sentences, every sentence it writes is copied verbatim from the
retrieved chunks, picked by word overlap with the message. It therefore
never states a price that is not in the chunks (``unsupported_prices`` is
also applied to every generator's output by the handler as a guard).
"""

from __future__ import annotations

import logging
import re
import threading
from collections import OrderedDict
from typing import Sequence

from tenacity import Retrying, retry_if_exception, stop_after_attempt, wait_exponential_jitter

from streams.learn.lexicon import concepts_in
from streams.respond import compose
from streams.respond import intent as i
from streams.respond.model import Generation, KnowledgeChunk, ReplyRequest, Usage
from streams.respond.recall import ScoredFact
from streams.respond.text import fold, normalize_chat

log = logging.getLogger(__name__)

FALLBACK_NO_KNOWLEDGE = "Vou verificar isso com a equipe e já retorno."
FALLBACK_LOOP = "Deixa eu confirmar esses detalhes com a equipe."
GREETING_REPLY = "Olá! Tudo bem? Como posso te ajudar?"
CONFIRMATION_REPLY = "Perfeito! Qualquer dúvida é só chamar por aqui."
# what introduces the same kind of item for less, after a price objected to ("459 na lírio?? tá puxado")
CHEAPER_LEAD = "Se preferir algo mais em conta:"
GENERAL_NO_KNOWLEDGE = "Entendi! Vou verificar isso com a equipe e já retorno."
# Messages the responder cannot read (media without a caption, unknown types),
# and the ones that need no knowledge (a location, a shared contact).
FALLBACK_AUDIO = "Recebi seu áudio, mas ainda não consigo ouvir áudios por aqui. Pode me escrever sua dúvida?"
FALLBACK_MEDIA = ("Recebi seu arquivo, mas ainda não consigo abrir imagens, vídeos ou documentos por aqui. "
                  "Pode me escrever sua dúvida?")
FALLBACK_UNSUPPORTED = "Não consegui abrir essa mensagem. Pode me escrever sua dúvida em texto?"
LOCATION_REPLY = "Recebi sua localização, obrigado! Como posso te ajudar?"
CONTACTS_REPLY = "Recebi o contato, obrigado! Como posso te ajudar?"
# small talk and objections that the knowledge does not address: a polite reply, no hand-over
GENERAL_REPLY = "Entendi! Se precisar de algo, é só me chamar por aqui."
OBJECTION_REPLY = "Entendo! Se quiser, te passo as opções e condições que temos."

FORBIDDEN_WORDS = ("memória", "memoria", "registro")

_PRICE = re.compile(r"R\$\s*(\d+(?:\.\d{3})*(?:,\d{1,2})?)(?![\d,.]\d)", re.IGNORECASE)


# --------------------------------------------------------------- price guard
def _norm_amount(raw: str) -> str:
    whole, _, cents = raw.replace(".", "").partition(",")
    cents = (cents + "00")[:2] if cents else "00"
    return f"{int(whole)},{cents}"


def price_amounts(text: str) -> set[str]:
    """Normalised "R$" amounts in a text (``R$ 1.200`` and ``R$1200,00`` are equal)."""
    return {_norm_amount(m.group(1)) for m in _PRICE.finditer(text)}


def unsupported_prices(reply: str, chunks: Sequence[KnowledgeChunk]) -> set[str]:
    """R$ amounts in ``reply`` that appear in none of the retrieved chunks."""
    allowed: set[str] = set()
    for c in chunks:
        allowed |= price_amounts(c.text)
    return price_amounts(reply) - allowed


# ---------------------------------------------------------- offline composer
_SENTENCE_SPLIT = re.compile(r"(?<=[.!?])\s+(?=[A-ZÀ-Ý0-9\"“(])|\n+")


DECISIVE_WEIGHT = 2.5   # a keyword this heavy names what a policy/info question is about


def _decisive_words(message: str, intent: str) -> list[str]:
    """The dictionary's heavy keywords of the message for its policy or info intent ("parcel*",
    "cancel*", "fumar", "estacion*"): the subject asked about, whatever else the question names."""
    if intent not in (i.POLICY, i.INFO):
        return []
    norm = i.normalize_chat(message)
    # both intents' keywords: the line between a rule ("da pra parcelar?") and a fact ("tem
    # estacionamento?") is where the intent most often errs, and the subject asked is the same
    out = [m.group(0) for rx, literal in _heavy_keywords() if literal in norm for m in rx.finditer(norm)]
    return list(dict.fromkeys(out + subjects_named_otherwise(message)))


def _heavy_keywords() -> list[tuple[re.Pattern, str]]:
    lexicon = i.lexicon_for(None)
    return [(rx, literal) for (it, kw, w, rx), literal in zip(lexicon.patterns, lexicon.literals)
            if it in (i.POLICY, i.INFO) and w >= DECISIVE_WEIGHT]


def subjects_named_otherwise(message: str) -> list[str]:
    """A rule's subject said by another name ("da pra dividir?" → parcelamento, "se eu desistir" /
    "nao vou conseguir ir" → cancelamento, "pagar na semana que vem" → fiado): the names of the message's
    concepts (``lexicon.CONCEPTS``) that a heavy keyword of the intents matches."""
    heavy = _heavy_keywords()
    return list(dict.fromkeys(m.group(0) for _, others in concepts_in(i.normalize_chat(message))
                              for other in map(fold, others) for rx, literal in heavy if literal in other
                              for m in rx.finditer(other)))


def split_sentences(text: str) -> list[str]:
    return [s.strip() for s in _SENTENCE_SPLIT.split(text) if s and len(s.strip()) > 2]


# what a question asks as possible or allowed, never the thing it asks about
_MODAL_STEMS = frozenset(compose.stem(w) for w in compose.GENERIC | {"possivel", "possiveis", "permitido", "permitida"})


def _units_of(chunks: Sequence[KnowledgeChunk]) -> list[compose.Unit]:
    """The retrieved chunks' units (``compose.units_of_chunks``, halves of one document's cut sentence joined)."""
    return compose.units_of_chunks([c.text for c in chunks], [c.document_id for c in chunks])


class OfflineComposer:
    """Deterministic replies from retrieved text and fixed sentences only.

    The retrieved chunks are read as quotable units (``streams.respond.compose``:
    sentences, list items, table rows; never headings or cut pieces), scored
    against the question by words (idf, chat spelling normalised), by meaning
    (cosine similarity with the knowledge embedder, which finds "animais" for
    "cachorro"), by the attribute asked (an amount, hours, a day, an address) and
    by the entity asked (the rare words of the question). The best unit, and a
    second one that scores nearly as well, are copied verbatim; a yes/no
    question answered by a negative statement starts with "Não". What the
    knowledge does not cover gets the hand-over sentence.
    """

    name = "offline"

    def __init__(self, max_sentences: int = 2, min_overlap: float = 1.0, embedder=None,
                 min_similarity: float = 0.25, lexical_weight: float = 0.1,
                 strong_similarity: float = 0.3, second_ratio: float = 0.85,
                 synonym_similarity: float = 0.54, sentences=None, paraphrase_similarity: float = 0.62):
        self.max_sentences = max_sentences
        self.min_overlap = min_overlap
        self.embedder = embedder
        # ``(account_id, chunk_ids, model) -> {sentence: vector}``: the vectors the indexer stored with
        # the chunks (``ChunkKnowledgeSearch.sentence_vectors``); None: every sentence embedded here
        self.sentences = sentences
        self.min_similarity = min_similarity
        self.lexical_weight = lexical_weight
        self.strong_similarity = strong_similarity
        self.second_ratio = second_ratio
        self.synonym_similarity = synonym_similarity
        # a question mostly of words the knowledge never writes is handed over, unless the best unit
        # says them otherwise at this bar: higher than a synonym's, as words of one field (food: "molho"
        # and "cebola" 0.59 by USE) sit near each other
        self.paraphrase_similarity = paraphrase_similarity
        self.fuller_ratio = 0.5
        self.cache_size = 20_000
        self._cache: dict[str, OrderedDict] = {}
        self._cache_lock = threading.Lock()

    def generate(self, request: ReplyRequest) -> Generation:
        return Generation(text=self.compose(request), usage=Usage(), model="offline",
                          provider="offline")

    def compose(self, r: ReplyRequest) -> str:
        self._stored_sentences(r)
        query_vector = r.query_vector if (self.embedder is not None and r.query_model == self.embedder.name) else None
        if r.intent in (i.GREETING, i.CONFIRMATION):
            carried = self._carried_answer(r) if r.chunks else None
            if r.intent == i.GREETING:
                return self._with_memory(GREETING_REPLY if carried is None else f"Olá! {carried}", r.memories,
                                         r.chunks)
            return CONFIRMATION_REPLY if carried is None else f"Perfeito! {carried}"
        if r.intent == i.GENERAL and (i.about_the_agent(r.message) or compose.small_talk(r.message)):
            # "qual teu nome? tu eh atendente msm?", "vc torce pra qual time?": small talk about the agent or the day
            # quotes no knowledge ("letras de balão com nome") and hands nothing over
            return GENERAL_REPLY
        # a question about what the business offers is answered as one, or handed over
        asked = r.intent == i.GENERAL and compose.asks_the_business(r.message)
        picked = self.pick_sentences(r.message, r.chunks, i.INFO if asked else r.intent,
                                     hint=preference_hint(r.memories), query_vector=query_vector)
        if picked and not compose.question_clauses(r.message) and compose.uncounted_thing(
                r.message, [u.text for u in picked]):
            picked = []   # "quantas suítes tem?": a line naming the suites states no number of them
        options = compose.alternatives(r.message) if r.intent in (i.INFO, i.POLICY) else None
        unchosen = bool(picked and options and not compose.names_an_alternative(options, [u.text for u in picked]))
        if unchosen:
            # "as tomadas são 110 ou 220?": an answer naming neither option does not answer the choice; the lines
            # naming an option do, by its own word or else by another name of it ("vcs fazem caipirinha ou so
            # cerveja?": "Cerveja long neck: R$ 14,00." and "Não servimos drinks nem destilados.")
            picked = self._on_the_options(r.message, options, r.chunks)
        partial = False
        if not picked and not unchosen and r.intent not in (i.OBJECTION, i.GENERAL):
            # two questions, one the knowledge does not cover: answer the other, hand the rest over
            picked = self._each_question(r, [], query_vector)
            partial = bool(picked)
        if not picked:
            if r.retrieval == "required" or asked:
                return FALLBACK_NO_KNOWLEDGE
            return OBJECTION_REPLY if r.intent == i.OBJECTION else GENERAL_REPLY
        if not partial:
            picked = self._each_question(r, picked, query_vector)
        cheaper = None
        units = _units_of(r.chunks)
        if r.intent == i.OBJECTION:
            picked, cheaper = self._conceded(r.message, picked, units)
        # "Passando disso, cada hora adicional ...": a line pointing back is quoted with the line it points at, and
        # a picked line with the one going on from it
        picked = compose.with_other_branch(compose.with_antecedents(picked, units), units)
        answer = compose.answer_text(r.message, picked)
        if partial:
            answer = f"{answer} {FALLBACK_NO_KNOWLEDGE}"
        if cheaper is not None:
            answer = f"{answer} {CHEAPER_LEAD} {cheaper.text}"
        opener = "Entendo! " if r.intent == i.OBJECTION else ""
        return self._with_memory(opener + answer, r.memories, r.chunks)

    def _on_the_options(self, message: str, options: tuple[str, str],
                        chunks: Sequence[KnowledgeChunk]) -> list[compose.Unit]:
        """For each option of a choice, the best-scored unit naming it by its own word, else by another name of it
        (``compose.concept_forms``); best first, at most ``max_sentences``. A unit on another item of the kind asked
        ("Suíte Brisa: cama queen" for "a cama da orquídea é king ou queen?") or naming nothing of the question but
        the option ("Pizza por fatia" for "a borda é com cheddar cremoso ou fatiado?") answers no choice."""
        units = _units_of(chunks)
        if not units:
            return []
        asked_items = compose.named_items(message, units)
        own_stems = {o if o.isdigit() else compose.stem(o) for o in options}
        _, focus = compose.question_words(message)
        rest = focus - own_stems
        scored = sorted((s for s in compose.score_units(message, units)
                         if not (asked_items and compose.sibling_item(s.unit, asked_items))
                         and (not rest or rest & compose.unit_words(s.unit))),
                        key=lambda s: (-s.score, s.unit.order))
        forms = compose.concept_forms(message)
        out: list[compose.Scored] = []
        for option in options:
            own = option if option.isdigit() else compose.stem(option)
            for names in ({own}, forms.get(own, set()) - {own}):
                hit = next((s for s in scored if names and compose.names_an_alternative(tuple(names), [s.unit.text])),
                           None)
                if hit is not None:
                    if hit not in out:
                        out.append(hit)
                    break
        return [s.unit for s in sorted(out, key=lambda s: -s.score)][: self.max_sentences]

    MAX_CONCESSIONS = 2

    def _conceded(self, message: str, picked: list[compose.Unit],
                  units: Sequence[compose.Unit]) -> tuple[list[compose.Unit], compose.Unit | None]:
        """"459 na lírio?? tá puxado": the line priced as the message names it (first of ``picked``) is followed
        by what concedes on that price, at most ``MAX_CONCESSIONS``: the same kind of item for less
        (``compose.cheaper_alternative``, returned apart: it is introduced as such), paying that amount in
        instalments where the business allows it (``compose.instalments_apply``), then the deals picked. An item
        named by its proper name with no amount ("achei salgado o pacote do pedido de casamento") objects to its
        one price (``compose.objected_price``). With no price objected to, ``picked`` stands."""
        if not picked:
            return picked, None
        if compose.objected_price(message, picked[0]) is None:
            # "achei a taxa de 10 meio salgada": the line priced at the amount named is what is objected to, however
            # the ranking placed it ("pizzas salgadas" outranked it by a word)
            named = next((u for u in picked[1:] + [u for u in units if u not in picked]
                          if compose.objected_price(message, u) is not None), None)
            if named is not None:
                picked = [named] + [u for u in picked if u != named]
        quoted = picked[0]
        price = compose.objected_price(message, quoted)
        if price is None and compose.names_delivery_fee(message):
            # "a taxa de entrega ta salgada": no amount named, the fee is what is objected to; fetching the order
            # spares it, and is the concession when the business gives a discount for it
            pickup = compose.pickup_deal(units)
            # the fee's own prices: the lines under a heading naming it ("Taxa de entrega:", "Frete:") when there
            # are any, not a line only mentioning it ("Pedido mínimo para entrega: R$ 40,00, sem contar a taxa")
            fees = [u for u in units if compose.is_delivery_fee(u) and compose.carries_price(u.text)]
            fees = [u for u in fees if compose.names_delivery_fee(f"{u.label} {u.context}")] or fees
            if pickup is not None and fees:
                return fees[:self.MAX_CONCESSIONS], pickup
        if price is None:
            # "no motel da esquina 2h sai 60 conto, vcs tao caros": no price of ours is named, another business's is;
            # our cheapest item for the period named answers it, then what the picked deals concede on that period
            labels = compose.labels_named(message, units) if compose.tells_of_elsewhere(message) else set()
            cheapest = compose.cheapest_at(next(iter(labels)), units) if len(labels) == 1 else None
            if cheapest is None:
                return picked, None
            label = next(iter(labels))
            deals = [u for u in picked if u != cheapest and compose.offers_deal(u.text)
                     and compose.applies_to_label(u.text, label, [label])][: self.MAX_CONCESSIONS]
            return [cheapest] + deals, None
        amount, label, labels = price
        cheaper = compose.cheaper_alternative(quoted, amount, units)
        # "essa taxa de 10 reais de entrega pesa": fetching the order spares the fee, and is the concession the
        # business makes when it gives a discount for it ("Retirada no balcão: ... 5% de desconto")
        if cheaper is None and compose.is_delivery_fee(quoted):
            cheaper = compose.pickup_deal(units)
            picked = [u for u in picked if u != cheaper]   # introduced as the cheaper way, once
        instalments = next((u for u in units if u not in picked
                            and compose.instalments_apply(u.text, amount, label, labels)), None)
        room = self.MAX_CONCESSIONS - (cheaper is not None) - (instalments is not None)
        # a deal on something else ("servimos ração premium sem custo" after "790 pra castrar??") or on another
        # period of the line ("20% de desconto nos períodos de 2h e 4h" after "459 a pernoite") concedes nothing
        about = compose.expanded_focus(message) | compose.unit_words(quoted)
        # a line with one price ("Grande: R$ 58,00.") is that label's: "Terça em Dobro ... pizza grande" covers it
        label = label or (labels[0] if len(labels) == 1 else "")
        deals = [u for u in picked[1:] if u != instalments and compose.applies_to_label(u.text, label, labels)
                 and compose.unit_words(u) & about][:max(0, room)]
        if len(deals) < room:
            # a deal the ranking left out that names the label objected to ("Terça em Dobro: ... pizza grande
            # tradicional" after "58 numa grande de mussarela?"): the retrieved deals naming the most of the item
            more = [u for u in units if u not in picked and u not in deals and u != instalments and label
                    and compose.offers_deal(u.text) and compose.names_label(u.text, label)
                    and compose.unit_words(u) & about]
            more.sort(key=lambda u: (-len(compose.unit_words(u) & about), u.order))
            deals += more[: room - len(deals)]
        return [quoted] + ([instalments] if instalments is not None else []) + deals, cheaper

    def _carried_answer(self, r: ReplyRequest) -> str | None:
        """The answer to the question a confirmation or a greeting carries ("fechado, pode reservar a
        coral pra sexta 22h!!! como pago o sinal?": ``compose.carried_question``), from the chunks;
        None when there is none or the chunks do not answer it (the courtesy reply then stands)."""
        carried = compose.carried_question(r.message)
        if carried is None:
            return None
        piece, intent = carried
        picked = self.pick_sentences(piece, r.chunks, intent, hint=preference_hint(r.memories))
        if piece == compose.booking_order(r.message):
            # "pode agendar sabado 9h": that day's hours, and what the business asks to book ("Para reservar,
            # pedimos um sinal de 30%"), or nothing
            units = _units_of(r.chunks)
            hours = [u for u in picked if compose.hours_of_booked_day(piece, u.text)][:1]
            booked = hours + [u for u in compose.booking_rule(piece, units) if u not in hours]
            # else what the business says of the thing booked or fetched, when not its price ("marca a castração
            # pra quarta" → "As cirurgias acontecem às quartas-feiras"; "vou retirar no balcão" → "fica pronta em
            # cerca de 25 minutos")
            if not booked and compose.fetches_order(piece):
                booked = compose.pickup_lines(units)[:1]
            if not booked and (method := compose.payment_told(piece)):   # "pago no pix": the word on paying so
                booked = compose.payment_lines(method, units)[:1]
            picked = booked or [u for u in picked if not compose.carries_price(u.text)][:1]
        return compose.answer_text(piece, picked) if picked else None

    MAX_UNITS = 3

    def _each_question(self, r: ReplyRequest, picked: list[compose.Unit], query_vector) -> list[compose.Unit]:
        """A message asking two things ("vcs entregam no jardim europa? e qnto é a taxa") gets the
        best unit for each question too, besides the best for the whole (at most ``MAX_UNITS``).
        A choice between two options ("o que sai mais barato, a broto doce ou a tradicional?") is
        one question per option, each with its own intent ("ta incluso na pernoite?" is not a
        price question), or the whole message's when its own reads as a complaint or small talk."""
        # "qual a diferença da media pra grande na especial? vale a pena?": a question comparing two items is
        # one question per item
        clauses = [c for q in compose.question_clauses(r.message) for c in (compose.compared_items(q) or [q])]
        options = [] if clauses else (compose.option_questions(r.message) or compose.paired_items(r.message)
                                     or compose.compared_items(r.message))
        if not (clauses or options) or r.intent in (i.OBJECTION, i.GENERAL):
            return picked
        out = list(picked)
        for clause in clauses or options:
            intent = i.detect_intent(clause, charged_as_policy=False).intent  # "... paga mais?": the charge's line
            if options and intent in (i.OBJECTION, i.GENERAL):  # "o que sai mais barato, X?": not a complaint
                intent = r.intent
            got = self.pick_sentences(clause, r.chunks, intent if intent != i.GENERAL else r.intent)
            if not got and compose.asks_deadline(clause):
                got = self._deadline_of(r.message, r.chunks)
            if got and got[0] not in out and len(out) < self.MAX_UNITS:
                out.append(got[0])
            if got and got[0] in out and len(got) > 1 and got[1] not in out and len(out) < self.MAX_UNITS \
                    and self._names_more_of(clause, got[1], got[0]):
                out.append(got[1])
        return out

    @staticmethod
    def _names_more_of(clause: str, unit: compose.Unit, than: compose.Unit) -> bool:
        """Whether ``unit`` names more of the question's own words than ``than`` does."""
        _, focus = compose.question_words(clause)
        return len(focus & compose.unit_words(unit)) > len(focus & compose.unit_words(than))

    @staticmethod
    def _deadline_of(message: str, chunks: Sequence[KnowledgeChunk]) -> list[compose.Unit]:
        """A second question asking only how long before ("... vcs arrumam o quarto? tem q avisar com qnto
        tempo?") names nothing itself: it asks the deadline of what the message is about. The line stating
        a deadline that scores best for the whole message answers it; [] when no line states one."""
        units = _units_of(chunks)
        timed = [s for s in compose.score_units(message, units) if compose.carries_deadline(s.unit.text)]
        return [max(timed, key=lambda s: (s.score, -s.unit.order)).unit] if timed else []

    def pick_sentences(self, message: str, chunks: Sequence[KnowledgeChunk], intent: str,
                       hint: str = "", query_vector=None) -> list[compose.Unit]:
        """Up to ``max_sentences`` units of the chunks that answer the message, best first.

        ``hint`` (the customer's recalled preference, e.g. "suíte Master") breaks
        ties towards the units about what this customer usually wants; it never
        makes an unrelated unit eligible on its own.
        """
        units = _units_of(chunks)
        if not units:
            return []
        message = compose.respelled(compose.halves_named(message), units)   # "a grnde de calabresa", "2 horinhas"
        extreme = compose.extreme_item(message, units)
        if extreme is not None:   # "qual a suíte mais baratinha": the items compared, the cheapest one
            return [extreme]
        sims = self._similarities(message, units, query_vector)
        # "pode levar o cachorro pra vacinar sozinho?": the errand is what is asked about too
        errand = compose.purpose_words(message) if intent in (i.POLICY, i.INFO) else []
        asked = _decisive_words(message, intent) + errand
        scored = compose.score_units(message, units, wants_price=intent in (i.PRICE, i.OBJECTION),
                                     sims=sims, hint=hint, lexical_weight=self.lexical_weight,
                                     asked=asked)
        _, focus = compose.question_words(message)
        outright = self._answered_outright(message, scored, intent)
        if outright is not None:
            return outright
        ranked = sorted((s for s in scored if self._eligible(s, intent, focus)),
                        key=lambda s: (-s.score, s.unit.order))
        day = compose.opening_day_asked(message)
        if day and intent not in (i.GENERAL, i.OBJECTION):
            # "vcs abrem domingo? minha cachorra ta vomitando": whether they open that day is the question;
            # a unit naming no such day ("não aceitamos fêmeas no cio", found by the story) never answers it
            ranked = [s for s in ranked if day & compose.unit_words(s.unit)] or ranked
        if len(focus) == 1 and intent not in (i.GENERAL, i.OBJECTION) and any(s.focus_hits for s in ranked):
            # a question about one thing ("aceita pix?"): a unit naming it ("Pix, cartão...") beats
            # one only sounding like it ("Não aceitamos cheque.")
            ranked = [s for s in ranked if s.focus_hits]
        ranked = self._on_the_thing_asked(message, units, ranked, intent)
        # "vcs atendem em casa?": the line naming the service as the knowledge does ("atendimento domiciliar")
        # answers it, over lines sharing the bare word ("voltam para casa"), however long the story around it
        phrased = [s for s in scored if compose.says_asked_phrase(message, s.unit)] \
            if intent not in (i.GENERAL, i.OBJECTION) else []
        if phrased:
            ranked = sorted(phrased, key=lambda s: (-s.score, s.unit.order))
        # "459 na lírio?? tá caro": an objection naming the amount it objects to is answered with the
        # line priced at that amount first (the price confirmed), then a deal if there is one
        quoted = self._priced_as_named(message, scored) if intent == i.OBJECTION else None
        if not ranked or (not phrased and self._mostly_uncovered(compose.question_part(message), units, focus,
                                                                 ranked[0], intent, self._said_otherwise)):
            return [quoted] if quoted is not None else []
        ranked = self._narrow(message, ranked, intent)
        if compose.wants_price(message, intent == i.PRICE):
            ranked = self._own_line_priced(message, units, ranked)
            ranked = self._on_the_question(message, ranked)
            ranked = self._priced_under_the_list(message, scored, ranked)
            ranked = self._range_of_the_thing_asked(message, ranked)
        else:
            ranked = self._attribute_on_the_question(message, ranked)
        # "da pra parcelar uma castração?": the units on what decided the intent (parcelamento),
        # when there are any, answer it; the things named around it are context
        on_subject = [s for s in ranked if asked and compose.names_asked(s.unit, asked)]
        # ... unless another unit names clearly more of the question ("pode fumar na varanda da
        # vila nova?": "A varanda é área livre de fumo" over a rule on smoking elsewhere)
        # (a price line naming the things around it names nothing of a question that asks no price: "posso
        # parcelar a castração da minha gata, de 3 kg?" is not answered by "Castração de gata até 4 kg: R$ ...")
        rivals = ranked if compose.wants_price(message, intent == i.PRICE) else \
            [s for s in ranked if not compose.carries_price(s.unit.text)]
        if on_subject and max(s.focus_hits for s in on_subject) >= max((s.focus_hits for s in rivals), default=0) - 1:
            ranked = on_subject
        elif errand:   # ... and a rule on the errand is the answer over a rule on the act alone
            ranked = [s for s in ranked if compose.names_asked(s.unit, errand)] or ranked
        best = self._before_a_no(message, scored, self._best(ranked, compose.expanded_focus(message)))
        limit = self._limit_on_name(message, scored, best, intent)
        if limit is not None:   # the best unit only named the words apart: it answers something else
            return self._emergency_after_no(message, scored, [limit])
        denial = self._denial_of_act(message, scored, best, intent)
        if denial is not None and day and not day & compose.unit_words(denial):
            denial = None   # nor does a "no" on the story ("não hospedamos gatos") answer "abrem sábado?"
        if denial is None:   # a limit of the thing asked answers before a price line
            denial = (self._limit_over_price(message, ranked, best, intent)
                      or self._limit_of_variant(message, scored, best, intent))
        out = [denial] + best[: self.max_sentences - 1] if denial is not None else best
        out = self._quantity_first(message, scored, out, intent)
        out = self._every_range_when_untold(message, scored, out, intent)
        out = self._told_place_first(message, scored, out)
        out = self._place_limit_first(message, scored, out)
        out = self._emergency_after_no(message, scored, out)
        if quoted is not None:
            out = [quoted] + [u for u in out if u != quoted][: self.max_sentences - 1]
        return out

    @staticmethod
    def _own_line_priced(message: str, units: Sequence[compose.Unit],
                         ranked: list[compose.Scored]) -> list[compose.Scored]:
        """"qnto fica aquele pacote das petalas?": the price of an item asked by its name is on its own line
        ("Pacote Pétalas — R$ 120,00: ..."); a sibling's line that only mentions it ("Pacote Aurora Romântica —
        R$ 260,00: tudo do Pacote Pétalas, mais ...") prices the sibling. When the item's own line is ranked,
        the lines of other items of its kind are dropped (``sibling_item`` keeps them for what they say of it)."""
        asked = compose.named_items(message, units)
        if not asked:
            return ranked
        kinds = {a.split()[0] for a in asked}
        own = [s for s in ranked if fold(compose.item_name(s.unit)).lower() in asked]
        if not own:
            return ranked
        return [s for s in ranked if s in own or not compose.item_name(s.unit)
                or fold(compose.item_name(s.unit)).lower().split()[0] not in kinds]

    @staticmethod
    def _on_the_thing_asked(message: str, units: Sequence[compose.Unit], ranked: list[compose.Scored],
                            intent: str) -> list[compose.Scored]:
        """"a cama da orquídea é king ou queen?": the line of another item of that kind (the Suíte Brisa's
        "cama queen") says nothing of the item named (``sibling_item``); nor does a line on what is around
        the thing asked ("a suíte de cima tem elevador?": the suite's line) answer whether there is one,
        where a line names it (``offered_object``)."""
        if intent in (i.GENERAL, i.OBJECTION):
            return ranked
        asked_items = compose.named_items(message, units)
        if asked_items:
            ranked = [s for s in ranked if not compose.sibling_item(s.unit, asked_items)]
        thing = compose.offered_object(message)

        def names_it(u: compose.Unit) -> bool:   # "Ela é preparada ...": the thing its pronoun stands for counts
            before = compose.pronoun_antecedent(u, units)
            return bool(thing & (compose.unit_words(u) | (compose.unit_words(before) if before is not None else set())))

        return [s for s in ranked if names_it(s.unit)] or ranked

    def _before_a_no(self, message: str, scored: Sequence[compose.Scored],
                     best: list[compose.Unit]) -> list[compose.Unit]:
        """A yes/no question answered by a sentence saying no, after a sentence of the same paragraph on the
        thing asked: that sentence is part of the answer. When it allows what the no denies elsewhere ("Na
        varanda aceitamos pets ..." before "No salão interno não entram pets.", all the no names of the question
        named again) the two are the answer, that one first, so the answer is no plain "não" (whichever unit
        picked says the no); else, for a no picked first, it follows the no ("Não temos elevador." after "A
        suíte X fica no primeiro andar, com acesso por escada."), when there is room."""
        if not best or not compose.is_yes_no(message):
            return best
        focus = compose.expanded_focus(message)
        for k, no in enumerate(best):
            if no.item or not compose.says_no(no.text, focus):
                continue
            prev = next((s for s in scored if s.unit.order == no.order - 1 and s.unit.order // 1000 == no.order // 1000
                         and not s.unit.item), None)
            if prev is None or prev.unit in best or not prev.focus_hits or compose.says_no(prev.unit.text, focus) \
                    or compose.carries_price(prev.unit.text):
                continue
            denied = focus & compose.chunk_words(no.text)
            if denied and denied <= compose.chunk_words(prev.unit.text):   # all the no names of the question
                return [prev.unit, no]
            if k == 0 and len(best) < self.max_sentences:
                return best + [prev.unit]
        return best

    def _answered_outright(self, message: str, scored: Sequence[compose.Scored],
                           intent: str) -> list[compose.Unit] | None:
        """The kinds of question a kind of line answers whatever else the message names; None for the
        others (they go through the ranking)."""
        if intent != i.GENERAL and compose.asks_for_work(message):
            # "vcs tao contratando motoboy?": a job asked for; a line naming the role ("o motoboy leva
            # maquininha") is about the service: the lines on jobs answer it (whatever words they use),
            # else it is handed over
            return [s.unit for s in sorted(scored, key=lambda s: s.unit.order)
                    if compose.speaks_of_hiring(s.unit.text)][: self.max_sentences]
        if intent not in (i.GENERAL, i.OBJECTION) and compose.asks_what_to_do(message):
            # "a pizza chegou fria, o q eu faço?": what to do about the problem told is what the
            # knowledge says about a problem ("Pedido errado ou com problema: ... mande uma foto"),
            # not a line naming the things of the story (the flavour list, the crust deal)
            problem = [s for s in scored if compose.addresses_problem(s.unit.text)]
            if problem:
                return [max(problem, key=lambda s: (s.score, -s.unit.order)).unit]
        if intent not in (i.GENERAL, i.OBJECTION):
            # "a pizza doce grande qnto é?": the limit to other sizes ("só nos tamanhos broto e média") answers
            limit = compose.excluded_variant(message, [s.unit for s in scored])
            if limit is not None:
                return [limit]
        if intent not in (i.GENERAL, i.OBJECTION) and compose.unknown_titled_person(message, [s.unit for s in scored]):
            return []   # "a Dra. Helena atende sabado?": a doctor the knowledge never names; the hours are not hers
        brought = self._on_bringing(message, scored, intent)
        if brought is not None:   # "posso levar minha cerveja?": the rule on things from outside, or nothing
            return brought
        party = self._party_limit(message, scored, intent)
        return None if party is None else [party]

    _PERMISSION = re.compile(r"\b(?:aceit|permit|proib|pode entrar|podem entrar|nao entra|liberad)\w*")

    def _on_bringing(self, message: str, scored: Sequence[compose.Scored], intent: str) -> list[compose.Unit] | None:
        """"posso levar minha cerveja? cobra alguma coisa?": whether one may bring one's own thing
        (``compose.brought_thing``) is answered by the business's rule on things from outside when it covers
        that thing ("é permitido trazer bebidas, com taxa de rolha"), else by a line allowing or refusing the
        thing itself; never by the price of the same thing sold there, nor by the rule on another thing ("o
        cliente pode trazer bolo de fora" for a wine): with neither, the question is handed over ([]). None
        (the ranking decides) when the message asks no such thing or the business states no rule on things
        from outside."""
        asked = compose.brought_thing(message) if intent not in (i.GENERAL, i.OBJECTION) else None
        if asked is None or not any(compose.states_bringing(s.unit.text) for s in scored):
            return None
        thing, forms = asked
        part = compose.question_part(message)

        def covers(s: compose.Scored) -> bool:   # the line itself names the thing, another name of it, or a word
            return bool(forms & compose.chunk_words(s.unit.text)) or self._said_otherwise(part, set(thing), s.unit.text)

        def best(cands: list[compose.Scored]) -> list[compose.Unit]:
            return [max(cands, key=lambda s: (s.score, -s.unit.order)).unit] if cands else []

        rules = [s for s in scored if compose.states_bringing(s.unit.text) and covers(s)]
        if rules:
            return best(rules)
        return best([s for s in scored if not compose.states_bringing(s.unit.text)
                     and not compose.carries_price(s.unit.text)
                     and self._PERMISSION.search(fold(s.unit.text)) and covers(s)])

    @staticmethod
    def _party_limit(message: str, scored: Sequence[compose.Scored], intent: str) -> compose.Unit | None:
        """"a gente é em 3, pode todo mundo na mesma suíte?": a party counted in a question asking whether
        it may come is answered by the line stating how many people are allowed ("Máximo de 2 pessoas
        por suíte"), whatever else the story names (the best of such lines, by its score). Not for a
        price asked ("qnto é a pernoite pra 2 pessoas?": the price is the answer) nor small talk."""
        size = compose.party_size(message)
        if intent in (i.GENERAL, i.OBJECTION) or size is None or compose.wants_price(message, intent == i.PRICE):
            return None
        limits = [s for s in scored if compose.states_party_limit(s.unit.text, size)]
        return max(limits, key=lambda s: (s.score, -s.unit.order)).unit if limits else None

    def _place_limit_first(self, message: str, scored: Sequence[compose.Scored],
                           out: list[compose.Unit]) -> list[compose.Unit]:
        """"o hotelzinho tem na unidade do centro tb?": whether a thing is offered at a unit is answered by the
        line that names the thing in its own words and limits it to some units ("O hotelzinho e a creche
        funcionam apenas na unidade Jardim América"), over lines about the unit or rules found by the
        heading; it leads, the picked line stays after it. Only for a question already answered."""
        if not out or not compose.asks_at_a_unit(message):
            return out
        _, focus = compose.question_words(message)
        thing = focus - compose.unit_place_words(message)
        limited = [s for s in scored if compose.limits_to_units(s.unit.text)
                   and thing & compose.chunk_words(s.unit.text)]
        if not limited:
            return out
        pick = max(limited, key=lambda s: (s.score, -s.unit.order)).unit
        return [pick] + [u for u in out if u != pick][: self.max_sentences - 1]

    def _told_place_first(self, message: str, scored: Sequence[compose.Scored],
                          out: list[compose.Unit]) -> list[compose.Unit]:
        """"moro na vila sol, vcs buscam o cachorro em casa?": the place told is where the service is
        asked for; a retrieved line writing it as a name ("Unidade Norte: Vila Sol, Alto Alegre e ...")
        says whether and from where they serve it, so it leads (the picked line stays after it).
        Only for a question already answered: a place named alone makes nothing answerable."""
        place = compose.told_place(message)
        if not out or not place:
            return out
        named = [s for s in scored if compose.names_place(s.unit.text, place)]
        if not named:
            return out
        pick = max(named, key=lambda s: (s.score, -s.unit.order)).unit
        return [pick] + [u for u in out if u != pick][: self.max_sentences - 1]

    def _quantity_first(self, message: str, scored: Sequence[compose.Scored], out: list[compose.Unit],
                        intent: str) -> list[compose.Unit]:
        """``out`` with the line whose limit holds the quantity told first (``_limit_holding_quantity``)."""
        held = self._limit_holding_quantity(message, scored, out, intent)
        return out if held is None else [held] + [u for u in out if u != held][: self.max_sentences - 1]

    def _every_range_when_untold(self, message: str, scored: Sequence[compose.Scored], out: list[compose.Unit],
                                 intent: str) -> list[compose.Unit]:
        """"qnto fica a taxa de entrega pro centro?": a line picked is one range of a price list ("até 3 km: R$
        6,00", under "Taxa de entrega") and the customer told no amount of that measure: the price is each range's,
        so the lines of that list are the answer, when they all fit (at most ``MAX_UNITS``)."""
        if not out or not compose.wants_price(message, intent == i.PRICE) or compose.tells_amount(message):
            return out

        def row(u: compose.Unit) -> bool:
            return bool(u.context and compose.carries_price(u.text) and compose.range_measures(compose.fold(u.text)))

        # the first line picked that is such a range, or else one under the heading the question names word for
        # word ("qual a taxa de entrega?": a line naming the fee in passing may rank above the list)
        norm = normalize_chat(message)
        top = next((u for u in out if row(u)), None) or next(
            (s.unit for s in sorted(scored, key=lambda s: -s.score)
             if row(s.unit) and compose.heading_asked(norm, s.unit.context)), None)
        if top is None:
            return out
        measures = compose.range_measures(compose.fold(top.text))
        rows = sorted({s.unit for s in scored if s.unit.context == top.context and compose.carries_price(s.unit.text)
                       and compose.range_measures(compose.fold(s.unit.text)) & measures}, key=lambda u: u.order)
        if not 2 <= len(rows) <= self.MAX_UNITS:
            return out
        # a word that tells the rows apart, said by the customer ("banho de cachorro médio": "Médio (de 10,1 a 25
        # kg)"), chose the row: the list is not the answer
        words = [compose.unit_words(u) for u in rows]
        apart = set().union(*words) - set.intersection(*map(set, words))
        return out if apart & compose.question_words(message)[0] else rows

    @staticmethod
    def _limit_holding_quantity(message: str, scored: Sequence[compose.Scored], out: list[compose.Unit],
                                intent: str) -> compose.Unit | None:
        """"moro uns 8 km da vila nova, vcs trazem?", "a pizza chegou 1h30 depois, ganho algo?": a quantity
        told (km, minutes or hours, kg, years, people) that a line's limit or range holds ("Acima de 6 km não
        entregamos", "se a entrega passar de 80 minutos ...") while the line picked states no range of that
        measure (it was found by the story's place names or breed): the line whose limit holds the quantity
        answers, first. Only a line naming a word of the question; None when the first line picked holds it."""
        if not out or intent in (i.GENERAL, i.OBJECTION):
            return None
        norm = compose.normalize_chat(message)
        if compose.range_fit(norm, compose.fold(out[0].text)) is True:
            return None
        holding = [s for s in scored if s.focus_hits and compose.range_fit(norm, compose.fold(s.unit.text)) is True]
        return max(holding, key=lambda s: (s.score, -s.unit.order)).unit if holding else None

    @staticmethod
    def _priced_as_named(message: str, scored: Sequence[compose.Scored]) -> compose.Unit | None:
        """The unit priced at an amount the message names ("86 reais numa família?", "459 na lírio??"),
        the best scored of them (the one naming most of the message); None when none is."""
        named = compose.amounts_named(message)
        if not named:
            return None
        priced = [s for s in scored if named & set(compose.unit_amounts(s.unit.text))]
        return max(priced, key=lambda s: (s.score, -s.unit.order)).unit if priced else None

    @staticmethod
    def _priced_under_the_list(message: str, scored: Sequence[compose.Scored],
                               ranked: list[compose.Scored]) -> list[compose.Scored]:
        """"qnto ta a grande de carne seca com cream cheese?": the line naming the item best is a list of
        names without a price ("Quatro Queijos, Lombo com Abacaxi, Carne Seca com Cream Cheese, ...", under
        "Especiais"); the prices of what it lists are the priced lines under the same heading ("Grande: R$
        69,00"), not a price line elsewhere sharing a word of the item ("Borda recheada (catupiry, cheddar ou
        cream cheese): acréscimo de R$ 9,00", which names the words only among the options in its
        parentheses, nor "Grande: R$ 58,00" under "Tradicionais", which names only what the heading's own lines
        name). Only when that list names more of the question than any priced line and some ranked priced line
        is under its heading; a priced line elsewhere naming more of the question stays."""
        if not scored or not ranked:
            return ranked
        top = max(scored, key=lambda s: (s.score, -s.unit.order))
        if compose.carries_price(top.unit.text) or not top.unit.context:
            return ranked
        priced = [s for s in ranked if compose.carries_price(s.unit.text)]
        under = [s for s in priced if s.unit.context == top.unit.context]
        if not under or top.focus_hits <= max(s.focus_hits for s in priced):
            return ranked
        said = set().union(*(compose.focus_named(message, s.unit.text) for s in under))

        def elsewhere(s: compose.Scored) -> bool:   # "Grande: R$ 58,00" under "Tradicionais" names only the size
            return bool(s.unit.context) and compose.focus_named(message, s.unit.text) <= said

        return [s for s in ranked if s in under or not compose.carries_price(s.unit.text)
                or (compose.names_outside_options(message, s.unit.text) and not elsewhere(s))]

    @staticmethod
    def _on_the_question(message: str, ranked: list[compose.Scored]) -> list[compose.Scored]:
        """"qnto ta a consulta? minha gata ta vomitando": the best unit names only the told part's words
        ("Castração de gata: ...") while others name what the question itself asks ("Consulta clínica
        geral: ..."): those answer it. Only when the message tells something besides its question, and
        only for a price asked (the thing priced is in the question); a yes/no question may need the told
        part ("vcs buscam em casa? moro na bela vista": the place told decides)."""
        part = compose.question_part(message)
        if not ranked or part == message:
            return ranked
        own = compose.expanded_focus(part)
        on_question = [s for s in ranked if own & compose.unit_words(s.unit)]
        if on_question and not own & compose.unit_words(ranked[0].unit):
            return on_question
        return ranked

    def _emergency_after_no(self, message: str, scored: Sequence[compose.Scored],
                            out: list[compose.Unit]) -> list[compose.Unit]:
        """"tem pronto socorro 24h? meu cachorro ta vomitando": the answer says no (or closed) to a customer
        telling an urgency; the retrieved line on what to do in an emergency ("Em caso de emergência ...
        indicamos o Hospital ...") follows it, as an attendant would add it."""
        if not out or not (compose.tells_urgency(message) or compose.tells_of_a_pet_when_closed(message)) or \
                not any(compose.refuses(u.text) for u in out):
            return out
        if any(compose.speaks_of_emergency(u.text) for u in out):
            return out
        lines = [s for s in scored if compose.speaks_of_emergency(s.unit.text)]
        if not lines:
            return out
        return out[: self.MAX_UNITS - 1] + [max(lines, key=lambda s: (s.score, -s.unit.order)).unit]

    def _range_of_the_thing_asked(self, message: str, ranked: list[compose.Scored]) -> list[compose.Scored]:
        """"qnto é a tosa de um poodle de 12kg?": the best unit fits the amount told ("Cães acima de 10 kg:
        orçamento") but names none of the customer's own words, only another name of one (the breed's
        species), while another unit fitting the amount names the thing asked itself ("Médio (10 a 20 kg) —
        Tosa: R$ 90,00"): the weight only chooses among the lines of the service asked, so that one goes
        first, when it scores at least ``fuller_ratio`` of the best."""
        norm = normalize_chat(message)
        if len(ranked) >= 2 and compose.range_fit(norm, fold(ranked[0].unit.text)) is None:
            # "qual a taxa de entrega pro jardim das flores? da uns 4km": the best line states no range of the
            # measure told ("Pedido mínimo para entrega: R$ 40,00"); a line of the question's words whose range
            # holds it ("de 3 km a 6 km: R$ 10,00", under "Taxa de entrega") is the price asked
            held = [s for s in ranked[1:] if s.focus_hits and s.score >= self.fuller_ratio * ranked[0].score
                    and compose.range_match(norm, fold(s.unit.text))]
            return [held[0]] + [s for s in ranked if s is not held[0]] if held else ranked
        if len(ranked) < 2 or not compose.range_match(norm, fold(ranked[0].unit.text)):
            return ranked
        _, focus = compose.question_words(message)
        if focus & compose.unit_words(ranked[0].unit):
            return ranked
        named = [s for s in ranked[1:] if focus & compose.unit_words(s.unit) and s.score >= self.fuller_ratio
                 * ranked[0].score and compose.range_match(norm, fold(s.unit.text))]
        return [named[0]] + [s for s in ranked if s is not named[0]] if named else ranked

    @staticmethod
    def _attribute_on_the_question(message: str, ranked: list[compose.Scored]) -> list[compose.Scored]:
        """"quero fazer surpresa pra patroa no nosso aniversario de casamento, com qnto tempo tenho q pedir a
        decoração?": the question asks an attribute by its form (a deadline, hours, a day, an address, a
        duration) and the best unit, scored by the told part's words ("Aniversário, bodas, …"), carries none;
        the units that carry it and name a word of the question itself ("Prazo: a decoração precisa ser
        pedida com 48 horas de antecedência") go first. Only when the message tells something besides its
        question (``_on_the_question`` is the same for a price asked); a question after the story's last comma
        that asks such an attribute is the question, however short the story."""
        part = compose.question_part(message)
        if part == message and "," in message:   # "…de casamento, com qnto tempo tenho q pedir a decoração?"
            last = message.rsplit(",", 1)[1].strip()
            if last.endswith("?") and len(last.split()) >= 4 and compose.asks_attribute(last):
                part = last
        if not ranked or part == message:
            return ranked
        norm = normalize_chat(part)
        if compose.attribute_bonus(norm, ranked[0].unit.text) > 0:
            return ranked
        own = compose.expanded_focus(part)
        carrying = [s for s in ranked if own & compose.unit_words(s.unit) and compose.attribute_bonus(norm, s.unit.text) > 0]
        return carrying + [s for s in ranked if s not in carrying] if carrying else ranked

    @staticmethod
    def _limit_over_price(message: str, ranked: Sequence[compose.Scored], best: list[compose.Unit],
                          intent: str) -> compose.Unit | None:
        """"a segunda do combo vale pro delivery?": a yes/no question that asks no price, whose best unit is
        a price line naming the thing ("Segunda do Combo: ... por R$ 39,90 por pessoa."), while another unit
        names as much of the question and limits it ("Só no salão, não vale para delivery."): the limit
        answers the yes or no, first (with the best unit after it)."""
        if not best or intent in (i.GENERAL, i.OBJECTION) or not compose.is_yes_no(message) \
                or compose.wants_price(message, intent == i.PRICE) or not compose.carries_price(best[0].text):
            return None
        top = next((s for s in ranked if s.unit == best[0]), None)
        if top is None:
            return None
        limits = [s for s in ranked if s.unit not in best and not compose.carries_price(s.unit.text)
                  and compose.limits(s.unit.text) and s.focus_hits >= top.focus_hits]
        return limits[0].unit if limits else None

    @staticmethod
    def _limit_of_variant(message: str, scored: Sequence[compose.Scored], best: list[compose.Unit],
                          intent: str) -> compose.Unit | None:
        """"a pizza doce grande qnto é?": the price asked of a variant ("grande") that no priced line names,
        while a line names the thing asked as one ("pizza doce") and limits it ("Pizza doce só é feita nos
        tamanhos broto e média."): that limit answers first (the best price line after it). Only when the
        limit names as much of the question as the best price line and is nearer to it in meaning."""
        if not best or not compose.wants_price(message, intent == i.PRICE) or not compose.carries_price(best[0].text):
            return None
        top = next((s for s in scored if s.unit == best[0]), None)
        if top is None or top.similarity is None:
            return None
        part = compose.question_part(message)
        _, focus = compose.question_words(part)
        priced = set().union(*(compose.unit_words(s.unit) for s in scored if compose.carries_price(s.unit.text)))
        if not focus - priced:
            return None
        limits = [s for s in scored if s.unit not in best and not compose.carries_price(s.unit.text)
                  and compose.only_some(s.unit.text) and compose.phrases_named(part, s.unit.text)
                  and s.focus_hits >= top.focus_hits and s.similarity is not None and s.similarity > top.similarity]
        return max(limits, key=lambda s: s.score).unit if limits else None

    def _limit_on_name(self, message: str, scored: Sequence[compose.Scored], best: list[compose.Unit],
                       intent: str) -> compose.Unit | None:
        """"tem pizza doce grande?": the best unit names the words apart ("Pizza meio a meio só nos
        tamanhos média, grande e família") while another says the name asked as one and limits it
        ("Pizza doce só é feita nos tamanhos broto e média."): that limit is the answer, alone.
        Only for a yes/no question, when it names as much of the question as the best unit and
        scores at least ``fuller_ratio`` of it."""
        if not best or intent in (i.GENERAL, i.OBJECTION) or not compose.is_yes_no(message):
            return None
        top = next((s for s in scored if s.unit == best[0]), None)
        part = compose.question_part(message)   # the phrases asked, not the told ones ("banana com canela")
        if top is None or compose.phrases_named(part, top.unit.text):
            return None
        # named as much of the question itself: a word of the told part ("a guria só quer saber de
        # brigadeiro") never makes the flavour list name more of "tem pizza doce grande?"
        # (nor the told part's rare words, which weigh twice, outscore it: then the meaning compares them)
        own = compose.expanded_focus(part)

        def as_much_of_the_question(s: compose.Scored) -> bool:
            if s.focus_hits >= top.focus_hits and s.score >= self.fuller_ratio * top.score:
                return True
            return (part != message and len(own & compose.unit_words(s.unit)) >= len(own & compose.unit_words(top.unit))
                    and s.similarity is not None and top.similarity is not None
                    and s.similarity >= top.similarity)

        named = [s for s in scored if s.unit != top.unit and compose.phrases_named(message, s.unit.text)
                 and compose.limits(s.unit.text) and as_much_of_the_question(s)]
        if not named:
            return None
        limit = max(named, key=lambda s: s.score).unit
        # "a pizza vegana leva castanha?": the limit on the name ("as pizzas veganas não contêm lactose")
        # denies another thing, while a unit picked denies the very thing asked that the limit never
        # names ("... (não contém castanhas)"): that "no" is the answer, alone
        # (a thing: "não é possível cancelar" denies no thing of "é possível pagar em 2x?")
        unnamed = own - compose.unit_words(limit) - _MODAL_STEMS
        q_all = compose.question_words(message)[0] | own
        denial = next((u for u in best if unnamed and any(compose.says_no(clause, unnamed, q_all)
                                                          for clause in re.split(r"[,;:.!?]", u.text))), None)
        return denial or limit

    def _denial_of_act(self, message: str, scored: Sequence[compose.Scored], best: list[compose.Unit],
                       intent: str) -> compose.Unit | None:
        """"emergencia de madrugada, vcs atendem?": the best unit talks around the act asked
        ("Em caso de emergência ... indicamos o Hospital ...") while another denies that very act
        ("Não temos pronto-socorro nem atendimento 24 horas."): the denial is the answer, first.
        Only when the best unit neither names the act nor says no, and the denial scores at least
        ``fuller_ratio`` of it; or when the best unit was scored by the told part and the denial names
        more of the question itself and is nearer to it in meaning."""
        acts = compose.asked_acts(message)
        if not best or intent in (i.GENERAL, i.OBJECTION, i.PRICE) or not compose.is_yes_no(message):
            return None
        top = next((s for s in scored if s.unit == best[0]), None)
        q_all, own = compose.question_words(message)
        if top is None:
            return None
        top_says_no = compose.says_no(top.unit.text, own)
        focus = compose.expanded_focus(message)
        if acts and not top_says_no:
            # "rompeu o ligamento, vcs operam?": "Não fazemos cirurgias ortopédicas" denies the whole kind the
            # question names otherwise (ligamento → ortopedia), a kind the best unit never names
            kinds = (focus - own) - compose.unit_words(top.unit)
            whole = [s for s in scored if s.unit not in best and s.score >= self.fuller_ratio * top.score
                     and compose.opens_with_no(s.unit.text)
                     and compose.denies_whole_kind(s.unit.text, kinds, q_all | focus)]
            if whole:
                return max(whole, key=lambda s: s.score).unit
        if acts and compose.names_act(top.unit.text, acts):
            return None
        part = compose.question_part(message)
        own_part = compose.expanded_focus(part) if part != message else set()

        def closer_on_the_question(s: compose.Scored) -> bool:
            # "o hotelzinho aceita gato? vou viajar pra casa da minha mãe": the told part's words ("casa")
            # score the best unit; a "no" naming more of the question itself, and nearer in meaning, wins
            mine, its = own_part & compose.unit_words(s.unit), own_part & compose.unit_words(top.unit)
            return (bool(own_part) and len(mine) > len(its) and s.similarity is not None
                    and top.similarity is not None and s.similarity > top.similarity)

        if acts:
            denials = [s for s in scored if s.unit not in best and compose.denies_act(s.unit.text, acts, focus)
                       and ((s.score >= self.fuller_ratio * top.score and not top_says_no)
                            or closer_on_the_question(s))]
        else:   # "queria deixar meus gatos no hotelzinho, pode?": a "no" about what was asked, nearly as good
            named = max(s.focus_hits for s in scored if s.unit in best)   # as much as any unit picked
            denials = [s for s in scored if s.unit not in best and compose.opens_with_no(s.unit.text)
                       and compose.says_no(s.unit.text, focus, q_all | focus)
                       and ((s.focus_hits >= named and s.score >= self.second_ratio * top.score
                             and not top_says_no) or closer_on_the_question(s))]
        denials = denials or [s for s in scored if s.unit not in best and compose.opens_with_no(s.unit.text)
                              and compose.says_no(s.unit.text, focus, q_all | focus) and closer_on_the_question(s)]
        return max(denials, key=lambda s: s.score).unit if denials else None

    def _similarities(self, message: str, units: Sequence[compose.Unit], query_vector) -> list[float] | None:
        """Cosine similarity of each unit with the message (None without an embedder)."""
        if self.embedder is None:
            return None
        vecs = self._sentence_vectors([u.text for u in units])
        q = query_vector if query_vector is not None else self.embedder.embed_queries([message])[0]
        return [float(v @ q) for v in vecs]

    def _eligible(self, s: compose.Scored, intent: str, focus) -> bool:
        """Whether a unit may answer at all, by the intent's rule."""
        strong = s.similarity is not None and s.similarity >= self.strong_similarity
        if intent == i.GENERAL:  # small talk quotes knowledge only when it is clearly about it
            return s.focus_hits > 0 and (strong or s.lexical >= 2 * self.min_overlap)
        if intent == i.OBJECTION:
            return True  # any deal the search found (filtered below)
        if focus:
            return s.focus_hits > 0 or strong
        return s.lexical >= self.min_overlap or (s.similarity or 0.0) >= self.min_similarity

    def _said_otherwise(self, message: str, stems: set[str], text: str, paraphrase: bool = False) -> bool:
        """Whether every word of the message with one of these stems means a word of ``text``:
        its cosine similarity with that word alone, by the knowledge embedder, is at least
        ``synonym_similarity`` ("pavor" → "medo", "lugar" → "vaga"; not "nutella" → "doce";
        stopwords of ``text`` are left out, and so are the members of a list of alternatives in it:
        "branco" is not said by "vinho rosé; vinho tinto", a sibling). False without an embedder."""
        if stems and not set(stems) - compose.other_head_of_compound(message, text):
            return True   # "ticket refeição" is the text's "vale-refeição", by another head
        if self.embedder is None or not stems:
            return False
        asked = sorted({t for t in compose.normalize_chat(message).split() if compose.stem(t) in stems})
        if {compose.stem(t) for t in asked} != set(stems):
            return False
        # a list of alternatives ("vinho rosé ...; vinho tinto ...", "laranja, maracujá ou abacaxi") names
        # the variants there are: its members are the siblings of the one asked, not other words for it
        text = compose.without_alternatives(text)
        # a word the customer said too names what it names, not the unknown word: "suco" in "qnto ta o
        # suco de morango?" is the kind asked, never another word for "morango" (0.55 by USE)
        own = compose.question_words(message)[0]
        words = sorted({w for w in re.findall(r"[a-zà-ÿ]{3,}", text.lower()) if fold(w) not in compose.STOPWORDS
                        and compose.stem(fold(w)) not in own})
        if not words:
            return False
        q = self._query_vectors(asked)
        sims = q @ self._sentence_vectors(words).T
        bar = self.paraphrase_similarity if paraphrase else self.synonym_similarity
        return bool((sims.max(axis=1) >= bar).all())

    @staticmethod
    def _mostly_uncovered(message: str, units: Sequence[compose.Unit], focus, top: compose.Scored,
                          intent: str, said_otherwise=None) -> bool:
        """The question is mostly about things the knowledge never mentions, or it
        asks whether they offer an item the knowledge never names ("royal canin").

        An unknown word is no unknown item when ``said_otherwise(message, stems, text)`` finds
        that the best unit says it in other words ("tem pavor do secador" → "pets com medo de
        barulho"; "somos em 3, tem problema" is not said by "Máximo de 2 pessoas")."""
        if intent not in (i.GENERAL, i.OBJECTION):
            unknown = (compose.unknown_object(message, units)
                       # an unknown qualifier of a kind, unless the best unit identifies the item by
                       # every other word ("o pacote completo com aquele letreiro": ``identifies_item``)
                       or (compose.unknown_kind(message, units)
                           if not compose.identifies_item(message, units, top.unit) else set())
                       or (compose.unknown_attribute(message, units) if intent in (i.INFO, i.POLICY) else set())
                       or (compose.unknown_predicate(message, units) if intent in (i.INFO, i.POLICY) else set())
                       or (compose.unknown_permitted_act(message, units) if intent in (i.INFO, i.POLICY) else set())
                       or (compose.unknown_priced(message, units) if intent == i.PRICE else set())
                       or ({"dividir"} if compose.unstated_split_payment(message, units) else set()))
            # a word the best unit writes itself, apart from the item ("cerveja sem álcool" and "Bebidas
            # alcoólicas: ..."), names a variant the knowledge never offers: no other word says it
            written = unknown & compose.unit_words(top.unit)
            if unknown and not (said_otherwise and not written and said_otherwise(message, unknown, top.unit.text)):
                return True
            # the customer's presence asked leave for ("posso ficar junto olhando o banho?") is said otherwise only by
            # a line on the service it is asked at ("assistir à tosa pela janela"), never by one on someone else
            # staying ("pets em observação ficam conosco": "junto" is near "conosco", and "ficar" was respelled "ficam")
            acts = compose.unknown_permitted_act(message, units) if intent in (i.INFO, i.POLICY) else set()
            if acts and not compose.names_the_occasion(message, acts, top.unit):
                return True
        uncovered = compose.uncovered_focus(message, units)
        focus = focus & compose.question_words(message)[1]
        if uncovered and intent in (i.INFO, i.POLICY) and any(
                compose.closes_the_list(top.unit.text, f) for f in focus - uncovered):
            # "tem desconto pra policial militar?" and "os únicos descontos são os descritos" (or "não oferecemos
            # outros descontos"): the line keeps the thing asked to what it lists, which answers any other kind of it
            return False
        # "qnto custa um ecocardiograma?": the one thing asked is a word no retrieved unit writes
        alone = bool(focus) and uncovered == focus and top.focus_hits == 0
        if said_otherwise and (len(uncovered) >= 2 or alone):   # "desmarcar" is said by "remarcação" (0.68 by USE)
            uncovered = {w for w in uncovered if not said_otherwise(message, {w}, top.unit.text, paraphrase=True)}
        alone = alone and uncovered == focus
        return ((len(uncovered) >= 2 or alone) and 3 * len(uncovered) >= 2 * len(focus) and top.focus_hits < 2
                and intent not in (i.GENERAL, i.OBJECTION))

    @staticmethod
    def _narrow(message: str, ranked: list[compose.Scored], intent: str) -> list[compose.Scored]:
        """Keep the units that carry what was asked: a price, the attribute, a deal."""
        if compose.wants_price(message, intent == i.PRICE):
            # "é cobrado?", "qual a diferença de preço...?": "sem custo", "mesmo valor" answer it
            free = compose.is_yes_no(message) or compose.asks_difference(message)
            priced = [s for s in ranked if compose.carries_price(s.unit.text, free)]  # no price stated: hand over
            # ... unless only the intent asked a price and the question is a yes/no one that names no
            # amount ("vcs aceitam cheque?" read as a price question): the knowledge answers what it asks
            if priced or compose.wants_price(message) or not compose.is_yes_no(message):
                ranked = priced
        if compose.asks_name(message):  # "qual o nome da veterinária": no name stated, hand over
            ranked = [s for s in ranked if compose.names_someone(s.unit.text)]
        deadline = [s for s in ranked if compose.asks_deadline(message) and compose.carries_deadline(s.unit.text)]
        carrying = deadline or [s for s in ranked if compose.carries_asked_attribute(message, s.unit.text)]
        # "onde fica" → the address line, "que horas" → a line with hours; unless a unit names
        # more of what was asked than any of those ("abrem segunda feira?" → "Segunda-feira: fechado.")
        if carrying and max(s.focus_hits for s in carrying) >= max(s.focus_hits for s in ranked):
            ranked = carrying
        if compose.asked_acts(message) & compose.SALE_ACTS:  # "vcs vendem coleira?": a sale, or hand over
            ranked = [s for s in ranked if compose.answers_a_sale(s.unit.text)]
        if intent == i.OBJECTION:  # answer an objection with a deal, or not at all ...
            # ... unless it asks yes or no about one deal ("se eu indicar um amigo ganho desconto?")
            # and a unit naming that deal denies it ("... nem desconto por indicação"): the answer
            asked_deal = compose.is_yes_no(message)
            ranked = [s for s in ranked if compose.offers_deal(s.unit.text)
                      or (asked_deal and s.focus_hits >= 2 and compose.offers_deal(message)
                          and compose.limits(s.unit.text))]
        return ranked

    def _best(self, ranked: list[compose.Scored], focus: set[str] = frozenset()) -> list[compose.Unit]:
        """The best unit and the next ones scoring close to it."""
        if not ranked:
            return []
        best = [ranked[0]]
        for s in ranked[1:self.max_sentences]:
            if s.score >= self.second_ratio * ranked[0].score and s.score > 0:
                best.append(s)
        # a unit naming more of what was asked than the best ("tem estacionamento na unidade
        # centro?": the general rule, then the line on the Centro unit's parking) joins it, in
        # place of a runner-up naming less
        # the best unit points to an item by its name ("a única piscina é a privativa da Suíte
        # Lírio"): that item's own line, when retrieved and about the question, says what it is
        if len(best) < self.max_sentences:
            named = [s for s in ranked[1:] if s.focus_hits and compose.refers_to(ranked[0].unit.text, s.unit)]
            if named:
                best.append(named[0])
        # a "no" is followed by what there is instead ("Não temos estacionamento próprio nesta unidade."
        # then "O Estacionamento Primavera, conveniado, fica a 50 metros ..."): the next sentence, when
        # it names as much of the question and the thing denied, is part of the answer
        if compose.opens_with_no(ranked[0].unit.text):
            denied = focus & compose.chunk_words(ranked[0].unit.text)
            after = [s for s in ranked[1:] if s.unit.order == ranked[0].unit.order + 1
                     and s.focus_hits >= ranked[0].focus_hits and not compose.opens_with_no(s.unit.text)
                     and denied & compose.chunk_words(s.unit.text)]
            if after and after[0] not in best:
                best = best[:self.max_sentences - 1] + after[:1]
        fuller = [s for s in ranked[1:] if s.focus_hits > ranked[0].focus_hits
                  and s.score >= self.fuller_ratio * ranked[0].score and s not in best]
        if fuller:
            pick = max(fuller, key=lambda s: (s.focus_hits, s.score))
            if len(best) < self.max_sentences:
                best.append(pick)
            elif best[-1].focus_hits < pick.focus_hits:
                best[-1] = pick
        return [s.unit for s in best]

    def _stored_sentences(self, r: ReplyRequest) -> None:
        """Put the vectors the indexer stored for the request's chunks in the sentence cache, when
        some of their sentences are not there (one read; nothing to read when all are cached). A
        sentence with none stored (an old chunk, another model, two halves of a cut sentence
        joined) is embedded when needed, as before."""
        if self.sentences is None or self.embedder is None or not r.chunks or r.account_id is None:
            return
        name = f"passage:{self.embedder.name}"
        with self._cache_lock:
            cache = self._cache.get(name, {})
            wanted = [c for c in r.chunks if any(u.text not in cache for u in compose.answer_units(c.text))]
        if not wanted:
            return
        found = self.sentences(r.account_id, [c.chunk_id for c in wanted], self.embedder.name)
        if not found:
            return
        with self._cache_lock:
            cache = self._cache.setdefault(name, OrderedDict())
            for s, v in found.items():
                if s not in cache:
                    cache[s] = v
            while len(cache) > self.cache_size:
                cache.popitem(last=False)

    def _sentence_vectors(self, sentences: list[str]):
        """Chunk sentences repeat across replies: embed each once (bounded LRU per model)."""
        return self._cached_vectors(sentences, self.embedder.embed_passages, "passage")

    def _query_vectors(self, words: list[str]):
        """The message's words as queries (the synonym check): words repeat across messages far
        more than messages do, so they are cached like the sentences (their own LRU per model)."""
        return self._cached_vectors(words, self.embedder.embed_queries, "query")

    def _cached_vectors(self, sentences: list[str], embed, kind: str):
        import numpy as np

        name = f"{kind}:{self.embedder.name}"
        with self._cache_lock:  # replies are composed in several threads at once
            cache = self._cache.setdefault(name, OrderedDict())
            have = {s: cache[s] for s in sentences if s in cache}
        missing = [s for s in dict.fromkeys(sentences) if s not in have]
        if missing:  # embedded outside the lock: other replies use the cache meanwhile
            have.update(zip(missing, embed(missing)))
        with self._cache_lock:
            for s in sentences:
                cache[s] = have[s]
                cache.move_to_end(s)
            while len(cache) > self.cache_size:
                cache.popitem(last=False)
        return np.stack([have[s] for s in sentences])

    @staticmethod
    def _with_memory(text: str, memories: Sequence[ScoredFact], chunks: Sequence[KnowledgeChunk]) -> str:
        """Weave at most one recalled preference in, without naming where it came from."""
        line = memory_sentence(memories)
        return f"{text} {line}" if line else text


_PREFERE = re.compile(r"^(?:prefere|gosta de|costuma pedir)\s+(.+?)\.?$", re.IGNORECASE)


def memory_sentence(memories: Sequence[ScoredFact], min_similarity: float = 0.0) -> str:
    """One natural sentence from the best recalled preference, or ``""``.

    Only ``preferencia`` facts phrased "Prefere X"/"Gosta de X" qualify, never
    one holding a price or a forbidden word: a reply must not leak amounts the
    knowledge base does not state, nor say where the detail came from.
    """
    for m in memories:
        f = m.fact
        if fold(f.memory_type) != "preferencia" or m.similarity < min_similarity:
            continue
        content = " ".join(f.content.split())
        if "R$" in content or any(w in fold(content) for w in ("memoria", "registro")):
            continue
        what = _preferred(content)
        if what:
            return f"Se quiser, já confiro a disponibilidade de {what} pra você."
    return ""


def _preferred(content: str) -> str:
    """"Prefere suíte Master; não quer mais a Hidro" → "suíte Master"."""
    match = _PREFERE.match(" ".join(content.split()))
    if not match:
        return ""
    return re.split(r"[;(]| mas | e não ", match.group(1))[0].strip().rstrip(".,")


def preference_hint(memories: Sequence[ScoredFact]) -> str:
    """What the best recalled preference is about, for sentence selection."""
    for m in memories:
        if fold(m.fact.memory_type) == "preferencia":
            what = _preferred(m.fact.content)
            if what:
                return what
    return ""


# ---------------------------------------------------------- OpenAI-compatible
def _retryable(exc: BaseException) -> bool:
    import openai

    if isinstance(exc, openai.APITimeoutError):
        return False  # the same request would time out again: the reply degrades instead
    if isinstance(exc, (openai.APIConnectionError, openai.RateLimitError, openai.InternalServerError)):
        return True
    return isinstance(exc, openai.APIStatusError) and exc.status_code >= 500


class OpenAIChatGenerator:
    """Any OpenAI-compatible ``/chat/completions`` endpoint (OpenAI, vLLM, Ollama...).

    The client's own retries are off; tenacity retries connection errors,
    429 and 5xx ``max_retries`` times with jittered backoff; 4xx and timeouts fail
    at once (the same request would only time out again). Per-inbox ``model``/``temperature`` in the request win over the
    defaults given here.
    """

    name = "openai"

    def __init__(self, model: str, *, base_url: str | None = None, api_key: str | None = None,
                 temperature: float = 0.7, timeout: float = 120.0, max_retries: int = 3,
                 max_tokens: int = 300, backoff_max: float = 4.0):
        from openai import OpenAI

        self.model = model
        self.temperature = temperature
        self.max_tokens = max_tokens
        self.max_retries = max_retries
        self.backoff_max = backoff_max
        self._client = OpenAI(base_url=base_url, api_key=api_key or "not-needed",
                              timeout=timeout, max_retries=0)

    def generate(self, request: ReplyRequest) -> Generation:
        model = request.model or self.model
        temperature = self.temperature if request.temperature is None else request.temperature
        retrying = Retrying(stop=stop_after_attempt(self.max_retries + 1),
                            wait=wait_exponential_jitter(multiplier=0.2, max=self.backoff_max),
                            retry=retry_if_exception(_retryable), reraise=True)
        for attempt in retrying:
            with attempt:
                resp = self._client.chat.completions.create(
                    model=model, messages=request.messages, temperature=temperature,
                    max_tokens=self.max_tokens)
        text = (resp.choices[0].message.content or "").strip() if resp.choices else ""
        u = resp.usage
        usage = Usage(prompt_tokens=getattr(u, "prompt_tokens", 0) or 0,
                      completion_tokens=getattr(u, "completion_tokens", 0) or 0)
        return Generation(text=text, usage=usage, model=resp.model or model, provider="openai")

