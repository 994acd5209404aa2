"""Faithfulness: words that carry no checkable fact do not fail a claim (issue 44): list and
step numbers, step labels, an instruction's verb, example code; the facts stay strict."""

from __future__ import annotations

from ragsieve.evaluators.judges import get_judge
from ragsieve.evaluators.judges.offline.claims import parse_answer
from ragsieve.evaluators.judges.offline.text.reading import advice_verb
from ragsieve.evaluators.testing import make_interaction

DOCS = (
    "Running a query. Open the query editor and pick the database and the schema from the"
    " data objects panel. Type the SQL statement in the editor. The result shows at most 1000"
    " rows unless you set a limit. You need at least Reader access to the buckets that hold"
    " the input objects. After the FROM keyword, specify one or more URIs of input objects.",
)
Q = "My select query does not work, what steps should I take?"


async def faithfulness(answer: str, context: tuple[str, ...] = DOCS, question: str = Q):
    interaction = make_interaction(query=question, context=context, answer=answer)
    [result] = await get_judge("faithfulness").evaluate(interaction)
    return result


def reasons(result) -> str:
    return " | ".join(c["reason"] for c in result.metadata["claims"])


async def test_step_labels_and_instruction_verbs_do_not_fail_a_claim():
    answer = (
        "To get your SQL SELECT query to work, follow these steps:\n\n"
        "1. **Go to Query Editor**: Ensure you are in the query editor.\n"
        "2. **Select Database and Schema**: Choose the database and the schema from the data"
        " objects panel.\n"
        "3. **Type Your Query**: Enter the SQL statement in the editor.\n"
    )
    r = await faithfulness(answer)
    assert r.label == "faithful", r.explanation
    said = reasons(r).lower()
    for word in ("ensure", "choose", "sql select", "select database"):
        assert word not in said
    assert ("Go to Query Editor", "label of a step") in parse_answer(answer).set_aside


async def test_list_numbers_inside_a_paragraph_are_not_values():
    answer = (
        "1. Check that you have at least Reader access to the buckets. 2. After the FROM"
        " keyword, specify one or more URIs of input objects. 3. Type the SQL statement in"
        " the editor."
    )
    r = await faithfulness(answer)
    assert r.label == "faithful", r.explanation
    assert "is not in the context" not in r.explanation
    assert all(not c.get("values_missing") for c in r.metadata["claims"])


async def test_example_code_and_placeholders_read_as_illustration():
    answer = (
        "Type the SQL statement in the editor, for example:\n"
        "```bash\ncurl -X POST https://host/mydatabase/_find -d @query.json\n```\n"
        "After the `FROM` keyword, specify the URIs of input objects, as in"
        " `SELECT * FROM mydatabase`."
    )
    r = await faithfulness(answer)
    assert r.label == "faithful", r.explanation
    assert "mydatabase" not in reasons(r) and "bash" not in reasons(r)
    assert any(why == "example code" for _, why in r.metadata.get("set_aside", [])) or (
        "example code" in [why for _, why in parse_answer(answer).set_aside]
    )


async def test_the_facts_of_a_step_stay_strict():
    wrong_value = await faithfulness(
        "1. **Set a limit**: Ensure the result shows at most 5000 rows."
    )
    assert wrong_value.label == "unfaithful"
    assert "5000 is not in the context" in wrong_value.explanation
    invented = await faithfulness(
        "1. **Pick the database**: Choose the Oracle warehouse from the Snowflake panel."
    )
    assert invented.label == "unfaithful"
    assert "oracle" in invented.explanation.lower() or "snowflake" in invented.explanation.lower()
    # a negated step against the context: "you need Reader access" / "you need no access"
    negated = await faithfulness("You do not need any access to the buckets.")
    assert negated.label == "unfaithful"
    assert "denies what the context states" in negated.explanation


def test_an_instruction_verb_is_read_by_its_position_not_a_word_list():
    assert advice_verb("Ensure that your card is active.") == "ensure"
    assert advice_verb("Bake at 325 degrees.") == "bake"
    assert advice_verb("Choose the correct database.") == "choose"
    # a sentence that opens with its subject is no instruction
    assert advice_verb("Preferred stocks pay higher dividends.") is None
    assert advice_verb("The editor shows 1000 rows.") is None
    assert advice_verb("Alice joined in 2015.") is None


async def test_a_count_of_the_answers_own_list_is_checked_through_its_items():
    plans = (
        "Pay-As-You-Go: you are billed monthly for usage. Subscription: you buy an amount of"
        " credit to spend within a time period.",
    )
    q = "What billing plans are there?"
    own = await faithfulness(
        "There are two billing plans: Pay-As-You-Go and Subscription.", plans, q
    )
    assert not own.metadata["claims"][0]["values_missing"]
    assert own.label != "unfaithful", own.explanation
    wrong = await faithfulness(
        "There are three billing plans: Pay-As-You-Go and Subscription.", plans, q
    )
    assert wrong.label == "unfaithful" and "three is not in the context" in wrong.explanation


async def test_vague_quantifiers_and_manner_adverbs_do_not_fail_a_claim_but_time_adverbs_do():
    ctx = ("Pay-As-You-Go accounts are billed monthly for resource usage.",)
    q = "How are Pay-As-You-Go accounts billed?"
    ok = await faithfulness("Pay-As-You-Go accounts are primarily billed monthly.", ctx, q)
    assert ok.label == "faithful", ok.explanation
    assert "primarily" not in reasons(ok)
    # how often is a fact: "weekly" is not "monthly"
    wrong = await faithfulness("Pay-As-You-Go accounts are billed weekly for usage.", ctx, q)
    assert wrong.label != "faithful"
    assert "weekly" in reasons(wrong)


async def test_citations_with_a_step_or_a_ref_point_at_the_source():
    answer = (
        "1. Open the query editor and pick the database (Passage 1, step 2).\n"
        "2. Type the SQL statement in the editor (Passage 1, steps 3-4).\n"
        "(Ref: Passage 1)"
    )
    r = await faithfulness(answer)
    assert r.label == "faithful", r.explanation
    assert "passage" not in reasons(r).lower()
    assert all(not c.get("values_missing") for c in r.metadata["claims"])
    wrong = await faithfulness("The result shows at most 5000 rows (Passage 1, step 3).")
    assert wrong.label == "unfaithful"
    assert "5000 is not in the context" in wrong.explanation


async def test_the_head_of_a_contracted_negation_is_no_word_to_find():
    r = await faithfulness("The result doesn't show more than 1000 rows unless you set a limit.")
    [claim] = r.metadata["claims"]
    assert claim["novel"] == 0.0, claim  # every word it needs is in the context
    assert claim["support"] == 1.0


async def test_words_a_page_ran_together_are_read_apart():
    # a web page whose line breaks were lost: "Better sleepBetter moodBetter grades"
    page = (
        "Get your kids moving\nYou know kids need physical activity to grow up strong and"
        " healthy.But did you know it can help them feel better right away?Better sleepBetter"
        " moodBetter grades",
    )
    good = "Physical activity helps kids feel better right away, with better sleep and mood."
    r = await faithfulness(good, page, "How does activity help kids?")
    assert r.label == "faithful", r.explanation
    # the facts stay strict: what the page never says still fails
    bad = "Physical activity helps kids feel better right away, with better eyesight and posture."
    assert (await faithfulness(bad, page, "How does activity help kids?")).label == "unfaithful"
    # the run-together word as written stays findable (an identifier, a name)
    named = "Kids get better grades, says the page (moodBetter grades)."
    r = await faithfulness(named, page, "How does activity help kids?")
    assert r.label == "faithful", r.explanation


async def test_words_run_together_are_read_apart_in_any_alphabet():
    # "estrésMás", "díasEl": the letters where the words meet are not ASCII
    page = (
        "Beneficios del ejercicio\nEl ejercicio regular reduce el estrésMás energía durante el"
        " díaEl sueño mejora en pocos díasEl ánimo también mejora",
    )
    question = "¿Qué beneficios tiene el ejercicio?"
    good = "El ejercicio regular reduce el estrés y da más energía durante el día."
    r = await faithfulness(good, page, question)
    assert r.label == "faithful", r.explanation
    bad = "El ejercicio regular reduce el colesterol y da más fuerza durante el día."
    assert (await faithfulness(bad, page, question)).label == "unfaithful"
