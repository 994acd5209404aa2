"""Term matching across locales, typos and languages (judges/terms.py)."""

from __future__ import annotations

import pytest

from ragsieve.evaluators.judges.offline.text.terms import (
    CANON,
    TermIndex,
    all_values,
    key,
    kin,
    number_values,
)
from ragsieve.evaluators.judges.offline.text.text import fold


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("711,988 inhabitants", "711 988 habitantes"),
        ("711.988 habitantes", "711,988 inhabitants"),
        ("56,2 % eran católicos", "56.2% were Catholic"),
        ("más de 14 000 artículos", "over 14,000 items"),
        ("seis veces ganadora", "six-time winner"),
        ("1.234,5 km", "1,234.5 km"),
    ],
)
def test_one_number_written_the_spanish_or_the_english_way(a: str, b: str) -> None:
    assert all_values(a) & all_values(b)


@pytest.mark.parametrize(
    ("a", "b"),
    [("711,988", "711,989"), ("56,2 %", "65.2%"), ("seis", "siete"), ("14 000", "1,400")],
)
def test_different_numbers_stay_different(a: str, b: str) -> None:
    assert not all_values(a) & all_values(b)


def test_ordinary_words_are_not_read_as_numbers() -> None:
    # "once" (eleven in Spanish), "second", "mil" are ordinary words too often
    assert number_values("I tried once; the second time it worked") == {}


@pytest.mark.parametrize(
    ("en", "es"),
    [
        ("february", "febrero"),
        ("tuesday", "martes"),
        ("kilometres", "kilometros"),
        ("euros", "euro"),
    ],
)
def test_months_weekdays_units_and_currencies_share_one_key(en: str, es: str) -> None:
    assert key(en) == key(es) == CANON[en]


def test_a_misspelt_word_is_found_and_an_unrelated_one_is_not() -> None:
    index = TermIndex(["The recycling is picked up on Tuesdays.", "Glass goes in the green bin."])
    typo = index.find(fold("recyclnig"))
    assert typo.via == "typo" and typo.strength == pytest.approx(0.9) and typo.sentences == {0}
    assert index.find("glass").via == "exact" and index.find("glass").sentences == {1}
    assert index.find("football").strength == 0.0
    assert index.find("martes").sentences == {0}  # the weekday, whatever the language


def test_translations_are_found_only_when_asked() -> None:
    spanish = ["El ejército alemán volvió a ocupar Renania en 1936."]
    assert TermIndex(spanish).find("army").strength == 0.0
    found = TermIndex(spanish, cross_lingual=True).find("army")
    assert found.via == "translation" and found.strength >= 0.6 and found.sentences == {0}
    assert TermIndex(spanish, cross_lingual=True).find("banana").strength == 0.0


def test_swapped_neighbouring_letters_are_a_misspelling_only_in_a_question() -> None:
    index = TermIndex(["Heinz was founded by Henry J. Heinz.", "Keep your personalized plates."])
    for typed, meant in (("heniz", "heinz"), ("paltes", "plat")):
        assert index.find(typed).via == "none"  # a claim's word: the ratio alone decides
        found = index.find(typed, transposed=True)
        assert (found.via, found.found) == ("typo", meant)
    assert index.find("trial", transposed=True).via == "none"


@pytest.mark.parametrize(
    ("typed", "meant"),
    [("faud", "fraud"), ("aply", "apply"), ("appply", "apply"), ("paaises", "pais")],
)
def test_a_letter_dropped_or_doubled_in_an_unknown_word_is_a_misspelling(
    typed: str, meant: str
) -> None:
    index = TermIndex(["Protect yourself from fraud; the easiest way.", "Apply: Países Bajos."])
    assert index.find(typed).via == "none"  # a claim's word: no
    found = index.find(typed, transposed=True)
    assert (found.via, found.found) == ("typo", meant)
    assert index.find(typed, transposed=True, indel=False).via == "none"  # a name: no


@pytest.mark.parametrize(
    ("typed", "text"),
    [
        ("plan", "A plane."),
        ("coast", "The cost."),
        ("copay", "Bring a copy of your card."),  # rare, but a word
        ("stent", "We sent the letter."),
        ("pates", "Keep your plates."),
        ("cuota", "La cota del terreno."),
    ],
)
def test_a_known_word_one_letter_from_another_is_not_a_misspelling(typed: str, text: str) -> None:
    assert TermIndex([text]).find(typed, transposed=True).via == "none"


async def test_a_question_with_swapped_letters_finds_its_chunk() -> None:
    from ragsieve.evaluators.judges import get_judge
    from ragsieve.evaluators.testing import make_interaction

    context = ("Heinz was founded by Henry J. Heinz, who began packing foodstuffs in 1869.",)
    judge = get_judge("context_relevance")
    [typed] = await judge.evaluate(make_interaction("Who founded Heniz?", context, "Henry Heinz."))
    [right] = await judge.evaluate(make_interaction("Who founded Heinz?", context, "Henry Heinz."))
    assert typed.label == right.label == "relevant"


@pytest.mark.parametrize(
    ("a", "b"),
    [("chinese", "china"), ("japanese", "japan"), ("italian", "italy"), ("mexicano", "mexico")],
)
def test_a_place_and_its_people_are_kin(a: str, b: str) -> None:
    assert kin(a, b) and kin(b, a)


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("roman", "romania"),
        ("austrian", "australia"),
        ("china", "chinatown"),
        ("indiana", "india"),  # a name of its own
        ("paulina", "paul"),
    ],
)
def test_two_places_or_two_peoples_are_not_kin(a: str, b: str) -> None:
    assert not kin(a, b)


def test_a_name_is_found_as_its_place_and_a_word_is_not() -> None:
    index = TermIndex(["The People's Bank of China issued the new notes."])
    assert index.find_kin("chinese").via == "kin"
    assert not index.find_kin("french").strength


@pytest.mark.parametrize(
    ("question", "dropped", "kept"),
    [
        ("What else shold I do to prepare my application?", "shold", "applic"),
        ("Waht documents do I bring?", "waht", "documen"),
        ("How do I protect myeslf from fraud?", "myeslf", "fraud"),
        ("Is it shouuld be signed?", "shouuld", "sign"),
    ],
)
def test_a_misspelt_function_word_is_not_a_question_term(
    question: str, dropped: str, kept: str
) -> None:
    from ragsieve.evaluators.judges.offline.context import question_terms

    terms = question_terms(question)
    assert kept in terms and all(word != dropped for word, _ in terms.values())


@pytest.mark.parametrize(
    ("question", "kept"),
    [
        ("Does the bread contain wheat?", "wheat"),  # "what" with a letter added, but a word
        ("Where is the ticket booth?", "booth"),
        ("Is Hank Moore the case manager?", "moore"),  # a name
        ("¿Venden una cesta de ostras?", "ostra"),  # "otras" with a letter added, a plural
    ],
)
def test_a_real_word_near_a_function_word_stays_a_question_term(question: str, kept: str) -> None:
    from ragsieve.evaluators.judges.offline.context import question_terms

    assert kept in question_terms(question)
