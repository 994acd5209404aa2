"""Faithfulness binding calls a value contradicted only where its reading is sure: another
cell of the row is no rival, a nameless sentence takes no subject it does not point back to,
a clause rule needs the word its number depends on (the reviewer's false flags of bind22 and
faith22)."""

from __future__ import annotations

import pytest
from judged import faithfulness

from ragsieve.evaluators.judges.offline.binding import (
    context_units,
    find_clause_conflict,
    nothing_price,
)
from ragsieve.evaluators.judges.offline.support import bare_answer, yes_no

PLAN_TABLE = (
    "| Plan | Price | Data |\n|---|---|---|\n| Basic | 10 EUR | 5 GB |\n| Plus | 20 EUR | 50 GB |",
)
PLAN_TABLE_ES = (PLAN_TABLE[0].replace("Price", "Precio").replace("Data", "Datos"),)
POLICY_TABLE = (
    "| Policy | Deductible | Theft limit |\n|---|---|---|\n"
    "| Basic | 300 EUR | 5,000 EUR |\n| Plus | 150 EUR | 10,000 EUR |",
)
PLANS = "The Basic plan costs 10 EUR per month. The Pro plan costs 30 EUR per month."
PLANS_ES = "El plan Basic cuesta 10 EUR al mes. El plan Pro cuesta 30 EUR al mes."
SETUP = "What is the setup fee of the Pro plan?"
COST = "What does the Plus plan cost?"
PREMIUM = (
    "The Basic policy covers fire and theft, with a deductible of 250 EUR. The Premium policy"
    " adds water damage cover up to 40,000 EUR. Its deductible is 1,000 EUR per claim."
)
SINCE = (
    "Since January, our plans have changed. The Pro plan costs 30 EUR per month. Its setup fee"
    " is 15 EUR."
)
ACME = (
    "Acme Insurance sells the Home policy. It has a deductible of 300 EUR per claim. The Home"
    " Plus policy has a deductible of 150 EUR per claim."
)
CLAIMS = (
    "Claims must be reported within 7 days of the incident.",
    "Payment follows within 30 days of approval.",
)
REFUNDS = (
    "## Premium refunds\nPaid back within 30 days of cancellation.",
    "You can cancel the policy within 14 days of purchase for a full premium refund.",
)


@pytest.mark.parametrize(
    ("context", "question", "answer"),
    [
        # another cell of the row, or a column header the claim names, is no rival
        (PLAN_TABLE, COST, "The Plus plan with 50 GB of data is priced at 20 EUR."),
        (PLAN_TABLE, COST, "The Plus plan costs 20 EUR and its data allowance is 50 GB."),
        (
            PLAN_TABLE_ES,
            "¿Cuánto cuesta el plan Plus?",
            "El plan Plus cuesta 20 EUR e incluye 50 GB de datos.",
        ),
        (
            POLICY_TABLE,
            "What does the Plus policy cover?",
            "The Plus policy has an excess of 150 EUR and a theft limit of 10,000 EUR.",
        ),
        # a nameless sentence that does not open with a pronoun is about nothing named
        (
            (f"{PLANS} The one-time setup fee is 15 EUR.",),
            SETUP,
            "The Pro plan has a one-time setup fee of 15 EUR.",
        ),
        (
            (f"{PLANS_ES} La cuota de alta es de 15 EUR.",),
            "¿Cuál es la cuota de alta del plan Pro?",
            "El plan Pro tiene una cuota de alta de 15 EUR.",
        ),
        (
            (f"{PLANS} Roaming is included in every plan.",),
            "Is roaming included in the Pro plan?",
            "Roaming is included in the Pro plan.",
        ),
        # a pronoun points back at the nearest sentence that names something
        (
            (PREMIUM,),
            "What is the Premium deductible?",
            "The Premium policy has a deductible of 1,000 EUR per claim.",
        ),
        ((SINCE,), SETUP, "The Pro plan has a setup fee of 15 EUR."),
        # ... and "Home Plus" is another policy than "Home"
        (
            (ACME,),
            "What is the deductible of the Home policy?",
            "The Home policy has a deductible of 300 EUR per claim.",
        ),
        # the clause rule: a paraphrase that lacks the word the number depends on ("paid")
        (CLAIMS, "When are claims paid?", "Reported claims are paid within 30 days."),
        # ... and a heading is part of what a clause says
        (
            REFUNDS,
            "When does the premium refund arrive?",
            "The premium refund arrives within 30 days.",
        ),
    ],
    ids=[
        "row-cell",
        "row-cell-and",
        "row-cell-es",
        "row-cell-money",
        "nameless",
        "nameless-es",
        "every-plan",
        "nearest-antecedent",
        "not-a-name",
        "longer-name",
        "clause-paid",
        "clause-heading",
    ],
)
async def test_an_unsure_binding_contradicts_nothing(context, question, answer):
    r = await faithfulness(question, context, answer)
    assert r.label != "unfaithful", r.explanation
    assert not any(c.get("value_conflict") for c in r.metadata["claims"])


HOME = (
    "The Basic policy covers fire, storm and water damage to the building and your belongings."
    " Its deductible is 1,000 EUR per claim. Basic does not include an emergency plumber.",
    "The Premium deductible is 250 EUR per claim.",
)
LIMITS = (
    "Limits (EUR):\n| Limit | Basic | Plus |\n|---|---|---|\n"
    "| Theft | 5,000 | 10,000 |\n| Water damage | 10,000 | 20,000 |",
)
ROAMING = (
    "On the Basic plan, roaming costs 6 EUR per day.",
    "On the Pro plan, roaming is included at no extra cost.",
)


@pytest.mark.parametrize(
    ("context", "question", "answer", "named"),
    [
        # "Its" points back at Basic: Premium's own deductible sentence competes
        (HOME, "What is the Premium deductible?",
         "The Premium policy has a deductible of 1,000 EUR per claim.",
         "1,000 is given for Basic, the claim is about Premium; Premium: 250"),
        # Plus's 10,000 is its theft limit: it does not bind Plus to water damage
        (LIMITS, "What is the Plus water damage limit?",
         "The Plus policy covers water damage up to 10,000 EUR.",
         "10,000 is given for Basic, the claim is about Plus; Plus: 20,000"),
        # a currency code is no name
        (ROAMING, "How much is roaming on the Pro plan?",
         "Roaming costs 6 EUR per day on the Pro plan.",
         "6 is given for Basic, the claim is about Pro"),
    ],
    ids=["pronoun-antecedent", "cell-other-attribute", "currency-code"],
)  # fmt: skip
async def test_a_sure_binding_still_contradicts(context, question, answer, named):
    r = await faithfulness(question, context, answer)
    assert r.label == "unfaithful", r.explanation
    assert named in r.explanation


def test_a_number_is_counted_as_written_by_the_clause_rule():
    # "1,000" reads as 1 or 1000: still one number, as "1 000" and "1000" are
    context = ["Storm damage is covered up to 5,000 EUR.", "The theft deductible is 1,000 EUR."]
    units = context_units(context)
    reasons = {
        written: find_clause_conflict(
            f"Storm damage is covered up to {written} EUR.", "Storm?", units, " ".join(context)
        )
        for written in ("1,000", "1.000", "1 000", "1000")
    }
    # named by the words the number depends on, each amount once
    for written, got in reasons.items():
        assert got is not None, written
        assert got.reason == (
            f"{written} EUR is given for theft deductible, the claim gives it for Storm damage;"
            " Storm damage: 5,000 EUR"
        )


def test_not_included_is_no_price_of_nothing():
    assert nothing_price("Roaming is not included in the Basic plan.") == ""
    assert nothing_price("El roaming no está incluido en el plan Basic.") == ""
    assert nothing_price("Roaming is included in the Pro plan.") == "included"


async def test_a_yes_with_a_not_says_no_and_a_spanish_no_is_bare():
    # "Yes, it doesn't." was read as yes: its words say no
    assert yes_no("Yes, it doesn't.") is False and yes_no("Yes, it does.") is True
    assert bare_answer("No, no lo hace.") and bare_answer("No, it doesn't.")
    q = "Does the Basic plan include roaming?"
    said_no = await faithfulness(
        q, ("The Basic plan does not include roaming.",), "Yes, it doesn't."
    )
    assert said_no.label == "faithful", said_no.explanation
    said_yes = await faithfulness(q, ("The Basic plan includes roaming.",), "Yes, it doesn't.")
    assert said_yes.label == "unfaithful", said_yes.explanation
    es = await faithfulness(
        "¿El plan Basic incluye roaming?", ("El plan Basic no incluye roaming.",), "No, no lo hace."
    )
    assert es.label == "faithful", es.explanation
