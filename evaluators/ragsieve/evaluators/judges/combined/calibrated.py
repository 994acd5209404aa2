"""A fitted calibration and how judges apply it: per metric a threshold and evidence weights.

A calibration (``ragsieve judges fit``) holds, per metric, the decision threshold and, for the
offline judges, the weights of the evidence their score combines. Its id is part of every
calibrated judge's version, so checkpoints start a new series and a job re-judges under it.

The job decides with ``jobs.thresholds``; a calibrated judge labels at its fitted threshold and
reports its score on the job's scale (:func:`to_job_scale`: a monotone map sending the fitted
threshold to the job's), so the judge's label and the job's flag stay one decision. The raw
score and the calibration id are kept in the result's metadata (``raw_score``, ``calibration``).

:func:`rescore` recomputes a metric's raw score from the evidence an offline judge recorded in
a result (``metadata["evidence"]``, or the per-chunk evidence of context relevance) under other
weights: that is what a fit searches over, without judging anything again.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ragsieve.evaluators.errors import ConfigError
from ragsieve.evaluators.judges.offline import context, faithfulness, relevance
from ragsieve.evaluators.judges.thresholds import calibration_id
from ragsieve.evaluators.records import EvalResult, RagInteraction

DEFAULT_WEIGHTS: Mapping[str, Mapping[str, float]] = {
    "faithfulness": faithfulness.DEFAULT_WEIGHTS,
    "answer_relevance": relevance.DEFAULT_WEIGHTS,
    "context_relevance": context.DEFAULT_WEIGHTS,
}
LABELS = {  # (pass label, fail label) per metric
    "faithfulness": ("faithful", "unfaithful"),
    "answer_relevance": ("relevant", "irrelevant"),
    "context_relevance": ("relevant", "irrelevant"),
}
UNKNOWN = frozenset({"error", "skipped", "abstained"})
LEGACY_FAITH = frozenset({"mean", "min", "share"})


@dataclass(frozen=True, slots=True)
class MetricCalibration:
    """One metric's fitted decision: fail when the (re-weighted) score is below ``threshold``."""

    threshold: float
    weights: Mapping[str, float] | None = None  # None: the judge's own weights


@dataclass(frozen=True)
class Calibration:
    """A versioned fit: ``id`` names it in judge versions, ``series`` counts fits in a store."""

    metrics: Mapping[str, MetricCalibration]
    series: int = 1
    created_at: float = 0.0
    report: Mapping[str, Any] = field(default_factory=dict)
    backend: str = "offline"  # fitted for: offline (weights too), llm, cascade, model

    @property
    def id(self) -> str:
        """``cal<series>-<hash of the fitted numbers>``: stable for the same fit."""
        body = json.dumps(self.params(), sort_keys=True)
        return f"cal{self.series}-{hashlib.sha256(body.encode()).hexdigest()[:8]}"

    def params(self) -> dict[str, Any]:
        """The fitted numbers only (what the id hashes, with the backend unless offline)."""
        out: dict[str, Any] = {
            m: {"threshold": c.threshold, "weights": dict(c.weights) if c.weights else None}
            for m, c in sorted(self.metrics.items())
        }
        if self.backend != "offline":
            out["backend"] = self.backend
        return out

    def to_json(self) -> dict[str, Any]:
        """The calibration as stored and exported."""
        metrics = self.params()
        metrics.pop("backend", None)
        return {
            "id": self.id,
            "series": self.series,
            "created_at": self.created_at,
            "backend": self.backend,
            "metrics": metrics,
            "report": dict(self.report),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any], source: str = "calibration") -> Calibration:
        """Parse :meth:`to_json`; a bad field is a ``ConfigError`` naming ``source``."""
        try:
            metrics = {
                str(m): MetricCalibration(
                    float(c["threshold"]),
                    {str(k): float(v) for k, v in c["weights"].items()}
                    if c.get("weights")
                    else None,
                )
                for m, c in dict(data["metrics"]).items()
            }
            series, created = int(data.get("series", 1)), float(data.get("created_at", 0.0))
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise ConfigError(f"{source}: not a calibration ({exc!r})") from exc
        backend = str(data.get("backend") or "offline")
        if backend not in ("offline", "llm", "cascade", "model"):
            raise ConfigError(f"{source}: backend: must be offline, llm, cascade or model")
        for m, c in metrics.items():
            _check(m, c, source)
            if c.weights is not None and backend != "offline":
                raise ConfigError(f"{source}: metrics.{m}.weights: only the offline judge has them")
        return cls(metrics, series, created, dict(data.get("report") or {}), backend)


def _check(metric: str, c: MetricCalibration, source: str) -> None:
    if metric not in DEFAULT_WEIGHTS:
        raise ConfigError(f"{source}: metrics.{metric}: unknown metric")
    if not 0.0 < c.threshold < 1.0:
        raise ConfigError(f"{source}: metrics.{metric}.threshold: must be in (0, 1)")
    # a faithfulness fit from before the fitted model weighs the claims' supports only
    legacy = metric == "faithfulness" and c.weights is not None and set(c.weights) == LEGACY_FAITH
    if c.weights is not None and set(c.weights) != set(DEFAULT_WEIGHTS[metric]) and not legacy:
        want = ", ".join(sorted(DEFAULT_WEIGHTS[metric]))
        raise ConfigError(f"{source}: metrics.{metric}.weights: needs exactly {want}")


def to_job_scale(score: float, fitted: float, job: float) -> float:
    """Map ``score`` so that ``score >= fitted`` iff the result is ``>= job``: linear on
    ``[0, fitted]`` onto ``[0, job]`` and on ``[fitted, 1]`` onto ``[job, 1]``."""
    if score < fitted:
        return min(score * job / fitted, job - 1e-6)
    return job + (score - fitted) * (1.0 - job) / (1.0 - fitted)


class CalibratedJudge:
    """Wraps a judge: labels at the fitted threshold, reports the score on the job's scale."""

    def __init__(self, inner: Any, fitted: float, job: float, calibration: str) -> None:
        self.inner, self.fitted, self.job = inner, fitted, job
        self.calibration = calibration
        self.name: str = inner.name
        version = str(inner.version)
        self.version = version if calibration in version else f"{version}:{calibration}"

    async def evaluate(self, interaction: RagInteraction) -> Sequence[EvalResult]:
        """Judge with the inner judge, then relabel and rescale each scored result."""
        return [self._apply(r) for r in await self.inner.evaluate(interaction)]

    def _apply(self, r: EvalResult) -> EvalResult:
        meta = {**r.metadata, "calibration": self.calibration}
        if r.score is None or r.label in UNKNOWN or r.evaluator not in LABELS:
            return r.model_copy(update={"metadata": meta, "judge_version": self.version})
        ok, bad = LABELS[r.evaluator]
        meta["raw_score"] = r.score
        chunks = meta.get("chunks")
        if isinstance(chunks, list):
            meta["chunks"] = [self._chunk(c) for c in chunks]
        score = round(to_job_scale(r.score, self.fitted, self.job), 6)
        label = ok if r.score >= self.fitted else bad
        if r.label == "uncertain" and r.score >= self.fitted:
            label = "uncertain"  # still too weak to call a pass, whatever the fit moved
        update = {"score": score, "label": label, "metadata": meta, "judge_version": self.version}
        return r.model_copy(update=update)

    def _chunk(self, c: Any) -> Any:
        if not isinstance(c, Mapping) or not isinstance(c.get("score"), float | int):
            return c
        raw = float(c["score"])
        scaled = round(to_job_scale(raw, self.fitted, self.job), 6)
        return {**c, "raw_score": raw, "score": scaled, "relevant": raw >= self.fitted}


def rescore(metric: str, result: EvalResult, weights: Mapping[str, float]) -> float | None:
    """``result``'s raw score recomputed from its recorded evidence under ``weights``; None when
    the result is unknown (error, skipped, abstained) or holds no evidence."""
    if result.label in UNKNOWN or result.score is None:
        return None
    meta = result.metadata
    if metric == "context_relevance":
        chunks = [c for c in meta.get("chunks") or [] if "density" in c]
        if not chunks:
            return None
        return max(context_chunk_score(c, weights) for c in chunks)
    ev = meta.get("evidence")
    if not isinstance(ev, Mapping):
        return None
    if metric == "faithfulness":
        return faithfulness.combine(ev, weights)
    if metric == "answer_relevance":
        return relevance.combine(ev, bool(meta.get("abstained")), weights)
    return None


def context_chunk_score(chunk: Mapping[str, Any], weights: Mapping[str, float]) -> float:
    """One chunk's graded score from the evidence recorded in ``metadata["chunks"]``."""
    graded = context.graded_score(
        float(chunk["terms"]),
        chunk.get("typed"),
        chunk.get("cosine"),
        bool(chunk.get("other_language")),
        float(chunk["density"]),
        weights,
    )
    return round(graded, 4)


__all__ = [
    "DEFAULT_WEIGHTS",
    "LABELS",
    "Calibration",
    "CalibratedJudge",
    "MetricCalibration",
    "context_chunk_score",
    "rescore",
    "to_job_scale",
    "calibration_id",
]
