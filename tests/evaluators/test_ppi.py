"""Prediction-powered failure rate: hand-computed cases and its coverage by simulation."""

from __future__ import annotations

import numpy as np
import pytest

from ragsieve.evaluators.ppi import Labelled, Sampled, ppi_estimate, ppi_failure_rate
from ragsieve.jobs.run.estimate import failure_rate


def test_estimate_is_the_judge_rate_rectified_per_verdict() -> None:
    # judge fails 30%; of labelled flagged 3/4 are real failures, of labelled passes 1/10
    labelled = [Labelled(True, f) for f in (True, True, True, False)]
    labelled += [Labelled(False, i == 0) for i in range(10)]
    out = ppi_failure_rate(0.3, 0.0004, labelled)
    assert out is not None
    assert out["estimate"] == pytest.approx(0.3 * 0.75 + 0.7 * 0.1)
    var = (0.75 - 0.1) ** 2 * 0.0004 + 0.09 * 0.75 * 0.25 / 4 + 0.49 * 0.1 * 0.9 / 10
    assert out["ci_high"] - out["estimate"] == pytest.approx(1.959964 * var**0.5, abs=1e-5)


def test_needs_labels_on_both_verdicts() -> None:
    assert ppi_failure_rate(0.3, 0.001, [Labelled(True, True)]) is None
    assert ppi_failure_rate(0.3, 0.001, []) is None


def test_weights_are_inclusion_weights() -> None:
    # a failure labelled among passes with weight 9 counts nine times
    out = ppi_failure_rate(
        0.0, 0.0, [Labelled(True, True), Labelled(False, True, 9.0), Labelled(False, False)]
    )
    assert out is not None and out["false_omission_rate"] == pytest.approx(0.9)


def _deployment(rng: np.random.Generator) -> tuple[float, float, list[Sampled]]:
    """One synthetic deployment with a known true failure rate: three strata (300 picks each) at
    different rates, a biased judge of known error rates (it misses 10-30% of failures and
    flags 8-20% of passes), people reviewing 60% of flagged traces and auditing 25% of passes.
    Returns the truth, the judge's bias and the sample."""
    pops = {"normal": 6000, "slow": 1500, "errors": 500}
    rates = {"normal": rng.uniform(0.03, 0.1), "slow": rng.uniform(0.1, 0.3), "errors": 0.4}
    tpr, fpr = rng.uniform(0.7, 0.9), rng.uniform(0.08, 0.2)
    truth = sum(pops[h] * rates[h] for h in pops) / sum(pops.values())
    items: list[Sampled] = []
    for h, n in pops.items():
        m = 300
        y = rng.random(m) < rates[h]
        judged = np.where(y, rng.random(m) < tpr, rng.random(m) < fpr)
        reviewed = rng.random(m) < np.where(judged, 0.6, 0.25)
        items += [
            Sampled(h, n / m, bool(j), bool(t) if r else None)
            for j, t, r in zip(judged, y, reviewed, strict=True)
        ]
    bias = truth * tpr + (1 - truth) * fpr - truth
    return truth, bias, items


def test_estimate_over_a_sample_is_unbiased_for_a_perfectly_labelled_sample() -> None:
    # every trace labelled: the estimate is the weighted share of real failures
    items = [Sampled("a", 2.0, True, True), Sampled("a", 2.0, True, False)]
    items += [Sampled("b", 1.0, False, False), Sampled("b", 1.0, False, True)]
    items += [Sampled("b", 1.0, False, False), Sampled("b", 1.0, False, False)]
    out = ppi_estimate(items)
    assert out is not None and out["estimate"] == pytest.approx((2.0 + 1.0) / 8.0)


def test_interval_covers_the_truth_and_the_judge_only_one_does_not() -> None:
    rng = np.random.default_rng(2026)
    reps, ppi_hits, raw_hits = 1000, 0, 0
    for _ in range(reps):
        truth, bias, items = _deployment(rng)
        out = ppi_estimate(items)
        assert out is not None
        ppi_hits += out["ci_low"] <= truth <= out["ci_high"]
        pops = {
            h: round(sum(x.weight for x in items if x.stratum == h))
            for h in ("normal", "slow", "errors")
        }
        raw = failure_rate([(x.stratum, x.judge_failed) for x in items], pops)
        raw_hits += raw["ci_low"] <= truth <= raw["ci_high"]
    assert 0.93 <= ppi_hits / reps <= 0.97
    assert raw_hits / reps < 0.2  # the biased judge's own interval misses the truth
