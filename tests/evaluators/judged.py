"""The offline judges called as the job calls them, for the evaluator tests."""

from __future__ import annotations

from ragsieve.evaluators.judges import get_judge
from ragsieve.evaluators.records import EvalResult
from ragsieve.evaluators.testing import make_interaction


async def faithfulness(question: str, context: tuple[str, ...], answer: str) -> EvalResult:
    """The offline faithfulness judge's one result for ``answer`` to ``question``."""
    interaction = make_interaction(query=question, context=context, answer=answer)
    [result] = await get_judge("faithfulness").evaluate(interaction)
    return result


async def assert_flagged_and_named(
    question: str, context: tuple[str, ...], wrong: str, right: str, named: str
) -> None:
    """``wrong`` is unfaithful with a contradicted value that ``named`` explains, and ``right``
    is faithful with no value conflict."""
    bad = await faithfulness(question, context, wrong)
    assert bad.label == "unfaithful", bad.explanation
    assert named in bad.explanation
    [claim] = bad.metadata["claims"]
    assert claim["contradiction"] and claim["value_conflict"]["value"] in wrong
    good = await faithfulness(question, context, right)
    assert good.label == "faithful", good.explanation
    assert not any(c.get("value_conflict") for c in good.metadata["claims"])
