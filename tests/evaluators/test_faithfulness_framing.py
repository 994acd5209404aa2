"""Faithfulness: how answers are framed is not what they claim (issue 44): "24/7", a reply's
"No, based on the passages, ...", the reader's inference ("we can see that"), advice to look
elsewhere, the answer pointing at its own options, a name built from two the sources write;
the facts stay strict."""

from __future__ import annotations

from ragsieve.evaluators.judges import get_judge
from ragsieve.evaluators.judges.offline.claims import parse_answer
from ragsieve.evaluators.judges.offline.text.spans import broken_spans
from ragsieve.evaluators.judges.offline.text.terms import number_values
from ragsieve.evaluators.testing import make_interaction

ORDERS = (
    "The types of restraining orders are: Emergency Protective Order: protects victims of abuse"
    " or stalking. An emergency protective order is available 24 hours a day from the police."
    " Civil Harassment Restraining Order: protects you from someone you have not dated.",
)


async def faithfulness(answer: str, context: tuple[str, ...], question: str):
    interaction = make_interaction(query=question, context=context, answer=answer)
    [result] = await get_judge("faithfulness").evaluate(interaction)
    return result


def reasons(result) -> str:
    return " | ".join(c["reason"] for c in result.metadata["claims"])


def test_24_7_is_the_24_hours_of_a_day_and_other_numbers_stay_values() -> None:
    assert number_values("Available 24/7 from the police") == {"24": {"24"}}
    assert set(number_values("open 24x7, 24/7/365")) == {"24"}
    assert set(number_values("1/2 cup, 124/7 and 7 days")) == {"1", "2", "124", "7"}


async def test_available_24_7_is_supported_by_24_hours_a_day() -> None:
    q = "What restraining orders are there?"
    ok = await faithfulness(
        "An Emergency Protective Order is available 24/7 from the police.", ORDERS, q
    )
    assert ok.label == "faithful", ok.explanation
    assert "7 is not in the context" not in reasons(ok)
    slip = await faithfulness(
        "An Emergency Protective Order is available for 7 days from the police.", ORDERS, q
    )
    assert slip.label != "faithful", slip.explanation
    assert "7 is not in the context" in reasons(slip)


def test_a_replys_no_keeps_its_clause_without_the_citation_of_the_passages() -> None:
    answer = (
        "No, based on the given passages, watching stories does not increase your score."
        " Based on the given passages, we can see that sending snaps raises it."
        " It can be inferred that opening snaps counts too."
    )
    assert parse_answer(answer).claims == [
        "No, watching stories does not increase your score.",
        "Sending snaps raises it.",
        "Opening snaps counts too.",
    ]


def test_advice_to_look_elsewhere_and_connectives_are_not_claims() -> None:
    parsed = parse_answer(
        "Patronage dividends are reported on Form 1099-PATR. It would be best to refer to the"
        " instructions on the 1040 form for guidance. On the other hand, interest is reported"
        " on Form 1099-INT, as described in passage 2."
    )
    assert parsed.claims == [
        "Patronage dividends are reported on Form 1099-PATR.",
        "Interest is reported on Form 1099-INT.",
    ]
    assert [why for _, why in parsed.set_aside] == ["about the answer"]


async def test_the_answer_pointing_at_its_own_options_is_no_value_to_find() -> None:
    context = (
        "A worn flag is burned in a peaceful manner and the ashes buried. The other method is"
        " to burn the flag yourself in a proper ceremony.",
    )
    q = "How do I dispose of a worn flag?"
    answer = (
        "You can either:\n\n1. Burn it in a peaceful manner and bury the ashes, or\n"
        "2. Burn it yourself in a proper ceremony.\n\nSo the answer is Option 1 or Option 2."
    )
    r = await faithfulness(answer, context, q)
    assert "is not in the context" not in reasons(r), r.explanation
    slip = await faithfulness("Burn it in a peaceful manner within 3 days.", context, q)
    assert "3 is not in the context" in reasons(slip)


def test_a_name_chained_from_two_the_sources_write_is_in_one_piece() -> None:
    sources = ["Bay Area Rapid Transit runs late. The Rapid Transit District board sets fares."]
    chained = "The Bay Area Rapid Transit District board sets the fares."
    assert broken_spans(chained, sources) == []
    merged = broken_spans("The Bay Area District board sets the fares.", sources)
    assert [b.span for b in merged] == ["Bay Area District"]


def test_two_names_sharing_one_word_are_not_one_name() -> None:
    # the wrong entity issue 44 asks to catch: "Jack Brown" and "Brown University" are two
    sources = ["Jack Brown studied at Harvard. Brown University is in Providence."]
    assert [b.span for b in broken_spans("He studied at Jack Brown University.", sources)] == [
        "Jack Brown University"
    ]


def test_a_short_second_year_and_a_decade_are_read_as_years() -> None:
    assert number_values("the Great Sejm of 1788–92")["92"] == {"92", "1792"}
    assert number_values("scores of 21-14") == {"21": {"21"}, "14": {"14"}}
    assert number_values("dates back to the 1940s") == {"1940s": {"1940s"}}


async def test_a_decade_is_supported_by_its_years_and_a_year_is_not_by_another() -> None:
    context = ("The 1946 Willys Jeep Station Wagon was launched a year before the 1947 truck.",)
    q = "When was the SUV invented?"
    ok = await faithfulness("The wagon-type SUV dates back to the 1940s.", context, q)
    assert "is not in the context" not in reasons(ok), ok.explanation
    slip = await faithfulness("The Willys Jeep Station Wagon was launched in 1949.", context, q)
    assert "1949 is not in the context" in reasons(slip)
    sejm = ("The constitution was adopted by the Four-Year Sejm (Great Sejm) of 1788–92.",)
    ranged = await faithfulness("The Great Sejm sat from 1788 to 1792.", sejm, "When?")
    assert "1792 is not in the context" not in reasons(ranged), ranged.explanation


def test_sentences_about_the_passages_and_pointers_to_them_are_not_claims() -> None:
    parsed = parse_answer(
        "The first passage discusses how to bake chicken, but does not mention frying."
        ' The answer to the question "Can I fry it?" is: No, frying is not covered.'
        " If you encounter any issues, you can refer to the passages for more guidance."
        " The Taff Vale Railway was not specifically mentioned in the given passages."
    )
    said = " ".join(parsed.claims).lower()
    assert "No, frying is not covered." in parsed.claims
    assert not any(w in said for w in ("passage", "mention", "refer", "answer to"))
    assert len(parsed.abstentions) == 1


def test_courtesy_in_a_chat_reply_is_not_a_claim_and_its_facts_stay() -> None:
    parsed = parse_answer(
        "Sure, no problem. Oh, that's too bad. I'm sorry to have to inform you that the"
        " permit has expired. Unfortunately, the office is closed on Sundays."
    )
    assert parsed.claims == ["The permit has expired.", "The office is closed on Sundays."]
    spanish = parse_answer(
        "Claro, sin problema. Lamento informarle que el permiso ha caducado. De hecho, la"
        " oficina cierra los domingos."
    )
    assert spanish.claims == ["El permiso ha caducado.", "La oficina cierra los domingos."]
    assert parse_answer("No problem is too small for us.").claims == [
        "No problem is too small for us."
    ]


async def test_a_replys_sure_answers_the_question_and_is_no_word_to_find() -> None:
    context = ("Veterans can register their small business with VA and get support for it.",)
    q = "Can I register my business with VA?"
    r = await faithfulness("Sure, you can register your business with VA.", context, q)
    assert r.label == "faithful", r.explanation
    assert "sure" not in reasons(r).lower()
    contexto = ("Los veteranos pueden registrar su pequeña empresa en la VA y recibir apoyo.",)
    for reply in ("Claro, puede registrar su empresa en la VA.", "Así es, puede registrarla."):
        r = await faithfulness(reply, contexto, "¿Puedo registrar mi empresa en la VA?")
        assert r.label == "faithful", r.explanation


def test_all_day_is_only_the_exact_token_and_dates_and_sizes_keep_their_numbers() -> None:
    assert set(number_values("abrió el 24/7/2023")) == {"24", "7", "2023"}
    assert set(number_values("a 24x36 poster and the 24/70 rule")) == {"24", "36", "70"}


async def test_framing_words_never_hide_a_value_of_the_same_sentence() -> None:
    context = ("The office is open until 8 pm. Items can be returned within 14 days.",)
    for answer, slip in [
        ("The office is open until 9 pm, and you can see the documents at the desk.", "9"),
        ("You can return items 60 days after purchase.", "60"),
        ("Option 2 lets you return items within 60 days.", "60"),
    ]:
        r = await faithfulness(answer, context, "When?")
        assert f"{slip} is not in the context" in reasons(r), (answer, r.explanation)


def test_what_only_looks_like_framing_stays_a_claim() -> None:
    kept = parse_answer(
        "The final document must be signed by both parties. An answer cannot be given until"
        " the committee meets on 5 May."
    )
    assert kept.claims == [
        "The final document must be signed by both parties.",
        "An answer cannot be given until the committee meets on 5 May.",
    ]
    assert kept.abstentions == []
