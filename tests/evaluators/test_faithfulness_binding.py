"""Faithfulness: a value is supported only where the context gives it for the claim's entity
(issue 44: the Pro plan's limit given as the Starter plan's)."""

from __future__ import annotations

import pytest
from judged import faithfulness

from ragsieve.evaluators.judges.offline.binding import context_units, find_conflict

PLANS = (
    "Starter plan\nThe Starter plan allows 120 requests per minute and includes 5 GB of storage.",
    "Pro plan\nThe Pro plan allows 600 requests per minute and includes 50 GB of storage.",
)
TABLE = (
    "Plans and limits\n\n| Plan | Price per month | Requests per minute |\n|---|---|---|\n"
    "| Starter | $10 | 120 |\n| Pro | $25 | 600 |\n| Enterprise | $90 | 3000 |",
)
PRICES = (
    "Pricing:\n- Basic: $9 per month, one user.\n- Team: $29 per month, up to ten users.\n"
    "- Business: $79 per month, unlimited users.",
)
PEOPLE = (
    "Alice Moreno joined the company in 2015 and leads the data team. Bob Keller joined in"
    " 2019 and runs customer support.",
)


@pytest.mark.parametrize(
    ("context", "question", "wrong", "right", "named"),
    [
        (
            PLANS,
            "How many requests per minute does the Starter plan allow?",
            "It allows 600 requests per minute.",
            "It allows 120 requests per minute.",
            "600 is given for Pro, the claim is about Starter; Starter: 120",
        ),
        (
            TABLE,
            "How much does the Starter plan cost?",
            "The Starter plan costs $25 per month.",
            "The Starter plan costs $10 per month.",
            "25 is given for Pro, the claim is about Starter; Starter: 10",
        ),
        (
            PRICES,
            "What is the price of the Team plan?",
            "It is $79 per month.",
            "It is $29 per month.",
            "79 is given for Business, the claim is about Team; Team: 29",
        ),
        (
            PEOPLE,
            "When did Alice join the company?",
            "Alice joined in 2019.",
            "Alice joined in 2015.",
            "2019 is given for Bob, the claim is about Alice; Alice: 2015",
        ),
    ],
    ids=["plan-chunks", "table-row", "price-list", "per-person"],
)
async def test_a_value_given_for_another_entity_is_flagged_and_named(
    context, question, wrong, right, named
):
    bad = await faithfulness(question, context, wrong)
    assert bad.label == "unfaithful"
    assert named in bad.explanation
    [claim] = bad.metadata["claims"]
    assert claim["contradiction"] and claim["value_conflict"]["value"] in wrong
    good = await faithfulness(question, context, right)
    assert good.label == "faithful", good.explanation
    assert not any(c.get("value_conflict") for c in good.metadata["claims"])


async def test_a_claim_that_names_the_other_entity_is_bound_to_it():
    r = await faithfulness(
        "How many requests per minute does the Starter plan allow?",
        PLANS,
        "The Starter plan allows 120 requests per minute; the Pro plan allows 600.",
    )
    assert r.label == "faithful", r.explanation
    assert not any(c.get("value_conflict") for c in r.metadata["claims"])


def test_a_value_given_for_both_entities_binds_to_either():
    units = context_units(["Starter and Pro both allow 600 requests per minute."])
    assert (
        find_conflict("It allows 600 requests per minute.", "What does Starter allow?", units)
        is None
    )


def test_the_shared_word_plan_binds_nothing_but_the_name_does():
    units = context_units(list(PLANS))
    conflict = find_conflict(
        "The Starter plan includes 50 GB of storage.", "How much storage comes with Starter?", units
    )
    assert conflict is not None
    assert (conflict.value, conflict.subject, conflict.rival) == ("50", "Starter", "Pro")
    assert conflict.subject_values == ("5",)


def test_without_a_competing_value_for_the_subject_nothing_is_said():
    # the context gives the Starter plan no request limit at all: no conflict to name (the
    # value may be general); the other checks judge the claim
    units = context_units(
        [
            "Starter plan\nThe Starter plan includes 5 GB of storage.",
            "Pro plan\nThe Pro plan allows 600 requests per minute.",
        ]
    )
    assert find_conflict("It allows 600 requests per minute.", "Starter limits?", units) is None
