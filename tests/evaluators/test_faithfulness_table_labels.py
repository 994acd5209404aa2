"""What a table's row labels and column headers say about its cells (issue 44): a claim is read
against a row only when that row is clearly the claim's, and a label that says what its numbers
are per gives them that period."""

from __future__ import annotations

import pytest
from judged import assert_flagged_and_named, faithfulness

# plans as columns, limits as rows (an invented document scanning service)
PLANS = (
    "| Limit | Solo | Crew | Company |\n|---|---|---|---|\n"
    "| Scans per hour | 20 | 200 | 1,000 |\n"
    "| Record retention | 7 days | 30 days | 365 days |\n"
    "| Members | 1 | up to 15 | unlimited |",
)
PLANS_ES = (
    "| Límite | Solo | Equipo | Empresa |\n|---|---|---|---|\n"
    "| Escaneos por hora | 20 | 200 | 1.000 |\n"
    "| Conservación de registros | 7 días | 30 días | 365 días |",
)


@pytest.mark.parametrize(
    ("question", "answer"),
    [
        # "scan records" touches the scans row (all its words) and the record row; 30 days is a
        # duration, which only the record row holds, and the question asks the record retention
        (
            "What's the record retention on the Crew plan?",
            "On the Crew plan, scan records are kept for 30 days.",
        ),
        # the question points at the scans row too, which holds no durations: no row is clearly
        # the claim's, and the cell rule says nothing
        (
            "How long does the Crew plan keep scans?",
            "On the Crew plan, scan records are kept for 30 days.",
        ),
    ],
)
async def test_a_claim_touching_two_row_labels_is_read_against_the_row_its_number_fits(
    question, answer
):
    result = await faithfulness(question, PLANS, answer)
    assert not any(c.get("value_conflict") for c in result.metadata["claims"]), result.explanation
    assert result.label != "unfaithful", result.explanation
    # another cell of the row the number fits is still another value
    wrong = await faithfulness(question, PLANS, answer.replace("30 days", "365 days"))
    assert wrong.label == "unfaithful", wrong.explanation


@pytest.mark.parametrize(
    ("context", "question", "wrong", "right", "named"),
    [
        (
            PLANS,
            "What's the scan limit on the Solo plan?",
            "On the Solo plan you can run up to 20 scans per minute.",
            "On the Solo plan you can run up to 20 scans per hour.",
            "per hour",
        ),
        (
            PLANS_ES,
            "¿Cuál es el límite de escaneos del plan Solo?",
            "En el plan Solo el límite es de 20 escaneos por minuto.",
            "En el plan Solo el límite es de 20 escaneos por hora.",
            "por hora",
        ),
    ],
)
async def test_a_row_label_that_says_per_what_gives_its_cells_that_period(
    context, question, wrong, right, named
):
    await assert_flagged_and_named(question, context, wrong, right, named)


# an English table with its English heading, asked about in Spanish
PLANS_EN = (f"## Limits for each plan of the scanning service\n\n{PLANS[0]}",)


@pytest.mark.parametrize(
    ("question", "wrong", "right", "named"),
    [
        (
            "¿Cuántos escaneos por hora permite el plan Crew?",
            "El plan Crew permite 1.000 escaneos por hora.",
            "El plan Crew permite 200 escaneos por hora.",
            "Scans per hour, Crew: 200",
        ),
        (
            "¿Cuántos días se conservan los registros en el plan Crew?",
            "En el plan Crew los registros se conservan 365 días.",
            "En el plan Crew los registros se conservan 30 días.",
            "Record retention, Crew: 30 days",
        ),
    ],
)
async def test_a_claim_in_another_language_meets_the_row_it_means(question, wrong, right, named):
    """The claim's words meet no English label; their meaning meets one row clearly. Words that
    mean no one row ("límite") leave the cell rule silent."""
    await assert_flagged_and_named(question, PLANS_EN, wrong, right, named)
    vague = await faithfulness(question, PLANS_EN, "El límite del plan Crew es 1.000.")
    assert not any(c.get("value_conflict") for c in vague.metadata["claims"]), vague.explanation
