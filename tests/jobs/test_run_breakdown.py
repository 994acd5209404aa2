"""Weighted failure rates per stratum, attribute cell and root cause (run.breakdown)."""

from __future__ import annotations

import pytest

from ragsieve.jobs.run.breakdown import (
    by_cell,
    by_root_cause,
    by_stratum,
    cause_share,
    cell_values,
    domain_rate,
    weigh,
)
from ragsieve.jobs.run.estimate import failure_rate, wilson


def _picks():  # a: N=100, 2 of 10 fail (retrieval); b: N=300, 3 of 20 fail (1 retrieval, 2 gen.)
    a = [("a", i < 2, 1.0, "retrieval" if i < 2 else None, {"route": "/a"}) for i in range(10)]
    b = [
        ("b", i < 3, 1.0, ("retrieval" if i == 0 else "generation") if i < 3 else None,
         {"route": "/b" if i % 2 else "/a", "model": "m1"})
        for i in range(20)
    ]  # fmt: skip
    return a + b


def test_root_cause_rates_add_up_to_the_weighted_rate() -> None:
    picks = weigh(_picks(), {"a": 100, "b": 300})
    whole = failure_rate([(s, f) for s, f, *_ in _picks()], {"a": 100, "b": 300})
    causes = by_root_cause(picks)
    assert set(causes) == {"retrieval", "generation"}
    # 0.25 * 0.2 + 0.75 * 0.15 = 0.1625; retrieval 0.25*0.2 + 0.75*0.05 = 0.0875
    assert whole["estimate"] == pytest.approx(0.1625)
    assert causes["retrieval"]["estimate"] == pytest.approx(0.0875)
    assert causes["generation"]["estimate"] == pytest.approx(0.075)
    assert causes["retrieval"]["failed"] == 3 and causes["generation"]["failed"] == 2


def test_stratum_and_cell_rates_are_hajek_ratios_with_kish_intervals() -> None:
    picks = weigh(_picks(), {"a": 100, "b": 300})
    strata = by_stratum(picks)
    assert strata["a"]["estimate"] == 0.2 and strata["b"]["estimate"] == 0.15
    lo, hi = wilson(0.2, 10)
    assert (strata["a"]["ci_low"], strata["a"]["ci_high"]) == (round(lo, 6), round(hi, 6))
    cells = by_cell(picks)
    # route=/a: 10 a-picks (w=10, 2 fail) + 10 b-picks at even i (w=15, fails at i=0,2)
    assert cells["route=/a"]["estimate"] == pytest.approx((2 * 10 + 2 * 15) / (100 + 150))
    assert cells["route=/a"]["n_effective"] == pytest.approx(250**2 / (10 * 100 + 10 * 225), 0.01)
    assert cells["model=m1"]["estimate"] == 0.15 and cells["model=m1"]["n"] == 20
    assert cells["route=/b"]["cause_share"] == {"generation": 1.0}


def test_cells_keep_the_largest_values_and_skip_missing_attributes() -> None:
    items = [("u", False, 1.0, None, {"tenant": f"t{i % 5}"}) for i in range(50)]
    items += [("u", True, 1.0, "generation", {"tenant": "t0"})] * 10
    cells = by_cell(weigh(items, {"u": 60}), max_values=2)
    assert sorted(cells) == ["tenant=t0", "tenant=t1"]
    assert cell_values(
        {"http.route": "/x", "model": ""}, {"route": "http.route", "model": "model"}
    ) == {"route": "/x"}


def test_upstream_probability_reweights_and_is_checked() -> None:
    picks = weigh([("u", True, 0.5, "retrieval", {}), ("u", False, 1.0, None, {})], {"u": 2})
    assert domain_rate(picks)["estimate"] == pytest.approx(2 / 3)
    assert cause_share(picks) == {"retrieval": 1.0}
    with pytest.raises(ValueError, match="upstream keep probability"):
        weigh([("u", True, 0.0, None, {})], {"u": 1})
    assert domain_rate([]) is None
