"""Faithfulness binds a rate to what it is per (issue 44): "€6 per wash" is not "€6 per month",
and "$12 per month" is not "$12 per seat per month"; a claim that leaves a divisor out or words it
another way is no conflict."""

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
        # the context's period kept, a divisor added: per seat multiplies the price
        (
            SEATS,
            "How much do shared dashboards cost?",
            "Shared dashboards cost $12 per seat per month.",
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
