"""Follow-ups as chat engines without a rewrite trace them (issue 45): the typed turn with its
history. A Spanish article is not an anaphor; a reply that goes on from the passage the last
reply came from answers a follow-up that leans on the conversation, and only such a reply."""

from __future__ import annotations

import pytest

from ragsieve.evaluators.judges import get_judge
from ragsieve.evaluators.judges.offline.conversation import judged_question
from ragsieve.evaluators.records import Message
from ragsieve.evaluators.testing import make_interaction

LOANS = "Library books can be borrowed for up to 21 days; every late day costs 0.30 euros."
CARDS = "A yearly reader card costs 12 euros and gives access to every branch."
ROOMS = "Study rooms are booked at the front desk and hold up to six people."
KEEP = (
    Message(role="user", content="How long can I keep a library book?"),
    Message(role="assistant", content="Up to 21 days."),
)


def _turn(query: str, answer: str = "", history: tuple[Message, ...] = KEEP) -> object:
    return make_interaction(
        query=query, answer=answer, context=(LOANS, CARDS, ROOMS), chat_history=history
    )


@pytest.mark.parametrize(
    ("typed", "leans"),
    [
        ("And what if I keep it longer?", True),  # an elliptic opening
        ("Can I renew it?", True),  # an anaphor
        ("Any book fees?", True),  # too few words to name its subject
        ("Can a library book be renewed online?", False),  # it stands alone
    ],
)
def test_a_follow_up_that_leans_on_the_conversation_says_so(typed: str, leans: bool) -> None:
    asked = judged_question(_turn(typed))  # type: ignore[arg-type]
    assert asked.follows_up is leans, asked
    assert (asked.source == "resolved") is leans


@pytest.mark.parametrize(
    ("typed", "source"),
    [
        ("¿Podemos entrar a la una de la tarde?", "typed"),  # "a la una": an article
        ("¿Dónde la devuelvo luego?", "resolved"),  # "la devuelvo": the book
    ],
)
def test_a_spanish_article_after_a_preposition_is_no_anaphor(typed: str, source: str) -> None:
    history = (
        Message(role="user", content="¿Cuánto tiempo puedo tener un libro de la biblioteca?"),
        Message(role="assistant", content="Hasta 21 días."),
    )
    assert judged_question(_turn(typed, history=history)).source == source  # type: ignore[arg-type]


async def _relevance(query: str, answer: str, history: tuple[Message, ...] = KEEP) -> object:
    [result] = await get_judge("answer_relevance").evaluate(_turn(query, answer, history))  # type: ignore[arg-type]
    return result


async def test_a_reply_going_on_from_the_last_replys_passage_answers_the_follow_up() -> None:
    went_on = await _relevance("And after that?", "Every late day costs 0.30 euros.")
    assert went_on.label == "relevant", went_on.explanation  # type: ignore[attr-defined]
    assert went_on.metadata["goes_on_from_last_reply"] is True  # type: ignore[attr-defined]


async def test_only_a_reply_that_goes_on_from_there_gets_that_credit() -> None:
    # from another passage: the rooms do not answer what the conversation is on
    elsewhere = await _relevance("And what if I keep it longer?", "Study rooms hold six people.")
    # the last reply said again: nothing new
    again = await _relevance("And what if I keep it longer?", "Up to 21 days.")
    # a first turn has no last reply to go on from
    first = await _relevance("And after that?", "Every late day costs 0.30 euros.", ())
    for result in (elsewhere, again, first):
        assert "goes_on_from_last_reply" not in result.metadata  # type: ignore[attr-defined]
