"""The judge protocol: one method, ``evaluate``, and the guard that holds a judge to it."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from ragsieve.evaluators.judges.matching import for_judging
from ragsieve.evaluators.records import EvalResult, RagInteraction


@runtime_checkable
class Judge(Protocol):
    """Decides one metric for one interaction.

    ``name`` is the metric written into ``EvalResult.evaluator`` (``faithfulness``,
    ``answer_relevance`` or ``context_relevance`` whatever the backend); ``version`` changes when
    the judge's logic, prompt or model changes. ``evaluate`` never raises for a bad interaction or
    a failing backend: it returns results with ``label="error"`` and the reason in ``explanation``.
    """

    name: str
    version: str

    async def evaluate(self, interaction: RagInteraction) -> Sequence[EvalResult]:
        """Judge one interaction; usually one result, named ``self.name``."""
        ...


# the labels that say a metric failed, whichever backend gave them
FAILING_LABELS = frozenset({"unfaithful", "irrelevant", "fail", "incorrect", "hallucinated"})

_log = logging.getLogger(__name__)


def error_result(judge: Judge, interaction: RagInteraction, why: str) -> EvalResult:
    """A ``label="error"`` verdict: the judge could not decide, and says why."""
    return EvalResult(
        trace_id=interaction.trace_id,
        span_id=interaction.span_id,
        evaluator=judge.name,
        label="error",
        score=None,
        explanation=why,
        judge_version=str(judge.version),
    )


async def safe_evaluate(
    judge: Judge, interaction: RagInteraction, *, timeout_s: float | None = None
) -> list[EvalResult]:
    """Run one judge and hold it to the protocol: never raises, never returns nothing.

    A judge that raises, times out or returns no result yields one ``label="error"`` result.
    """
    try:
        call = judge.evaluate(for_judging(interaction))  # invisible/look-alike text folded
        results = list(await (asyncio.wait_for(call, timeout_s) if timeout_s else call))
    except Exception as exc:  # the protocol says never raise; callers rely on this guard
        _log.warning("judge %s raised on %s: %r", judge.name, interaction.trace_id, exc)
        return [error_result(judge, interaction, f"judge raised {type(exc).__name__}: {exc}")]
    return results or [error_result(judge, interaction, "judge returned no result")]


__all__ = ["FAILING_LABELS", "Judge", "error_result", "safe_evaluate"]
