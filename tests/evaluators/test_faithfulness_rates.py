"""Faithfulness binds a rate to what it is per (issue 44): "€6 per wash" is not "€6 per month",
and "$12 per week" is not "$12 per month"; a claim that leaves a divisor out, adds one, orders
them otherwise or words them another way is no conflict."""

from __future__ import annotations

import pytest
from judged import faithfulness

LAUNDRY = (
    "Extras at the campsite:\n- Washing machine: €6 per wash\n- Bike hire: €15 per day\n"
    "- Electric hook-up: €4 per night",
)
LAVANDERIA = (
    "Servicios del camping:\n- Lavadora: 6 € por lavado\n- Alquiler de bicicleta: 15 € al día\n"
    "- Toma eléctrica: 4 € por noche",
)
SEATS = (
    "Add-ons for the Chartly plan:\n- Shared dashboards: $12 per month\n"
    "- Data connectors: $3 per seat per month",
)


@pytest.mark.parametrize(
    ("context", "question", "wrong", "right", "named"),
    [
        (
            LAUNDRY,
            "How much is the washing machine?",
            "The washing machine costs €6 per month.",
            "The washing machine costs €6 per wash.",
            "per wash",
        ),
        (
            LAVANDERIA,
            "¿Cuánto cuesta alquilar una bicicleta?",
            "Alquilar una bicicleta cuesta 15 € por hora.",
            "Alquilar una bicicleta cuesta 15 € al día.",
            "al día",
        ),
        (
            SEATS,
            "How much do shared dashboards cost?",
            "Shared dashboards cost $12 per week.",
            "Shared dashboards cost $12 per month.",
            "per month",
        ),
    ],
)
async def test_a_rate_given_per_another_thing_is_flagged(context, question, wrong, right, named):
    bad = await faithfulness(question, context, wrong)
    assert bad.label == "unfaithful", bad.explanation
    assert named in bad.explanation
    good = await faithfulness(question, context, right)
    assert good.label == "faithful", good.explanation
    assert not any(c.get("value_conflict") for c in good.metadata["claims"])


async def test_a_left_out_divisor_or_another_wording_is_no_rate_conflict():
    """ "$3 per month" leaves "per seat" out and "per user per month" words it another way: the
    rate rule says nothing of either; "€4 per hour" for "€4 per night" it flags."""
    question = "How much are data connectors?"
    for answer in ("Data connectors cost $3 per month.", "Data connectors cost $3 monthly."):
        result = await faithfulness(question, SEATS, answer)
        assert not any(c.get("value_conflict") for c in result.metadata["claims"]), answer
    hook_up = await faithfulness(
        "What does the electric hook-up cost?", LAUNDRY, "The electric hook-up costs €4 per hour."
    )
    assert hook_up.label == "unfaithful" and "per night" in hook_up.explanation


@pytest.mark.parametrize(
    ("context", "answer"),
    [  # faithful paraphrases an independent review saw flagged when divisors were compared whole
        (
            "El plan Pro cuesta 12 € por usuario y mes.",
            "El plan Pro cuesta 12 € al mes por usuario.",
        ),
        (
            "The Pro plan costs $8 per user, billed monthly.",
            "The Pro plan costs $8 per user per month.",
        ),
        (
            "The Pro plan costs $12 per month, per user.",
            "The Pro plan costs $12 per user per month.",
        ),
        (
            "A double room costs €80 per person and night.",
            "A double room costs €80 per person per night.",
        ),
        ("The Pro plan costs $12 per month.", "The Pro plan costs $12/mo."),
        (
            "Each key allows 100 requests/min per key.",
            "Each key allows 100 requests per minute per key.",
        ),
        (
            "| Plan | Precio por usuario |\n|---|---|\n| Pro | 12 € al mes |",
            "Pro cuesta 12 € por usuario al mes.",
        ),
    ],
)
async def test_divisors_ordered_or_abbreviated_otherwise_are_no_rate_conflict(context, answer):
    question = "¿Cuánto cuesta?" if "€" in answer and "room" not in answer else "How much is it?"
    r = await faithfulness(question, (context,), answer)
    assert not any(c.get("value_conflict") for c in r.metadata["claims"]), r.explanation
