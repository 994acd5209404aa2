"""Judges: the Judge protocol and the registry keyed by the names users write in config."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from ragsieve.evaluators.judges.llm import LLMConfig
from ragsieve.evaluators.judges.registry import available_judges, build_judges, get_judge
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


__all__ = ["Judge", "LLMConfig", "available_judges", "build_judges", "get_judge"]
