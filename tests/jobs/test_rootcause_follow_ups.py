"""A follow-up's root cause weighs what the conversation says: a reply that belongs to another
conversation is the model's, whichever page the retriever found or missed."""

from __future__ import annotations

import pytest

from ragsieve.evaluators.judges import get_judge
from ragsieve.evaluators.records import Message
from ragsieve.evaluators.testing import make_interaction
from ragsieve.jobs.verdicts.flagging import Verdict
from ragsieve.jobs.verdicts.gather import failure_pieces
from ragsieve.jobs.verdicts.ledger import UNDETERMINED, Piece, combine

HISTORY = (
    Message(role="user", content="How much does it cost to renew a passport at the Madrid office?"),
    Message(role="assistant", content="Renewing a passport in Madrid costs 30 euros."),
)
HOURS = (
    "The Madrid passport office renews passports from Monday to Friday, 9:00 to 17:00. "
    "On Saturdays the passport office opens from 9:00 to 13:00.",
)
TURN = "Can I also go there at the weekend?"
ELSEWHERE = "Schools must deliver the textbooks by the seventh day of the term."
ON_TOPIC = "Yes, and on Saturdays until 13:00."
REFUSAL = "I'm sorry, I don't have that information."


async def _pieces(answer: str, cause: str, missed: str | None = None) -> list[Piece]:
    it = make_interaction(query=TURN, context=HOURS, answer=answer, chat_history=HISTORY)
    [relevance] = await get_judge("answer_relevance").evaluate(it)
    failed = ("answer_relevance", "context_relevance", "faithfulness")
    abstained = answer == REFUSAL
    verdict = Verdict("fail", failed, cause, "", abstained, False, missed_chunk=missed)
    return list(failure_pieces(it, [relevance], verdict, None, {}, None, None))


@pytest.mark.parametrize(
    ("cause", "missed"),
    [("no_answer_expected", None), ("retrieval", "the observed chunk schools#books")],
)
async def test_a_reply_from_another_conversation_is_the_models(cause: str, missed: str | None):
    got = await _pieces(ELSEWHERE, cause, missed)
    assert [(p.name, p.cause) for p in got] == [("off_conversation", "generation")]
    rule = Piece("rule", cause, "none of 1 chunk(s) in the prompt was relevant")
    assert combine([rule, *got]).label == "generation"
    # a page the prompt dropped that answers still argues for the retriever: no decision
    dropped = Piece("dropped", "retrieval", "hours#sat was retrieved but did not reach the prompt")
    # beside the rule's retrieval it states retrieval (2.5 to 1.5); beside no_answer_expected
    # it ties with the reply's generation (1.5 each): undetermined
    expected = "retrieval" if cause == "retrieval" else UNDETERMINED
    assert combine([rule, *got, dropped]).label == expected


async def _names(answer: str, cause: str, missed: str | None = None) -> list[str]:
    return [p.name for p in await _pieces(answer, cause, missed)]


async def test_a_reply_on_the_conversation_or_a_refusal_weighs_nothing_of_the_kind():
    assert "off_conversation" not in await _names(ON_TOPIC, "no_answer_expected")
    # a refusal shares nothing by saying nothing: it is no reply from another conversation
    assert await _names(REFUSAL, "retrieval", "the observed chunk hours#sat") == []
    # the rule's own generation needs no second line
    assert "off_conversation" not in await _names(ELSEWHERE, "generation")


LOST = (
    "A lost or stolen bike must be reported within 24 hours; otherwise the rider is charged"
    " 450 euros."
)
STOLEN = (
    Message(role="user", content="Someone stole my bike, what now?"),
    Message(role="assistant", content="Report it within 24 hours."),
)


async def test_an_answer_going_on_from_the_last_replys_passage_leaves_the_context_open():
    # the context judge read "And if I report it late?" as not answered by the chunk the last
    # reply came from; the answer goes on from it: two readings of one chunk, a tie
    it = make_interaction(
        query="And if I report it late?",
        context=(LOST, "Bikes are returned at any Bicivia station."),
        answer="You are charged 150 euros.",
        chat_history=STOLEN,
    )
    [relevance] = await get_judge("answer_relevance").evaluate(it)
    assert relevance.metadata.get("goes_on_from_last_reply")
    failed = ("context_relevance", "faithfulness")
    nothing = Verdict("fail", failed, "no_answer_expected", "", False, False)
    got = failure_pieces(it, [relevance], nothing, None, {}, None, None)
    assert [(p.name, p.cause) for p in got] == [("goes_on", "generation")]
    rule = Piece("rule", "no_answer_expected", "none of 2 chunk(s) in the prompt was relevant")
    decided = combine([rule, *got])
    assert decided.label == UNDETERMINED
    assert decided.competing[1].startswith("generation: the answer goes on from a chunk")
    # the context judged relevant: the rule already blames the model, nothing to weigh
    model = Verdict("fail", failed, "generation", "", False, True)
    assert failure_pieces(it, [relevance], model, None, {}, None, None) == ()


def test_what_the_conversation_said_is_not_what_a_refusals_missed_page_adds():
    # "When did No Time to Die first start filming?" after a turn on its premiere: the title is
    # the conversation's subject, which the model was shown in the earlier turns; the prompt's
    # production passage need not repeat it, and a page that names it adds nothing asked
    from ragsieve.jobs.verdicts.branches import missed_attribute
    from ragsieve.jobs.verdicts.corpus import CorpusHit

    q = "When did No Time to Die first start filming?"
    production = (
        "Production was scheduled to begin on 3 December 2018 at Pinewood Studios, but filming"
        " was delayed until April 2019."
    )
    page = "The James Bond film No Time to Die was scheduled to premiere in March 2020."
    hit = CorpusHit("film#release", 0.97, 2, page)
    earlier = (
        Message(role="user", content="Did No Time to Die premiere only in theaters?"),
        Message(role="assistant", content="No Time to Die premiered at the Royal Albert Hall."),
    )
    alone = make_interaction(query=q, context=[production], answer="I don't know.")
    followed = alone.model_copy(update={"chat_history": earlier})
    assert [p.name for p in missed_attribute(q, alone, hit)] == ["missed_attribute"]
    assert missed_attribute(q, followed, hit) == ()


def test_a_question_asked_again_keeps_its_missed_page():
    # the user's earlier question gave the model nothing: only the assistant's replies count
    from ragsieve.jobs.verdicts.branches import missed_attribute
    from ragsieve.jobs.verdicts.corpus import CorpusHit

    q = "What is the monthly price of the Pro plan?"
    prompt = ["The Pro plan allows 600 requests per minute and five team seats."]
    page = "The Pro plan costs 99 dollars as its monthly price, billed on the first day."
    hit = CorpusHit("plans#pro-price", 0.9, 3, page)
    earlier = (
        Message(role="user", content="What is the monthly price of the Starter plan?"),
        Message(role="assistant", content="I'm sorry, I don't have that information."),
    )
    alone = make_interaction(query=q, context=prompt, answer="I don't know.")
    asked_again = alone.model_copy(update={"chat_history": earlier})
    assert [p.name for p in missed_attribute(q, alone, hit)] == ["missed_attribute"]
    assert [p.name for p in missed_attribute(q, asked_again, hit)] == ["missed_attribute"]
