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
