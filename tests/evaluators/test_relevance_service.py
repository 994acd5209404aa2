"""Answer relevance on service-desk replies: what answers a question there without repeating it."""

from __future__ import annotations

import pytest

from ragsieve.evaluators.judges import get_judge
from ragsieve.evaluators.judges.offline.relevance import _direct_answer
from ragsieve.evaluators.judges.offline.sources import wrong_source
from ragsieve.evaluators.judges.offline.text.question import answers_type, has_type
from ragsieve.evaluators.judges.offline.text.text import numbers
from ragsieve.evaluators.testing import make_interaction


async def _judged(question: str, answer: str, page: str | None) -> tuple[str, float, dict]:
    context = (page,) if page else ()
    [r] = await get_judge("answer_relevance").evaluate(
        make_interaction(query=question, context=context, answer=answer)
    )
    assert r.score is not None
    return r.label, r.score, r.metadata


async def relevance(question: str, answer: str) -> tuple[str, float]:
    label, score, _ = await _judged(question, answer, None)
    return label, score


@pytest.mark.parametrize(
    "text",
    [
        "The permit stays valid until the renovation work ends.",
        "We send the card in the second week after the date your form arrives.",
        "Refunds are paid on the first working day of the following month.",
        "La biblioteca se fundó en el siglo XIV.",
        "El abono sirve hasta que termine el curso escolar.",
        "Payments stop after the end of the school year.",
        "Benefits can start from the month before you apply.",
        "Le llamamos la semana después de la cita.",
    ],
)
def test_a_moment_told_by_an_event_or_a_span_answers_when(text: str) -> None:
    assert answers_type(text, "date")
    # a passage is not read that way: "hasta el" and "siglo" fill encyclopaedic text
    assert not has_type(text, "date")


@pytest.mark.parametrize(
    "text",
    ["Bring your passport and a recent photo.", "Hasta entonces nadie lo había escrito así."],
)
def test_text_without_a_moment_does_not_answer_when(text: str) -> None:
    assert not answers_type(text, "date")


async def test_a_reply_naming_the_moment_answers_the_when_question() -> None:
    label, _ = await relevance(
        "When will my parking permit be renewed?",
        "Your parking permit is renewed on the first working day of the following month.",
    )
    assert label == "relevant"


async def test_an_off_topic_reply_to_a_when_question_still_fails() -> None:
    label, _ = await relevance(
        "When will my parking permit be renewed?",
        "Dog owners must register their animals at the veterinary office.",
    )
    assert label == "irrelevant"


@pytest.mark.parametrize(
    ("question", "answer"),
    [
        ("How do I reach the helpline?", "Once you make this choice, you can't switch programs."),
        ("Can I renew my permit in any other office?", "Keep reading below to learn more."),
        ("Do I need my bank details?", "Employer names and dates for the past two years."),
    ],
)
async def test_a_short_sentence_with_a_capital_or_a_number_does_not_answer_how_or_can_i(
    question: str, answer: str
) -> None:
    label, _ = await relevance(question, answer)
    assert label == "irrelevant"


@pytest.mark.parametrize(
    ("question", "answer"),
    [
        ("I get a pension, can I still use the estimator?", "Yes you can."),
        ("¿Puedo pagar con tarjeta?", "Sí, en todas las oficinas."),
        ("Can I pay the fee when I arrive?", "Yes, you can."),
    ],
)
async def test_yes_or_no_answers_a_question_that_asks_whether(question: str, answer: str) -> None:
    label, _ = await relevance(question, answer)
    assert label == "relevant"
    label, _ = await relevance("How do I pay the fee?", answer)
    assert label == "irrelevant"


async def test_a_short_name_still_answers_a_which_question() -> None:
    label, _ = await relevance("Which office issues the permit?", "The Mobility Office.")
    assert label == "relevant"


@pytest.mark.parametrize(
    ("text", "found"),
    [
        ("Once you apply, we write to you within a week.", set()),
        ("El plazo es de once meses.", {"11"}),
        ("Renew once every 10 years.", {"10"}),  # too short to tell its language
        ("Once meses.", {"11"}),
    ],
)
def test_once_is_eleven_only_in_spanish(text: str, found: set[str]) -> None:
    assert numbers(text) == found


async def evasive_share(question: str, answer: str) -> float:
    [r] = await get_judge("answer_relevance").evaluate(
        make_interaction(query=question, context=(), answer=answer)
    )
    return float(r.metadata["evasive"])


async def test_a_permission_granted_to_the_asker_is_not_a_hedge() -> None:
    q = "Can I change the address on my parking permit?"
    assert await evasive_share(q, "You may change it online or at any district office.") == 0.0
    # a "may" about what happens, not about what the asker can do, still hedges
    assert await evasive_share(q, "The change may take effect within a few weeks.") == 1.0


_HELP_PAGE = (
    "Housing benefit\nHow do I contact the housing benefit team?\nCall 0800 123 456 on weekdays "
    "between 9 and 5, or write to the town hall.\nParking permits\n"
    "Residents renew their permit every spring at the front desk."
)
_HELP_PAGE_ES = (
    "Ayuda al alquiler\n¿Cómo contacto con el equipo de ayudas al alquiler?\nLlame al 900 123 456 "
    "de lunes a viernes de 9 a 17 o escriba al ayuntamiento.\nPermisos de aparcamiento\n"
    "Los vecinos renuevan el permiso cada primavera en el mostrador."
)


@pytest.mark.parametrize(
    ("page", "question", "answer", "title"),
    [
        (
            _HELP_PAGE,
            "How can I reach the housing benefit people?",
            "Call 0800 123 456 on weekdays between 9 and 5, or write to the town hall.",
            "How do I contact the housing benefit team?",
        ),
        (
            _HELP_PAGE_ES,
            "¿Cómo hablo con los de la ayuda al alquiler?",
            "Llame al 900 123 456 de lunes a viernes de 9 a 17 o escriba al ayuntamiento.",
            "¿Cómo contacto con el equipo de ayudas al alquiler?",
        ),
    ],
)
async def test_an_answer_from_the_section_titled_by_the_question_addresses_it(
    page: str, question: str, answer: str, title: str
) -> None:
    label, with_page, meta = await _judged(question, answer, page)
    _, without_page, bare = await _judged(question, answer, None)
    assert label == "relevant" and meta["section_title"] == title
    assert with_page > without_page and "section_title" not in bare


async def test_a_title_only_counts_when_it_matches_the_question() -> None:
    # the reply comes from the parking section: its title says nothing about reaching the team
    _, score, meta = await _judged(
        "How can I reach the housing benefit people?",
        "Residents renew their permit every spring at the front desk.",
        _HELP_PAGE,
    )
    _, bare, _ = await _judged(
        "How can I reach the housing benefit people?",
        "Residents renew their permit every spring at the front desk.",
        None,
    )
    assert "section_title" not in meta and score == pytest.approx(bare)


async def test_without_the_page_a_reply_in_other_words_is_not_credited() -> None:
    label, _, _ = await _judged(
        "How can I reach the housing benefit people?",
        "Call 0800 123 456 on weekdays between 9 and 5, or write to the town hall.",
        None,
    )
    assert label == "irrelevant"


async def test_a_section_titled_by_the_question_answers_it_in_its_own_form() -> None:
    page = (
        "Work-study jobs\nWhen can I work?\nYou can work during the term or between terms, up "
        "to twenty hours a week.\nHow am I paid?\nWe pay you by direct deposit."
    )
    question = "When am I allowed to work?"
    answer = "You can work during the term or between terms."
    label, _, meta = await _judged(question, answer, page)
    assert label == "relevant" and meta["type_found"]
    assert meta["section_title"] == "When can I work?"
    _, _, bare = await _judged(question, answer, None)
    assert not bare["type_found"]  # on its own the reply names no moment


LICENCE_PAGES = (
    "Suspended licence. If your licence is suspended and your insurance lapses again, the"
    " suspension is extended and you must file a new proof of insurance with the DMV.",
    "Driving schools. Once you are certified as a driving school instructor, you can get an"
    " additional certificate naming another school.",
)


async def test_an_answer_taken_from_the_passage_that_does_not_answer_fails() -> None:
    question = "What happens if my licence is suspended and my insurance lapses again?"
    wrong = "Once you are certified as a driving school instructor, you can get another school."
    [r] = await get_judge("answer_relevance").evaluate(
        make_interaction(query=question, context=LICENCE_PAGES, answer=wrong)
    )
    assert r.label == "irrelevant", r.explanation
    assert r.metadata["wrong_source"]["taken_from"] != r.metadata["wrong_source"]["answering"]
    assert "which does not hold what is asked" in r.explanation
    right = "The suspension is extended and you must file a new proof of insurance."
    [r] = await get_judge("answer_relevance").evaluate(
        make_interaction(query=question, context=LICENCE_PAGES, answer=right)
    )
    assert r.label == "relevant" and "wrong_source" not in r.metadata


def test_an_answer_from_one_passage_when_none_clearly_answers_is_not_a_wrong_source() -> None:
    question = "How do I renew my fishing permit?"
    assert wrong_source(question, LICENCE_PAGES[1], LICENCE_PAGES) is None


@pytest.mark.parametrize(
    ("text", "defines"),
    [
        ("He sued Jack Thompson, a disbarred attorney, over the ads.", True),  # an apposition
        ("The yuan, known as the renminbi abroad, is issued in Beijing.", True),
        ("He claimed harassment by various means.", False),
        ("In 2005, a letter was faxed to the police chief.", False),  # not the subject
        ("For Jack Thompson, an appeal was filed.", False),  # an opening phrase
    ],
)
def test_an_apposition_or_known_as_defines_the_subject(text: str, defines: bool) -> None:
    assert has_type(text, "definition", "What was the Jack Thompson affair?") == defines


@pytest.mark.parametrize(
    ("question", "reply"),
    [
        ("List the documents I need for the NIE.", "Sure! Here they are."),  # courtesy
        ("Puedo pagar con tarjeta?", "Si pagas con tarjeta, hay recargo."),  # "si" is "if"
        ("Is there a fee?", "No information is given about fees."),
        ("Como pido cita?", "Sí."),  # a "how" question, unaccented
    ],
)
def test_what_only_looks_like_yes_or_no_is_not_a_direct_answer(question: str, reply: str) -> None:
    assert not _direct_answer([reply], None, question)


@pytest.mark.parametrize(
    ("question", "reply"),
    [
        ("Can I join the work-study program?", "No, we don't need that kind of information."),
        ("Is there a fee for the permit?", "Yes, the library opens at noon on Sundays."),
    ],
)
def test_a_yes_or_no_that_goes_on_about_something_else_does_not_answer(
    question: str, reply: str
) -> None:
    assert not _direct_answer([reply], None, question)


@pytest.mark.parametrize(
    ("question", "reply"),
    [
        ("Can I take part in the work-study program?", "Yes, if you are enrolled in a program."),
        ("Is there a fee?", "No, the fee is waived for veterans."),
        ("Can I pay by card?", "Yes, you can."),
    ],
)
def test_a_yes_or_no_on_the_question_answers_it(question: str, reply: str) -> None:
    assert _direct_answer([reply], None, question)


@pytest.mark.parametrize(
    ("question", "reply"),
    [
        ("Can I bring my dog?", "Yes, pets are welcome on a leash."),
        ("¿Aceptan perros?", "Sí, las mascotas son bienvenidas con correa."),
        ("Can I pay by card?", "Yes, we accept Visa and Mastercard."),
    ],
)
async def test_a_yes_or_no_that_goes_on_in_other_words_still_answers(
    question: str, reply: str
) -> None:
    assert not _direct_answer([reply], None, question)  # no shared word, no cosine given
    _, _, meta = await _judged(question, reply, None)
    assert _direct_answer([reply], None, question, meta["cosine"])  # near in meaning
    label, _ = await relevance(question, reply)
    assert label == "relevant"


def test_a_question_verb_is_not_what_a_yes_or_no_must_go_on_about() -> None:
    reply = "No, we don't need that kind of information."
    assert not _direct_answer([reply], None, "Do I need to bring my passport?")


ROAMING = (
    "Roaming in the USA (Zone 2) costs 6 EUR per day for 1 GB on Postpaid Plus and is included"
    " at no extra cost on Postpaid Pro."
)


@pytest.mark.parametrize(
    ("question", "answer"),
    [
        (
            "How much does roaming in the USA cost on the Postpaid Pro plan?",
            "On Postpaid Pro, roaming in the USA is included at no extra cost.",
        ),
        (
            "¿Cuánto cuesta el roaming en Estados Unidos con el plan Pospago Pro?",
            "Con Pospago Pro, el roaming en Estados Unidos está incluido sin coste extra.",
        ),
        ("How much is the setup fee for a Pro account?", "The setup is free for Pro accounts."),
    ],
)
async def test_a_quantity_of_nothing_answers_how_much(question: str, answer: str) -> None:
    # "free" and "at no extra cost" are the amount asked for, not an answer that gives none
    label, _, meta = await _judged(question, answer, ROAMING)
    assert label == "relevant", meta
    assert answers_type(answer, "number") and not has_type(answer, "number", question)


@pytest.mark.parametrize(
    "answer",
    [
        "It costs nothing.",
        "No cuesta nada.",
        "None.",
        "Es gratis.",
        "It's free.",
        # the short ways a reply says it (found in review)
        "Free.",
        "¡Gratis!",
        "No cost.",
        "There is no charge.",
        "No tiene ningún coste.",
        "Totalmente gratis.",
        "The app is free to download.",
    ],
)
def test_nothing_stated_as_the_amount_gives_the_number(answer: str) -> None:
    assert answers_type(answer, "number")


@pytest.mark.parametrize(
    "answer",
    [
        "Roaming in the USA is available on Postpaid Pro.",
        "Pro includes roaming.",
        # "free" and "none" that state no amount (found in review)
        "You can start with a free trial of the Pro plan.",
        "The Pro plan gives you unlimited calls. Feel free to ask if you need anything else.",
        "El plan Pro incluye llamadas ilimitadas sin ningún límite.",
        "Pro gives you free minutes on weekends.",
        "Hands-free calling is included.",
        "None of our plans include that.",
        "You are free to cancel at any time.",
    ],
)
def test_a_reply_without_an_amount_still_gives_no_number(answer: str) -> None:
    assert not answers_type(answer, "number")


async def test_a_free_trial_does_not_answer_the_price() -> None:
    label, _, _ = await _judged(
        "How much does the Pro plan cost per month?",
        "You can start with a free trial of the Pro plan.",
        ROAMING,
    )
    assert label == "irrelevant"
