"""The answer evaluation measures the index the product builds: documents chunked as ingested."""

import numpy as np

from streams.ingest.chunking import chunk_text
from streams.ingest.documents import document_body
from streams.respond.evaluate_answers import build_index

MENU = ("# Cardápio de pizzas\n\nTodas as pizzas salgadas saem nos tamanhos broto, média, grande e família; "
        "a família tem 12 fatias e serve bem quatro pessoas.\n\n"
        + " ".join(f"- **Sabor {n}**: molho, mussarela e cobertura {n}. Broto: R$ {30 + n},00 · Família: "
                   f"R$ {70 + n},00." for n in range(1, 8)))


class _Ones:
    """Only the chunk rows are read here, not their vectors."""

    def embed_passages(self, texts):
        return np.ones((len(texts), 4), dtype=np.float32)


def test_a_document_opening_with_its_title_is_not_given_a_heading_only_chunk():
    doc = {"account_id": 1, "document_id": "menu", "title": "Cardápio de pizzas", "text": MENU}
    idx = build_index(_Ones(), [doc], 300, 120)
    texts = [t for _, _, t in idx.rows]
    assert texts == [c.content for c in chunk_text(document_body(doc["title"], doc["text"]), 300, 120)]
    assert "# Cardápio de pizzas" not in texts              # the title repeated above the text's own heading
    assert texts[0].startswith("# Cardápio de pizzas\n\nTodas")


def test_document_body_adds_the_title_only_where_the_text_has_no_heading():
    assert document_body("Horários", "# Horários\n\nAbrimos às 18h.") == "# Horários\n\nAbrimos às 18h."
    assert document_body("Horários", "Abrimos às 18h.") == "# Horários\n\nAbrimos às 18h."
    assert document_body("", "Abrimos às 18h.") == "Abrimos às 18h."
