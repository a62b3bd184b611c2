import pytest

from streams.learn.model import CandidateFact, Message, Transcript
from streams.learn.validate import normalise_key, validate


def transcript(*messages: tuple[str, str]) -> Transcript:
    return Transcript(
        conversation_id="t-1", account_id=1, contact_id=2, unit_id=3, inbox_id=4,
        messages=[Message(role=r, text=t) for r, t in messages],
    )


CONV = transcript(
    ("contact", "Oi! Sou alérgica a  camarão, tá?"),
    ("agent", "Anotado, você prefere a suíte Master?"),
    ("contact", "Prefiro sempre a Master."),
)


def fact(**kw) -> CandidateFact:
    base = dict(memory_type="restricao", memory_key="allergy", content="Alérgica a camarão",
                normalized_value="camarao", evidence="Sou alérgica a camarão", confidence=0.9)
    base.update(kw)
    return CandidateFact(**base)


def reasons(discarded):
    return [d.reason for d in discarded]


def test_evidence_is_matched_up_to_whitespace_and_case_and_replaced_by_the_original_text():
    kept, discarded = validate([fact(evidence="sou ALÉRGICA a camarão")], CONV)
    assert discarded == []
    assert kept[0].evidence == "Sou alérgica a  camarão"
    assert kept[0].scope == "global"


def test_hallucinated_evidence_is_rejected():
    kept, discarded = validate([fact(evidence="tenho 100% de desconto")], CONV)
    assert kept == [] and reasons(discarded) == ["evidence_not_found"]


LONG = transcript(
    ("contact", "Boa noite!! Eu e o boy sempre ficamos na Safira pq tem sauna, e ele é alérgico a camarão."),
    ("agent", "Anotado! A Safira tem sauna sim."),
    ("contact", "Minha esposa curte mto vinho rosé 🍷"),
)


@pytest.mark.parametrize("evidence, original", [
    ("sou alergica a camarao", "Sou alérgica a  camarão"),                        # accents dropped
    ("“Sou alérgica a camarão.”", "Sou alérgica a  camarão"),                    # curly quotes, final stop
    ('"sou alérgica a camarão, tá?"', "Sou alérgica a  camarão, tá?"),            # straight quotes kept inside
    ("Sou alérgica a camarão,   TÁ?", "Sou alérgica a  camarão, tá?"),
    ("eu e o boy sempre ficamos na Safira ... tem sauna",                         # two verbatim spans
     "Eu e o boy sempre ficamos na Safira pq tem sauna"),
    ("Eu e o boy sempre… ele é alérgico a camarão",
     "Eu e o boy sempre ficamos na Safira pq tem sauna, e ele é alérgico a camarão"),
    ("minha esposa curte mto vinho rose", "Minha esposa curte mto vinho rosé"),
])
def test_evidence_tolerates_what_models_do_and_keeps_the_customers_original_text(evidence, original):
    conv = transcript(*[(m.role, m.text) for m in CONV.messages + LONG.messages])
    kept, discarded = validate([fact(evidence=evidence)], conv)
    assert discarded == [], evidence
    assert kept[0].evidence == original


@pytest.mark.parametrize("evidence", [
    "sou alérgica a camarões",                            # a word the customer did not write
    "Sou alérgica a camar",                               # a cut word
    "eu e o namorado sempre ficamos na Safira",           # a paraphrase of slang
    "tem sauna ... eu e o boy sempre",                    # spans out of order
    "Sou alérgica a camarão ... vinho rosé",              # spans from two different messages
    "A Safira tem sauna sim",                             # the agent's words
    "minha esposa curte muito vinho rosé",                # spelling repaired by the model
    "...",
])
def test_evidence_the_customer_did_not_write_is_still_rejected(evidence):
    conv = transcript(*[(m.role, m.text) for m in CONV.messages + LONG.messages])
    kept, discarded = validate([fact(evidence=evidence)], conv)
    assert kept == [] and reasons(discarded) == ["evidence_not_found"], evidence


def test_agent_message_evidence_is_rejected():
    kept, discarded = validate(
        [fact(memory_type="preferencia", memory_key="preferred_room", evidence="você prefere a suíte Master")], CONV
    )
    assert kept == [] and reasons(discarded) == ["evidence_not_found"]


def test_confidence_is_clamped_and_low_confidence_discarded():
    kept, discarded = validate([fact(confidence=1.7), fact(memory_key="x", normalized_value="y", content="c2", confidence=0.49)], CONV)
    assert [f.confidence for f in kept] == [1.0]
    assert reasons(discarded) == ["low_confidence"]


def test_unknown_type_rejected_unless_configured():
    cand = fact(memory_type="hobby", memory_key="hobby")
    assert reasons(validate([cand], CONV)[1]) == ["unknown_type"]
    kept, _ = validate([cand], CONV, extra_types=["hobby"])
    assert kept[0].memory_type == "hobby" and kept[0].scope == "global"


def test_at_most_five_facts_highest_confidence_first():
    cands = [
        fact(memory_key=f"k{i}", normalized_value=f"v{i}", content=f"fato {i}", confidence=0.5 + i / 20)
        for i in range(7)
    ]
    kept, discarded = validate(cands, CONV)
    assert [f.memory_key for f in kept] == ["k6", "k5", "k4", "k3", "k2"]
    assert reasons(discarded) == ["over_limit", "over_limit"]


def test_key_normalisation():
    assert normalise_key("Preferred Suite", "preferencia") == "preferred_suite"
    assert normalise_key("preferredSuite", "preferencia") == "preferred_suite"
    assert normalise_key("alérgia-comida", "restricao") == "alergia_comida"
    assert normalise_key(None, "restricao") == "restricao"
    assert normalise_key("!!!", "restricao") is None
    assert normalise_key("123abc", "restricao") is None
    kept, discarded = validate([fact(memory_key="%%%")], CONV)
    assert kept == [] and reasons(discarded) == ["invalid_key"]


def test_content_is_truncated_to_1000_chars_and_empty_content_discarded():
    kept, _ = validate([fact(content="palavra " * 300)], CONV)
    assert len(kept[0].content) <= 1000
    kept, discarded = validate([fact(content="   ")], CONV)
    assert kept == [] and reasons(discarded) == ["empty_content"]


def test_duplicates_keep_the_most_confident():
    kept, discarded = validate([fact(confidence=0.7), fact(confidence=0.95, content="Alergia: camarão")], CONV)
    assert len(kept) == 1 and kept[0].confidence == 0.95
    assert reasons(discarded) == ["duplicate"]


def test_unit_scoped_types():
    kept, _ = validate([fact(memory_type="reclamacao", memory_key="complaint_x", evidence="Prefiro sempre a Master.")], CONV)
    assert kept[0].scope == "unit"
