"""Tail-sampling weights: a trace the tier kept by probability p weighs 1/p in the failure rate."""

from __future__ import annotations

import json
from typing import Any

import pytest
from test_run_support import PARIS, settings

from ragsieve.collector.store import Store
from ragsieve.evaluators.testing import make_interaction
from ragsieve.jobs.run.estimate import failure_rate
from ragsieve.jobs.run.run import run_once
from ragsieve.jobs.sampling.sampling import (
    Candidate,
    SamplingSettings,
    StratifiedSampler,
    upstream_keep,
)

TIER = {"rag.sampling.baseline_percentage": 10.0, "rag.sampling.config": "ragsieve-tail-v1"}
BAD = "The capital of France is Marseille, the seat of government since 1850."


def test_keep_rule() -> None:
    probabilistic = ["baseline"]
    assert upstream_keep({}, probabilistic) == (1.0, "none")
    assert upstream_keep({**TIER, "tailsampling.policy": "baseline"}, probabilistic) == (
        0.1,
        "probabilistic",
    )
    assert upstream_keep({**TIER, "tailsampling.policy": "keep-errors"}, probabilistic) == (
        1.0,
        "kept_by_policy",
    )
    assert upstream_keep(TIER, probabilistic) == (1.0, "unknown_policy")
    assert upstream_keep(
        {"rag.sampling.baseline_percentage": "25", "tailsampling.policy": "baseline"}, probabilistic
    ) == (0.25, "probabilistic")
    for bad in (0, -5, 150, "ten", float("nan")):
        got = upstream_keep(
            {"rag.sampling.baseline_percentage": bad, "tailsampling.policy": "baseline"},
            probabilistic,
        )
        assert got == (1.0, "invalid_percentage")
    assert upstream_keep({**TIER, "tailsampling.policy": "rest"}, ["rest"])[0] == 0.1


def test_inclusion_is_upstream_times_job_share() -> None:
    items = [
        Candidate(
            f"{i:032x}",
            float(i),
            n_context=1,
            context_chars=500,
            attributes={**TIER, "tailsampling.policy": "baseline"} if i % 2 else {},
        )
        for i in range(40)
    ]
    sel = StratifiedSampler(SamplingSettings()).sample(items, sample_size=10)
    assert sel.strata["uniform"].population == 40 and sel.strata["uniform"].sampled == 10
    odd = [int(p.trace_id, 16) % 2 for p in sel.picks]
    assert sel.upstream == {"probabilistic": sum(odd), "none": 10 - sum(odd)}
    assert 0 < sum(odd) < 10
    for pick, is_odd in zip(sel.picks, odd, strict=True):
        assert pick.upstream_p == (0.1 if is_odd else 1.0)
        assert pick.inclusion_p == pytest.approx(0.25 * pick.upstream_p)


def test_failure_rate_weights_by_inverse_upstream_probability() -> None:
    # stratum a (N=10, 4 picks): 2 fails kept by baseline (w=10/4/0.1=25), 2 passes (w=2.5)
    # stratum b (N=5, 1 pick): 1 pass (w=5)
    decided = [
        ("a", True, 0.1),
        ("a", True, 0.1),
        ("a", False, 1.0),
        ("a", False, 1.0),
        ("b", False, 1.0),
    ]
    rate = failure_rate(decided, {"a": 10, "b": 5})
    assert rate["estimate"] == round(50 / 60, 6)
    assert rate["traffic_estimate"] == 60.0
    # Stratified variance: a has share 55/60, weighted rate 20/22, Kish size 22^2/202; b has share
    # 5/60, rate 0 on 1 pick, so it adds the Wilson-consistent guard (z^2/(2(1+z^2)))^2/z^2.
    z2 = 1.959963984540054**2
    p_a, m_a = 20 / 22, 22**2 / 202
    var = (55 / 60) ** 2 * p_a * (1 - p_a) / m_a + (5 / 60) ** 2 * (z2 / (2 * (1 + z2))) ** 2 / z2
    assert rate["n_effective"] == round((50 / 60) * (10 / 60) / var, 2)  # 4.75
    with pytest.raises(ValueError):
        failure_rate([("a", True, 0.0)], {"a": 1})


def _plant(store: Store, n: int, *, bad: bool, attrs: dict[str, Any]) -> list[str]:
    ids = []
    for _ in range(n):
        it = make_interaction(context=(PARIS,), answer=BAD if bad else None, attributes=attrs)
        if not bad:
            it = it.model_copy(update={"answer": "The capital of France is Paris."})
        seq = store.query("SELECT COALESCE(MAX(seq), 0) + 1 FROM interactions")[0][0]
        store.execute(
            "INSERT INTO interactions (trace_id, revision, seq, started_at, settled_at, status,"
            " body) VALUES (?,?,?,?,?,?,?)",
            (
                it.trace_id,
                1,
                seq,
                it.started_at.timestamp(),
                it.started_at.timestamp(),
                it.status,
                it.model_dump_json(),
            ),
        )
        ids.append(it.trace_id)
    return ids


def test_job_report_is_unbiased_for_the_full_traffic(store: Store) -> None:
    baseline = {**TIER, "tailsampling.policy": "baseline"}
    slow = {**TIER, "tailsampling.policy": "keep-slow"}
    kinds = {
        "baseline_ok": (_plant(store, 4, bad=False, attrs=baseline), False, 0.1),
        "baseline_bad": (_plant(store, 2, bad=True, attrs=baseline), True, 0.1),
        "slow_bad": (_plant(store, 2, bad=True, attrs=slow), True, 1.0),
        "no_tier_ok": (_plant(store, 1, bad=False, attrs={}), False, 1.0),
        "no_tier_bad": (_plant(store, 1, bad=True, attrs={}), True, 1.0),
        "unknown_ok": (_plant(store, 1, bad=False, attrs=TIER), False, 1.0),
    }
    out = run_once(store, settings(store=store.url), take_all=True, deliver=False)
    rep = out.report
    verdicts = dict(store.query("SELECT trace_id, verdict FROM samples"))
    samples = {
        tid: json.loads(body) for tid, body in store.query("SELECT trace_id, body FROM samples")
    }
    probs = dict(store.query("SELECT trace_id, inclusion_p FROM samples"))
    num = den = 0.0
    for ids, bad, p in kinds.values():
        for tid in ids:
            assert verdicts[tid] == ("fail" if bad else "pass"), tid
            assert probs[tid] == pytest.approx(p) and samples[tid]["upstream_p"] == p
            num += bad / p
            den += 1 / p
    assert den == pytest.approx(65.0) and num == pytest.approx(23.0)
    assert rep["failure_rate"]["estimate"] == round(23 / 65, 6)
    assert rep["failure_rate"]["raw"] == round(5 / 11, 6)  # what ignoring the tier would say
    assert rep["failure_rate"]["traffic_estimate"] == pytest.approx(65.0)
    assert rep["upstream"] == {
        "keep_rule": {"probabilistic": 6, "kept_by_policy": 2, "none": 2, "unknown_policy": 1},
        "reweighted_picks": 6,
    }
