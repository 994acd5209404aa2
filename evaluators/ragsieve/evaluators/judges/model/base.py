"""What the model judges share: their options, how they run off the event loop, their results."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from ragsieve.evaluators.judges.model.runtime import LocalModel, ModelTimeLimit
from ragsieve.evaluators.records import EvalResult, RagInteraction

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class ModelConfig:
    """The model tier's settings (``[model]``): which folder judges which metric, and how.

    ``escalate``: which heuristic results the model re-judges, ``uncertain`` (label uncertain or
    error, or the score inside ``band``) or ``all`` (every scored one). ``uncertainty_band``:
    model scores inside it are sent on to the LLM judge when a cascade has one; a model score at
    or above the threshold but below its top is labelled ``uncertain``.
    """

    faithfulness: str | None = None
    context_relevance: str | None = None
    threads: int = 1
    batch_size: int = 8
    time_limit_s: float = 10.0
    windows_per_claim: int = 3
    escalate: Literal["uncertain", "all"] = "uncertain"
    band: tuple[float, float] = (0.35, 0.8)
    uncertainty_band: tuple[float, float] = (0.5, 0.8)

    def folder(self, metric: str) -> str | None:
        """The model folder configured for ``metric`` (None: that metric has no model)."""
        return {"faithfulness": self.faithfulness, "context_relevance": self.context_relevance}.get(
            metric
        )


class ModelJudge:
    """Helper base: subclasses implement ``_judge`` (sync, may raise); ``evaluate`` runs it in a
    worker thread (inference must not block the event loop) and never raises."""

    name: str = ""
    version: str = ""

    def __init__(
        self,
        model: LocalModel,
        *,
        threshold: float,
        batch_size: int = 8,
        time_limit_s: float | None = 10.0,
        pass_at: float | None = None,
        calibration: str | None = None,
    ) -> None:
        self.model, self.threshold = model, threshold
        self.batch_size, self.time_limit_s = batch_size, time_limit_s
        self.pass_at = max(threshold, pass_at if pass_at is not None else threshold)
        self.calibration = calibration
        self.judge_model = model.label

    def _tag(self, kind: str, extra: str = "") -> str:
        cal = f":{self.calibration}" if self.calibration else ""
        return f"model-1:{kind}:{self.model.manifest.name}:{self.model.sha256[:12]}" + (
            f":t{self.threshold}:u{self.pass_at}{extra}{cal}"
        )

    async def evaluate(self, interaction: RagInteraction) -> Sequence[EvalResult]:
        """Judge one interaction; failures (a time limit, a broken model) become one
        ``label="error"`` result saying why."""
        try:
            return [await asyncio.to_thread(self._judge, interaction)]
        except ModelTimeLimit as exc:
            why = f"model judge {self.model.manifest.name}: {exc} ({self.time_limit_s}s per trace)"
            return [self.result(interaction, "error", None, why)]
        except Exception as exc:  # a model or tokenizer failure must not stop a job run
            log.warning("%s failed on trace %s: %r", self.name, interaction.trace_id, exc)
            why = f"model judge {self.model.manifest.name} failed: {type(exc).__name__}: {exc}"
            return [self.result(interaction, "error", None, why)]

    def _judge(self, interaction: RagInteraction) -> EvalResult:
        raise NotImplementedError

    def score(self, pairs: Sequence[tuple[str, str]]) -> list[Any]:
        """The model's verdicts on ``pairs`` under this judge's batch size and time limit."""
        return self.model.score(pairs, batch_size=self.batch_size, time_limit_s=self.time_limit_s)

    def decide(self, score: float, ok: str, bad: str) -> str:
        """``bad`` below the threshold; ``uncertain`` from it up to ``pass_at``; else ``ok``."""
        if score < self.threshold:
            return bad
        return "uncertain" if score < self.pass_at else ok

    def result(
        self,
        interaction: RagInteraction,
        label: str,
        score: float | None,
        explanation: str,
        metadata: Mapping[str, Any] | None = None,
    ) -> EvalResult:
        """An ``EvalResult`` with this model's provenance (name and file hash)."""
        meta = {"model": self.model.manifest.name, "model_sha256": self.model.sha256[:12]}
        if self.calibration:
            meta["calibration"] = self.calibration
        return EvalResult(
            trace_id=interaction.trace_id,
            span_id=interaction.span_id,
            evaluator=self.name,
            label=label,
            score=None if score is None else round(min(1.0, max(0.0, score)), 6),
            explanation=explanation,
            judge_model=self.judge_model,
            judge_version=self.version,
            prompt_version=self.version,
            annotator_kind="CODE",
            metadata={**meta, **(metadata or {})},
        )


__all__ = ["ModelConfig", "ModelJudge"]
