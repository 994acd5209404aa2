"""Agreement of predicted failures with people's labels, with 95% bootstrap intervals.

Failure is the positive class. For ``B`` resamples of the labelled items (with replacement, one
seed) every statistic is recomputed; the interval is the 2.5th and 97.5th percentile. Two
predictions of the same items (before and after a fit) are resampled together, so the interval
of their difference is a paired one: "better beyond noise" means its lower bound is above 0.

A deployment may say that a false flag costs it ``false_flag_cost`` missed failures: then
``cost_weighted_accuracy`` = (recall + c x specificity) / (1 + c) joins the statistics (at c = 1 it
is the balanced accuracy, and is left out).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

STATS = ("balanced_accuracy", "precision", "recall", "f1", "kappa", "false_flag_rate")
COST_WEIGHTED = "cost_weighted_accuracy"


def _div(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    out = np.zeros_like(a, dtype=float)
    np.divide(a, b, out=out, where=b > 0)
    return out


def stats_matrix(
    truth: np.ndarray, pred: np.ndarray, false_flag_cost: float = 1.0
) -> dict[str, np.ndarray]:
    """Each statistic per row of ``truth`` / ``pred`` (bool arrays of shape ``(rows, n)``).

    balanced accuracy = (TPR + TNR) / 2; precision = TP / (TP + FP); recall = TP / (TP + FN);
    F1 = 2PR / (P + R); Cohen's κ = (p_o - p_e) / (1 - p_e); false flag rate = FP / (FP + TN);
    with ``false_flag_cost`` c != 1 also the cost-weighted accuracy (TPR + c TNR) / (1 + c).
    """
    t, p = truth.astype(bool), pred.astype(bool)
    n = t.shape[1]
    tp = (t & p).sum(1).astype(float)
    fp = (~t & p).sum(1).astype(float)
    fn = (t & ~p).sum(1).astype(float)
    tn = n - tp - fp - fn
    recall = _div(tp, tp + fn)
    tnr = _div(tn, tn + fp)
    precision = _div(tp, tp + fp)
    po = (tp + tn) / n
    pe = ((tp + fp) * (tp + fn) + (fn + tn) * (fp + tn)) / (n * n)
    out = {
        "balanced_accuracy": (recall + tnr) / 2,
        "precision": precision,
        "recall": recall,
        "f1": _div(2 * precision * recall, precision + recall),
        "kappa": _div(po - pe, 1 - pe),
        "false_flag_rate": _div(fp, tn + fp),
    }
    if false_flag_cost != 1.0:
        out[COST_WEIGHTED] = (recall + false_flag_cost * tnr) / (1 + false_flag_cost)
    return out


def agreement(truth: Sequence[bool], pred: Sequence[bool]) -> dict[str, float]:
    """The statistics of one prediction (no interval)."""
    s = stats_matrix(np.asarray([truth], bool), np.asarray([pred], bool))
    return {k: round(float(v[0]), 4) for k, v in s.items()}


def bootstrap(
    truth: Sequence[bool] | np.ndarray,
    preds: Mapping[str, Sequence[bool] | np.ndarray],
    *,
    reps: int = 1000,
    seed: int = 0,
    paired: tuple[str, str] | None = None,
    false_flag_cost: float = 1.0,
) -> dict[str, Any]:
    """Per prediction: each statistic with its 95% bootstrap interval; with ``paired=(a, b)``
    also ``delta`` (b minus a) of each statistic, with its paired interval."""
    t = np.asarray(truth, bool)
    n = len(t)
    if n == 0:
        raise ValueError("bootstrap needs at least one labelled item")
    idx = np.random.default_rng(seed).integers(0, n, size=(reps, n))
    out: dict[str, Any] = {}
    boot: dict[str, dict[str, np.ndarray]] = {}
    for name, pred in preds.items():
        p = np.asarray(pred, bool)
        point = stats_matrix(t[None, :], p[None, :], false_flag_cost)
        boot[name] = stats_matrix(t[idx], p[idx], false_flag_cost)
        out[name] = {k: _summary(point[k][0], boot[name][k]) for k in point}
    if paired is not None:
        a, b = paired
        out["delta"] = {
            k: _summary(out[b][k]["value"] - out[a][k]["value"], boot[b][k] - boot[a][k], digits=4)
            for k in out[a]
        }
    return out


def _summary(value: float, draws: np.ndarray, digits: int = 4) -> dict[str, Any]:
    lo, hi = np.percentile(draws, [2.5, 97.5])
    return {
        "value": round(float(value), digits),
        "ci": [round(float(lo), digits), round(float(hi), digits)],
    }


__all__ = ["COST_WEIGHTED", "STATS", "agreement", "bootstrap", "stats_matrix"]
