"""A reply that only asks the user back (a clarifying question) is a turn, not an answer.

It passes when what it offers comes from the passages or the conversation, whatever context
relevance says (asking is not "answering although nothing relevant was retrieved"), and fails as
``generation`` when it offers things neither mentions (a reply meant for another conversation).
"""

from __future__ import annotations

from typing import Any

from ragsieve.evaluators.judges import get_judge
from ragsieve.evaluators.judges.thresholds import DEFAULT_THRESHOLDS
from ragsieve.evaluators.records import Message
from ragsieve.evaluators.testing import make_interaction
from ragsieve.jobs.verdicts.flagging import decide

DRONES = (
    "In the United States the FAA requires every drone over 250 grams to be registered. "
    "Australia's CASA forbids flying drones within 30 metres of people.",
)
HISTORY = (
    Message(role="user", content="Which countries regulate hobby drones?"),
    Message(role="assistant", content="Many countries regulate hobby drones by weight."),
)


async def _verdict(answer: str, query: str = "Are there rules on their use elsewhere?") -> Any:
    it = make_interaction(query, DRONES, answer, chat_history=HISTORY)
    results = []
    for name in ("faithfulness", "answer_relevance", "context_relevance"):
        results += await get_judge(name).evaluate(it)
    return results, decide(it, results, DEFAULT_THRESHOLDS)


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
