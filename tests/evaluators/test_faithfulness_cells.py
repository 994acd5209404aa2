"""Faithfulness reads a claim's number against the table cell the claim's own words point to
(issue 44): a table gives each value for one row and one column, whether its entities head the
columns or label the rows, whether it keeps its line breaks or a chunker ran it together."""

from __future__ import annotations

import pytest
from judged import assert_flagged_and_named, faithfulness

from ragsieve.evaluators.judges.offline.binding import context_units

# entities as columns, attributes as rows (invented courier tiers)
TIERS = (
    "| | Lite | Standard | Express |\n|---|---|---|---|\n"
    "| Parcels per week | 2 | 5 | 12 |\n| Insured value | €50 | €200 | €500 |\n"
    "| Delivery window | 5 days | 3 days | 1 day |",
)
TIERS_ES = (
    "| Concepto | Ligera | Estándar | Exprés |\n|---|---|---|---|\n"
    "| Paquetes por semana | 2 | 5 | 12 |\n| Valor asegurado | 50 € | 200 € | 500 € |\n"
    "| Plazo de entrega | 5 días | 3 días | 1 día |",
)
# the same kind of table run onto one line, its rule row and line breaks gone
FLAT = (
    "Course | Seats | Hours of lab work | Fee Chemistry | 40 | 120 hours | €900 Geology | 25"
    " | 80 hours | €750 Botany | 30 | 60 hours | €600",
)
FLAT_ES = (
    "Curso | Plazas | Horas de laboratorio | Precio Química | 40 | 120 horas | 900 € Geología"
    " | 25 | 80 horas | 750 € Botánica | 30 | 60 horas | 600 €",
)
ROWS = (
    "| Room | Price | Deposit | Late check-out |\n|---|---|---|---|\n"
    "| Cabin | €90 | €20 | €15 |\n| Lodge | €140 | €40 | €25 |",
)


@pytest.mark.parametrize(
    ("context", "question", "wrong", "right", "named"),
    [
        # another attribute's cell of the entity's column: 12 is Express's parcels a week
        (
            TIERS,
            "How long is the Express delivery window?",
            "The Express delivery window is 12 days.",
            "The Express delivery window is 1 day.",
            "Delivery window, Express: 1 day",
        ),
        # another attribute's cell of the same column: 3 days is Standard's delivery window
        (
            TIERS_ES,
            "¿Cuántos paquetes por semana admite la tarifa Estándar?",
            "La tarifa Estándar admite 3 paquetes por semana.",
            "La tarifa Estándar admite 5 paquetes por semana.",
            "Estándar: 5",
        ),
        # a table run together: every row's last cell shares a cell with the next row's label
        (
            FLAT,
            "How many hours of lab work does Geology have?",
            "Geology has 120 hours of lab work.",
            "Geology has 80 hours of lab work.",
            "Geology: 80",
        ),
        (
            FLAT_ES,
            "¿Cuántas plazas tiene Botánica?",
            "Botánica tiene 40 plazas.",
            "Botánica tiene 30 plazas.",
            "Botánica: 30",
        ),
    ],
)
async def test_a_cell_where_the_claims_entity_and_attribute_meet_decides(
    context, question, wrong, right, named
):
    await assert_flagged_and_named(question, context, wrong, right, named)


def test_a_table_run_together_is_read_row_by_row():
    rows = {u.text.split(" ; ")[0] for u in context_units(list(FLAT)) if u.values}
    assert rows == {"Chemistry", "Geology", "Botany"}


async def test_a_claim_that_elides_its_subject_is_not_read_against_the_asked_column():
    """Asked the deposit, an answer that also gives the nightly rate ("it costs €140 a night")
    states another column of the same row, which the claim's words name: no rival."""
    result = await faithfulness(
        "What is the Lodge's deposit?",
        ROWS,
        "The Lodge's deposit is €40, and it costs €140 per night.",
    )
    assert result.label == "faithful", result.explanation


async def test_a_copied_cell_is_flagged_unless_a_sentence_gives_the_pair_the_value():
    """12 is Express's parcels a week, not its delivery window; once the prose gives the Express
    delivery window 12 days in December, a claim with that number is the prose's, not a copied
    cell."""
    question = "How long is the Express delivery window?"
    copied = await faithfulness(question, TIERS, "The Express delivery window is 12 days.")
    assert copied.label == "unfaithful", copied.explanation
    assert "Delivery window, Express: 1 day" in copied.explanation
    # a sentence that names the pair but gives the number as parcels shields nothing
    listed = (*TIERS, "Express takes 12 parcels per week, with a delivery window of 1 day.")
    copied = await faithfulness(question, listed, "The Express delivery window is 12 days.")
    assert copied.label == "unfaithful", copied.explanation
    context = (*TIERS, "In December, the Express delivery window is 12 days.")
    result = await faithfulness(
        question, context, "In December, the Express delivery window is 12 days."
    )
    assert not any(c.get("value_conflict") for c in result.metadata["claims"]), result.explanation


# a list under an entity's heading, and a list of "Entity: value" items under an attribute's
RACKETS = (
    "Junior racket:\n- Weight: 230 grams\n- Head size: 100 sq in\n\n"
    "Pro racket:\n- Weight: 305 grams\n- Head size: 98 sq in",
)
FEES_ES = ("Cuotas de inscripción:\n- Infantil: 40 €\n- Juvenil: 55 €\n- Adulto: 80 €",)


@pytest.mark.parametrize(
    ("context", "question", "wrong", "right", "named"),
    [
        (
            RACKETS,
            "How much does the Pro racket weigh?",
            "The Pro racket weighs 230 grams.",
            "The Pro racket weighs 305 grams.",
            "Pro: 305",
        ),
        (
            FEES_ES,
            "¿Cuánto cuesta la inscripción juvenil?",
            "La inscripción Juvenil cuesta 80 €.",
            "La inscripción Juvenil cuesta 55 €.",
            "Juvenil: 55",
        ),
    ],
)
async def test_a_list_item_belongs_to_its_heading_and_its_label(
    context, question, wrong, right, named
):
    await assert_flagged_and_named(question, context, wrong, right, named)


# chunks whose later sentences point back with "Its" / "Su" at the one entity the first names
BOATS = (
    "The Heron kayak suits calm lakes. Its maximum load is 110 kg.",
    "The Osprey kayak is built for the sea. Its maximum load is 150 kg.",
)
BOATS_ES = (
    "El kayak Garza es para lagos tranquilos. Su carga máxima es de 110 kg.",
    "El kayak Águila está pensado para el mar. Su carga máxima es de 150 kg.",
)


@pytest.mark.parametrize(
    ("context", "question", "wrong", "right", "named"),
    [
        (
            BOATS,
            "What is the Osprey kayak's maximum load?",
            "The Osprey kayak has a maximum load of 110 kg.",
            "The Osprey kayak has a maximum load of 150 kg.",
            "Osprey: 150",
        ),
        (
            BOATS_ES,
            "¿Cuál es la carga máxima del kayak Águila?",
            "La carga máxima del kayak Águila es de 110 kg.",
            "La carga máxima del kayak Águila es de 150 kg.",
            "Águila: 150",
        ),
    ],
)
async def test_a_sentence_that_points_back_speaks_of_the_one_entity_before_it(
    context, question, wrong, right, named
):
    await assert_flagged_and_named(question, context, wrong, right, named)


SEATS = (
    "| Plan | Users | Storage |\n|---|---|---|\n| Plus | 5 | 20 GB |\n| Pro | 25 | 200 GB |",
    "Q: How much is an extra user? A: 6 EUR per month per user on Plus and 4 EUR on Pro.",
)


async def test_a_clause_that_leaves_its_sentences_words_out_still_says_them():
    """ "… 6 EUR per month per user on Plus and 4 EUR on Pro": the second clause gives Pro's
    price per user, though it leaves "user" to its sentence."""
    await assert_flagged_and_named(
        "How much is an extra user on Pro?",
        SEATS,
        "An extra user on Pro costs 6 EUR per month.",
        "An extra user on Pro costs 4 EUR per month.",
        "Pro: 4",
    )


@pytest.mark.parametrize(
    ("question", "answer"),
    [
        (  # GPT-4o compares the other tiers in a list: each item speaks of its own label
            "How many parcels per week does the Standard tier allow?",
            "On the **Standard** tier you can send **5 parcels per week**.\n\nFor comparison:\n"
            "- **Lite**: 2 parcels per week\n- **Express**: 12 parcels per week",
        ),
        (
            "¿Cuántos paquetes por semana permite la tarifa Estándar?",
            "Con la tarifa **Estándar** puedes enviar **5 paquetes por semana**.\n\nComo"
            " referencia:\n- **Ligera**: 2 paquetes por semana\n- **Exprés**: 12 paquetes por"
            " semana",
        ),
    ],
)
async def test_a_list_item_speaks_of_its_own_label_not_the_questions_entity(question, answer):
    """A new user's correct answer was flagged: '60 is given for Free, the claim is about Team'
    — the item's label ('- **Free**: 60 requests per minute') is what the item is about."""
    context = TIERS if question.startswith("How") else TIERS_ES
    r = await faithfulness(question, context, answer)
    assert r.label == "faithful", r.explanation
    wrong = answer.replace("12 ", "5 ").replace("2 p", "12 p", 1)  # Lite given Express's value
    assert (await faithfulness(question, context, wrong)).label == "unfaithful"


NOTED = (
    "| Plan | Monthly fee | Users |\n|---|---|---|\n| Basic | €10 | 1 |\n"
    "| Prices exclude VAT |\n| Student | €5 |\n| Plus | €25 | 5 |\n| Pro | €40 | 20 |",
)


@pytest.mark.parametrize(
    ("answer", "label"),
    [
        ("The Pro plan allows 20 users.", "faithful"),
        ("The Plus plan allows 5 users.", "faithful"),
        ("The Pro plan allows 5 users.", "unfaithful"),
    ],
)
async def test_a_table_with_a_note_row_reads_each_row_as_written(answer, label):
    """A short row (a note, a section) once shifted the row the cell rule read: the judge
    failed with an index error or gave Pro the row above's value (an independent review)."""
    question = "How many users does " + answer.split()[1] + " allow?"
    r = await faithfulness(question, NOTED, answer)
    assert r.label == label, r.explanation
