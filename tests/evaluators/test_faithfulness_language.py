"""Faithfulness reads Spanish as fairly as English (issue 44): an inflected or unaccented word
weighs what its dictionary form weighs; a numbered line that is only a heading heads its items;
a claim with nothing near it is evidence the fitted model weighs, not a verdict on its own."""

from __future__ import annotations

from ragsieve.evaluators.judges import get_judge
from ragsieve.evaluators.judges.offline.support_model import FEATURES, shipped_model
from ragsieve.evaluators.judges.offline.text.reading import read_answer
from ragsieve.evaluators.judges.offline.text.text import lemma_rarity, rarity
from ragsieve.evaluators.testing import make_interaction


def test_inflected_and_unaccented_spanish_words_weigh_as_their_dictionary_form():
    # the encoder's vocabulary holds "menciona" and "población": the folded, inflected forms
    # split into rare pieces and read as rare words (3.0, the cap) though they are common
    for word, lemma in [("mencionan", "mencionar"), ("utilizaban", "utilizar"),
                        ("poblacion", "población"), ("deficientes", "deficiente")]:  # fmt: skip
        assert rarity(word) == 3.0
        assert lemma_rarity(word) == min(rarity(word), rarity(lemma)) < 2.5, word
    # a rare word stays rare, and a word's own form is never read as rarer
    assert lemma_rarity("dinamarca") == rarity("dinamarca") == 3.0
    for word in ("established", "allows", "bank", "quarterly"):
        assert lemma_rarity(word) <= rarity(word)


async def test_a_spanish_paraphrase_of_common_verbs_is_not_flagged():
    context = (
        "Las pelucas se usaban para ocultar la suciedad del pelo y prevenir los piojos y la tiña,"
        " enfermedades frecuentes por la mala higiene de la época en la monarquía inglesa.",
    )
    answer = (
        "Las pelucas de la monarquía inglesa se utilizaban para ocultar la suciedad y prevenir"
        " los piojos y la tiña, enfermedades frecuentes por la mala higiene de la época."
    )
    question = "¿Cómo eran las condiciones higiénicas de las pelucas de la monarquía inglesa?"
    interaction = make_interaction(query=question, context=context, answer=answer)
    [r] = await get_judge("faithfulness").evaluate(interaction)
    assert r.label == "faithful", r.explanation
    # the same answer with a country the context never names is still caught
    wrong = answer.replace("inglesa", "danesa de Dinamarca")
    [w] = await get_judge("faithfulness").evaluate(make_interaction(question, context, wrong))
    assert w.label == "unfaithful", w.explanation


def test_a_numbered_heading_heads_its_items_and_a_step_with_a_value_stays_a_claim():
    read = read_answer(
        "To file:\n\n1. **Forms and Filing Fee**:\n   - Complete the forms.\n\n"
        "2. **Submission**:\n   - Present the forms.\n3. Bake at 200 degrees:\n"
    )
    assert [(s.text, s.lead_in) for s in read.statements][:2] == [
        ("Complete the forms.", "Forms and Filing Fee"),
        ("Present the forms.", "Submission"),
    ]
    assert ("Submission:", "heading") in read.set_aside
    assert "Bake at 200 degrees:" in [s.text for s in read.statements]


async def test_nothing_near_is_weighed_by_the_model_not_decisive():
    assert "nothing_near" in FEATURES
    assert shipped_model().coef["nothing_near"] < 0  # it counts against the answer
    context = ("The Starter plan allows 120 requests per minute.",)
    answer = (
        "The Starter plan allows 120 requests per minute. Retail customers appreciate"
        " reliable throughput during busy seasons of retail shopping."
    )
    r_interaction = make_interaction("How many requests does Starter allow?", context, answer)
    [r] = await get_judge("faithfulness").evaluate(r_interaction)
    assert any(c.get("nothing_near") for c in r.metadata["claims"])
    assert r.metadata["evidence"]["cap"] == 1.0  # no decisive cap from it
    assert r.metadata["features"]["nothing_near"] == 1.0


def test_talk_about_the_answer_and_the_sources_is_not_a_claim():
    from ragsieve.evaluators.judges.offline.claims import parse_answer
    from ragsieve.evaluators.judges.offline.text.reading import is_meta

    for framing in (
        "Passages 1 and 2 provide information on foods that can help raise HDL levels.",
        "The answer to the question can be summarized in 10 steps as mentioned above.",
        "For further assistance, refer to the provided forms and instructions packets.",
        "Ultimately, the choice depends on your financial situation and long-term plans.",
        "These steps should help you address the authorization problem.",
        "Consulting a CPA or lawyer is advisable for precise planning.",
    ):
        assert is_meta(framing), framing
    for claim in ("The price depends on your plan.", "These steps take 5 minutes."):
        assert not is_meta(claim), claim
    parsed = parse_answer(
        "The passages primarily focus on how to cook eggs. It is mentioned that preferred"
        " stocks carry a premium. Some suggest that it may be a warming drawer. The exact fee"
        " is not explicitly mentioned. Fees are not stated in writing.",
        "q",
    )
    assert parsed.claims == [
        "Preferred stocks carry a premium.",
        "It may be a warming drawer.",
        "Fees are not stated in writing.",
    ]


async def test_a_comparison_question_gives_the_answer_its_two():
    context = (
        "A caldera forms when a magma chamber collapses. A crater forms when a meteorite hits"
        " the ground or at the vent of a volcano.",
    )
    answer = "The primary difference between the two is how they form."
    asked = "What is the difference between a caldera and a crater?"
    [r] = await get_judge("faithfulness").evaluate(make_interaction(asked, context, answer))
    assert "two is not in the context" not in r.explanation
    # asked about one thing, "two" is a value the context must state
    [o] = await get_judge("faithfulness").evaluate(
        make_interaction("How does a caldera form?", context, "It forms in two stages.")
    )
    assert "two is not in the context" in o.explanation


async def test_words_the_context_states_apart_rank_below_words_it_states_together():
    """A claim built from words the context gives in different sentences relates them as the
    context never does ("Anna works in Berlin" where Anna lives in Paris and Ben works in
    Berlin): it scores below a claim one sentence states, though every word is found."""
    context = (
        "Anna Keller moved to the coast after she retired from teaching. The new harbour museum"
        " opened last spring with a large collection of old ship models.",
    )
    q = "What do we know about Anna Keller?"
    together = make_interaction(q, context, "Anna Keller moved to the coast after she retired.")
    apart = make_interaction(q, context, "Anna Keller retired from teaching at the harbour museum.")
    [ok] = await get_judge("faithfulness").evaluate(together)
    [wrong] = await get_judge("faithfulness").evaluate(apart)
    assert shipped_model().coef["apart"] < 0  # fitted left out: it counts against the answer
    assert ok.metadata["features"]["apart"] == 0.0
    assert wrong.metadata["features"]["apart"] > 0.3
    assert wrong.score < ok.score, (wrong.explanation, ok.explanation)
