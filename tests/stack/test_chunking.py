import re

from streams.ingest.chunking import chunk_text

DOC = """# Preços

Suíte Luxo: pernoite R$ 240. Suíte Hidro: pernoite R$ 310.

Check-in a partir das 14h.

## Regras

Não aceitamos animais. """ + " ".join(f"Frase número {i} sobre regras da casa." for i in range(80))


def test_chunks_are_deterministic_and_bounded():
    a = chunk_text(DOC, size=300, overlap=40)
    b = chunk_text(DOC, size=300, overlap=40)
    assert [c.content for c in a] == [c.content for c in b]
    assert [c.seq for c in a] == list(range(len(a)))
    assert all(len(c.content) <= 300 for c in a)
    assert len(a) > 3
    assert a[0].content.startswith("# Preços")
    # a heading starts a new chunk
    assert any(c.content.startswith("## Regras") for c in a)


def test_overlap_carries_the_previous_tail():
    chunks = chunk_text(DOC, size=300, overlap=60)
    later = [c for c in chunks if "Frase número" in c.content]
    for prev, nxt in zip(later, later[1:]):
        head = nxt.content.split(" Frase número")[0]
        assert head and head in prev.content


def test_editing_one_paragraph_keeps_other_hashes():
    base = "\n\n".join(f"Parágrafo {i}: " + "texto " * 60 for i in range(6))
    edited = base.replace("Parágrafo 3:", "Parágrafo 3 (editado):")
    h1 = [c.content_hash for c in chunk_text(base, 400, 0)]
    h2 = [c.content_hash for c in chunk_text(edited, 400, 0)]
    assert len(h1) == len(h2)
    assert sum(a != b for a, b in zip(h1, h2)) == 1


def test_invalid_parameters():
    import pytest

    with pytest.raises(ValueError):
        chunk_text("x", size=10)
    with pytest.raises(ValueError):
        chunk_text("x", size=100, overlap=60)


TABLE = """# Banho

Valores por porte:

| Porte | Banho | Banho + tosa |
|---|---|---|
| Pequeno (até 10 kg) | R$ 60,00 | R$ 98,00 |
| Médio (de 10,1 a 25 kg) | R$ 78,00 | R$ 120,00 |
| Grande (acima de 25 kg) | R$ 105,00 | R$ 165,00 |

- Hidratação de pelos: R$ 30,00 - Tosa higiênica avulsa: R$ 40,00 - Corte de unhas avulso: R$ 20,00"""


def test_a_long_table_is_cut_between_rows_and_every_piece_keeps_its_header():
    from streams.respond.compose import answer_units

    chunks = chunk_text(TABLE, size=150, overlap=40)
    rows = [c.content for c in chunks if "| R$" in c.content]
    assert len(rows) >= 2  # the table did not fit one chunk
    for r in rows:
        assert r.lstrip().startswith("| Porte | Banho | Banho + tosa |") or "Valores por porte" in r
    units = [u.text for c in chunks for u in answer_units(c.content)]
    assert "Grande (acima de 25 kg) — Banho: R$ 105,00; Banho + tosa: R$ 165,00." in units
    # list items are never cut in half
    assert all(not re.search(r"R\$\s*$", c.content) for c in chunks)


def test_a_list_item_longer_than_the_room_left_by_the_overlap_stays_whole():
    """A list item a little longer than ``size - overlap`` (but within ``size``) is a chunk of its own,
    never cut at words: cut, its end ("… pode ser escolhida).") is a piece the composer cannot quote
    and its start loses what it includes."""
    item = ("- **Kit Festa Completo** — R$ 310,00: tudo do Kit Simples, mais um bolo de dois andares, "
            "docinhos de brigadeiro e beijinho, refrigerantes e painel de balões (o tema do painel pode ser "
            "escolhido na reserva).")
    doc = "# Festas\n\n- **Kit Simples** — R$ 150,00: mesa decorada, toalha e 20 balões.\n" + item + \
        "\n- **Kit Luxo** — R$ 480,00: tudo do Kit Festa Completo, mais fotógrafo por 2 horas."
    assert 180 < len(item) <= 300
    chunks = chunk_text(doc, size=300, overlap=120)
    assert any(item in c.content for c in chunks)
    assert all(len(c.content) <= 300 for c in chunks)
    # past ``size`` a single sentence is still cut at words
    long = "Frase " + "muito " * 80 + "longa."
    assert all(len(c.content) <= 300 for c in chunk_text(long, size=300, overlap=120))
