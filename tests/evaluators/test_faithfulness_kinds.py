"""Faithfulness: a number is bound to what it counts as well as to what it belongs to (issue 44:
"refunded within 15 business days" where 15 is only ever minutes in the context)."""

from __future__ import annotations

import pytest
from judged import faithfulness

from ragsieve.evaluators.judges.offline.binding import (
    context_units,
    find_attribute_conflict,
    find_clause_conflict,
    find_kind_conflict,
)

HELP_DESK = (
    "Refunds\nRefunds arrive within 5 business days of the return being received.",
    "Support\nOur support team replies to chat messages within 15 minutes.",
)
SHOP = (
    "Delivery\nStandard delivery takes 3 days. Express orders ship within 2 hours.",
    "Returns\nYou can return an item within 30 days of delivery.",
)
TABLE = (
    "| Plan | Price per month | Requests per minute |\n|---|---|---|\n"
    "| Starter | $10 | 120 |\n| Pro | $25 | 600 |",
)


SHOP_POLICIES = (
    "You can return an item within 14 days of delivery and get a full refund. After 14 days,"
    " returns earn store credit minus a 5 EUR handling fee.",
    "Loyalty points expire 30 days after they are earned.",
    "A lost card must be reported to the bank within 24 hours. Statements are sent 24 days"
    " after the billing date.",
)


@pytest.mark.parametrize(
    ("context", "question", "wrong", "right", "named"),
    [
        (
            HELP_DESK,
            "How long does a refund take?",
            "You are refunded within 15 business days.",
            "You are refunded within 5 business days.",
            "15 is given as minutes, the claim gives business days; business days: 5",
        ),
        (
            SHOP,
            "How long does standard delivery take?",
            "Standard delivery takes 2 days.",
            "Standard delivery takes 3 days.",
            "2 is given as hours, the claim gives days; days: 3",
        ),
        # 30 days only where points expire; the clause about returns gives 14 days
        (
            SHOP_POLICIES,
            "How long do I have to return an item?",
            "You can return an item within 30 days of delivery and get a full refund.",
            "You can return an item within 14 days of delivery and get a full refund.",
            "30 days is given for Loyalty points, the claim gives it for return item;"
            " return item: 14 days",
        ),
        # 24 days only where statements are sent; the clause about reporting says 24 hours
        (
            SHOP_POLICIES,
            "How soon must I report a lost card?",
            "You must report a lost card to the bank within 24 days.",
            "You must report a lost card to the bank within 24 hours.",
            "24 days is given for Statements sent, the claim gives it for report lost;"
            " report lost: 24 hours",
        ),
    ],
    ids=["refund-minutes", "delivery-hours", "moved-another-number", "moved-another-unit"],
)
async def test_a_number_the_context_gives_only_as_another_kind_is_flagged_and_named(
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


@pytest.mark.parametrize(
    "claim",
    [
        "Support replies within 15 minutes.",
        "Support replies within 15 min.",  # an abbreviation of the context's kind
        "Support replies within 15 minutes, and refunds take 5 business days.",
    ],
)
def test_the_kind_the_context_gives_the_number_agrees(claim):
    units = context_units(list(HELP_DESK))
    assert find_kind_conflict(claim, "How fast?", units, " ".join(HELP_DESK)) is None


def test_a_table_cell_is_left_to_the_entity_rule():
    # a cell says nothing after its number: bare, so the kind rule is silent on tables
    units = context_units(list(TABLE))
    claim = "The Starter plan allows 120 requests per minute."
    assert find_kind_conflict(claim, "Starter limits?", units, TABLE[0]) is None


def test_without_another_number_of_the_claims_kind_only_another_unit_says_it():
    # 15 is minutes in the context, and nothing gives the refund a number of business days: the
    # unit alone says it (15 days is not 15 minutes), with no rival value to name
    context = ["Support replies within 15 minutes.", "Refunds are issued to the original card."]
    claim = "You are refunded within 15 business days."
    got = find_kind_conflict(claim, "Refund?", context_units(context), " ".join(context))
    assert got is not None and got.claimed_values == ()
    assert got.reason == "15 is given as minutes, the claim gives business days"
    # a kind of no shared dimension ("15 tickets" where 15 is minutes) still says nothing
    claim = "You can open 15 tickets."
    assert find_kind_conflict(claim, "Tickets?", context_units(context), " ".join(context)) is None


def test_a_number_the_context_also_gives_bare_or_in_words_binds_to_either():
    for extra in ("Tickets: 15.", "Refunds of fifteen euros are common."):
        context = [*HELP_DESK, extra]
        claim = "You are refunded within 15 business days."
        units = context_units(context)
        assert find_kind_conflict(claim, "Refund?", units, " ".join(context)) is None, extra


SCOOTER = (
    "Prices\nUnlocking a scooter costs 1 EUR, riding costs 0.25 EUR per minute, and parking"
    " outside the zone costs a 5 EUR fee.",
)


async def test_a_number_the_sentence_gives_for_another_attribute_is_flagged_and_named():
    bad = await faithfulness(
        "What does parking cost?", SCOOTER, "There is a 1 EUR fee for parking."
    )
    assert bad.label == "unfaithful"
    assert "1 is given for Unlocking scooter, the claim gives it for parking; parking: 5" in (
        bad.explanation
    )
    [claim] = bad.metadata["claims"]
    assert claim["contradiction"] and claim["value_conflict"]["value"] == "1"
    for right in ("There is a 5 EUR fee for parking.", "Unlocking a scooter costs 1 EUR."):
        good = await faithfulness("What does it cost?", SCOOTER, right)
        assert good.label == "faithful", good.explanation


@pytest.mark.parametrize(
    ("context", "claim"),
    [
        # the attribute sits in another sentence than the number: it may be about it
        (
            "Unlocking a scooter costs 1 EUR. Parking outside the zone costs a 5 EUR fee.",
            "There is a 1 EUR fee for parking.",
        ),
        # a claim with two numbers: its words may be the other number's
        (SCOOTER[0], "Parking costs a 1 EUR fee and riding 0.25 EUR per minute."),
    ],
    ids=["other-sentence", "two-numbers"],
)
def test_the_attribute_rule_needs_one_sentence_that_tells_the_attributes_apart(context, claim):
    units = context_units([context])
    assert find_attribute_conflict(claim, "Prices?", units, context) is None


@pytest.mark.parametrize(
    "claim",
    [
        # the value's clause shares a word of the claim ("points"): it may be its paraphrase
        "Your points and returned items lapse after 30 days.",
        # no clause shares most of the claim's words: nothing tells what 30 days should be
        "Gift cards are valid for 30 days.",
        # two numbers: the claim's words may be the other number's
        "Returns within 30 days of delivery cost a 5 EUR fee.",
    ],
)
def test_the_clause_rule_needs_a_claim_whose_words_the_values_clause_lacks(claim):
    units = context_units(list(SHOP_POLICIES))
    got = find_clause_conflict(claim, "Returns?", units, " ".join(SHOP_POLICIES))
    assert got is None, got
