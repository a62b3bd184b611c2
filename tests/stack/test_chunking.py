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
