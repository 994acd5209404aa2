"""A reply that only asks the user back (a clarifying question) is a turn, not an answer.

It passes when what it offers comes from the passages or the conversation, whatever context
relevance says (asking is not "answering although nothing relevant was retrieved"), and fails as
``generation`` when it offers things neither mentions (a reply meant for another conversation).
"""

from __future__ import annotations

from typing import Any

import pytest

from ragsieve.evaluators.judges import get_judge
from ragsieve.evaluators.judges.thresholds import DEFAULT_THRESHOLDS
from ragsieve.evaluators.records import Message
from ragsieve.evaluators.testing import make_interaction
from ragsieve.jobs.verdicts.corpus import CorpusHit
from ragsieve.jobs.verdicts.flagging import CorpusAnswer, decide

DRONES = (
    "In the United States the FAA requires every drone over 250 grams to be registered. "
    "Australia's CASA forbids flying drones within 30 metres of people.",
)
HISTORY = (
    Message(role="user", content="Which countries regulate hobby drones?"),
    Message(role="assistant", content="Many countries regulate hobby drones by weight."),
)


async def _verdict(
    answer: str,
    query: str = "Are there rules on their use elsewhere?",
    context: tuple[str, ...] = DRONES,
    **decide_kw: Any,
) -> Any:
    it = make_interaction(query, context, answer, chat_history=HISTORY)
    results = []
    for name in ("faithfulness", "answer_relevance", "context_relevance"):
        results += await get_judge(name).evaluate(it)
    return results, decide(it, results, DEFAULT_THRESHOLDS, **decide_kw)


def _offer(results: Any) -> Any:
    return next(r for r in results if r.evaluator == "faithfulness").metadata.get("asks_back")


async def test_a_clarifying_question_drawn_from_the_passages_passes() -> None:
    results, verdict = await _verdict(
        "Would you like to know about the rules in the United States or in Australia?"
    )
    faith = next(r for r in results if r.evaluator == "faithfulness")
    assert faith.label == "skipped" and faith.metadata["asks_back"]["grounded"] >= 0.5
    assert verdict.outcome == "pass", verdict
    assert "narrow the question" in verdict.evidence


async def test_a_clarifying_question_about_something_else_fails_as_generation() -> None:
    results, verdict = await _verdict("Would you like help with student loan repayment topics?")
    faith = next(r for r in results if r.evaluator == "faithfulness")
    assert faith.metadata["asks_back"]["grounded"] < 0.5
    assert "loan" in faith.metadata["asks_back"]["unknown"]
    assert verdict.outcome == "fail" and verdict.root_cause == "generation"
    assert "loan" in verdict.evidence


async def test_echoing_the_users_words_back_offers_nothing() -> None:
    _, verdict = await _verdict(
        "Do you mean hobby rules elsewhere?", query="Are there hobby rules elsewhere?"
    )
    assert verdict.outcome == "fail" and verdict.root_cause == "generation"


async def test_an_answer_with_a_question_at_the_end_is_still_judged_as_an_answer() -> None:
    results, _ = await _verdict(
        "Drones over 250 grams must be registered with the FAA. Anything else?"
    )
    faith = next(r for r in results if r.evaluator == "faithfulness")
    assert faith.label != "skipped" and "asks_back" not in faith.metadata


async def test_a_clarifying_question_in_the_users_language_is_grounded_by_translation() -> None:
    results, verdict = await _verdict(
        "¿Quiere saber sobre las reglas de Estados Unidos o de Australia?",
        query="¿Hay reglas en otros países?",
    )
    assert _offer(results)["grounded"] >= 0.5 and verdict.outcome == "pass"


@pytest.mark.parametrize(
    "reply",
    [
        "Could you please rephrase your question?",  # names nothing of its own
        "What is your order number?",  # the user's situation, nothing the passages hold
        "Which version of Windows are you using?",
        "Did you know drones over 5 kilograms need a permit in Canada?",  # a claim with a value
    ],
)
async def test_replies_that_offer_no_topic_are_judged_as_before(reply: str) -> None:
    results, _ = await _verdict(reply)
    assert _offer(results) is None


async def test_with_nothing_retrieved_a_claim_and_a_question_are_not_an_offer() -> None:
    results, _ = await _verdict(
        "The FAA registers drones over 250 grams. Would you like to know about Canada?",
        context=(),
    )
    assert _offer(results) is None


async def test_a_chunk_the_retriever_missed_still_makes_it_a_retrieval_failure() -> None:
    results, _ = await _verdict("Would you like help with student loan repayment topics?")
    it = make_interaction("Are there rules on their use elsewhere?", DRONES, "x")
    hit = CorpusHit("kb-7", 0.9, 3, "Canada requires a drone pilot certificate.")
    verdict = decide(it, results, DEFAULT_THRESHOLDS, corpus=CorpusAnswer(hit, 40))
    assert verdict.outcome == "fail" and verdict.root_cause == "retrieval", verdict


async def test_anything_else_fits_a_turn_that_asked_nothing() -> None:
    results, verdict = await _verdict(
        "Is there anything else I can help you with?", query="Great, I will register mine."
    )
    assert _offer(results) == {"grounded": 1.0, "unknown": []}
    assert verdict.outcome == "pass"


@pytest.mark.parametrize(
    "reply",
    [
        "Do I need to register a drone over 250 grams with the FAA?",
        "¿Puedo volar mi dron a 30 metros de la gente en Australia?",
    ],
)
async def test_a_question_in_the_users_own_voice_is_no_clarification(reply: str) -> None:
    # a page's heading copied out as the reply: it asks nothing of the user and answers nothing
    results, verdict = await _verdict(reply, query="How much does a drone licence cost in Canada?")
    relevance = next(r for r in results if r.evaluator == "answer_relevance")
    assert _offer(results) is None
    assert relevance.label == "irrelevant"
    assert verdict.outcome == "fail" and "answer_relevance" in verdict.failed_metrics


@pytest.mark.parametrize(
    ("turn", "reply"),
    [
        ("Hola, buenos días", "¡Buenos días! ¿En qué puedo ayudarte con tu póliza de hogar?"),
        ("Hola", "¡Hola! ¿En qué puedo ayudarte?"),
        ("Hello", "Hello! How can I help you with your home insurance today?"),
        ("Thanks!", "You're welcome, have a nice day!"),
        ("Muchas gracias", "¡De nada! Que tengas un buen día."),
        ("Thanks!", "Thank you for your patience, have a nice day!"),
        ("Thanks!", "Hi there! Have a nice day."),
        ("Gracias", "¡Gracias a ti! Que tengas un buen día."),
    ],
)
async def test_a_greeting_or_thanks_answered_with_courtesy_and_an_offer_of_help_passes(
    turn: str, reply: str
) -> None:
    """A greeting, a wish and an offer of help after a turn that asked nothing state nothing the
    passages must hold, and what the offer names ("tu póliza de hogar") is the product's own
    business, not a topic to ground."""
    results, verdict = await _verdict(reply, query=turn)
    faith = next(r for r in results if r.evaluator == "faithfulness")
    assert faith.label == "skipped", faith.explanation
    assert verdict.outcome == "pass", verdict


async def test_an_offer_of_help_does_not_answer_a_question() -> None:
    _, verdict = await _verdict("How can I help you with your home insurance today?")
    assert verdict.outcome == "fail", verdict


async def test_an_offer_of_help_about_what_nobody_mentioned_fails_after_a_statement() -> None:
    _, verdict = await _verdict(
        "Would you like help with student loan repayment topics?",
        query="I am flying my drone in Spain next week.",
    )
    assert verdict.outcome == "fail" and verdict.root_cause == "generation", verdict
