"""Stratified sampling: deterministic by trace id, priority strata, quotas, budget, weights."""

from __future__ import annotations

import numpy as np
import pytest

from ragsieve.jobs.run.estimate import failure_rate
from ragsieve.jobs.sampling.sampling import (
    Candidate,
    StratifiedSampler,
    TakeAllSampler,
    unit_hash,
)
from ragsieve.jobs.settings import SamplingSettings, StratumRule


def cand(i: int, **kw: object) -> Candidate:
    base: dict[str, object] = {
        "n_context": 3,
        "context_chars": 900,
        "best_score": 0.8,
        "latency_ms": 500.0,
    }
    base.update(kw)
    return Candidate(trace_id=f"{i:032x}", started_at=float(i), **base)  # type: ignore[arg-type]


def population() -> list[Candidate]:
    items = [cand(i) for i in range(1000)]
    items += [cand(2000 + i, status="error") for i in range(10)]
    items += [cand(3000 + i, feedback_polarity=-1) for i in range(10)]
    items += [cand(4000 + i, n_context=0, context_chars=0, best_score=None) for i in range(10)]
    items += [cand(5000 + i, completeness="no_root") for i in range(3)]
    items += [cand(6000 + i, has_answer=False) for i in range(2)]
    return items


def test_unit_hash_is_stable_and_salted() -> None:
    assert unit_hash("ab" * 16, "uniform") == unit_hash("ab" * 16, "uniform")
    assert unit_hash("ab" * 16, "uniform") != unit_hash("ab" * 16, "error")
    assert unit_hash("ab" * 16, "uniform", seed=1) != unit_hash("ab" * 16, "uniform")
    values = [unit_hash(f"{i:032x}", "x") for i in range(2000)]
    assert 0.45 < float(np.mean(values)) < 0.55


def test_priority_strata_then_uniform_with_probabilities() -> None:
    sel = StratifiedSampler().sample(population(), sample_size=50)
    assert sel.discovered == 1035
    assert sel.not_applicable == {"incomplete:no_root": 3, "no_answer": 2}
    by = {k: (v.population, v.sampled) for k, v in sel.strata.items()}
    assert by["error"] == (10, 10)
    assert by["negative_feedback"] == (10, 10)
    assert by["tiny_context"] == (10, 5)  # rate 0.5
    assert by["uniform"] == (1000, 50)
    p = {pick.stratum: pick.inclusion_p for pick in sel.picks}
    assert p["error"] == 1.0 and p["tiny_context"] == 0.5 and p["uniform"] == 0.05
    assert len({pick.trace_id for pick in sel.picks}) == len(sel.picks) == 75


def test_same_decision_for_a_trace_on_every_run_and_order() -> None:
    items = population()
    a = StratifiedSampler(seed=3).sample(items, sample_size=40)
    b = StratifiedSampler(seed=3).sample(list(reversed(items)), sample_size=40)
    assert sorted(p.trace_id for p in a.picks) == sorted(p.trace_id for p in b.picks)
    c = StratifiedSampler(seed=4).sample(items, sample_size=40)
    assert {p.trace_id for p in a.picks} != {p.trace_id for p in c.picks}


def test_quota_and_slow_quantile() -> None:
    items = [cand(i, latency_ms=100.0 + i) for i in range(200)]
    settings = SamplingSettings(slow=StratumRule(rate=1.0, quota=3))
    sel = StratifiedSampler(settings).sample(items, sample_size=0)
    assert sel.strata["slow"].population == 10  # at or above the window's p95
    assert sel.strata["slow"].sampled == 3
    slow_ids = {p.trace_id for p in sel.picks}
    assert all(int(t, 16) >= 190 for t in slow_ids)


def test_budget_covers_every_stratum_then_goes_in_priority_order() -> None:
    items = population()
    sel = StratifiedSampler().sample(
        items, sample_size=50, budget_calls=30, calls_needed=lambda t: 2
    )
    assert sel.budget_exhausted
    # 15 picks: 2 per stratum first (uniform before the priority strata), the other 7 to error.
    got = {k: v.sampled for k, v in sel.strata.items()}
    assert got == {"error": 9, "negative_feedback": 2, "tiny_context": 2, "uniform": 2}
    full = StratifiedSampler().sample(items, sample_size=50)
    for name in got:  # every stratum's sample is still a prefix of its hash order
        want = [p.trace_id for p in full.picks if p.stratum == name][: got[name]]
        assert [p.trace_id for p in sel.picks if p.stratum == name] == want
    tight = StratifiedSampler().sample(items, sample_size=50, budget_calls=5)
    # Too little for every floor: the remainder (most of the traffic) is covered first.
    assert {k: v.sampled for k, v in tight.strata.items()}["uniform"] == 2
    assert tight.strata["error"].sampled == 2 and tight.strata["tiny_context"].sampled == 0


def test_judged_traces_are_free() -> None:
    items = population()
    judged = {p.trace_id for p in StratifiedSampler().sample(items, sample_size=50).picks}
    free = StratifiedSampler().sample(
        items, sample_size=50, budget_calls=1, calls_needed=lambda t: 0 if t in judged else 1
    )
    assert {p.trace_id for p in free.picks} == judged  # a rerun costs nothing


def test_take_all_gives_probability_one() -> None:
    sel = TakeAllSampler().sample(population(), sample_size=1)
    assert set(sel.strata) == {"all"}
    assert sel.strata["all"].sampled == 1030
    assert all(p.inclusion_p == 1.0 for p in sel.picks)


def test_attribute_cells_each_get_a_quota() -> None:
    items = [cand(i, attributes={"route": "big"}) for i in range(500)]
    items += [cand(900 + i, attributes={"route": "rare"}) for i in range(4)]
    settings = SamplingSettings(attributes=["route"], per_attribute_quota=2)
    sel = StratifiedSampler(settings).sample(items, sample_size=10)
    assert sel.strata["attr:route=rare"].sampled == 2
    assert sel.strata["attr:route=big"].sampled == 10


def test_novelty_stratum_uses_golden_vectors() -> None:
    golden = np.array([[1.0, 0.0]], dtype=np.float32)

    def embed(texts: object) -> np.ndarray:
        return np.array(
            [[0.0, 1.0] if "new" in t else [1.0, 0.0] for t in texts],  # type: ignore[attr-defined]
            dtype=np.float32,
        )

    items = [cand(i, query="old question") for i in range(50)]
    items += [cand(100 + i, query="brand new topic") for i in range(5)]
    sel = StratifiedSampler(golden_vectors=golden, embed=embed).sample(items, sample_size=5)
    assert sel.strata["novel"].population == 5
    assert sel.strata["novel"].sampled == 5
    assert sel.novelty_checked == 55


def test_weighted_rate_is_not_inflated_by_oversampling() -> None:
    # 1000 traces: 10 errors all failing and judged; 990 others with 1% failing, 99 judged.
    decided = [("error", True)] * 10 + [("uniform", i == 0) for i in range(99)]
    rate = failure_rate(decided, {"error": 10, "uniform": 990})
    raw = 11 / 109
    assert rate["raw"] == pytest.approx(raw, abs=1e-6)
    expected = 10 / 1000 + 990 / 1000 * (1 / 99)
    assert rate["estimate"] == pytest.approx(expected, abs=1e-6)
    assert rate["ci_low"] <= rate["estimate"] <= rate["ci_high"]
    assert rate["estimate"] < raw / 3
