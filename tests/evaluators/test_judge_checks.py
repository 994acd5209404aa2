"""Offline faithfulness: entity-span integrity and two-option question checks (hand-made cases)."""

from __future__ import annotations

import pytest

from ragsieve.evaluators.judges import get_judge
from ragsieve.evaluators.judges.offline.text.choice import check_choice
from ragsieve.evaluators.judges.offline.text.spans import broken_spans, name_spans
from ragsieve.evaluators.testing import make_interaction


async def faith(query: str, context: str, answer: str):
    [r] = await get_judge("faithfulness").evaluate(
        make_interaction(query=query, context=(context,), answer=answer)
    )
    return r


ROLE_CTX = (
    "Marla Quint is a character of the radio drama Low Tide. "
    "She was voiced by actress Dana Lee Forbes during the first two seasons."
)


@pytest.mark.parametrize(
    ("text", "spans"),
    [
        ("Marla was voiced by Dana Forbes.", ["Dana Forbes"]),
        ("The Harbor Guild hired Theo van Wyk.", ["Harbor Guild", "Theo van Wyk"]),
        ("Ana Ruiz's brother, Tomas Ruiz, sang.", ["Ana Ruiz", "Tomas Ruiz"]),
        ("Yes, Ilse and Oskar are painters.", []),
    ],
)
def test_name_spans_are_runs_of_capitalised_words(text, spans):
    assert name_spans(text) == spans


def test_a_shortened_or_merged_name_is_reported_with_the_closest_source_span():
    [broken] = broken_spans("Marla was voiced by Dana Forbes.", [ROLE_CTX])
    assert broken.reason == "'Dana Forbes' is not in the context (closest: 'Dana Lee Forbes')"
    assert broken_spans("Marla was voiced by Dana Lee Forbes.", [ROLE_CTX]) == []


def test_a_shorter_alias_the_source_uses_is_fine():
    ctx = 'Theodore "Ted" Varga (born 1950) is a Hungarian painter.'
    assert broken_spans("Ted Varga is a painter.", [ctx]) == []
    assert [b.span for b in broken_spans("The painter Theodore Varga exhibited.", [ctx])] == [
        "Theodore Varga"
    ]


def test_names_listed_with_y_are_checked_one_by_one():
    ctx = "Entre sus ríos están el Mamoré, el Río Grande y, al norte, el Beni y el Madre de Dios."
    # each name is written in the sources, only not side by side
    assert broken_spans("Destacan el Río Grande y Madre de Dios.", [ctx]) == []
    # a part the sources never write in one piece is still reported
    [broken] = broken_spans("Destacan el Río Beni y Madre de Dios.", [ctx])
    assert broken.span == "Río Beni y Madre de Dios"
    # "y" inside one name ("Ramón y Cajal") stays one name when the sources write it so
    assert broken_spans("Lo fundó Ramón y Cajal.", ["El instituto lo fundó Ramón y Cajal."]) == []


def test_a_name_the_sources_abbreviate_in_part_is_written():
    ctx = (
        "Insurers must be licensed by the NYS Department of Financial Services. "
        "New Jersey and New York State set their own rules."
    )
    said = "Insurers are licensed by the New York State Department of Financial Services."
    assert broken_spans(said, [ctx]) == []
    # initials that stand for other words do not make a name written
    other = "Insurers are licensed by the New Jersey State Department of Financial Services."
    [broken] = broken_spans(other, [ctx])
    assert broken.span == "New Jersey State Department of Financial Services"


async def test_acronyms_written_with_dots_or_in_the_plural_are_found():
    ctx = (
        "An enhanced driver license or non-driver ID and a valid U.S. passport are already "
        "REAL ID compliant."
    )
    q = "Which documents are REAL ID compliant?"
    said = "Enhanced non-driver IDs and valid {} passports are REAL ID compliant."
    ok = await faith(q, ctx, said.format("US"))
    assert ok.label == "faithful", ok.explanation
    bad = await faith(q, ctx, said.format("UK"))
    assert bad.label != "faithful" and "uk" in bad.explanation.lower()


async def test_broken_name_makes_the_claim_unsupported():
    q = "Which actress voiced Marla Quint in Low Tide?"
    bad = await faith(q, ROLE_CTX, "Marla Quint was voiced by Dana Forbes.")
    good = await faith(q, ROLE_CTX, "Marla Quint was voiced by Dana Lee Forbes.")
    assert bad.label == "unfaithful" and good.label == "faithful"
    assert "'Dana Forbes' is not in the context (closest: 'Dana Lee Forbes')" in bad.explanation
    assert bad.metadata["claims"][0]["supported"] is False


NOVELS = (
    "The Amber Road is a novel by Petra Lund set in Oslo during the war. "
    "Nightfall Harbor is a novel by Anders Moe set in Lisbon among dock workers."
)
NOVEL_Q = "Which novel is set in Lisbon, The Amber Road or Nightfall Harbor?"


async def test_picking_the_option_the_context_does_not_link_to_the_property():
    bad = await faith(NOVEL_Q, NOVELS, "The Amber Road is a novel set in Lisbon.")
    good = await faith(NOVEL_Q, NOVELS, "Nightfall Harbor is a novel set in Lisbon.")
    assert bad.label == "unfaithful" and good.label == "faithful"
    assert "links the question's terms to Nightfall Harbor, not The Amber Road" in bad.explanation


def test_comparative_two_option_questions_are_left_alone():
    q = "Which novel has more chapters, The Amber Road or Nightfall Harbor?"
    assert check_choice(q, "The Amber Road has more chapters.", NOVELS) is None


PAINTERS = (
    "Ilse Varn (born 1931) is a Norwegian painter known for seascapes. "
    "Oskar Dahl is a Norwegian painter and printmaker from Bergen."
)
BOTH_Q = "Are both Ilse Varn and Oskar Dahl Norwegian painters?"


async def test_denying_what_the_context_states_for_both_options():
    bad = await faith(BOTH_Q, PAINTERS, "No, only Ilse Varn is a Norwegian painter.")
    good = await faith(BOTH_Q, PAINTERS, "Yes, both are Norwegian painters.")
    assert bad.label == "unfaithful" and good.label == "faithful"
    assert "states what is asked for both Ilse Varn and Oskar Dahl" in bad.explanation


def test_denial_is_not_a_clash_when_the_context_differs_between_options():
    ctx = PAINTERS.replace("Oskar Dahl is a Norwegian painter", "Oskar Dahl is a Danish sculptor")
    assert check_choice(BOTH_Q, "No, only Ilse Varn is a Norwegian painter.", ctx) is None
    negated = PAINTERS.replace("Oskar Dahl is a", "Oskar Dahl is not a")
    assert check_choice(BOTH_Q, "No, only Ilse Varn is.", negated) is None
