"""Context relevance tells a chunk about the question's topic from one that holds what it asks
(issue 43): a topic word repeated through a paragraph counts once; a yes/no question about a
number is answered by the limit a chunk states; what a missed page holds that the prompt lacks."""

from __future__ import annotations

import pytest

from ragsieve.evaluators.judges.offline.context import chunk_evidence, question_terms
from ragsieve.evaluators.judges.offline.text.asked import asked_gap, yes_no
from ragsieve.evaluators.judges.thresholds import DEFAULT_THRESHOLDS

THRESHOLD = DEFAULT_THRESHOLDS["context_relevance"]


def test_a_topic_word_in_both_sentences_of_the_window_counts_once() -> None:
    # the question names the subject and what is asked of it; a paragraph about the subject names
    # it in every sentence, and that is its topic, not the answer
    q = "How many species of ctenophores have been validated by taxonomists?"
    topic = (
        "Ctenophores live in marine waters worldwide. Ctenophores swim with eight rows of cilia."
        " Ctenophores are predators of plankton."
    )
    once = "Ctenophores live in marine waters worldwide."
    two, one = chunk_evidence(q, [topic, once], use_embeddings=False)
    assert two.terms == pytest.approx(one.terms)
    assert two.score < THRESHOLD


@pytest.mark.parametrize(
    ("question", "chunk"),
    [
        ("Can my 14-year-old ride?", "Riders must be at least 16 years old; no child seats."),
        (
            "¿Puede usarla mi hija de 14 años?",
            "Para usar el servicio hay que tener al menos 16"
            " años; no se permiten sillas infantiles.",
        ),
        ("Can I carry 30 kg in the basket?", "The basket holds up to 10 kg."),
        (
            "Can we ride at 1 am?",
            "The service runs from 6 am to midnight; between midnight and"
            " 6 am no bike can be unlocked.",
        ),
    ],
)
def test_a_yes_no_question_about_a_number_is_answered_by_the_stated_limit(
    question: str, chunk: str
) -> None:
    other = "Bikes are returned at any station; the app shows free docks in real time."
    got, rest = chunk_evidence(question, [chunk, other])
    assert got.score >= THRESHOLD > rest.score


def test_a_limit_does_not_answer_a_question_that_asks_for_the_number() -> None:
    # "how much" asks for the value itself: another number under a limit word is not it
    q = "How much does the 60-minute ride cost?"
    assert not yes_no(q)
    limit = "A bike can be rented for up to 45 minutes per ride."
    (ev,) = chunk_evidence(q, [limit], use_embeddings=False)
    assert ev.score < THRESHOLD


def test_a_single_digit_of_the_question_is_one_of_its_terms() -> None:
    assert "1" in question_terms("Can we ride at 1 am?")


def test_what_a_missed_page_holds_that_the_prompt_lacks() -> None:
    q = "What is the monthly price of the Starter plan?"
    prompt = [
        "The Starter plan allows 120 requests per minute.",
        "The Pro plan allows 600 requests per minute.",
    ]
    price = asked_gap(q, prompt, "The Starter plan costs $49 per month, billed monthly.")
    assert price.share > 0.25 and price.words == ("monthly",) and price.kept == 1.0
    # a page that says what the prompt already says adds nothing the prompt lacks
    same = asked_gap(q, prompt, "Starter plan: 120 requests per minute, billed yearly.")
    assert same.share == 0.0 and same.words == ()
    # a page on another subject worded like the question keeps none of the prompt's topic
    other = asked_gap(q, prompt, "The monthly newsletter lists each price change.")
    assert "monthly" in other.words and other.kept == 0.0
