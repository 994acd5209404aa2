"""Conversations (issue 27): a follow-up is judged by what it means, a statement by its fit."""

from __future__ import annotations

import pytest

from ragsieve.evaluators.judges import get_judge
from ragsieve.evaluators.judges.offline.conversation import judged_question, turn_kind
from ragsieve.evaluators.records import Message, RetrievalStage, RetrievedDocument
from ragsieve.evaluators.testing import make_interaction

HISTORY = (
    Message(role="user", content="How much does it cost to renew a passport at the Madrid office?"),
    Message(role="assistant", content="Renewing a passport in Madrid costs 30 euros."),
)
HOURS = (
    "The Madrid passport office renews passports from Monday to Friday, 9:00 to 17:00. "
    "On Saturdays the passport office opens from 9:00 to 13:00.",
)


async def _judge(name: str, **kw):
    it = make_interaction(**{k: v for k, v in kw.items() if k != "documents"})
    if "documents" in kw:  # chunks that name the retrieval step that found them
        it = it.model_copy(update={"documents": kw["documents"]})
    [r] = await get_judge(name).evaluate(it)
    return r


async def test_elliptical_follow_up_is_judged_with_what_it_leaves_out():
    kw = {
        "query": "And when is it open?",
        "context": HOURS,
        "answer": "It is open Monday to Friday from 9:00 to 17:00 and Saturday mornings.",
        "chat_history": HISTORY,
    }
    ctx = await _judge("context_relevance", **kw)
    ans = await _judge("answer_relevance", **kw)
    assert ctx.label == "relevant" and ans.label == "relevant"
    for r in (ctx, ans):
        assert r.metadata["question_source"] == "resolved"
        assert "passport" in r.metadata["judged_question"]
        assert r.metadata["judged_question"].startswith("And when is it open?")


async def test_app_rewrite_is_the_judged_question():
    rewrite = "When is the Madrid passport office open?"
    doc = RetrievedDocument(id="d0", content=HOURS[0], rank=0, in_prompt=True, span_id="b" * 16)
    kw = {
        "query": "and when is it open?",
        "context": (),
        "documents": (doc,),
        "stages": (
            RetrievalStage(
                stage="retrieval",
                span_id="b" * 16,
                name="retrieve",
                query=rewrite,
                documents=(doc,),
            ),
        ),
        "retrieval_queries": (rewrite,),
        "answer": "The passport office is open Monday to Friday, 9:00 to 17:00, and on "
        "Saturdays from 9:00 to 13:00.",
        "chat_history": HISTORY,
    }
    for name in ("context_relevance", "answer_relevance"):
        r = await _judge(name, **kw)
        assert r.label == "relevant", (name, r.explanation)
        assert r.metadata["judged_question"] == rewrite
        assert r.metadata["question_source"] == "rewrite"


async def test_first_turn_is_judged_as_typed_even_with_another_retrieval_query():
    it = make_interaction(
        query="When was GPT-4 released?",
        context=("GPT-4 was released on March 14, 2023.",),
        retrieval_queries=("gpt-4 release date",),
    )
    asked = judged_question(it)
    assert (asked.source, asked.text, asked.kind) == (
        "typed",
        "When was GPT-4 released?",
        "question",
    )


RENTAL = (
    "Rental cars include basic liability cover. Collision damage waiver costs 15 euros per day; "
    "customers with their own insurance may decline it at the counter.",
)
RENTAL_HISTORY = (
    Message(role="user", content="Do I need the collision damage waiver for my rental car?"),
    Message(role="assistant", content="It costs 15 euros per day. Should I add it?"),
)


async def test_a_statement_is_judged_by_whether_the_reply_fits_it():
    r = await _judge(
        "answer_relevance",
        query="Don't do that, I'll get insurance.",
        context=RENTAL,
        answer="Fine: with your own insurance you can decline the waiver at the counter.",
        chat_history=RENTAL_HISTORY,
    )
    assert r.label == "relevant", r.explanation
    assert r.metadata["turn_kind"] == "statement"
    assert "not a question" in r.explanation


async def test_a_reply_from_another_conversation_does_not_fit_a_statement():
    r = await _judge(
        "answer_relevance",
        query="Don't do that, I'll get insurance.",
        context=RENTAL,
        answer="Photosynthesis converts sunlight, water and carbon dioxide into glucose in leaves.",
        chat_history=RENTAL_HISTORY,
    )
    assert r.label == "irrelevant"


@pytest.mark.parametrize("turn", ["thanks!", "ok", "Vale, muchas gracias", "Great, thank you"])
async def test_thanks_and_confirmations_are_not_off_topic(turn):
    r = await _judge(
        "answer_relevance",
        query=turn,
        context=RENTAL,
        answer="You're welcome! Have a good trip.",
        chat_history=RENTAL_HISTORY,
    )
    assert r.label == "relevant", r.explanation
    assert r.metadata["turn_kind"] == "acknowledgement"


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ("Don't do that I'll get insurance", "statement"),
        ("Yes they are from another state.", "statement"),
        ("No tengo coche, voy en tren.", "statement"),
        ("ok", "acknowledgement"),
        ("thanks!", "acknowledgement"),
        ("Perfecto, gracias por la ayuda", "acknowledgement"),
        ("and on Saturdays?", "question"),
        ("Can I renew it online", "question"),
        ("Tell me about the waiver", "question"),
        ("I'd like to know about Oprah Winfrey.", "question"),
        ("¿Y los sábados?", "question"),
        ("cuánto cuesta", "question"),
    ],
)
def test_turn_kind(text, kind):
    assert turn_kind(text) == kind


def test_a_reply_to_the_assistants_question_carries_that_question() -> None:
    """ "Yes, I do." means what the assistant asked just before (Doc2Dial agents ask back)."""
    from ragsieve.evaluators.judges.offline.conversation import judged_question  # noqa: PLC0415
    from ragsieve.evaluators.records import Message
    from ragsieve.evaluators.testing import make_interaction

    history = (
        Message(role="user", content="Can I get a restricted license?"),
        Message(role="assistant", content="Maybe. Do you hold a New Jersey driver license?"),
    )
    asked = judged_question(make_interaction("Yes, I do.", chat_history=history))
    assert asked.source == "resolved"
    assert {"jersey", "driver"} & {w.lower() for w in asked.carried}


DISABILITY = (
    "Social Security pays disability benefits to people who cannot work because they have a "
    "medical condition expected to last at least one year. You qualify only if you are disabled.",
)
DISABILITY_HISTORY = (
    Message(role="user", content="Could my family get Social Security payments?"),
    Message(role="assistant", content="Possibly. Are you disabled?"),
)


async def test_a_reply_to_the_assistants_question_is_judged_against_that_question() -> None:
    """ "No, I am not." asks nothing: its passages are those of the question it answers."""
    r = await _judge(
        "context_relevance",
        query="No, I am not.",
        context=DISABILITY,
        answer="Then you would not get disability benefits.",
        chat_history=DISABILITY_HISTORY,
    )
    assert r.label == "relevant", r.explanation
    assert r.metadata["open_question"][0] == "Are you disabled?"


@pytest.mark.parametrize("turn", ["I need more information", "Can you tell me more?"])
async def test_a_request_to_go_on_is_judged_against_the_open_question(turn) -> None:
    history = (
        Message(role="user", content="How do I get a restricted use license?"),
        Message(role="assistant", content="The DMV issues restricted use licenses."),
    )
    r = await _judge(
        "context_relevance",
        query=turn,
        context=(
            "You must apply for a restricted use license in person at a DMV office; "
            "bring your suspension order and the application form.",
        ),
        chat_history=history,
    )
    assert r.label == "relevant", r.explanation
    assert r.metadata["open_question"] == ["How do I get a restricted use license?"]


async def test_a_new_question_is_not_judged_against_the_previous_one() -> None:
    """Passages for the previous question do not make a new question's context relevant."""
    history = (
        Message(role="user", content="How do I get a restricted use license?"),
        Message(role="assistant", content="Apply in person at a DMV office."),
    )
    r = await _judge(
        "context_relevance",
        query="What does the road test cost for motorcycles?",
        context=("You must apply for a restricted use license in person at a DMV office.",),
        chat_history=history,
    )
    assert r.label == "irrelevant", r.explanation
    assert "open_question" not in r.metadata


async def test_an_anaphor_is_read_with_the_names_the_assistant_just_said() -> None:
    history = (
        Message(role="user", content="What is the anti-terrorism law?"),
        Message(
            role="assistant",
            content="The Terrorism Act 2000 is the first of the general Terrorism Acts passed by "
            "the Parliament of the United Kingdom.",
        ),
    )
    turn = "What are the penalties for violating it?"
    asked = judged_question(make_interaction(turn, chat_history=history))
    assert asked.readings()[-1] == f"{turn} (terrorism act acts)"
    chunk = (
        "Penalties under the Terrorism Act 2000: membership of a proscribed organisation, "
        "10 years in prison or a fine or both.",
    )
    alone = await _judge("context_relevance", query=turn, context=chunk)
    followed = await _judge("context_relevance", query=turn, context=chunk, chat_history=history)
    assert followed.score > alone.score + 0.05, (followed.score, alone.score)


async def _weekend_reply(answer: str):
    """Answer relevance of ``answer`` to a follow-up of the passport conversation."""
    kw = {"query": "Can I also go there at the weekend?", "context": HOURS, "answer": answer}
    return await _judge("answer_relevance", **kw, chat_history=HISTORY)


@pytest.mark.parametrize(
    ("answer", "leaves"),
    [
        # a reply meant for another conversation: fluent, and about nothing said here
        ("Schools must deliver the textbooks by the seventh day of the term.", True),
        ("Yes, and on Saturdays until 13:00.", False),  # on topic, in the passages' words
        ("Yes, you can.", False),  # too short to tell
    ],
)
async def test_a_follow_up_reply_that_shares_nothing_with_the_conversation_fails(
    answer: str, leaves: bool
):
    r = await _weekend_reply(answer)
    assert bool(r.metadata.get("leaves_conversation")) is leaves
    if leaves:
        assert r.label == "irrelevant"
        assert "shares nothing with the conversation" in r.explanation


async def test_a_reply_in_another_language_is_not_read_as_leaving_the_conversation():
    r = await _weekend_reply("Sí, los sábados la oficina abre de 9:00 a 13:00.")
    assert "leaves_conversation" not in r.metadata


@pytest.mark.parametrize(
    ("turn", "source"),
    [
        ("What are the opening hours there on Saturdays?", "resolved"),  # "there": the office
        ("Is there a fee for the renewal of passports on Saturdays?", "typed"),  # it exists
        ("Hi there, is a fee charged for the renewal of passports on Saturdays?", "typed"),
    ],
)
def test_there_points_back_at_a_place_unless_it_says_something_exists(
    turn: str, source: str
) -> None:
    asked = judged_question(
        make_interaction(query=turn, context=HOURS, answer="x", chat_history=HISTORY)
    )
    assert asked.source == source
    assert ("madrid" in asked.text.casefold()) == (source == "resolved")


@pytest.mark.parametrize(
    ("turn", "leaves"),
    [
        ("Is it cheaper online?", False),  # asks whether and names too little to share words
        ("And where do I pay it?", True),  # "yes" answers no "where"
    ],
)
async def test_a_yes_or_no_to_an_elliptic_follow_up_is_not_read_as_leaving_the_conversation(
    turn: str, leaves: bool
):
    kw = {"query": turn, "context": HOURS, "chat_history": HISTORY}
    r = await _judge("answer_relevance", **kw, answer="Yes, 12 euros less through the website.")
    assert bool(r.metadata.get("leaves_conversation")) is leaves
    assert (r.label == "relevant") is not leaves


@pytest.mark.parametrize(
    ("answer", "leaves"),
    [
        # the fit passes it (courtesy and a plan fit a statement loosely): not said to leave
        ("Schools must deliver the textbooks by the seventh day of the term.", False),
        ("The office opens on Saturdays from 9:00 to 13:00.", False),
    ],
)
async def test_a_reply_to_a_statement_that_shares_nothing_is_recorded_as_leaving(
    answer: str, leaves: bool
):
    kw = {"query": "I will go on Saturday morning then.", "context": HOURS, "answer": answer}
    r = await _judge("answer_relevance", **kw, chat_history=HISTORY)
    assert r.metadata["turn_kind"] == "statement"
    assert bool(r.metadata.get("leaves_conversation")) is leaves
    assert ("shares nothing with the conversation" in r.explanation) is leaves


@pytest.mark.parametrize(
    ("turn", "answer"),
    [  # a yes or no does not carry a reply from another conversation through
        (
            "Does it cost the same for children?",
            "Yes. The bike must be reported within 24 hours or the rider pays 450 euros.",
        ),
        ("Is it cheaper online?", "Yes, schools must deliver the textbooks by the seventh day."),
        # a turn that names its own subject is judged as any follow-up is
        (
            "And is the Madrid passport office accessible by wheelchair?",
            "Yes. The bike must be reported within 24 hours or the rider pays 450 euros.",
        ),
    ],
)
async def test_a_yes_before_a_reply_from_another_conversation_does_not_excuse_it(
    turn: str, answer: str
):
    kw = {"query": turn, "context": HOURS, "chat_history": HISTORY}
    r = await _judge("answer_relevance", **kw, answer=answer)
    assert r.metadata.get("leaves_conversation") is True and r.label == "irrelevant"


async def test_a_reply_that_fits_a_statement_is_not_said_to_leave_the_conversation():
    kw = {"query": "I will go on Saturday morning then.", "context": HOURS}
    r = await _judge(
        "answer_relevance",
        **kw,
        chat_history=HISTORY,
        answer="Great, schools must deliver the textbooks by the seventh day of the term.",
    )
    assert r.label == "relevant" and "leaves_conversation" not in r.metadata
    assert "shares nothing" not in (r.explanation or "")
