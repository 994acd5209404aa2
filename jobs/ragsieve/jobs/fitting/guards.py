"""What keeps a fit to what its labels speak for (:mod:`ragsieve.jobs.fitting.fit`).

Two guards weigh every candidate threshold and weight:

- :class:`Anchors`, the store's unlabelled traces the job decided last: a candidate pays for each
  of their verdicts it changes (a quarter of that for a root cause it changes), each anchor
  weighing the inverse of the probability with which the job's sampler picked it, so that they
  stand for the traffic and not for the failure-seeking sample;
- :func:`beyond_chance`, a one-sided sign test: the labels a candidate changes must side with it
  beyond chance, so one or two labels never move a threshold. A deployment that says a false
  flag costs it more than a missed failure (``false_flag_cost``) weighs the labels so, and still
  needs three labels on a change's side.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ragsieve.jobs.fitting.table import Example

EVIDENCE_Z = 1.645  # the labels a change moves side with it at one-sided 95%
RC_SHARE = 0.25  # a changed root cause costs a quarter of a changed verdict
MIN_AGREEING = 3  # fewer labels on a change's side never move it, whatever a false flag costs


class Anchors:
    """Unlabelled examples' verdicts under every metric combination, their reference verdicts
    (under the defaults) and their weights."""

    def __init__(
        self, fail_table: np.ndarray, examples: Sequence[Example], weights: Sequence[float] | None
    ) -> None:
        n = len(examples)
        self.rows = np.arange(n)
        self.fail_table = fail_table.reshape(n, 8)
        codes = {c: i for i, c in enumerate(sorted({str(c) for ex in examples for c in ex.cause}))}
        self.cause = np.array([[codes[str(c)] for c in ex.cause] for ex in examples], int).reshape(
            n, 8
        )
        self.reference = np.zeros(n, bool)
        self.reference_cause = np.zeros(n, int)
        w = np.ones(n) if weights is None else np.asarray(weights, float)
        self.weight = w / w.sum() if n else w

    def refer_to(self, combo: np.ndarray) -> None:
        """Take each anchor's verdict and root cause under its metric combination ``combo``
        as the reference a candidate's changes are counted against."""
        self.reference = self.fail_table[self.rows, combo]
        self.reference_cause = self.cause[self.rows, combo]

    def cost(self, base: np.ndarray, fails: np.ndarray, k: int) -> np.ndarray:
        """Per column of ``fails`` (metric ``k`` failing, (n, c)), the other metrics as ``base``
        says (bit ``k`` clear): the weighted share of anchors whose verdict it changes, plus
        ``RC_SHARE`` times the share still failing under another root cause."""
        if not len(self.rows):
            return np.zeros(fails.shape[1])
        per_bit = []
        for bit in (0, 1):
            combo = base + (bit << k)
            now = self.fail_table[self.rows, combo]
            cause = self.cause[self.rows, combo]
            flipped = now != self.reference
            recaused = now & self.reference & (cause != self.reference_cause)
            per_bit.append(flipped + RC_SHARE * recaused)
        w = self.weight
        return float(w @ per_bit[0]) + (w * (per_bit[1] - per_bit[0])) @ fails


def beyond_chance(
    truth: np.ndarray,
    pred: np.ndarray,
    cause: np.ndarray,
    cur: np.ndarray,
    cur_cause: np.ndarray,
    has_cause: np.ndarray,
    false_flag_cost: float = 1.0,
) -> np.ndarray:
    """Per column: the labels a candidate changes side with it beyond chance (one-sided test at
    ``EVIDENCE_Z``; a verdict or a labelled failure's root cause set right counts for, set wrong
    against), and at least ``MIN_AGREEING`` of them side with it. No change passes. Labels are
    counted, not class-balanced as in the objective: the test asks whether the labels agree, the
    objective how much the change is worth; a trace labelled twice (its verdict and a metric's)
    counts twice.

    A verdict changed on a labelled pass weighs ``false_flag_cost`` (c), on a labelled failure 1;
    a root cause moved weighs 1. The null is a change worth nothing at that price (among the
    verdicts it clears, one in ``1 + c`` a pass; among those it flags, ``c`` in ``1 + c`` a
    failure; or any mix worth 0 on average). A changed verdict's worth lies in an interval of
    width 1 + c, so its variance under the null is at most (1 + c)^2 / 4 (Popoviciu): the test is
    net >= z sqrt((1 + c)^2 / 4 x changed + root causes moved). At c = 1 it is the plain sign
    test, which already needs three agreeing labels."""
    y = truth[:, None]
    flip = pred != cur
    c = float(false_flag_cost)
    worth = np.where(y, 1.0, c)  # what setting this label's verdict right is worth
    right, wrong = flip & (pred == y), flip & (pred != y)
    moved = has_cause[:, None] & pred & cur & (cause != cur_cause)
    net = (right * worth).sum(0) - (wrong * worth).sum(0)
    net = net + (moved & cause).sum(0) - (moved & ~cause).sum(0)
    spread = (1 + c) ** 2 / 4 * flip.sum(0) + moved.sum(0)
    agreeing = right.sum(0) + (moved & cause).sum(0)
    enough = (agreeing >= MIN_AGREEING) | (spread == 0)  # a column that changes nothing passes
    return (net >= EVIDENCE_Z * np.sqrt(spread)) & enough


__all__ = ["EVIDENCE_Z", "MIN_AGREEING", "Anchors", "beyond_chance"]
