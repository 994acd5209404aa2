"""A follow-up that names its own subject: the words of the earlier turn it replaces (those in
the frame where it puts its own) are not carried into the question judged; and the words that
tell two askings apart are those that differ in the same frame of a thing named."""

from __future__ import annotations

import pytest

from ragsieve.evaluators.judges.offline.conversation import judged_question
from ragsieve.evaluators.judges.offline.text.asked import told_apart
from ragsieve.evaluators.records import Message
from ragsieve.evaluators.testing import make_interaction

PLANS = (
    "The Pro plan costs 40 EUR per month and includes 200 GB.",
    "The Basic plan costs 10 EUR per month and includes 5 GB.",
)


@pytest.mark.parametrize(
    ("first", "follow", "carried", "not_carried"),
    [
        ("How much does the Pro plan cost per month?", "And for the Basic plan?", "month", "pro"),
        ("¿Cuánto cuesta el plan Pro al mes?", "¿Y el plan Básico?", "cuesta", "pro"),
        # in lower case, and with the name first in its sentence (found in review)
        ("How much does the Pro plan cost per month?", "and for the basic plan?", "month", "pro"),
        ("Pro plan: how much per month?", "And for the Basic plan?", "month", "pro"),
        ("How much does the Pro plan cost per month?", "And per week?", "pro", "month"),
        # a name the follow-up does not replace is still what it is about
        ("How much does the Pro plan cost in Lisbon?", "And in Madrid?", "pro", "lisbon"),
    ],
)
def test_a_follow_up_that_names_its_own_subject_does_not_carry_the_old_one(
    first, follow, carried, not_carried
):
    it = make_interaction(
        query=follow,
        context=PLANS,
        answer="x",
        chat_history=(Message(role="user", content=first), Message(role="assistant", content="y")),
    )
    asked = judged_question(it)
    assert asked.source == "resolved", asked
    words = asked.text.casefold()
    assert carried in words and not_carried not in words.split("(", 1)[1], asked.text


def test_a_follow_up_replaces_a_whole_phrase_from_its_anchor() -> None:
    """ "And for the Postpaid Plus plan?" after "... the Prepaid Basic plan ...": "Plus" takes
    "Basic"'s place before "plan", and "Postpaid" the place before what "Basic" became; neither
    earlier word is carried into the judged question."""
    from ragsieve.evaluators.judges.offline.conversation import carried_words

    earlier = "How much data does the Prepaid Basic plan include?"
    carried = carried_words("And for the Postpaid Plus plan?", [earlier])
    assert "prepaid" not in carried and "basic" not in carried
    assert "data" in carried  # what was asked is still carried
    lower = carried_words("and for the postpaid plus plan?", [earlier.lower()])
    assert "prepaid" not in lower and "basic" not in lower
    # anchored by the preposition alone: "on" places both names
    roaming = carried_words("And on Postpaid Plus?", ["How much is roaming on Prepaid Basic?"])
    assert "roaming" in roaming and "prepaid" not in roaming and "basic" not in roaming


@pytest.mark.parametrize(
    ("a", "b", "apart"),
    [
        ("the pro plan", "the basic plan", ("pro", "basic")),
        # Spanish puts the word that names after its noun, as English product names may
        ("¿cuánto cuesta el plan pro?", "¿cuánto cuesta el plan básico?", ("pro", "basico")),
        ("¿Cuánto cuesta el plan Pro?", "¿Cuánto cuesta el plan Básico?", ("pro", "basico")),
        ("how much is the plan pro", "how much is the plan basic", ("pro", "basic")),
    ],
)
def test_a_word_after_its_noun_tells_askings_apart(a: str, b: str, apart: tuple[str, str]) -> None:
    assert told_apart(a, b) == [apart]


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("¿cuánto cuesta el plan pro?", "¿cuál es el precio del plan pro?"),  # re-worded
        ("what is the monthly cost of the plan", "what is the monthly price of the plan"),
        ("Was Narcissus prideful?", "Was Narcissus haughty?"),  # a predicate, not a noun's word
    ],
)
def test_the_same_subject_re_worded_is_not_told_apart(a: str, b: str) -> None:
    assert told_apart(a, b) == []
