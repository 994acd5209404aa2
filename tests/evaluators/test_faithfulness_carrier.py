"""Faithfulness on a phone carrier's pages as a new user's bot retrieved them (issue 44): a table
whose line breaks a chunker lost, a price the context gives as "no extra cost", and a sentence
whose second predicate, not the claim's, holds the negation."""

from __future__ import annotations

import pytest
from judged import faithfulness

from ragsieve.evaluators.judges.offline.binding import context_units
from ragsieve.evaluators.judges.offline.text.text import negation_differs

TABLE_EN = (
    "Data allowance table. Plan | Monthly data | Speed after the allowance | Extra 1 GB."
    " Prepaid Basic | 5 GB | 128 kbps | 3 EUR. Postpaid Plus | 30 GB | 512 kbps | 2 EUR."
    " Postpaid Pro | 200 GB (fair use) | 1 Mbps | 1 EUR."
)
TABLE_ES = (
    "Tabla de datos incluidos. Plan | Datos al mes | Velocidad tras agotar los datos | 1 GB extra."
    " Prepago Básico | 5 GB | 128 kbps | 3 EUR. Pospago Plus | 30 GB | 512 kbps | 2 EUR."
    " Pospago Pro | 200 GB (uso razonable) | 1 Mbps | 1 EUR."
)
ROAMING_EN = (
    "Roaming in the EU is included at no extra cost on all plans. Zone 2 roaming (USA, Canada,"
    " Switzerland) costs 6 EUR per day for 1 GB on Postpaid Plus and is included at no extra"
    " cost on Postpaid Pro. Prepaid Basic cannot roam outside the EU."
)
ROAMING_ES = (
    "El roaming en la UE está incluido sin coste extra en todos los planes. El roaming en la"
    " Zona 2 (Estados Unidos, Canadá, Suiza) cuesta 6 EUR al día por 1 GB con Pospago Plus y"
    " está incluido sin coste extra con Pospago Pro. Prepago Básico no permite roaming fuera de"
    " la UE."
)


def test_a_table_written_on_one_line_is_read_row_by_row():
    rows = _row_values(context_units([TABLE_EN]))
    assert set(rows) == {"Prepaid Basic", "Postpaid Plus", "Postpaid Pro"}
    assert "5" in rows["Prepaid Basic"] and "30" not in rows["Prepaid Basic"]


def _row_values(units):
    """Each table row's label -> the values of its units (a row gives one unit a cell)."""
    rows: dict[str, set[str]] = {}
    for u in units:
        if " ; " in u.text:
            rows.setdefault(u.text.split(" ; ")[0], set()).update(u.values)
    return rows


@pytest.mark.parametrize(
    ("context", "question", "wrong", "right", "named"),
    [
        (
            (TABLE_EN, ROAMING_EN),
            "How much data does the Prepaid Basic plan include?",
            "The Prepaid Basic plan includes 30 GB of data per month.",
            "The Prepaid Basic plan includes 5 GB of data per month.",
            "30 is given for Postpaid",
        ),
        (
            (TABLE_ES, ROAMING_ES),
            "¿Cuántos datos incluye el plan Prepago Básico?",
            "El plan Prepago Básico incluye 30 GB de datos al mes.",
            "El plan Prepago Básico incluye 5 GB de datos al mes.",
            "30 is given for Pospago",
        ),
    ],
)
async def test_a_flattened_tables_other_row_is_flagged_and_named(
    context, question, wrong, right, named
):
    bad = await faithfulness(question, context, wrong)
    assert bad.label == "unfaithful" and named in bad.explanation, bad.explanation
    good = await faithfulness(question, context, right)
    assert good.label == "faithful", good.explanation


async def test_a_price_given_where_the_context_says_no_extra_cost_is_flagged():
    bad = await faithfulness(
        "¿Cuánto cuesta el roaming en Estados Unidos con Pospago Pro?",
        (ROAMING_ES, TABLE_ES),
        "Con Pospago Pro, el roaming en Estados Unidos cuesta 6 EUR al día.",
    )
    assert bad.label == "unfaithful", bad.explanation
    assert "the claim is about Pro" in bad.explanation, bad.explanation


@pytest.mark.parametrize(
    ("question", "context", "answer"),
    [
        (
            "How much does roaming in the USA cost on Postpaid Plus?",
            (ROAMING_EN, TABLE_EN),
            "On Postpaid Plus, roaming in the USA (Zone 2) costs 6 EUR per day for 1 GB.",
        ),
        (
            "¿Cuánto cuesta el roaming en Estados Unidos con Pospago Plus?",
            (ROAMING_ES, TABLE_ES),
            "Con Pospago Plus, el roaming en Estados Unidos cuesta 6 EUR al día por 1 GB.",
        ),
    ],
)
async def test_a_negation_in_the_sentences_other_predicate_denies_nothing(
    question, context, answer
):
    r = await faithfulness(question, context, answer)
    assert r.label == "faithful", r.explanation


@pytest.mark.parametrize(
    ("context", "answer"),
    [
        # two columns: one pipe a row (found in review)
        (("Plan | Data. Basic | 5 GB. Plus | 30 GB.",), "The Basic plan includes 30 GB of data."),
        # a sentence of prose after the rows stays prose, its value read
        (
            ("Plan | Data | Price. Basic | 5 GB | 10 EUR. Plus | 30 GB | 20 EUR. Prices include"
             " VAT of 21 %.",),
            "Prices include VAT of 30 %.",
        ),
    ],
)  # fmt: skip
async def test_a_flattened_table_of_any_width_and_the_prose_beside_it_are_read(context, answer):
    r = await faithfulness("How much data does the Basic plan include?", context, answer)
    assert r.label == "unfaithful", r.explanation


@pytest.mark.parametrize("price", ["EUR 20", "€20", "20 €", "20 euros"])
async def test_a_currency_before_or_after_the_number_is_one_kind(price):
    table = (
        "| Plan | Data | Price |\n|---|---|---|\n| Basic | 5 GB | 10 EUR |\n"
        "| Plus | 30 GB | 20 EUR |",
    )
    r = await faithfulness(
        "How much does the Basic plan cost?", table, f"The Basic plan costs {price}."
    )
    assert r.label == "unfaithful" and "Basic: 10" in r.explanation, r.explanation


@pytest.mark.parametrize(
    ("context", "question", "answer"),
    [  # "and" before a noun or a demonstrative joins, it opens no clause (found in review)
        (
            "Los gastos de envío y esta tasa no se reembolsan.",
            "¿Se reembolsan los gastos de envío?",
            "Los gastos de envío se reembolsan.",
        ),
    ],
)
async def test_and_before_a_noun_keeps_the_sentence_one_clause(context, question, answer):
    r = await faithfulness(question, (context,), answer)
    assert r.label == "unfaithful", r.explanation
    said = "Shipping fees and costs of the return label are not refunded."
    assert negation_differs("Shipping fees are refunded.", said, None)


async def test_a_value_binds_only_where_it_counts_the_same_thing():
    """The subject's own sentence gives 30 as days ("cuesta 10 EUR cada 30 días"): that does
    not make "30 GB" the Prepago Básico's, which the table gives to Pospago Plus."""
    prepaid = "El Prepago Básico cuesta 10 EUR cada 30 días e incluye 5 GB."
    bad = await faithfulness(
        "¿Cuántos datos incluye el plan Prepago Básico?",
        (TABLE_ES, prepaid, ROAMING_ES),
        "El plan Prepago Básico incluye 30 GB de datos al mes.",
    )
    assert bad.label == "unfaithful" and "30 is given for Pospago" in bad.explanation, (
        bad.explanation
    )


SIM_ES = (
    "Activación de la eSIM: después de escanear el código QR, la eSIM se activa en un plazo de"
    " 15 minutos. La tarjeta SIM física se entrega en 2 a 3 días laborables."
)
SIM_EN = (
    "eSIM activation: after you scan the QR code, the eSIM activates within 15 minutes. A"
    " physical SIM card is delivered in 2 to 3 working days."
)


@pytest.mark.parametrize(
    ("context", "question", "answer", "named"),
    [
        (
            SIM_ES,
            "¿Cuánto tarda en activarse la eSIM?",
            "La eSIM se activa en un plazo de 15 días después de escanear el código QR.",
            "15 is given as minutos, the claim gives días",
        ),
        (
            SIM_EN,
            "How long does eSIM activation take?",
            "Your eSIM activates within 15 days after you scan the QR code.",
            "15 is given as minutes, the claim gives days",
        ),
        (
            SIM_ES,
            "¿En cuánto tiempo recibo la SIM física?",
            "Recibirás la SIM física en 2 a 3 horas.",
            "is given as días laborables, the claim gives horas",
        ),
    ],
)
async def test_a_number_in_another_unit_of_the_same_dimension_is_another_quantity(
    context, question, answer, named
):
    """A new user's bot: "15 días" where the page says 15 minutos. No other number of days is
    given for the activation, so only the units tell it: a duration in days is not one in
    minutes, whatever it is about."""
    r = await faithfulness(question, (context,), answer)
    assert r.label == "unfaithful" and named in r.explanation, r.explanation


@pytest.mark.parametrize(
    ("context", "answer"),
    [
        (SIM_EN, "Your eSIM activates within 15 min after you scan the QR code."),
        (SIM_EN, "La eSIM se activa en 15 minutos."),  # the unit in another language
        (SIM_ES, "La SIM física llega en 2 a 3 días."),
    ],
)
async def test_the_same_unit_however_written_is_the_same_quantity(context, answer):
    r = await faithfulness("How long does it take?", (context,), answer)
    assert r.label == "faithful", r.explanation


ROAMING_FREE = (
    "Roaming in the EU is free on all plans. Zone 2 roaming (USA, Canada, Switzerland) costs"
    " 6 EUR per day on Postpaid Plus and is free on Postpaid Pro."
)


@pytest.mark.parametrize(
    ("question", "context", "answer", "named"),
    [
        # a price where the context gives the subject's as nothing: nothing is what it is named
        (
            "How much does roaming in the USA cost on Postpaid Pro?",
            (ROAMING_EN, TABLE_EN),
            "Roaming costs 6 EUR on Pro.",
            "Pro: at no extra cost",
        ),
        (
            "¿Cuánto cuesta el roaming en Estados Unidos con Pospago Pro?",
            (ROAMING_ES, TABLE_ES),
            "Con Pospago Pro, el roaming en Estados Unidos cuesta 6 EUR al día.",
            "Pro: sin coste extra",
        ),
        # nothing where the context gives the subject a price and nothing only to another
        (
            "How much does Zone 2 roaming cost on Postpaid Plus?",
            (ROAMING_FREE, TABLE_EN),
            "Zone 2 roaming is free on Postpaid Plus.",
            "the claim is about Plus",
        ),
        (
            "¿Cuánto cuesta el roaming en la Zona 2 con Pospago Plus?",
            (ROAMING_ES, TABLE_ES),
            "Con Pospago Plus el roaming en la Zona 2 está incluido sin coste extra.",
            "the claim is about Plus",
        ),
    ],
)
async def test_a_price_of_nothing_is_a_price_bound_to_its_entity(question, context, answer, named):
    r = await faithfulness(question, context, answer)
    assert r.label == "unfaithful" and named in r.explanation, r.explanation


@pytest.mark.parametrize(
    ("question", "context", "answer"),
    [
        (
            "How much does roaming in the USA cost on Postpaid Pro?",
            (ROAMING_EN, TABLE_EN),
            "On Postpaid Pro roaming in the USA is included at no extra cost.",
        ),
        (
            "How much does Zone 2 roaming cost on Postpaid Pro?",
            (ROAMING_FREE, TABLE_EN),
            "Zone 2 roaming is free on Postpaid Pro.",
        ),
        (
            "¿Cuánto cuesta el roaming en la Zona 2 con Pospago Pro?",
            (ROAMING_ES, TABLE_ES),
            "Con Pospago Pro el roaming en la Zona 2 está incluido sin coste extra.",
        ),
    ],
)
async def test_nothing_given_for_the_claims_own_entity_passes(question, context, answer):
    r = await faithfulness(question, context, answer)
    assert r.label == "faithful", r.explanation


PORTING = (
    "Number portability: keeping your number when you switch to Ondalinea is free and takes 1"
    " working day."
)
PREPAID = "The Prepaid Basic plan costs 10 EUR per 30 days and includes 5 GB of data."


@pytest.mark.parametrize(
    ("question", "context", "answer"),
    [
        (
            "¿Cuánto cuesta el roaming en la Zona 2 con Pospago Pro?",
            (ROAMING_ES, TABLE_ES),
            "Con Pospago Pro el roaming en la Zona 2 es gratis.",
        ),
        ("How much does keeping my number cost?", (PORTING, PREPAID), "It costs nothing."),
        ("How much does keeping my number cost?", (PORTING, PREPAID), "It is free of charge."),
    ],
)
async def test_a_price_of_nothing_however_worded_supports_another(question, context, answer):
    r = await faithfulness(question, context, answer)
    assert r.label == "faithful", r.explanation


async def test_a_price_of_nothing_given_for_something_else_supports_nothing():
    q = "How much does the Prepaid Basic plan cost?"
    r = await faithfulness(q, (PORTING, PREPAID), "The Prepaid Basic plan costs nothing.")
    assert r.label == "unfaithful", r.explanation


MARKDOWN_ONE_LINE = (
    "| Plan | Data | Price | |---|---|---| | Basic | 5 GB | 10 EUR | | Plus | 30 GB | 20 EUR |"
)


async def test_a_markdown_table_run_onto_one_line_is_read_row_by_row():
    rows = _row_values(context_units([MARKDOWN_ONE_LINE]))
    assert set(rows) == {"Basic", "Plus"}
    assert "5" in rows["Basic"] and "30" in rows["Plus"]
    question = "How much data does the Plus plan include?"
    bad = await faithfulness(question, (MARKDOWN_ONE_LINE,), "The Plus plan includes 5 GB of data.")
    assert bad.label == "unfaithful" and "5 is given for Basic" in bad.explanation, bad.explanation
    good = await faithfulness(question, (MARKDOWN_ONE_LINE,), "The Plus plan includes 30 GB.")
    assert good.label == "faithful", good.explanation
