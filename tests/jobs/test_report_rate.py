"""The failure rate's interval (stratified variance) and its honesty when strata go unsampled."""

from __future__ import annotations

import pytest
from test_run_partial import plant
from test_run_support import settings

from ragsieve.collector.store import Store
from ragsieve.jobs.run.estimate import failure_rate, wilson
from ragsieve.jobs.run.report import render_table
from ragsieve.jobs.run.run import run_once


def test_interval_uses_the_stratified_variance() -> None:
    # a: N=100, 2 of 10 fail; b: N=300, 0 of 20 fail. W = 0.25 / 0.75, estimate 0.05.
    decided = [("a", i < 2) for i in range(10)] + [("b", False)] * 20
    rate = failure_rate(decided, {"a": 100, "b": 300})
    assert rate["estimate"] == 0.05
    # var_a = 0.0625 * 0.2 * 0.8 / 10 = 0.001; b has p=0: guard (z^2/(2(20+z^2)))^2/z^2 =
    # 0.0805634^2 / 3.841459 = 0.00168957, times 0.5625 = 0.00095038. var = 0.00195038.
    assert rate["n_effective"] == pytest.approx(0.05 * 0.95 / 0.00195038, abs=0.01)  # 24.35
    lo, hi = wilson(0.05, 0.05 * 0.95 / 0.00195038)
    assert (rate["ci_low"], rate["ci_high"]) == (round(lo, 6), round(hi, 6))
    assert 0.0 < rate["ci_low"] < 0.05 < rate["ci_high"] < 0.25


def test_uncovered_strata_give_bounds_not_a_traffic_estimate() -> None:
    rate = failure_rate([("negative_feedback", True)] * 3, {"negative_feedback": 10, "uniform": 90})
    assert rate["estimate"] is None and rate["coverage"] == 0.1
    assert rate["uncovered_strata"] == ["uniform"]
    part = rate["covered"]
    assert part["estimate"] == 1.0 and part["strata"] == ["negative_feedback"]
    assert rate["ci_low"] == round(part["ci_low"] * 0.1, 6)  # uncovered traffic all passing
    assert rate["ci_high"] == 1.0  # ... or all failing
    assert rate["ci_low"] <= 0.1 <= rate["ci_high"]  # the true 10% is inside


def test_small_budget_still_covers_the_remainder(store: Store) -> None:
    plant(store, 10, bad=True, feedback_polarity=-1)  # negative feedback, all fail
    plant(store, 90, bad=False)  # the remainder, all pass
    out = run_once(store, settings(store=store.url), budget_calls=10, deliver=False)
    r = out.report
    split = {k: (v["population"], v["sampled"]) for k, v in r["sampled"]["by_stratum"].items()}
    assert split == {"negative_feedback": (10, 1), "uniform": (90, 2)}
    assert r["sampled"]["total"] == 3
    fr = r["failure_rate"]
    assert fr["coverage"] == 1.0 and fr["estimate"] == 0.1  # the true rate, 10 / 100
    assert fr["uncovered_strata"] == [] and fr["n"] == 3 and fr["raw"] == pytest.approx(1 / 3)
    row = next(x for x in render_table(r).splitlines() if x.startswith("sampled"))
    assert "97 left out by the sampling rates; --all judges every trace" in row
    tight = run_once(store, settings(store=store.url), budget_calls=3, deliver=False).report
    # The free rerun picks plus one new trace: still every stratum has a decided pick.
    split = {k: (v["population"], v["sampled"]) for k, v in tight["sampled"]["by_stratum"].items()}
    assert split == {"negative_feedback": (10, 2), "uniform": (90, 2)}
    assert tight["failure_rate"]["coverage"] == 1.0 and tight["failure_rate"]["estimate"] == 0.1


def test_table_labels_a_covered_strata_estimate() -> None:
    fr = failure_rate([("negative_feedback", True)] * 3, {"negative_feedback": 10, "uniform": 90})
    line = render_table(_report(fr)).splitlines()
    row = next(x for x in line if x.startswith("failure rate"))
    assert "uniform not sampled" in row and "covered strata (10.0% of traffic): 100.0%" in row
    assert "whole traffic between" in row


def _report(fr: dict) -> dict:  # type: ignore[type-arg]
    return {
        "run_id": "r",
        "window": {"start": "a", "end": "b"},
        "discovered": 100,
        "not_applicable": {"reasons": {}},
        "sampled": {"by_stratum": {}},
        "already_judged": 0,
        "judged": 3,
        "judge_errors": 0,
        "deferred": 0,
        "flagged": 3,
        "flagged_by_root_cause": {},
        "flagged_by_category": {},
        "failure_rate": fr,
        "audit": {"routed": 0},
    }
