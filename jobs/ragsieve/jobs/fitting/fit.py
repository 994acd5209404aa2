"""Fitting the judges to a deployment's labels: per metric a threshold (and evidence weights).

What is fitted is the job's own decision. For each labelled trace the offline judges' evidence is
read (stored results, else judged now; LLM and cascade judges: their stored scores, thresholds
only); the job's verdict rule (``verdicts.flagging.decide``, with the observed-corpus chunk the
job found for the trace, if any; golden-set expectations are not used) is evaluated once for
each of the 8 pass/fail combinations of the three metrics, so a candidate calibration only
changes which combination a trace lands in. Coordinate ascent then picks, metric
by metric (two sweeps), the threshold (0.05 to 0.95 by 0.01) and, from ``WEIGHTS_MIN_PER_CLASS``
labels of each class on, the evidence weights (a grid on the simplex) that maximise balanced
accuracy against the labels (failure = positive; with a ``false_flag_cost`` c other than 1, the
cost-weighted accuracy (recall + c x specificity) / (1 + c), for a deployment to which a false
flag costs c missed failures) plus a quarter of the root-cause agreement on
labelled failures (a fit must not buy agreement by blaming the wrong stage), less
``CHANGE_COST`` times the share of the store's unlabelled traces (``anchors``, the last the job
decided) whose verdict the candidate changes (and a quarter of that for a root cause it changes);
ties go to the values nearer the defaults.

A fit changes only what its labels speak for, three ways:
- a change must win the labels it moves beyond chance (a one-sided sign test at
  ``EVIDENCE_Z``, a pass's label weighing the false flag cost) with at least three of them on
  its side: one or two labels never move a threshold;
- the anchors make a change pay for the verdicts it changes that no label speaks for, while a
  pattern the labels show across the traffic still moves it. Each anchor weighs the inverse of
  the probability with which the job's sampler picked it, so they stand for the traffic. When
  the labels are drawn at random with balanced classes and a change moves the same share of
  labels as of anchors, about three of every four labels it moves must side with it (at the
  default false flag cost of 1); labels drawn where the job flags (the review queue) are
  denser there, and need fewer;
- below ``WEIGHTS_MIN_PER_CLASS`` labels of either class the weights stay: a grid of weights
  offers far more candidates than so few labels can choose between.

A label names a trace's verdict (``fail`` / ``pass``), or one metric's when it says which. The
agreement reported is k-fold cross-validated, the labels of one conversation or question in one
fold: each fold is predicted by a fit on the other folds ("after") and by the defaults
("before"); the two are bootstrapped together (95% intervals, and the paired interval of the
difference). A fit is worth storing (``FitResult.worth_storing``, :mod:`.result`) when it
changes something and cross-validation gains in the accuracy it maximises: the guards above
already make every change win its labels beyond chance, and the folds, fitted on four fifths of
the labels, often cannot move at all, so asking them to confirm the gain beyond noise as well
would hold back most fits that would have helped. Whether the gain is beyond noise (the lower
end of its interval above 0) is reported as ``better``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import partial
from typing import Any

import numpy as np

from ragsieve.evaluators.errors import RagsieveError
from ragsieve.evaluators.judges.combined.calibrated import DEFAULT_WEIGHTS
from ragsieve.evaluators.quality.agreement import bootstrap
from ragsieve.jobs.fitting.folds import folds
from ragsieve.jobs.fitting.guards import Anchors, beyond_chance
from ragsieve.jobs.fitting.result import FitResult, Params, cause_accuracy, fitted_metrics
from ragsieve.jobs.fitting.scores import Scorer, weight_grid
from ragsieve.jobs.fitting.table import METRICS, Example, Item

THRESHOLDS = np.round(np.arange(0.05, 0.951, 0.01), 2)
MIN_PER_CLASS = 20
WEIGHTS_MIN_PER_CLASS = 50  # fewer labels of either class: thresholds only, weights as they are
RC_WEIGHT = 0.25  # a root cause wrongly assigned costs a quarter of a misjudged failure
CHANGE_COST = 0.5  # changing the verdict of every unlabelled trace costs half a balanced accuracy


class NotEnoughLabels(RagsieveError):
    """Fewer labels per class than a fit needs (exit 1; the message says how many more)."""


class Problem:
    """Examples, their scorer and the labels to agree with: predicts items under parameters."""

    def __init__(
        self,
        examples: Sequence[Example],
        items: Sequence[Item],
        weighted: bool = True,
        anchors: Sequence[Example] = (),
        anchor_weights: Sequence[float] | None = None,
        false_flag_cost: float = 1.0,
    ) -> None:
        self.examples, self.items = [*examples, *anchors], list(items)
        self.false_flag_cost = float(false_flag_cost)
        examples = self.examples
        self.scorer = Scorer(examples, weighted)
        self.search_weights = weighted
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
        first = len(examples) - len(anchors)  # the anchors come after the labelled examples
        self.anchor = np.arange(first, len(examples))
        self.anchors = Anchors(self.fail_table[first:], anchors, anchor_weights)

    def anchor_to(self, p: Params) -> None:
        """Weigh what a candidate changes against the anchors' verdicts under ``p``."""
        bits = self.bits(p)
        self.anchors.refer_to((bits * (1 << np.arange(3))).sum(1)[self.anchor])

    def changed(self, base: np.ndarray, fails: np.ndarray, k: int) -> np.ndarray:
        """Per threshold column of ``fails`` (metric ``k`` failing): the anchors' cost."""
        return self.anchors.cost(base[self.anchor], fails[self.anchor], k)

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
        """``p`` with metric ``k``'s weights and threshold the best on the items in ``mask``
        (``p``'s own values unless a candidate beats them)."""
        m = METRICS[k]
        bits = self.bits(p)
        base = (bits * (1 << np.arange(3))).sum(1) - (bits[:, k].astype(int) << k)
        t0, w0 = p.thresholds[m], p.weights.get(m) or dict(DEFAULT_WEIGHTS[m])
        now = self._predict(bits, (base + (bits[:, k].astype(int) << k))[:, None])
        value = partial(self._value, bits, base, k, mask, now)
        best = (float(value(bits[:, k][:, None])[0]), t0, dict(w0))
        for w in weight_grid(m) if self.search_weights else [dict(w0)]:
            with np.errstate(invalid="ignore"):
                fails = self.scorer.score(m, w)[:, None] < THRESHOLDS[None, :]
            dist = np.abs(THRESHOLDS - t0) + sum(abs(w[x] - w0[x]) for x in w)
            scored = value(fails) - 1e-5 * dist
            j = int(np.argmax(scored))
            if scored[j] > best[0] + 1e-12:
                best = (float(scored[j]), float(THRESHOLDS[j]), w)
        out = p.copy()
        out.thresholds[m] = best[1]
        out.weights[m] = dict(best[2])
        return out

    def _value(
        self,
        bits: np.ndarray,
        base: np.ndarray,
        k: int,
        mask: np.ndarray,
        now: tuple[np.ndarray, np.ndarray],
        fails: np.ndarray,
    ) -> np.ndarray:
        """Per column of ``fails`` (metric ``k`` failing, (n, c)): the objective on the items in
        ``mask``, less the anchors' cost; -inf where the labels the column changes from ``now``
        (predictions, root causes agreeing) do not side with it beyond chance."""
        combos = base[:, None] + (fails.astype(int) << k)
        pred, cause = self._predict(bits, combos, k, fails)
        obj = _objective(
            self.truth[mask], pred[mask], cause[mask], self.has_cause[mask], self.false_flag_cost
        )
        obj = obj - CHANGE_COST * self.changed(base, fails, k)
        cur, cur_cause = now
        sure = beyond_chance(
            self.truth[mask], pred[mask], cause[mask], cur[mask], cur_cause[mask],
            self.has_cause[mask], self.false_flag_cost,
        )  # fmt: skip
        return np.where(sure, obj, -np.inf)


def _objective(
    truth: np.ndarray,
    pred: np.ndarray,
    cause: np.ndarray,
    has_cause: np.ndarray,
    false_flag_cost: float = 1.0,
) -> np.ndarray:
    """Per column: (recall + c x specificity) / (1 + c), the balanced accuracy at c = 1, plus
    RC_WEIGHT x root-cause agreement on labelled failures."""
    y = truth[:, None]
    pos, neg = max(int(truth.sum()), 1), max(int((~truth).sum()), 1)
    tpr = (pred & y).sum(0) / pos
    tnr = (~pred & ~y).sum(0) / neg
    rc = cause[has_cause].sum(0) / max(int(has_cause.sum()), 1)
    c = false_flag_cost
    return (tpr + c * tnr) / (1 + c) + RC_WEIGHT * rc


def fit_params(problem: Problem, start: Params, mask: np.ndarray, sweeps: int = 2) -> Params:
    """Coordinate ascent over the metrics, ``sweeps`` times, on the items in ``mask``."""
    p = start.copy()
    for _ in range(sweeps):
        for k in range(3):
            p = problem.best_for(p, k, mask)
    return p


def cross_validated(
    problem: Problem, defaults: Params, k: int, seed: int
) -> tuple[np.ndarray, np.ndarray]:
    """Per item: the failure and root-cause agreement predicted by a fit on the other folds."""
    fold = folds(problem, k, seed)
    after = np.zeros(len(problem.items), bool)
    after_rc = np.zeros(len(problem.items), bool)
    for f in range(k):
        test = fold == f
        pred, rc = problem.predict(fit_params(problem, defaults, ~test))
        after[test], after_rc[test] = pred[test], rc[test]
    return after, after_rc


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
    anchors: Sequence[Example] = (),
    anchor_weights: Sequence[float] | None = None,
    false_flag_cost: float = 1.0,
) -> FitResult:
    """Cross-validate, then fit on every label (see the module docstring); for the ``llm`` and
    ``cascade`` backends the thresholds only, on the stored scores."""
    problem = Problem(
        examples, items, backend == "offline", anchors, anchor_weights, false_flag_cost
    )
    check_counts(problem, minimum)
    fewest = min(int(problem.truth.sum()), int((~problem.truth).sum()))
    problem.search_weights &= fewest >= WEIGHTS_MIN_PER_CLASS
    defaults = Params(
        {m: float(job_thresholds[m]) for m in METRICS},
        {m: dict(DEFAULT_WEIGHTS[m]) for m in METRICS},
    )
    problem.anchor_to(defaults)
    before, before_rc = problem.predict(defaults)
    after, after_rc = cross_validated(problem, defaults, k, seed)
    final = fit_params(problem, defaults, np.ones(len(items), bool))
    agreement = bootstrap(
        problem.truth,
        {"before": before, "after": after},
        reps=reps,
        seed=seed,
        paired=("before", "after"),
        false_flag_cost=false_flag_cost,
    )
    report: dict[str, Any] = {
        "backend": backend,
        "labels": len(items),
        "traces": len(examples),
        "anchors": len(anchors),
        "weights_fitted": problem.search_weights,
        "failures": int(problem.truth.sum()),
        "passes": int((~problem.truth).sum()),
        "folds": k,
        "false_flag_cost": float(false_flag_cost),
        "agreement": agreement,
        "root_cause_accuracy": cause_accuracy(problem.has_cause, before_rc, after_rc),
        "metrics": fitted_metrics(problem.scorer.weighted, final, defaults),
    }
    result = FitResult(final, defaults, report)
    report.update(better=result.better, changes=result.changes, worth_storing=result.worth_storing)
    return result
