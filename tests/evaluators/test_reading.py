"""Reading LLM answers as people do: structure, preambles and hedges are not claims (issue 25)."""

from __future__ import annotations

import json
import math

import pytest

from ragsieve.evaluators.judges import build_judges, get_judge
from ragsieve.evaluators.judges.offline import faithfulness
from ragsieve.evaluators.judges.offline.claims import parse_answer
from ragsieve.evaluators.judges.offline.support_model import (
    FEATURES,
    MODEL_FILE,
    parse_model,
    shipped_model,
)
from ragsieve.evaluators.judges.offline.text.reading import (
    is_hedge,
    is_meta,
    read_answer,
    strip_source,
)
from ragsieve.evaluators.records import EvalResult
from ragsieve.evaluators.testing import make_interaction


async def judge(name: str, **kw: object) -> EvalResult:
    [r] = await get_judge(name).evaluate(make_interaction(**kw))  # type: ignore[arg-type]
    return r


CTX = (
    "A water pik shoots a strong stream of water at the gum line to eliminate germs and plaque. "
    "It can massage and stimulate soft tissue in the mouth, which reduces the risk of gingivitis.",
)
LIST_ANSWER = (
    "Sure! Based on the given passages, the benefits of a water pik include:\n\n"
    "1. Eliminating germs and plaque at the gum line [1].\n"
    "2. Massaging soft tissue in the mouth (Passage 1).\n"
    "3. Reducing the risk of gingivitis.\n\n"
    "I hope this helps!"
)


def test_list_items_are_claims_and_inherit_their_lead_in() -> None:
    read = read_answer(LIST_ANSWER)
    texts = [s.text for s in read.statements]
    assert texts == [
        "Eliminating germs and plaque at the gum line.",
        "Massaging soft tissue in the mouth.",
        "Reducing the risk of gingivitis.",
    ]
    assert {s.lead_in for s in read.statements} == {
        "Based on the given passages, the benefits of a water pik include"
    }
    whys = [why for _, why in read.set_aside]
    assert whys == ["about the answer", "lead-in of a list", "about the answer"]


def test_headings_steps_and_markers_are_structure() -> None:
    answer = (
        "**Symptoms:**\n- Fever and a dry cough.\nStep 2: Rest for two days.\n"
        "Next, drink water. Additionally, the passages do not mention the dose."
    )
    parsed = parse_answer(answer)
    assert parsed.claims == ["Fever and a dry cough.", "Rest for two days.", "Drink water."]
    assert parsed.lead_ins[0] == "Symptoms"
    assert ("Symptoms:", "heading") in parsed.set_aside
    assert parsed.abstentions == ["The passages do not mention the dose."]


@pytest.mark.parametrize(
    "sentence",
    [
        "The passages do not mention the temperature at which to cook the ribs",
        "None of the passages explicitly state what the drawer is for.",
        "No se menciona cuál es la telenovela más larga en los pasajes proporcionados.",
        "It is difficult to say what the drawer is for without more context.",
        "No se proporciona información sobre la cantidad de semillas por año.",
        "No information is given on the dose.",
        "No hay un personaje más recordado mencionado en los pasajes.",
        "There is no single inventor mentioned in the passages.",
    ],
)
def test_hedges_about_the_context_are_recognised(sentence: str) -> None:
    assert is_hedge(sentence)


@pytest.mark.parametrize(
    "sentence",
    [
        "The passages describe three ways to peel potatoes.",  # a meta statement, not a hedge
        "The drawer does not mention a warming function.",  # a claim about the drawer
        "Mold does not grow on hard cheese quickly.",
        "No hay citas los sábados.",  # what does not exist is a claim like any other
        "There are no fees for residents over 65.",
        "No data is provided to third parties.",
        "There is no fee for the renewal mentioned in your letter.",
    ],
)
def test_claims_are_not_hedges(sentence: str) -> None:
    assert not is_hedge(sentence)


def test_preambles_courtesy_and_advice_are_meta_and_facts_are_not() -> None:
    for s in ("Sure!", "Here is a brief answer to the question:", "I hope this helps!",
              "It's recommended to consult a doctor.", "Espero que esto te ayude.",
              "You're welcome!", "My pleasure.", "¡Con gusto!"):  # fmt: skip
        assert is_meta(s), s
    for s in ("Here the river floods every spring.", "Consultants earn more in Zurich.",
              "You are welcome to bring a guest."):  # fmt: skip
        assert not is_meta(s), s


def test_source_references_are_not_part_of_the_claim() -> None:
    assert strip_source("Passage 2 states that nine amino acids are essential.") == (
        "Nine amino acids are essential."
    )
    assert strip_source("Passage 3: 8 hours on low heat.") == "8 hours on low heat."
    assert strip_source('The answer to the question "Do you lose weight?" is: No, you do not.') == (
        "No, you do not."
    )


def test_a_hedge_after_but_is_split_from_the_claim_it_follows() -> None:
    parsed = parse_answer("The passages do not mention the dose, but 350 mg is suggested.")
    assert parsed.claims == ["350 mg is suggested."]
    assert parsed.abstentions == ["The passages do not mention the dose"]


async def test_a_supported_list_answer_is_faithful_and_numbers_of_steps_are_not_values() -> None:
    r = await judge(
        "faithfulness", query="benefits of a water pik", context=CTX, answer=LIST_ANSWER
    )
    assert r.label == "faithful", r.explanation
    assert all("is not in the context" not in c["reason"] for c in r.metadata["claims"])
    assert len(r.metadata["claims"]) == 3


async def test_an_added_list_item_is_caught() -> None:
    answer = LIST_ANSWER.replace(
        "3. Reducing the risk of gingivitis.",
        "3. Whitening teeth by 4 shades within 10 days, as dentists in Sweden recommend.",
    )
    r = await judge("faithfulness", query="benefits of a water pik", context=CTX, answer=answer)
    assert r.label == "unfaithful"
    assert "is not in the context" in r.explanation


async def test_the_explanation_names_what_decided_the_label() -> None:
    for answer, label in [
        ("A water pik reduces the risk of gingivitis.", "faithful"),
        ("A water pik was invented in 1962 by a dentist in Colorado.", "unfaithful"),
    ]:
        r = await judge("faithfulness", query="What is a water pik?", context=CTX, answer=answer)
        assert r.label == label
        assert r.explanation.startswith(f"{label} ({r.score:.2f} ")
        assert ("<" in r.explanation.split(":")[0]) == (label == "unfaithful")


async def test_an_answer_that_only_frames_states_nothing_to_check() -> None:
    r = await judge(
        "faithfulness",
        query="How do I change the sleep time?",
        context=CTX,
        answer="Passage 1 provides the necessary information on how to change the sleep time.",
    )
    assert r.label == "skipped" and "states nothing to check" in r.explanation


async def test_uncertain_lies_just_above_the_threshold() -> None:
    [j] = build_judges(["faithfulness"])
    width = shipped_model().uncertain_width
    assert width > 0
    assert j.label(j.threshold - 0.01) == "unfaithful"
    assert j.label(j.threshold) == "uncertain"
    assert j.label(j.threshold + width - 0.001) == "uncertain"
    assert j.label(j.threshold + width) == "faithful"


def test_the_shipped_model_says_what_it_was_fitted_on_and_refuses_non_finite_numbers() -> None:
    data = json.loads(MODEL_FILE.read_text(encoding="utf-8"))
    assert data["fitted_on"] and all(("MIT" in s or "Apache-2.0" in s) for s in data["fitted_on"])
    assert set(data["coef"]) == set(FEATURES)
    bad = {**data, "coef": {**data["coef"], "min": math.nan}}
    with pytest.raises(ValueError, match="finite"):
        parse_model(bad)
    with pytest.raises(ValueError, match="not a faithfulness model"):
        parse_model({k: v for k, v in data.items() if k != "intercept"})


async def test_a_repeat_of_an_earlier_turn_is_said_so_and_a_new_fact_is_not_excused() -> None:
    """Issue 27: a follow-up's answer may repeat what an earlier assistant turn said; the
    evidence says so. History never supports a new fact."""
    from ragsieve.evaluators.records import Message

    history = (
        Message(role="user", content="Who sells the water pik?"),
        Message(role="assistant", content="Waterpik water flossers are sold by Church & Dwight."),
        Message(role="user", content="Does it help against gingivitis?"),
    )
    q = "Does it help against gingivitis?"
    repeat = (
        "Yes. It reduces the risk of gingivitis. Waterpik flossers are sold by Church & Dwight."
    )
    r = await judge("faithfulness", query=q, context=CTX, answer=repeat, chat_history=history)
    from_turns = [c for c in r.metadata["claims"] if c.get("from_conversation")]
    assert len(from_turns) == 1 and "earlier turn" in from_turns[0]["reason"]
    assert r.label != "unfaithful", r.explanation
    new_fact = "Yes. It reduces the risk of gingivitis. Waterpik flossers cost 89 dollars."
    r2 = await judge("faithfulness", query=q, context=CTX, answer=new_fact, chat_history=history)
    assert not [c for c in r2.metadata["claims"] if c.get("from_conversation")]
    assert r2.label == "unfaithful"


async def test_a_question_back_asserts_nothing_and_an_acronym_matches_its_long_form() -> None:
    """Agents ask back ("Would you like to know about the US rules?") and write "US" where the
    page says "United States": neither is an unsupported claim (Doc2Dial, INSCIT, RAGTruth)."""
    ctx = ("Students who are not citizens of the United States cannot receive federal aid.",)
    q = "Can I get federal aid?"
    r = await judge(
        "faithfulness",
        query=q,
        context=ctx,
        answer="Not if you are not a US citizen. Would you like to know about the Dream Act?",
    )
    assert r.label == "faithful", r.explanation
    assert [c["claim"] for c in r.metadata["claims"]] == ["Not if you are not a US citizen."]
    made_up = await judge(
        "faithfulness", query=q, context=ctx, answer="Not if you are not an EU citizen."
    )
    assert made_up.metadata["claims"][0]["names_missing"] is True


def test_an_apology_before_a_decline_is_courtesy_and_the_answer_abstains() -> None:
    for answer in (
        "Lo siento, pero los documentos proporcionados no contienen esa información.",
        "Sorry, but the passages do not say when the office opens.",
    ):
        parsed = parse_answer(answer)
        assert parsed.abstained and parsed.claims == [], answer
    # every declining phrase is set apart, not only the first; facts beside them stay facts
    declined = parse_answer(
        "I'm sorry, our policy documents don't say anything about a discount for burglar alarms,"
        " so I can't tell you.",
        "Do you give a discount if I install a burglar alarm?",
    )
    assert declined.abstained and declined.claims == [], declined
    for stated, asked in (
        ("I'm not sure and I cannot say for certain: the Pro plan costs 30 EUR.", "Pro price?"),
        ("Lo siento, no lo sé, no puedo confirmar: el plan Pro cuesta 30 EUR.", "¿Precio?"),
    ):  # a value beside several declining phrases is stated, not declined
        assert parse_answer(stated, asked).claims, stated
    stated = "I'm sorry, I can't tell you; the Basic policy costs 20 EUR a month and covers fire."
    assert parse_answer(stated).claims


BENEFITS_PAGE = (
    "To apply for retirement benefits you need your Social Security number and the details of"
    " the bank account for direct deposit. Your local area office replaces a lost card at no"
    " price. Find the form online.",
)
APPLY = "To apply for retirement benefits you need your Social Security number."


@pytest.mark.parametrize(
    "added",
    [
        "Keep reading to see whether you might qualify.",
        "Then we will send you a letter to say what we decided.",
    ],
)
async def test_a_sentence_added_from_elsewhere_is_caught_though_no_rare_word_is_missing(
    added: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    kw = {
        "query": "What do I need to apply?",
        "context": BENEFITS_PAGE,
        "answer": f"{APPLY} {added}",
    }
    r = await judge("faithfulness", **kw)
    assert r.label == "unfaithful", r.explanation
    [near] = [c for c in r.metadata["claims"] if c.get("nothing_near")]
    assert near["claim"] == added
    assert "nothing in the context comes near it" in r.explanation
    # without the rule the model still weighs it: a reply of two claims stands on each of them
    monkeypatch.setattr(faithfulness, "NOTHING_NEAR", 0.0)
    alone = await judge("faithfulness", **kw)
    assert not any(c.get("nothing_near") for c in alone.metadata["claims"])
    assert alone.metadata["features"]["short_gap"] > 0.5


@pytest.mark.parametrize(
    "framing",
    [
        "The exact fee is not mentioned in the given passages.",  # about the passages
        "Retirement accounts serve several purposes for older workers.",  # a general framing
        "You can check the opening hours by calling your local area office.",  # sent elsewhere
        "Sure no problem, I can help you with your retirement plans today.",  # courtesy
    ],
)
async def test_framing_courtesy_and_referrals_are_not_claims_with_nothing_near(
    framing: str,
) -> None:
    r = await judge(
        "faithfulness",
        query="What do I need to apply?",
        context=BENEFITS_PAGE,
        answer=f"{APPLY} {framing}",
    )
    assert not any(c.get("nothing_near") for c in r.metadata["claims"]), r.metadata["claims"]
