"""Shared plumbing of the offline (heuristic, no-LLM) judges: result building and error capture."""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any

from ragsieve.evaluators.records import EvalResult, RagInteraction

log = logging.getLogger(__name__)

OFFLINE_MODEL = "ragsieve-offline-heuristic-v1 (deterministic, no LLM)"
OFFLINE_VERSION = "offline-1"


class OfflineJudge:
    """Helper base: subclasses implement ``_judge`` (sync, may raise); ``evaluate`` never raises."""

    name: str = ""
    version: str = OFFLINE_VERSION
    judge_model: str = OFFLINE_MODEL

    async def evaluate(self, interaction: RagInteraction) -> Sequence[EvalResult]:
        """Judge one interaction; failures become a single ``label="error"`` result."""
        try:
            return [self._judge(interaction)]
        except Exception as exc:  # a heuristic bug must not stop a job run
            log.warning("%s failed on trace %s: %s", self.name, interaction.trace_id, exc)
            return [self.result(interaction, "error", None, f"offline judge failed: {exc}")]

    def _judge(self, interaction: RagInteraction) -> EvalResult:
        raise NotImplementedError

    def result(
        self,
        interaction: RagInteraction,
        label: str,
        score: float | None,
        explanation: str,
        metadata: Mapping[str, Any] | None = None,
    ) -> EvalResult:
        """Build an ``EvalResult`` for this judge with the offline provenance filled in."""
        if score is not None:
            score = round(min(1.0, max(0.0, float(score))), 4)
        return EvalResult(
            trace_id=interaction.trace_id,
            span_id=interaction.span_id,
            evaluator=self.name,
            label=label,
            score=score,
            explanation=explanation,
            judge_model=self.judge_model,
            judge_version=self.version,
            prompt_version=self.version,
            annotator_kind="CODE",
            metadata=dict(metadata or {}),
        )


def chunk_texts(interaction: RagInteraction) -> list[tuple[str, int, str]]:
    """``(id, rank, content)`` of the context chunks that have content, in rank order."""
    docs = sorted(interaction.context, key=lambda d: d.rank)
    return [(d.id, d.rank, d.content) for d in docs if d.content and d.content.strip()]
