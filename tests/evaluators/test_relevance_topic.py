"""Answer relevance tells a question's subject from what it asks: an answer that shares only the
product a question names, and is not clearly about the question in meaning, does not address it."""

from __future__ import annotations

import pytest

from ragsieve.evaluators.judges import get_judge
from ragsieve.evaluators.judges.offline.context import topic_terms
from ragsieve.evaluators.judges.offline.text.asked import name_keys
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
    assert key("quillwick") in topic_terms(QUESTION, PASSAGES[1:])  # a name's half is enough
    assert topic_terms(QUESTION, PASSAGES[:1]) == frozenset()  # one passage: every page is "most"


def test_a_common_term_is_the_subject_only_when_the_answering_passage_lacks_it() -> None:
    passages = (
        "Money for returned tablets reaches the original card within 7 business days.",
        "Quillwick tablets come with a 24-month warranty.",
        "Quillwick support answers chats from 8:00 to 20:00.",
    )
    plain = "when will I receive the money for a returned quillwick tablet?"  # no names
    topic = topic_terms(plain, passages)
    assert key("quillwick") in topic  # two of three hold it, not the one that answers
    assert key("tablet") not in topic  # two of three hold it, the one that answers too
    assert key("quillwick") not in topic_terms(plain, passages[:2])  # one of two: no majority


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


@pytest.mark.parametrize(
    "answer", ["Quillwick keys rotate every 90 days.", "Quillwick API keys: every 90 days."]
)
async def test_a_short_answer_sharing_only_the_subject_gets_no_credit_for_its_type(
    answer: str,
) -> None:
    # a value of the asked type ("every 90 days") in a few words is still of the subject
    r = await _relevance(QUESTION, answer)
    assert r.label == "irrelevant"
    assert "shares only the subject (quillwick)" in r.explanation


ON_REFUNDS = (  # retrieval on target: every passage holds what is asked
    "Money for returned items is refunded to the original card.",
    "Returned items must be unused to get your money back.",
    "We send the money for returned items within 7 business days of arrival.",
)
REFUND_QUESTION = "When will I get the money back for a returned Quillwick Slate?"


async def test_terms_the_answering_passage_holds_are_what_is_asked_not_the_subject() -> None:
    topic = topic_terms(REFUND_QUESTION, ON_REFUNDS)
    assert key("money") not in topic and key("returned") not in topic
    answer = "Money for returned goods is paid a week after they reach us."
    with_subject = await _relevance(REFUND_QUESTION, answer, ON_REFUNDS)
    assert "only_topic" not in with_subject.metadata
    one = await _relevance(REFUND_QUESTION, answer, ON_REFUNDS[:1])  # no subject to read
    assert with_subject.label == one.label == "relevant"


async def test_copying_a_passage_sentence_that_holds_only_the_subject_keeps_the_rule() -> None:
    copied = KEYS + " " + PASSAGES[2]  # the warranty sentence: Quillwick Slate, nothing asked
    r = await _relevance(QUESTION, copied)
    assert r.label == "irrelevant"
    assert r.metadata["only_topic"] == ["quillwick", "slate"]
    # a copied clause that holds what is asked ("returned") shows what the answer addresses
    asked = await _relevance(QUESTION, KEYS + " " + PASSAGES[1])
    assert "only_topic" not in asked.metadata


def test_names_are_read_one_way_whatever_their_place_or_the_question_s_capitals() -> None:
    assert key("quillwick") in name_keys("Quillwick refunds: when do they arrive?")
    assert key("does") not in name_keys("Does the Quillwick Slate charge wirelessly?")
    # a known word opening the question may be any word: its capital marks only the start
    assert key("aside") not in name_keys("Aside from cow's milk, what milk makes cheese?")
    assert name_keys("WHEN WILL I GET MY REFUND FOR A RETURNED TABLET?") == set()
    half = (PASSAGES[1], PASSAGES[2])  # one names the refund, one the Quillwick Slate
    # a name opening the question, held by half of the passages, is the subject
    assert key("quillwick") in topic_terms("Quillwick refunds: when do they arrive?", half)
    # in capitals, "REFUND" is no name, and one passage of two is no majority
    shouted = "WHEN WILL I GET MY REFUND FOR A RETURNED TABLET?"
    assert key("refund") not in topic_terms(shouted, half)
    assert key("refund") in topic_terms("When will I get my Refund for a Tablet?", half)


def test_a_name_is_the_subject_only_when_half_of_the_passages_hold_it() -> None:
    anthem = (
        "The National Anthem was sung by Lady Gaga before kickoff.",
        "Tickets for the game sold out within a day.",
        "The halftime show was headlined by Coldplay.",
    )
    assert key("anthem") not in topic_terms("Who sang the National Anthem?", anthem)  # 1 of 3
    two = anthem[:2]  # one of two: half, which a name needs and a common term does not
    assert key("anthem") in topic_terms("Who sang the National Anthem?", two)
    assert key("anthem") not in topic_terms("who sang the national anthem?", two)


async def test_the_subject_note_is_given_only_when_the_subject_rule_took_the_credit() -> None:
    # no time at all: the question's own type is what is missing
    r = await _relevance(QUESTION, "Quillwick designs its tablets in Oslo with recycled aluminium.")
    assert r.label == "irrelevant"
    assert "the question asks for a" in r.explanation
    assert "shares only the subject" not in r.explanation


async def test_with_one_passage_the_result_says_the_subject_rule_did_not_apply() -> None:
    r = await _relevance(QUESTION, KEYS, PASSAGES[:1])
    assert r.metadata["subject_rule"] == "not applied: fewer than two passages"
    assert "subject_rule" not in (await _relevance(QUESTION, KEYS)).metadata
