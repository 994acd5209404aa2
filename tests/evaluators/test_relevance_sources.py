"""Answer relevance read through the passages: an instruction that restates a passage sentence
answers what that sentence is about, and a follow-up's own words are not stood in for by the
words carried over from earlier turns."""

from __future__ import annotations

from ragsieve.evaluators.judges import get_judge
from ragsieve.evaluators.judges.offline.conversation import carried_words, judged_question
from ragsieve.evaluators.judges.offline.sources import answer_sources, stays_on, yes_no_to_elliptic
from ragsieve.evaluators.records import Message
from ragsieve.evaluators.testing import make_interaction

HOLD = (
    "A hold on a library book is cancelled by tapping the cross beside the title in your account."
)
CARD = "Library cards are renewed at the front desk with a recent utility bill."
TAP = "Tap the cross beside the title in your account."


async def _relevance(question: str, answer: str, context: tuple[str, ...], **kw):
    it = make_interaction(query=question, context=context, answer=answer, **kw)
    [r] = await get_judge("answer_relevance").evaluate(it)
    return r


async def test_an_instruction_restating_the_passage_that_answers_is_relevant() -> None:
    with_passage = await _relevance("How do I cancel a hold on a book?", TAP, (HOLD, CARD))
    alone = await _relevance("How do I cancel a hold on a book?", TAP, ())
    assert with_passage.label == "relevant"
    assert alone.label == "irrelevant"  # the same words, with nothing to say what they are for


async def test_a_restated_passage_sharing_one_word_with_the_question_does_not_answer_it() -> None:
    r = await _relevance("How do I renew my library card?", TAP, (HOLD, CARD))
    assert r.label == "irrelevant"


def test_only_the_clauses_the_answer_drew_on_are_its_source() -> None:
    two = "Damage is reported at the front desk, and the yearly pass costs 60 euros."
    assert answer_sources(["The yearly pass costs 60 euros."], [two])[1] == [
        "and the yearly pass costs 60 euros."
    ]
    assert answer_sources([TAP], [CARD])[1] == []


def test_the_words_the_question_gave_do_not_show_where_an_answer_was_taken_from() -> None:
    peak = "Mount Kell is a 2,121-metre summit located in Liberty County, Montana."
    moved = ["Mount Kell is located in New Zealand."]  # only the question's words are shared
    kept = ["Mount Kell is located in Liberty County."]
    asked = ["Where is Mount Kell located and what is its elevation?"]
    assert answer_sources(moved, [peak], asked)[1] == []
    assert answer_sources(moved, [peak])[1] != []  # without the question its words would count
    assert answer_sources(kept, [peak], asked)[1] != []


async def test_an_answer_placing_the_subject_elsewhere_is_not_credited_with_the_passage() -> None:
    peak = "Mount Kell is a 2,121-metre-elevation summit located in Liberty County, Montana."
    question = "Where is Mount Kell located and what is its elevation?"
    elsewhere = await _relevance(question, "Mount Kell is located in New Zealand.", (peak,))
    there = await _relevance(
        question, "Mount Kell is located in Liberty County, Montana, at 2,121 metres.", (peak,)
    )
    # the passage's "elevation" is lent to the answer taken from it, not to the one placing the
    # mountain elsewhere (with it lent, the two scored within 0.01)
    assert there.score - elsewhere.score > 0.05


FERRY = (
    Message(role="user", content="How long does the island ferry crossing take?"),
    Message(role="assistant", content="The crossing takes about 40 minutes."),
)
PAGES = (
    "The island ferry crossing takes about 40 minutes; bicycles travel free on the lower deck.",
    "A monthly ferry card costs 35 euros and covers unlimited crossings.",
)


async def test_a_follow_up_naming_its_own_subject_is_not_answered_by_the_carried_topic() -> None:
    off = await _relevance(
        "Is there a season ticket?", "Bicycles travel free on the lower deck.", PAGES,
        chat_history=FERRY,
    )  # fmt: skip
    on = await _relevance(
        "And what about bikes?", "Bicycles travel free on the lower deck.", PAGES,
        chat_history=FERRY,
    )  # fmt: skip
    assert off.metadata["question_source"] == on.metadata["question_source"] == "resolved"
    assert off.label == "irrelevant" and off.metadata["unanswered_own_terms"]
    assert on.label == "relevant" and "unanswered_own_terms" not in on.metadata


async def test_a_passing_answer_in_other_words_is_not_said_to_be_about_something_else() -> None:
    pages = ("Una tarjeta mensual del ferry cuesta 35 euros y cubre travesías ilimitadas.",)
    r = await _relevance(
        "¿Hay abono de temporada?",
        "Sí: una tarjeta mensual del ferry cuesta 35 euros y cubre travesías ilimitadas.",
        pages,
        chat_history=FERRY,
    )
    assert r.label == "relevant"
    assert "something else" not in r.explanation and "nothing on" not in r.explanation


def test_how_a_turn_asks_is_never_carried_over_to_the_next() -> None:
    carried = carried_words(
        "And on Saturdays?", ["Please tell me anything about the ferry timetable"]
    )
    assert set(carried) == {"ferry", "timetable"}


BIKES_HISTORY = (
    Message(role="user", content="¿Cuánto cuesta alquilar una bici por minuto?"),
    Message(role="assistant", content="Una bici normal cuesta 0,10 euros por minuto."),
)
BIKES = ("Las bicis normales cuestan 0,10 euros por minuto y las eléctricas 0,30 euros.",)
ELLIPTIC = "¿Y las eléctricas? ¿Son más caras?"
REWRITE = "¿Cuesta más alquilar una bici eléctrica que una normal?"  # the app's condensed query


def test_a_yes_to_an_elliptic_turn_is_read_against_the_turn_as_typed_too() -> None:
    it = make_interaction(
        query=ELLIPTIC,
        context=BIKES,
        answer="x",
        chat_history=BIKES_HISTORY,
        retrieval_queries=(REWRITE,),
    )
    asked = judged_question(it)
    assert (asked.source, asked.text, asked.typed) == ("rewrite", REWRITE, ELLIPTIC)
    # far in meaning from the rewrite, near the turn as typed, and in its words ("caras")
    assert yes_no_to_elliptic(asked, "Sí, son más caras: 0,30 euros el minuto.")


def test_a_yes_stays_on_the_question_through_the_words_of_either_reading() -> None:
    reply = "Sí, 0,20 euros más caras por minuto."
    assert stays_on(reply, (REWRITE, ELLIPTIC), None)  # "caras": the turn as typed says it
    assert not stays_on(reply, (REWRITE,), None)  # the rewrite words it otherwise
