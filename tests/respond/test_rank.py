import json

import typer
from typer.testing import CliRunner

from streams.respond.evaluate_recall import recall_at_k
from streams.respond.rank import rank_cases, register
from tests.respond.fakes import BagOfWordsEmbedder

CASES = [
    {"case_id": "a", "query": "posso levar o cachorro", "relevant": [1],
     "contact_facts": [{"memory_type": "preferencia", "content": "Prefere suíte Master"},
                       {"memory_type": "contexto_pessoal", "content": "Viaja com o cachorro Thor"},
                       {"memory_type": "restricao", "content": "Alérgico a camarão"},
                       {"memory_type": "restricao", "content": "Não bebe álcool"},
                       {"memory_type": "vinculo_social", "content": "Casado com Ana"},
                       {"memory_type": "vinculo_social", "content": "Tem dois filhos"}]},
    {"case_id": "b", "query": "reservar a suíte hoje", "relevant": [], "contact_facts": [
        {"memory_type": "preferencia", "content": "Prefere suíte Master"}]},
]


def test_rank_cases_top5_and_metric():
    rows = rank_cases(CASES, BagOfWordsEmbedder())
    assert rows[0]["case_id"] == "a" and rows[0]["top"][0] == 1 and len(rows[0]["top"]) == 5
    r, empty_ok, n = recall_at_k(CASES, [row["top"] for row in rows])
    assert r == 1.0 and n == 1 and empty_ok == 0.0
    assert recall_at_k(CASES, [[0, 2], []]) == (0.0, 1.0, 1)


def test_rank_command_prints_one_json_line_per_case(tmp_path, monkeypatch):
    f = tmp_path / "cases.jsonl"
    f.write_text("\n".join(json.dumps(c, ensure_ascii=False) for c in CASES), encoding="utf-8")
    monkeypatch.setattr("streams.respond.rank.build_configured_embedder", lambda p=None, m=None: BagOfWordsEmbedder())
    app = typer.Typer()

    @app.callback()
    def _cb():
        pass

    register(app)
    res = CliRunner().invoke(app, ["rank", str(f), "--provider", "use"])
    assert res.exit_code == 0, res.output
    lines = [json.loads(l) for l in res.output.splitlines()]
    assert [l["case_id"] for l in lines] == ["a", "b"] and lines[0]["top"][0] == 1 and lines[1]["top"] == [0]


def test_word_evidence_names_roles_and_linked_people():
    from streams.respond.recall import word_evidence

    facts = ["Casado com a Renata", "Renata não come glúten", "Tem um husky chamado Loki",
             "Paga no cartão", "O sócio Paulo prefere vinho"]
    ev = word_evidence("a patroa vem comigo hj, tem opção pra ela?", facts)
    assert ev[0] > 0 and ev[1] > 0  # the spouse fact, and the fact naming the spouse
    assert ev[2] == ev[3] == ev[4] == 0
    ev = word_evidence("vou levar o Paulo", facts)
    assert ev[4] > 0 and max(ev[:4]) == 0
    ev = word_evidence("o lobão precisa de banho", facts)  # a pet word → the pet fact
    assert ev[2] > 0


def test_recall_ranking_on_dev_cases(use_embedder):
    from streams.learn.fixtures import FIXTURES_DIR
    from streams.respond.evaluate_recall import recall_metrics

    m = recall_metrics(FIXTURES_DIR, use_embedder)
    print(f"dev recall: {m}")
    assert m["recall@5"] >= 0.95 and m["recall@3"] >= 0.85


def test_speaking_as_a_couple_points_to_the_partner_and_a_species_to_its_pets():
    from streams.respond.recall import speaks_as_couple, word_evidence

    facts = ["Casada com o Diego", "Diego não bebe álcool", "Tem um gato persa chamado Sushi",
             "Tem uma cadela chamada Pipoca", "A Pipoca tem medo de secador", "Paga no Pix"]
    ev = word_evidence("quero comemorar nossa data em março", facts)
    assert ev[0] > 0 and ev[1] > 0 and ev[5] == 0
    assert speaks_as_couple("25 anos juntos, a gente quer uma suíte") and speaks_as_couple("pra gente")
    assert not speaks_as_couple("nossa, tá caro") and not speaks_as_couple("tem gente aí?")
    ev = word_evidence("hora do banho da minha cachorrinha", facts)
    assert ev[3] > 0 and ev[4] > 0 and ev[2] == 0  # the dog and what names her, not the cat
    ev = word_evidence("a bichana tá doente", facts)
    assert ev[2] > 0 and ev[3] == ev[4] == 0
