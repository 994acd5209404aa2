"""What a fit gives back (:mod:`ragsieve.jobs.fitting.fit`): the fitted parameters beside the
defaults, the cross-validated report, and whether the fit is worth storing."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ragsieve.evaluators.judges.combined.calibrated import Calibration, MetricCalibration
from ragsieve.evaluators.quality.agreement import COST_WEIGHTED
from ragsieve.jobs.fitting.table import METRICS


@dataclass
class Params:
    """Per metric: threshold and weights."""

    thresholds: dict[str, float]
    weights: dict[str, dict[str, float]] = field(default_factory=dict)

    def copy(self) -> Params:
        """An independent copy."""
        return Params(dict(self.thresholds), {m: dict(w) for m, w in self.weights.items()})


@dataclass
class FitResult:
    """A fit's parameters and its cross-validated agreement, before and after."""

    params: Params
    defaults: Params
    report: dict[str, Any]

    @property
    def gain(self) -> dict[str, Any]:
        """The cross-validated change in the accuracy the fit maximises, with its interval."""
        delta = self.report["agreement"]["delta"]
        return dict(delta.get(COST_WEIGHTED, delta["balanced_accuracy"]))

    @property
    def better(self) -> bool:
        """The 95% interval of the cross-validated gain lies above 0."""
        return bool(self.gain["ci"][0] > 0)

    @property
    def changes(self) -> bool:
        """The fit moves a threshold or a weight from the defaults."""
        return self.params != self.defaults

    @property
    def worth_storing(self) -> bool:
        """It changes something, and cross-validation gains (module docstring)."""
        return self.changes and self.gain["value"] > 0

    def calibration(self, series: int, created_at: float) -> Calibration:
        """The fit as a storable calibration."""
        backend = str(self.report.get("backend", "offline"))
        metrics = {
            m: MetricCalibration(
                self.params.thresholds[m],
                self.params.weights.get(m) if backend == "offline" else None,
            )
            for m in METRICS
        }
        return Calibration(metrics, series, created_at, _brief(self.report), backend)


def cause_accuracy(has_cause: np.ndarray, before: np.ndarray, after: np.ndarray) -> dict[str, Any]:
    """Root-cause agreement before and after, over labels that name a root cause."""
    n = int(has_cause.sum())
    return {
        "n": n,
        "before": round(float(before[has_cause].mean()), 4) if n else None,
        "after": round(float(after[has_cause].mean()), 4) if n else None,
    }


def fitted_metrics(weighted: bool, final: Params, defaults: Params) -> dict[str, Any]:
    """Per metric: the fitted and the default threshold and (offline) evidence weights."""
    return {
        m: {
            "threshold": final.thresholds[m],
            "default_threshold": defaults.thresholds[m],
            "weights": final.weights[m] if weighted else None,
            "default_weights": defaults.weights[m] if weighted else None,
        }
        for m in METRICS
    }


def _brief(report: Mapping[str, Any]) -> dict[str, Any]:
    keep = (
        "backend", "labels", "traces", "folds", "false_flag_cost", "agreement",
        "root_cause_accuracy", "better", "worth_storing", "root_cause_weights",
    )  # fmt: skip
    return {k: report[k] for k in keep if k in report}


__all__ = ["FitResult", "Params", "cause_accuracy", "fitted_metrics"]
