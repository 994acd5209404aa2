"""Prediction-powered failure rate: hand-computed cases and its coverage by simulation."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest

from ragsieve.evaluators.quality.ppi import Labelled, Sampled, ppi_estimate, ppi_failure_rate
from ragsieve.jobs.run.estimate import failure_rate


def test_audits_of_uncertain_passes_do_not_stand_for_the_sure_ones() -> None:
    # flagged: 1 of 3 real; the one audited pass is an uncertain one (all audited), a miss
    labelled = [Labelled(True, f) for f in (True, False, False)]
    labelled.append(Labelled(False, True, 1.0, "uncertain"))
    shares = {"uncertain": 0.1, "random": 0.9}
    assert ppi_failure_rate(0.3, 0.0004, labelled, pass_shares=shares) is None
    # unstratified, that one miss reads as every pass failing
    assert ppi_failure_rate(0.3, 0.0004, labelled)["false_omission_rate"] == 1.0  # type: ignore[index]
    # a random audit of the sure passes: 1 miss in 20, weighed by their 0.9 share
    labelled += [Labelled(False, i == 0, 20.0, "random") for i in range(20)]
    out = ppi_failure_rate(0.3, 0.0004, labelled, pass_shares=shares)
    assert out is not None
    assert out["false_omission_rate"] == pytest.approx(0.1 * 1.0 + 0.9 * 0.05)
    assert out["estimate"] == pytest.approx(0.3 / 3 + 0.7 * (0.1 + 0.9 * 0.05), abs=1e-6)


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


STRATA = ("normal", "slow", "errors")


@dataclass(frozen=True)
class _World:
    """A deployment's truth: per-stratum failure rates and the judge's error rates."""

    rates: dict[str, float]
    tpr: float
    fpr: float


def _deployment(
    rng: np.random.Generator, picks: int = 300, world: _World | None = None
) -> tuple[float, _World, list[Sampled]]:
    """One synthetic deployment with a known true failure rate: three strata (``picks`` each)
    sampled at different rates, a biased judge of known error rates (it misses 10-30% of
    failures and flags 8-20% of passes), people reviewing 60% of flagged traces and auditing
    25% of passes. ``world``: sample that deployment again."""
    pops = {"normal": 6000, "slow": 1500, "errors": 500}
    if world is None:
        world = _World(
            {"normal": rng.uniform(0.03, 0.1), "slow": rng.uniform(0.1, 0.3), "errors": 0.4},
            rng.uniform(0.7, 0.9),
            rng.uniform(0.08, 0.2),
        )
    truth = sum(pops[h] * world.rates[h] for h in pops) / sum(pops.values())
    items: list[Sampled] = []
    for h, n in pops.items():
        y = rng.random(picks) < world.rates[h]
        judged = np.where(y, rng.random(picks) < world.tpr, rng.random(picks) < world.fpr)
        reviewed = rng.random(picks) < np.where(judged, 0.6, 0.25)
        items += [
            Sampled(h, n / picks, bool(j), bool(t) if r else None)
            for j, t, r in zip(judged, y, reviewed, strict=True)
        ]
    return truth, world, items


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
        truth, _, items = _deployment(rng)
        out = ppi_estimate(items)
        assert out is not None
        ppi_hits += out["ci_low"] <= truth <= out["ci_high"]
        pops = {h: round(sum(x.weight for x in items if x.stratum == h)) for h in STRATA}
        raw = failure_rate([(x.stratum, x.judge_failed) for x in items], pops)
        raw_hits += raw["ci_low"] <= truth <= raw["ci_high"]
    assert 0.93 <= ppi_hits / reps <= 0.97
    assert raw_hits / reps < 0.2  # the biased judge's own interval misses the truth


def test_report_estimate_with_labels_from_earlier_runs_covers_the_truth() -> None:
    """The run report's form: this run's raw rate, rectified by reviews of earlier samples
    (independent of this run's), judge error rates unchanged in between."""
    rng = np.random.default_rng(7)
    reps, hits, raw_hits = 1000, 0, 0
    for _ in range(reps):
        truth, world, earlier = _deployment(rng, picks=150)
        # the same deployment's next window: same rates, a fresh sample
        _, _, current = _deployment(rng, picks=150, world=world)
        labelled = [
            Labelled(x.judge_failed, x.failed, x.weight) for x in earlier if x.failed is not None
        ]
        pops = {h: round(sum(x.weight for x in current if x.stratum == h)) for h in STRATA}
        raw = failure_rate([(x.stratum, x.judge_failed) for x in current], pops)
        out = ppi_failure_rate(raw["estimate"], raw["variance"], labelled)
        assert out is not None
        hits += out["ci_low"] <= truth <= out["ci_high"]
        raw_hits += raw["ci_low"] <= truth <= raw["ci_high"]
    assert 0.93 <= hits / reps <= 0.97
    assert raw_hits / reps < 0.2
