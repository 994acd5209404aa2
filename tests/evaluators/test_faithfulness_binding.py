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


CARDS = (
    "The Silver card comes with travel insurance and airport lounge access. The Silver annual"
    " fee is 30 EUR, and Silver includes 2 lounge visits per year.",
    "The Gold card adds car rental cover to Silver. Its annual fee is 90 EUR. Gold has no"
    " foreign transaction fee.",
)
GYM = (
    "Prices (EUR):\n| Item | Basic | Plus | Premium |\n"
    "| Membership | 20 | 35 | 60 |\n| Personal trainer session | 40 | 25 | 15 |",
)
SPORT_ES = (
    "Límites por plan (EUR):\n| Concepto | Básico | Plus | Premium |\n"
    "| Reembolso de fisioterapia | 1.200 | 3.500 | 6.000 |\n"
    "| Reembolso de material deportivo | 400 | 2.500 | 1.500 |",
    "Los reembolsos se piden en la app. Los planes cubren también lesiones en competición.",
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
        # "Its annual fee is 90 EUR" names no card of its own: it speaks of its chunk's subject
        (
            CARDS,
            "What is the annual fee of the Silver card?",
            "The Silver card has an annual fee of 90 EUR.",
            "The Silver card has an annual fee of 30 EUR.",
            "90 is given for Gold, the claim is about Silver; Silver: 30",
        ),
        # a cell belongs to its row and its column: Plus's trainer price is not its membership
        (
            GYM,
            "How much is the Plus membership?",
            "The Plus membership is 25 EUR.",
            "The Plus membership is 35 EUR.",
            "25 is given for Personal trainer session, the claim is about Membership;"
            " Membership: 35",
        ),
        # ... and the Basic column's membership price is not Plus's
        (
            GYM,
            "How much is the Plus membership?",
            "The Plus membership is 20 EUR.",
            "The Plus membership is 35 EUR.",
            "20 is given for Basic, the claim is about Plus; Plus: 35",
        ),
        (  # thousands written "1.200"
            SPORT_ES,
            "¿Cuál es el reembolso de fisioterapia del plan Plus?",
            "El plan Plus cubre la fisioterapia hasta 1.200 euros.",
            "El plan Plus cubre la fisioterapia hasta 3.500 euros.",
            "1.200 is given for Básico, the claim is about Plus; Plus: 3.500",
        ),
    ],
    ids=[
        *("plan-chunks", "table-row", "price-list", "per-person", "pronoun-subject"),
        *("column-table-row", "column-table-column", "column-table-es"),
    ],
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


def test_a_sentence_that_names_its_own_entity_keeps_it():
    # "Gold has no foreign transaction fee" and "Its annual fee" belong to Gold; Silver's own
    # sentence does not take Gold's chunk subject
    units = context_units(list(CARDS))
    gold = [u for u in units if "90" in u.values]
    assert [sorted(k for k in u.names if k[0] != "<") for u in gold] == [["gold"]]
    silver = [u for u in units if "30" in u.values]
    assert all("gold" not in u.scope for u in silver)


async def test_a_cell_that_meets_the_claims_entity_and_attribute_supports_it():
    # the header writes "Premium" lines above the row: the cell is where the claim's plan and
    # its attribute meet, so its words are read together there
    r = await faithfulness(
        "¿Cuál es el reembolso de fisioterapia del plan Premium?",
        SPORT_ES,
        "El plan Premium cubre fisioterapia hasta 6.000 euros.",
    )
    assert r.label == "faithful", r.explanation
    [claim] = r.metadata["claims"]
    assert claim["supported"]
    assert claim["reason"] == "found in a table cell (Reembolso de fisioterapia, Premium: 6.000)"
