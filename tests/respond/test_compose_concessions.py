"""An objection to a price names the amount; after the line priced at it, the reply offers what concedes
on that price: instalments where the business allows them for that amount and period, the same kind of item
for less, a deal that covers it. A coworking space and a vet, not the sample motel: the reading is by the
lines' shape, not by their words."""

from uuid import uuid4

from streams.respond.compose import (
    applies_to_label,
    cheaper_alternative,
    instalments_apply,
    label_of,
    labelled_prices,
    offers_instalments,
    units_of_chunks,
)
from streams.respond.generate import CHEAPER_LEAD, OfflineComposer
from streams.respond.model import KnowledgeChunk, ReplyRequest
from tests.respond.fakes import WordIndex, chunk, inbound, run_steps

ROOMS = """# Salas e preços

- **Sala Ipê**: 8 lugares, TV e quadro branco. Hora: R$ 60,00 · Turno: R$ 200,00 · Diária: R$ 350,00.
- **Sala Jatobá**: 4 lugares. Hora: R$ 35,00 · Turno: R$ 120,00 · Diária: R$ 210,00.
- **Auditório Cedro**: 40 lugares, som e projetor. Hora: R$ 180,00 · Turno: R$ 600,00 · Diária: R$ 1.100,00."""

PAYING = """# Pagamento

**Parcelamento**: a diária pode ser parcelada em até 4x sem juros no cartão. Hora e turno são cobrados à vista.

**Manhã Livre**: 15% de desconto nos turnos da manhã, de segunda a sexta."""

VET = """# Cirurgias
- Castração de gato macho: R$ 380,00
- Castração de cadela até 15 kg: R$ 790,00

Formas de pagamento: Pix, dinheiro e cartão. Parcelamento em até 3x sem juros no cartão de crédito, para valores acima de R$ 300,00.

O tutor pode trazer a ração; se não trouxer, servimos ração premium sem custo."""


def ask(message, *texts):
    chunks = [KnowledgeChunk(uuid4(), uuid4(), 0.3, t) for t in texts]
    req = ReplyRequest(messages=[], message=message, intent="objection", retrieval="optional", chunks=tuple(chunks))
    return OfflineComposer().generate(req).text


def test_a_price_line_is_read_as_labelled_amounts():
    ipe = "Sala Ipê: 8 lugares, TV e quadro branco. Hora: R$ 60,00 · Turno: R$ 200,00 · Diária: R$ 350,00."
    assert labelled_prices(ipe) == [("hora", 60.0), ("turno", 200.0), ("diaria", 350.0)]
    assert label_of(ipe, 350.0) == "diaria" and label_of(ipe, 99.0) == ""
    assert label_of("Castração de gato macho: R$ 380,00", 380.0) == ""   # one price: no label to tell apart
    assert labelled_prices("Auditório: Diária: R$ 1.100,00 · Hora: R$ 180,00") == [("diaria", 1100.0), ("hora", 180.0)]


def test_instalments_cover_the_amount_and_the_period_they_name():
    rule = "Parcelamento: a diária pode ser parcelada em até 4x sem juros no cartão."
    assert offers_instalments(rule) and not offers_instalments("Não parcelamos serviços em 2x nem 3x.")
    assert instalments_apply(rule, 350.0, "diaria", ["hora", "turno", "diaria"])
    assert not instalments_apply(rule, 200.0, "turno", ["hora", "turno", "diaria"])   # only the diária
    over = "Parcelamento em até 3x sem juros no cartão de crédito, para valores acima de R$ 300,00."
    assert instalments_apply(over, 790.0, "", []) and not instalments_apply(over, 160.0, "", [])
    assert applies_to_label("Manhã Livre: 15% de desconto nos turnos da manhã.", "turno", ["hora", "turno", "diaria"])
    assert not applies_to_label("Manhã Livre: 15% de desconto nos turnos da manhã.", "diaria",
                                ["hora", "turno", "diaria"])


def test_the_cheaper_item_is_one_of_the_same_kind_priced_under_the_same_labels():
    units = units_of_chunks([ROOMS])
    ipe = next(u for u in units if "Ipê" in u.text)
    cheaper = cheaper_alternative(ipe, 350.0, units)
    assert cheaper is not None and "Jatobá" in cheaper.text
    jatoba = next(u for u in units if "Jatobá" in u.text)
    assert cheaper_alternative(jatoba, 210.0, units) is None           # nothing of its kind costs less
    vet = units_of_chunks([VET])
    female = next(u for u in vet if "cadela" in u.text)
    assert cheaper_alternative(female, 790.0, vet) is None             # a male cat is no alternative


def test_an_objection_gets_the_price_then_instalments_then_the_same_kind_for_less():
    reply = ask("350 a diaria da ipê?? ta puxado hein", ROOMS, PAYING)
    assert reply.startswith("Entendo! ") and "R$ 350,00" in reply
    assert "4x sem juros" in reply
    assert f"{CHEAPER_LEAD} Sala Jatobá" in reply
    assert "Manhã Livre" not in reply                                  # a deal on the turnos, not the diária
    turno = ask("200 o turno na ipê? caro", ROOMS, PAYING)
    assert "4x sem juros" not in turno and "Manhã Livre" in turno and "Sala Jatobá" in turno
    vet = ask("790 pra castrar a cadela?? achei caro", VET)
    assert "R$ 790,00" in vet and "3x sem juros" in vet
    assert "ração premium" not in vet and CHEAPER_LEAD not in vet      # "sem custo" on food concedes nothing here


def test_an_objection_brings_the_instalments_and_the_cheaper_item_found_by_their_words():
    from streams.respond.handler import _concession_steps

    ipe = chunk("- **Sala Ipê**: 8 lugares. Hora: R$ 60,00 · Turno: R$ 200,00 · Diária: R$ 350,00.", 1.0)
    jatoba = chunk("- **Sala Jatobá**: 4 lugares. Hora: R$ 35,00 · Turno: R$ 120,00 · Diária: R$ 210,00.", 1.0)
    paying = chunk("**Parcelamento**: a diária pode ser parcelada em até 4x sem juros no cartão.", 1.0)
    lexical = WordIndex({"parcel": [paying], "diari": [chunk("Diária encerrada às 22h."), ipe, jatoba]})

    def conceded(text, chunks):
        return run_steps(_concession_steps(inbound(text), chunks, lexical))

    assert conceded("350 a diaria da ipê?? ta puxado", [ipe]) == [paying, jatoba]
    assert lexical.asked == [["parcel"], ["diari"]]
    assert conceded("350 a diaria da ipê?? ta puxado", [ipe, paying, jatoba]) == []   # there already ...
    assert lexical.asked[2:] == [["diari"]]                                   # ... the instalments not searched again
    assert conceded("ta caro hein", [ipe]) == [] and len(lexical.asked) == 3   # no amount named: no search


def test_the_line_priced_at_the_amount_objected_to_is_found_by_the_amount():
    """"na pizzaria do lado a grande sai 45, ai ta 58?? caro": the vector brings the deals; the line priced at 58
    is found by the amount itself and comes first (then what concedes on it)."""
    from streams.respond.handler import _concession_steps

    deal = chunk("- **Terça em Dobro**: a segunda grande tradicional sai pela metade do preço.", 1.0)
    sizes = chunk("## Tradicionais\n- Média: R$ 46,00\n- Grande: R$ 58,00", 1.0)
    lexical = WordIndex({"58": [sizes], "45": [chunk("Pedido mínimo: R$ 45,00 para entrega.", 1.0)]})
    message = "na pizzaria do lado a grande sai 45 reais, ai ta 58?? caro hein"
    got = run_steps(_concession_steps(inbound(message), [deal], lexical))
    # (stop 42: the 45 is the other pizzeria's price, told of it: not searched among ours)
    assert sizes in got and ["45"] not in lexical.asked and ["58"] in lexical.asked
    assert "R$ 58,00" in ask(message, deal.text, *[c.text for c in got])


PARTIES = """# Pacotes de festa
- **Pacote Festa Simples** — R$ 300,00: salão por 3 horas, mesas e cadeiras.
- **Pacote Festa Completa** — R$ 650,00: tudo do Festa Simples, mais buffet de salgados e bolo.
- **Pacote Festa Neon** — R$ 900,00: tudo do Festa Completa, mais luz negra, DJ e pulseiras neon."""


def test_an_objection_naming_an_item_by_its_name_gets_its_price_and_the_same_kind_for_less():
    """Stop 43 (probe_ba, probe_bb): "vou pensar, achei salgado o pacote do pedido de casamento" names no amount
    but the item by its proper name: its one price is the price objected to, and the cheapest item of its kind
    with one price and a proper name is the cheaper way; a line for another animal is no such item."""
    reply = ask("vou pensar, achei salgado o pacote festa neon", PARTIES)
    assert reply.startswith("Entendo! ") and "Pacote Festa Neon — R$ 900,00" in reply   # (after the line it points back to)
    assert f"{CHEAPER_LEAD} Pacote Festa Simples" in reply
    cheapest = ask("achei caro o pacote festa simples", PARTIES)
    assert cheapest.startswith("Entendo! Pacote Festa Simples") and CHEAPER_LEAD not in cheapest
    units = units_of_chunks([PARTIES])
    completa = next(u for u in units if "Completa" in u.text)
    assert "Festa Simples" in cheaper_alternative(completa, 650.0, units).text
    vet = units_of_chunks([VET])
    assert cheaper_alternative(next(u for u in vet if "cadela" in u.text), 790.0, vet) is None


def test_the_line_of_an_item_named_in_an_objection_is_found_by_its_words_standing_together():
    """Stop 43: the line of the item named without an amount is searched by the message's pairs of words (not the
    words that made it an objection: "caro", "vou pensar"), then the cheaper items by the kind ("pacot")."""
    from streams.respond.handler import _concession_steps

    intro = chunk("# Pacotes de festa\nMontamos a festa neon ou a festa simples no salão.", 1.0)
    neon = chunk("- **Pacote Festa Neon** — R$ 900,00: luz negra, DJ e pulseiras neon.", 1.0)
    simples = chunk("- **Pacote Festa Simples** — R$ 300,00: salão por 3 horas.", 1.0)
    lexical = WordIndex({"pacot": [neon, simples], "festa": [intro, neon]})
    got = run_steps(_concession_steps(inbound("vou pensar, achei caro o pacote festa neon"), [intro], lexical))
    assert got == [neon, simples]
    assert ["pacot", "festa"] in lexical.asked and not any("pens" in s or "car" in s for s in lexical.asked)
    asked = len(lexical.asked)
    assert run_steps(_concession_steps(inbound("ta caro hein"), [intro], lexical)) == []
    assert len(lexical.asked) == asked            # nothing but the objection's words: nothing searched


BAKERY_DELIVERY = """# Entregas

Entregamos em até 8 km da loja.

Frete:
- até 4 km: R$ 7,00
- de 4 km a 8 km: R$ 12,00

Pedido mínimo para entrega: R$ 50,00, sem contar o frete e a taxa.

Retirada na loja: o cliente ganha 10% de desconto no pedido."""


def test_an_objection_to_the_delivery_fee_without_an_amount_gets_the_fees_then_fetching_the_order():
    """"a taxa de entrega ta salgada": no amount named, the fee is what is objected to (stop 47: two tuning
    writers); the reply quotes the fee's own lines with their heading (not the minimum-order line that only
    mentions the fee) and then the discount for fetching the order, introduced as the cheaper way."""
    reply = ask("hmm vou pensar, o frete de vcs ta salgado", BAKERY_DELIVERY)
    assert "Frete: até 4 km: R$ 7,00" in reply and "Frete: de 4 km a 8 km: R$ 12,00" in reply
    assert f"{CHEAPER_LEAD} Retirada na loja" in reply and "Pedido mínimo" not in reply
    # no pick-up deal: nothing to concede, the objection is answered as before
    assert CHEAPER_LEAD not in ask("hmm vou pensar, o frete de vcs ta salgado", BAKERY_DELIVERY.rsplit("\n\n", 1)[0])
