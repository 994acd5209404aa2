"""Fitting the judges to a deployment's labels: per metric a threshold (and evidence weights).

What is fitted is the job's own decision. For each labelled trace the offline judges' evidence is
read (stored results, else judged now; LLM and cascade judges: their stored scores, thresholds
only); the job's verdict rule (``verdicts.flagging.decide``, with the observed-corpus chunk the
job found for the trace, if any; golden-set expectations are not used) is evaluated once for
each of the 8 pass/fail combinations of the three metrics, so a candidate calibration only
changes which combination a trace lands in. Coordinate ascent then picks, metric
by metric (two sweeps), the evidence weights (a grid on the simplex) and the threshold (0.05 to
0.95 by 0.01) that maximise balanced accuracy against the labels (failure = positive) plus a
quarter of the root-cause agreement on labelled failures (a fit must not buy agreement by
blaming the wrong stage); ties go to the values nearer the defaults.

A label names a trace's verdict (``fail`` / ``pass``), or one metric's when it says which. The
agreement reported is k-fold cross-validated: each fold is predicted by a fit on the other folds
("after") and by the defaults ("before"); the two are bootstrapped together (95% intervals, and
the paired interval of the difference). A fit is "better beyond noise" when the lower end of the
balanced-accuracy difference's interval is above 0.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ragsieve.evaluators.errors import RagsieveError
from ragsieve.evaluators.judges.combined.calibrated import (
    DEFAULT_WEIGHTS,
    Calibration,
    MetricCalibration,
)
from ragsieve.evaluators.quality.agreement import bootstrap
from ragsieve.jobs.fitting.scores import Scorer, weight_grid
from ragsieve.jobs.fitting.table import METRICS, Example, Item

THRESHOLDS = np.round(np.arange(0.05, 0.951, 0.01), 2)
MIN_PER_CLASS = 20
RC_WEIGHT = 0.25  # a root cause wrongly assigned costs a quarter of a misjudged failure


@dataclass
class Params:
    """Per metric: threshold and weights."""

    thresholds: dict[str, float]
    weights: dict[str, dict[str, float]] = field(default_factory=dict)

    def copy(self) -> Params:
        """An independent copy."""
        return Params(dict(self.thresholds), {m: dict(w) for m, w in self.weights.items()})


class NotEnoughLabels(RagsieveError):
    """Fewer labels per class than a fit needs (exit 1; the message says how many more)."""


class Problem:
    """Examples, their scorer and the labels to agree with: predicts items under parameters."""

    def __init__(
        self, examples: Sequence[Example], items: Sequence[Item], weighted: bool = True
    ) -> None:
        self.examples, self.items = list(examples), list(items)
        self.scorer = Scorer(examples, weighted)
        self.fail_table = (
            np.stack([ex.fail for ex in examples]) if examples else np.zeros((0, 8), bool)
        )
        self.ex = np.array([it.example for it in items], int)
        self.truth = np.array([it.failed for it in items], bool)
        self.metric = np.array([METRICS.index(it.metric) if it.metric else -1 for it in items], int)
        causes = [ex.cause for ex in examples]
        self.cause_ok = np.array(
            [[c == it.root_cause for c in causes[it.example]] for it in items], bool
        ).reshape(len(items), 8)
        self.has_cause = np.array(
            [it.metric is None and it.failed and it.root_cause is not None for it in items], bool
        )

    def bits(self, p: Params) -> np.ndarray:
        """(n, 3): metric k fails under ``p`` (unknown: False, which the table ignores)."""
        out = np.zeros((self.scorer.n, 3), bool)
        for k, m in enumerate(METRICS):
            s = self.scorer.score(m, p.weights.get(m) or DEFAULT_WEIGHTS[m])
            with np.errstate(invalid="ignore"):
                out[:, k] = s < p.thresholds[m]
        return out

    def predict(self, p: Params) -> tuple[np.ndarray, np.ndarray]:
        """Per item: predicted failure, and the root cause agreeing (trace items with one)."""
        bits = self.bits(p)
        combo = (bits * (1 << np.arange(3))).sum(1)
        pred, cause = self._predict(bits, combo[:, None])
        return pred[:, 0], cause[:, 0]

    def _predict(
        self,
        bits: np.ndarray,
        combos: np.ndarray,
        k: int | None = None,
        fails_k: np.ndarray | None = None,
    ) -> tuple[np.ndarray, np.ndarray]:
        """Per item and column of ``combos`` (n, c): failure, root cause agreeing; metric
        ``k``'s own items read ``fails_k``."""
        c = combos[self.ex]
        trace_pred = np.take_along_axis(self.fail_table[self.ex], c, 1)
        cause = np.take_along_axis(self.cause_ok, c, 1) & trace_pred
        pred = trace_pred.copy()
        for j in range(3):
            rows = self.metric == j
            if not rows.any():
                continue
            col = (
                fails_k[self.ex[rows]]
                if (j == k and fails_k is not None)
                else bits[self.ex[rows], j][:, None]
            )
            pred[rows] = np.broadcast_to(col, (int(rows.sum()), c.shape[1]))
        return pred, cause

    def best_for(self, p: Params, k: int, mask: np.ndarray) -> Params:
        """``p`` with metric ``k``'s weights and threshold the best on the items in ``mask``."""
        m = METRICS[k]
        bits = self.bits(p)
        base = (bits * (1 << np.arange(3))).sum(1) - (bits[:, k].astype(int) << k)
        t0, w0 = p.thresholds[m], p.weights.get(m) or dict(DEFAULT_WEIGHTS[m])
        best: tuple[float, float, dict[str, float]] = (-np.inf, t0, dict(w0))
        for w in weight_grid(m) if self.scorer.weighted else [dict(w0)]:
            with np.errstate(invalid="ignore"):
                fails = self.scorer.score(m, w)[:, None] < THRESHOLDS[None, :]
            pred, cause = self._predict(bits, base[:, None] + (fails.astype(int) << k), k, fails)
            obj = _objective(self.truth[mask], pred[mask], cause[mask], self.has_cause[mask])
            dist = np.abs(THRESHOLDS - t0) + sum(abs(w[x] - w0[x]) for x in w)
            j = int(np.argmax(obj - 1e-5 * dist))
            val = float(obj[j] - 1e-5 * dist[j])
            if val > best[0] + 1e-12:
                best = (val, float(THRESHOLDS[j]), w)
        out = p.copy()
        out.thresholds[m] = best[1]
        out.weights[m] = dict(best[2])
        return out


def _objective(
    truth: np.ndarray, pred: np.ndarray, cause: np.ndarray, has_cause: np.ndarray
) -> np.ndarray:
    """Per column: balanced accuracy + RC_WEIGHT x root-cause agreement on labelled failures."""
    y = truth[:, None]
    pos, neg = max(int(truth.sum()), 1), max(int((~truth).sum()), 1)
    tpr = (pred & y).sum(0) / pos
    tnr = (~pred & ~y).sum(0) / neg
    rc = cause[has_cause].sum(0) / max(int(has_cause.sum()), 1)
    return (tpr + tnr) / 2 + RC_WEIGHT * rc


def fit_params(problem: Problem, start: Params, mask: np.ndarray, sweeps: int = 2) -> Params:
    """Coordinate ascent over the metrics, ``sweeps`` times, on the items in ``mask``."""
    p = start.copy()
    for _ in range(sweeps):
        for k in range(3):
            p = problem.best_for(p, k, mask)
    return p


def folds(problem: Problem, k: int, seed: int) -> np.ndarray:
    """A fold per item: examples (with all their items) dealt round-robin per class."""
    rng = np.random.default_rng(seed)
    any_fail = np.zeros(len(problem.examples), bool)
    np.logical_or.at(any_fail, problem.ex, problem.truth)
    of_example = np.zeros(len(problem.examples), int)
    for cls in (True, False):
        idx = np.flatnonzero(any_fail == cls)
        rng.shuffle(idx)
        of_example[idx] = np.arange(len(idx)) % k
    return of_example[problem.ex]


def check_counts(problem: Problem, minimum: int = MIN_PER_CLASS) -> None:
    """Refuse a fit below ``minimum`` labels per class, saying how many more are needed."""
    fails, passes = int(problem.truth.sum()), int((~problem.truth).sum())
    short = [
        f"{minimum - n} more {what}"
        for n, what in ((fails, "failures"), (passes, "passes"))
        if n < minimum
    ]
    if short:
        raise NotEnoughLabels(
            f"a fit needs at least {minimum} labelled failures and {minimum} passes on traces"
            f" the store holds; have {fails} failures and {passes} passes:"
            f" label {' and '.join(short)}"
        )


@dataclass
class FitResult:
    """A fit's parameters and its cross-validated agreement, before and after."""

    params: Params
    defaults: Params
    report: dict[str, Any]

    @property
    def better(self) -> bool:
        """The balanced-accuracy gain's 95% interval lies above 0."""
        return bool(self.report["agreement"]["delta"]["balanced_accuracy"]["ci"][0] > 0)

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


def _cause_accuracy(problem: Problem, before: np.ndarray, after: np.ndarray) -> dict[str, Any]:
    """Root-cause agreement before and after, over labels that name a root cause."""
    n = int(problem.has_cause.sum())
    return {
        "n": n,
        "before": round(float(before[problem.has_cause].mean()), 4) if n else None,
        "after": round(float(after[problem.has_cause].mean()), 4) if n else None,
    }


def _fitted_metrics(problem: Problem, final: Params, defaults: Params) -> dict[str, Any]:
    """Per metric: the fitted and the default threshold and (offline) evidence weights."""
    weighted = problem.scorer.weighted
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
    keep = ("backend", "labels", "traces", "folds", "agreement", "root_cause_accuracy", "better")
    return {k: report[k] for k in keep if k in report}


def run_fit(
    examples: Sequence[Example],
    items: Sequence[Item],
    job_thresholds: Mapping[str, float],
    *,
    k: int = 5,
    seed: int = 0,
    reps: int = 1000,
    minimum: int = MIN_PER_CLASS,
    backend: str = "offline",
) -> FitResult:
    """Cross-validate, then fit on every label (see the module docstring); for the ``llm`` and
    ``cascade`` backends the thresholds only, on the stored scores."""
    problem = Problem(examples, items, weighted=backend == "offline")
    check_counts(problem, minimum)
    defaults = Params(
        {m: float(job_thresholds[m]) for m in METRICS},
        {m: dict(DEFAULT_WEIGHTS[m]) for m in METRICS},
    )
    fold = folds(problem, k, seed)
    before, before_rc = problem.predict(defaults)
    after = np.zeros(len(items), bool)
    after_rc = np.zeros(len(items), bool)
    for f in range(k):
        test = fold == f
        fitted = fit_params(problem, defaults, ~test)
        pred, rc = problem.predict(fitted)
        after[test], after_rc[test] = pred[test], rc[test]
    final = fit_params(problem, defaults, np.ones(len(items), bool))
    agreement = bootstrap(
        problem.truth,
        {"before": before, "after": after},
        reps=reps,
        seed=seed,
        paired=("before", "after"),
    )
    report: dict[str, Any] = {
        "backend": backend,
        "labels": len(items),
        "traces": len(examples),
        "failures": int(problem.truth.sum()),
        "passes": int((~problem.truth).sum()),
        "folds": k,
        "agreement": agreement,
        "root_cause_accuracy": _cause_accuracy(problem, before_rc, after_rc),
        "metrics": _fitted_metrics(problem, final, defaults),
    }
    result = FitResult(final, defaults, report)
    report["better"] = result.better
    return result
