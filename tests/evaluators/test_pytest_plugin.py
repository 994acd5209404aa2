"""The opt-in pytest plugin, run inside a real inner pytest session (pytester)."""

from __future__ import annotations

import json

import pytest

# Imported here so that pytester's in-process runs find numpy already loaded (numpy cannot be
# imported twice in one process, and pytester drops modules first imported by the inner run).
import ragsieve.evaluators.pytest_plugin  # noqa: F401

pytest_plugins = ["pytester"]

GOLDEN = (
    "\n".join(
        json.dumps(r)
        for r in [
            {"id": "a", "query": "q a", "relevant_chunks": ["c1"], "category": "billing"},
            {"id": "b", "query": "q b", "relevant_chunks": ["c2"]},
            {"id": "c", "query": "q c", "relevant_chunks": ["c3"]},
            {"id": "n", "query": "no answer", "relevant_chunks": []},
        ]
    )
    + "\n"
)

INI = "[pytest]\nasyncio_default_fixture_loop_scope = function\n"
TESTS = """
import pytest

def good_search(query, k):
    return {"q a": ["c1"], "q b": ["c2"], "q c": ["x", "c3"]}.get(query, [])[:k]

def bad_search(query, k):
    return ["x"]

def test_good(ragsieve_eval):
    report = ragsieve_eval.run("golden_v1.jsonl", retriever=good_search, k=[1, 2])
    assert report.metrics["recall@2"] == 1.0
    outcome = ragsieve_eval.check(report)
    assert outcome.passed

def test_bad(ragsieve_eval):
    report = ragsieve_eval.run("golden_v1.jsonl", run={"a": ["x"]}, k=[2])
    ragsieve_eval.check(report)
"""


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makefile(".jsonl", golden_v1=GOLDEN)
    pytester.makepyfile(test_evals=TESTS)
    pytester.makeconftest('pytest_plugins = ["ragsieve.evaluators.pytest_plugin"]\n')
    pytester.makeini(INI)
    return pytester


def test_floors_from_the_policy_fail_the_eval_test(project: pytest.Pytester) -> None:
    project.makefile(".toml", gate='[floors]\n"recall@2" = 0.9\n')
    project.makeini(INI + "ragsieve_policy = gate.toml\n")
    result = project.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*gate failed: 1 floor breach(es)*", "*recall@2*floor*"])


def test_without_policy_everything_passes_and_option_overrides_ini(
    project: pytest.Pytester,
) -> None:
    project.runpytest("-p", "no:cacheprovider").assert_outcomes(passed=2)
    project.makefile(".toml", strict="[floors]\nmrr = 0.99\n")
    result = project.runpytest("-p", "no:cacheprovider", "--ragsieve-policy", "strict.toml")
    result.assert_outcomes(passed=0, failed=2)  # good_search's mrr is 5/6 < 0.99


def test_regression_against_a_baseline(project: pytest.Pytester) -> None:
    baseline = {
        "metrics": {"recall@2": 1.0},
        "per_query": {q: {"recall@2": 1.0} for q in "abc"},
        "query_category": {"a": "billing"},
    }
    project.makefile(".json", base=json.dumps(baseline))
    project.makefile(
        ".toml", gate='[gate]\nprotected_categories = ["billing"]\nmetrics = ["recall@2"]\n'
    )
    result = project.runpytest(
        "-p",
        "no:cacheprovider",
        "--ragsieve-baseline",
        "base.json",
        "--ragsieve-policy",
        "gate.toml",
    )
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*protected-category drop*"])


SPLIT_TESTS = """
def search(query, k):
    # right on the regression cases, wrong on every other one
    return ["c1"] if query.startswith("reg") else ["x"]

def test_regression_part(ragsieve_eval):
    report = ragsieve_eval.run("golden_v2.jsonl", retriever=search, k=[1])
    assert report.roles == ["regression"]
    assert sorted(report.per_query) == ["r1", "r2"]
    ragsieve_eval.check(report)

def test_no_holdout(ragsieve_eval):
    import pytest
    with pytest.raises(ValueError, match="holdout"):
        ragsieve_eval.run("golden_v2.jsonl", retriever=search, role="holdout")
"""


def test_a_split_golden_set_is_checked_on_its_regression_part(pytester: pytest.Pytester) -> None:
    rows = [
        {"id": "r1", "query": "reg one", "relevant_chunks": ["c1"], "role": "regression"},
        {"id": "r2", "query": "reg two", "relevant_chunks": ["c1"], "role": "regression"},
        {"id": "d1", "query": "dev one", "relevant_chunks": ["c1"], "role": "dev"},
        {"id": "h1", "query": "hold one", "relevant_chunks": ["c1"], "role": "holdout"},
    ]
    pytester.makefile(".jsonl", golden_v2="\n".join(json.dumps(r) for r in rows) + "\n")
    pytester.makepyfile(test_split=SPLIT_TESTS)
    pytester.makeconftest('pytest_plugins = ["ragsieve.evaluators.pytest_plugin"]\n')
    pytester.makeini(INI + "ragsieve_policy = gate.toml\n")
    pytester.makefile(".toml", gate='[floors]\n"recall@1" = 1.0\n')
    # the floor holds on the regression part; over the whole set recall@1 would be 0.5
    pytester.runpytest("-p", "no:cacheprovider").assert_outcomes(passed=2)
