"""The regression gate: paired bootstrap decisions, floors, protected categories, policy, output."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from ragsieve.evaluators.errors import ConfigError, GateError
from ragsieve.evaluators.gate import (
    EvalResults,
    GatePolicy,
    compare,
    gate_files,
    load_policy,
    load_results,
    paired_bootstrap,
    render,
)


def results(
    values: dict[str, list[float]], cats: list[str] | None = None, version: int | None = 1
) -> EvalResults:
    n = len(next(iter(values.values())))
    ids = [f"q{i}" for i in range(n)]
    return EvalResults(
        metrics={m: float(np.mean(v)) for m, v in values.items()},
        per_query={q: {m: v[i] for m, v in values.items()} for i, q in enumerate(ids)},
        golden_version=version,
        query_category={q: c for q, c in zip(ids, cats or [], strict=False)},
    )


def test_identical_runs_pass_with_a_zero_interval() -> None:
    base = results({"recall@10": [1.0, 0.5, 0.0, 1.0] * 25, "mrr": [0.5] * 100})
    report = compare(base, base, GatePolicy())
    assert report.passed and report.n_paired == 100
    assert [(c.metric, c.delta, c.ci_low, c.ci_high, c.status) for c in report.checks] == [
        ("recall@10", 0.0, 0.0, 0.0, "pass"),
        ("mrr", 0.0, 0.0, 0.0, "pass"),
    ]


def test_a_clear_regression_fails_and_an_improvement_is_marked() -> None:
    rng = np.random.default_rng(1)
    base_v = rng.uniform(0.5, 1.0, 200)
    cand_v = np.where(rng.uniform(size=200) < 0.6, base_v - 0.2, base_v)
    base = results({"ndcg@10": base_v.tolist(), "mrr": (base_v * 0.5).tolist()})
    cand = results({"ndcg@10": cand_v.tolist(), "mrr": (base_v * 0.5 + 0.1).tolist()})
    report = compare(base, cand, GatePolicy())
    ndcg, mrr = report.checks
    assert ndcg.status == "regression" and ndcg.ci_high < 0 < -ndcg.delta
    assert ndcg.delta == pytest.approx(float((cand_v - base_v).mean()))
    assert mrr.status == "improved" and mrr.ci_low > 0
    assert not report.passed


def test_the_same_drop_is_noise_on_a_small_set_and_a_regression_on_a_large_one() -> None:
    def pair(n: int) -> tuple[EvalResults, EvalResults]:
        base = [1.0] * n
        cand = [0.5 if i % 20 == 0 else 1.0 for i in range(n)]  # 5% of queries lose 0.5
        return results({"recall@5": base}), results({"recall@5": cand})

    small = compare(*pair(40), GatePolicy())
    large = compare(*pair(4000), GatePolicy())
    assert small.checks[0].delta == pytest.approx(large.checks[0].delta) == pytest.approx(-0.025)
    assert small.passed and small.checks[0].ci_high == 0.0
    assert not large.passed and large.checks[0].status == "regression"


def test_min_effect_ignores_small_significant_drops() -> None:
    base = results({"mrr": [1.0] * 4000})
    cand = results({"mrr": [0.98] * 4000})
    assert not compare(base, cand, GatePolicy()).passed
    assert compare(base, cand, GatePolicy(min_effect=0.05)).passed


def test_floors_apply_to_the_candidate_mean() -> None:
    base = results({"recall@10": [0.8] * 50, "mrr": [0.9] * 50})
    policy = GatePolicy(floors={"recall@10": 0.9, "mrr": 0.7}, metrics=("mrr",))
    report = compare(base, base, policy)
    assert not report.passed
    assert {c.metric: c.status for c in report.checks} == {"mrr": "pass", "recall@10": "floor"}
    ok = compare(base, base, GatePolicy(floors={"recall@10": 0.8}))  # equal to the floor passes
    assert ok.passed
    with pytest.raises(GateError, match="'ndcg@10' is not in the candidate"):
        compare(base, base, GatePolicy(floors={"ndcg@10": 0.5}))


def test_a_drop_in_a_protected_category_fails_even_when_not_significant() -> None:
    cats = ["billing"] * 5 + ["other"] * 195
    base = results({"recall@10": [1.0] * 200}, cats)
    cand = results({"recall@10": [0.5] + [1.0] * 199}, cats)
    assert compare(base, cand, GatePolicy()).passed
    report = compare(base, cand, GatePolicy(protected_categories=("billing",)))
    assert not report.passed
    [check] = report.categories
    assert (check.category, check.n, check.delta, check.failed) == ("billing", 5, -0.1, True)
    assert compare(
        base, cand, GatePolicy(protected_categories=("billing",), protected_max_drop=0.2)
    ).passed
    with pytest.raises(GateError, match="'legal' has no paired queries"):
        compare(base, cand, GatePolicy(protected_categories=("legal",)))


def test_a_tiny_eval_set_cannot_call_a_regression_but_its_floors_hold() -> None:
    # one query that got worse: the bootstrap's interval is that change, zero width
    one = compare(results({"recall@1": [1.0]}), results({"recall@1": [0.0]}), GatePolicy())
    [check] = one.checks
    assert (check.ci_low, check.ci_high) == (-1.0, -1.0) and check.status == "pass"
    assert (
        one.passed
        and "recall@1: 1 query changed: no change can be significant at 95% on fewer than 6"
        in one.notes[-1]
    )
    floored = compare(
        results({"recall@1": [1.0]}),
        results({"recall@1": [0.0]}),
        GatePolicy(floors={"recall@1": 0.5}),
    )
    assert not floored.passed and floored.checks[0].status == "floor"
    # five of five worse is p = 1/16 two-sided; six of six, 1/32: a regression at 95%
    five = compare(results({"mrr": [1.0] * 5}), results({"mrr": [0.5] * 5}), GatePolicy())
    assert five.passed and five.checks[0].ci_high == -0.5  # the bootstrap alone would fail it
    six = compare(results({"mrr": [1.0] * 6}), results({"mrr": [0.5] * 6}), GatePolicy())
    assert not six.passed and six.checks[0].status == "regression"
    assert six.notes == [
        "mrr: 6 queries changed: a regression or improvement also needs an exact sign-flip test"
    ]
    # and an improvement on one query is no more significant than a regression
    better = compare(results({"mrr": [0.0]}), results({"mrr": [1.0]}), GatePolicy())
    assert better.checks[0].ci_low == 1.0 and better.checks[0].status == "pass"


def test_a_large_set_where_few_queries_changed_is_read_by_the_changed_ones() -> None:
    # 4 of 100 queries dropped 1 -> 0: the bootstrap's interval lies below zero, but 4 changes
    # all one way are p = 1/8; 8 of 100 are p = 1/128
    four = compare(
        results({"recall@5": [1.0] * 100}),
        results({"recall@5": [0.0] * 4 + [1.0] * 96}),
        GatePolicy(),
    )
    assert four.checks[0].ci_high < 0 and four.passed
    assert "4 queries changed" in four.notes[-1]
    eight = compare(
        results({"recall@5": [1.0] * 100}),
        results({"recall@5": [0.0] * 8 + [1.0] * 92}),
        GatePolicy(),
    )
    assert not eight.passed and eight.checks[0].status == "regression"


def test_each_note_names_the_metrics_the_exact_test_decided() -> None:
    base = results({"recall@5": [1.0] * 100, "mrr": [1.0] * 100})
    cand = results({"recall@5": [0.0] * 40 + [1.0] * 60, "mrr": [0.0] + [1.0] * 99})
    report = compare(base, cand, GatePolicy())
    recall, mrr = report.checks
    assert recall.status == "regression" and mrr.status == "pass" and not report.passed
    assert report.notes == [
        "mrr: 1 query changed: no change can be significant at 95% on fewer than 6 (exact"
        " sign-flip test), so none is called a regression or an improvement; floors and"
        " protected categories still apply"
    ]


def test_a_tiny_holdout_cannot_call_a_change_either() -> None:
    def holdout(value: float) -> EvalResults:
        return EvalResults(
            metrics={"mrr": value},
            aggregate_only=True,
            spread={"mrr": {"n": 1, "sd": 0.0}},
            roles=["holdout"],
        )

    report = compare(holdout(1.0), holdout(0.0), GatePolicy(), role="holdout")
    assert report.passed and report.checks[0].status == "pass"
    assert "holdout of 1 query per run: no change can be significant" in report.notes[-1]

    # four per run can differ (2 / C(8, 4) = 0.029): the interval decides
    def spread(value: float, n: int) -> EvalResults:
        return EvalResults(
            metrics={"mrr": value},
            aggregate_only=True,
            spread={"mrr": {"n": n, "sd": 0.01}},
            roles=["holdout"],
        )

    four = compare(spread(0.9, 4), spread(0.1, 4), GatePolicy(), role="holdout")
    assert not four.passed and four.checks[0].status == "regression"
    three = compare(spread(0.9, 3), spread(0.1, 3), GatePolicy(), role="holdout")
    assert three.passed and "(exact permutation bound; 4 per run at least)" in three.notes[-1]
    # a run that lost queries: the bound counts both sizes, 2 / C(103, 3) ~ 1e-5, so the
    # interval decides (it had taken the smaller size for both and passed)
    lost = compare(spread(0.9, 100), spread(0.1, 3), GatePolicy(), role="holdout")
    assert not lost.passed and lost.checks[0].status == "regression"
    one = compare(spread(0.9, 1), spread(0.1, 10), GatePolicy(), role="holdout")
    assert one.passed and "mrr: holdout of 1 and 10 queries: no change" in one.notes[-1]


def test_unpaired_queries_and_versions_are_noted() -> None:
    base = results({"mrr": [1.0, 1.0, 1.0]}, version=3)
    cand = EvalResults(
        metrics={"mrr": 1.0}, per_query={"q0": {"mrr": 1.0}, "new": {"mrr": 1.0}}, golden_version=4
    )
    with pytest.raises(GateError, match=r"golden versions differ \(baseline v3, candidate v4\)"):
        compare(base, cand, GatePolicy())
    report = compare(base, cand, GatePolicy(), allow_version_change=True)
    assert report.n_paired == 1
    assert report.notes == [
        "golden versions differ (baseline v3, candidate v4): only the queries in both are "
        "compared, so the change measured mixes the pipeline's and the golden set's",
        "3 queries present in only one file were left out of the paired test",
    ]
    with pytest.raises(GateError, match="share no query ids"):
        compare(
            results({"mrr": [1.0]}),
            EvalResults(metrics={"mrr": 1}, per_query={"x": {"mrr": 1}}, golden_version=1),
            GatePolicy(),
        )
    with pytest.raises(GateError, match="not in the baseline"):
        compare(
            results({"mrr": [1.0]}),
            results({"mrr": [1.0], "ndcg@5": [1.0]}),
            GatePolicy(metrics=("ndcg@5",)),
        )


def test_bootstrap_is_seeded_and_brackets_the_mean() -> None:
    diffs = np.random.default_rng(0).normal(-0.1, 0.3, size=(500, 2))
    a = paired_bootstrap(diffs, resamples=1000, confidence=0.95, seed=7)
    b = paired_bootstrap(diffs, resamples=1000, confidence=0.95, seed=7)
    assert np.array_equal(a[0], b[0]) and np.array_equal(a[1], b[1])
    low, high = a
    assert (low < diffs.mean(0)).all() and (diffs.mean(0) < high).all()
    se = diffs.std(0) / np.sqrt(500)
    assert np.allclose(high - low, 2 * 1.96 * se, rtol=0.15)


def test_load_policy(tmp_path: Path) -> None:
    p = tmp_path / "gate.toml"
    p.write_text(
        '[gate]\nmetrics = ["recall@10", "mrr"]\nconfidence = 0.9\n'
        'protected_categories = ["billing"]\n\n[floors]\n"recall@10" = 0.9\nmrr = 0.7\n'
    )
    pol = load_policy(p)
    assert pol.floors == {"recall@10": 0.9, "mrr": 0.7} and pol.metrics == ("recall@10", "mrr")
    assert pol.confidence == 0.9 and pol.protected_categories == ("billing",)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("[gate]\nconfidence = \n", ":2: toml: "),
        ("[gate]\nseed = 1\n\n[flors]\nmrr = 1\n", ":4: flors: unknown table"),
        ("[floors]\nmrr = 0.7\n'ndgc@10' = 0.5\n", ":3: floors.ndgc@10: metric 'ndgc@10': unknown"),
        ('[floors]\n"recall@10" = 90\n', ":2: floors.recall@10: must be a number in [0, 1]"),
        ("[gate]\nseed = 1\nconfidence = 1.5\n", ":3: gate.confidence: Input should be less"),
        ("[gate]\nresample = 10\n", ":2: gate.resample: Extra inputs are not permitted"),
        ('[gate]\nmetrics = ["ndcg"]\n', ":2: gate.metrics: metric 'ndcg': needs a cutoff"),
    ],
)
def test_policy_errors_have_path_line_and_field(tmp_path: Path, text: str, expected: str) -> None:
    p = tmp_path / "gate.toml"
    p.write_text(text)
    with pytest.raises(ConfigError) as info:
        load_policy(p)
    assert str(info.value).startswith(f"{p}{expected}"), str(info.value)


def test_load_results_errors(tmp_path: Path) -> None:
    p = tmp_path / "r.json"
    p.write_text('{"metrics": {"mrr": 0.5}}')
    with pytest.raises(ConfigError, match=r"r.json: per_query: Field required"):
        load_results(p)
    p.write_text("{")
    with pytest.raises(ConfigError, match=r"r.json:1: json: "):
        load_results(p)


def test_renderings(tmp_path: Path) -> None:
    cats = ["billing"] * 100 + ["other"] * 100
    base = results({"recall@10": [1.0] * 200, "mrr": [0.8] * 200}, cats)
    cand = results({"recall@10": [0.6] * 200, "mrr": [0.8] * 200}, cats)
    report = compare(base, cand, GatePolicy(floors={"mrr": 0.9}, protected_categories=("billing",)))
    md = render(report, "markdown")
    assert md.startswith(
        "### ❌ ragsieve gate failed: 1 regression(s), 1 floor breach(es), "
        "1 protected-category drop(s)\n"
    )
    assert (
        "| recall@10 | 1.0000 | 0.6000 | -0.4000 | [-0.4000, -0.4000] | — | ❌ regression |" in md
    )
    assert "| mrr | 0.8000 | 0.8000 | +0.0000 | [+0.0000, +0.0000] | ≥ 0.90 | ❌ floor |" in md
    assert "| billing | 100 | recall@10 | 1.0000 | 0.6000 | -0.4000 | drop |" in md
    table = render(report, "table")
    assert table.splitlines()[0].startswith("gate failed") and "recall@10" in table
    data = json.loads(render(report, "json"))
    assert data["passed"] is False and data["checks"][0]["status"] == "regression"
    with pytest.raises(ValueError, match="unknown format"):
        render(report, "html")
    b, c = tmp_path / "b.json", tmp_path / "c.json"
    b.write_text(base.model_dump_json())
    c.write_text(cand.model_dump_json())
    assert gate_files(b, b, {"floors": {"mrr": 0.5}}).passed
    assert not gate_files(b, c).passed
