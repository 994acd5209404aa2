"""Answer relevance tells a question's subject from what it asks: an answer that shares only the
product a question names, and is not clearly about the question in meaning, does not address it."""

from __future__ import annotations

from ragsieve.evaluators.judges import get_judge
from ragsieve.evaluators.judges.offline.sources import topic_terms
from ragsieve.evaluators.judges.offline.text.terms import key
from ragsieve.evaluators.testing import make_interaction

QUESTION = "When will I receive the money for a returned Quillwick Slate?"
PASSAGES = (
    "Quillwick Slate tablets bought online can be returned within 30 days of delivery.",
    "Refunds for returned tablets reach the original card within 7 business days of arrival.",
    "The Quillwick Slate warranty covers manufacturing defects for 24 months.",
)
KEYS = "API keys do not expire, but Quillwick recommends rotating them every 90 days."


async def _relevance(question: str, answer: str, context: tuple[str, ...] = PASSAGES):
    it = make_interaction(query=question, context=context, answer=answer)
    [r] = await get_judge("answer_relevance").evaluate(it)
    return r


def test_the_subject_is_what_most_passages_hold_or_a_name_half_of_them_hold() -> None:
    topic = topic_terms(QUESTION, PASSAGES)
    assert {key("quillwick"), key("slate")} <= topic  # two passages of three
    assert key("receive") not in topic and key("money") not in topic
    plain = "When will I receive the money for a returned tablet?"
    assert key("tablet") in topic_terms(plain, PASSAGES)
    assert key("tablet") not in topic_terms(plain, PASSAGES[1:])  # one of two is no majority
    assert key("quillwick") in topic_terms(QUESTION, PASSAGES[1:])  # ... but a name's half is
    assert topic_terms(plain, PASSAGES[:1]) == frozenset()  # one passage: every page is "most"
    # a name no passage holds is what is asked about: "Who did the National Anthem?"
    assert key("anthem") not in topic_terms("Who sang the National Anthem?", PASSAGES)


async def test_an_answer_sharing_only_the_product_does_not_address_the_question() -> None:
    r = await _relevance(QUESTION, KEYS)
    assert r.label == "irrelevant"
    assert r.metadata["only_topic"] == ["quillwick"]
    assert "shares only the subject (quillwick)" in r.explanation
    assert "asks for a date" not in r.explanation  # it gives a time, of something not asked


async def test_an_answer_holding_what_is_asked_is_not_read_as_the_subject_alone() -> None:
    r = await _relevance(QUESTION, "You receive the refund on your card within 7 business days.")
    assert r.label == "relevant"
    assert "only_topic" not in r.metadata


async def test_an_answer_clearly_about_the_question_in_meaning_keeps_its_credit() -> None:
    # "led" is not "chief executive": only the name is shared, the meaning says it answers
    r = await _relevance(
        "Who is the chief executive of Quillwick?",
        "Quillwick is led by Marta Lindqvist, who founded the company in 2016.",
    )
    assert r.metadata["only_topic"] == ["quillwick"]
    assert r.label == "relevant"


async def test_across_languages_a_shared_name_is_no_sign_the_answer_says_nothing_else() -> None:
    # the names carry over word for word, and the rest cannot be matched word for word
    spanish = await _relevance(QUESTION, "Quillwick cambia las claves de la API cada 90 días.")
    assert "only_topic" not in spanish.metadata
    english = await _relevance(QUESTION, "Quillwick changes the API keys every 90 days.")
    assert english.metadata["only_topic"] == ["quillwick"]
