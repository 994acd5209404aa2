"""Opt-in pytest plugin: evals as tests, judged by the same floors and rules as ``ragsieve gate``.

Enable it in a ``conftest.py`` with ``pytest_plugins = ["ragsieve.evaluators.pytest_plugin"]`` (or
``pytest -p ragsieve.evaluators.pytest_plugin``), then::

    def test_retrieval(ragsieve_eval):
        report = ragsieve_eval.run("golden/golden_v3.jsonl", retriever=myapp.search)
        ragsieve_eval.check(report)          # floors from gate.toml; regressions vs a baseline

The policy comes from ``--ragsieve-policy`` or the ``ragsieve_policy`` ini key (a gate TOML), the
baseline results JSON from ``--ragsieve-baseline`` or ``ragsieve_baseline``. Without a baseline
only the floors apply. Like ``ragsieve gate``, it scores the golden set's ``regression`` part
(every case of a set never split by ``ragsieve golden split``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path

import pytest

from ragsieve.evaluators.gate import (
    DEFAULT_GATE_ROLE,
    EvalResults,
    GatePolicy,
    GateReport,
    compare,
    load_policy,
    load_results,
    render,
)
from ragsieve.evaluators.golden.roles import select_roles
from ragsieve.evaluators.golden.runs import load_run, retrieve_all
from ragsieve.evaluators.golden.sets import GoldenSet, load_golden
from ragsieve.evaluators.metrics import DEFAULT_METRICS, expand_metrics
from ragsieve.evaluators.metrics.report import EvalReport, build_report
from ragsieve.evaluators.records import GoldenRole


def pytest_addoption(parser: pytest.Parser) -> None:
    """Register ``--ragsieve-policy`` and ``--ragsieve-baseline`` (and their ini keys)."""
    group = parser.getgroup("ragsieve", "ragsieve evals as tests")
    group.addoption("--ragsieve-policy", default=None, help="gate policy TOML for ragsieve_eval")
    group.addoption("--ragsieve-baseline", default=None, help="baseline results JSON")
    parser.addini("ragsieve_policy", "gate policy TOML for ragsieve_eval", default="")
    parser.addini("ragsieve_baseline", "baseline results JSON for ragsieve_eval", default="")


class RagEval:
    """Runs an offline eval and applies the gate policy, failing the test with the gate's table."""

    def __init__(self, policy: GatePolicy, baseline: EvalResults | None = None) -> None:
        self.policy = policy
        self.baseline = baseline

    def run(
        self,
        golden: str | Path | GoldenSet,
        *,
        run: str | Path | Mapping[str, Sequence[str]] | None = None,
        retriever: Callable[..., object] | None = None,
        k: Iterable[int] = (5, 10),
        metrics: Iterable[str] = DEFAULT_METRICS,
        role: GoldenRole = DEFAULT_GATE_ROLE,
    ) -> EvalReport:
        """Score a run file, a ``{query id: ids}`` mapping or a ``search(query, k)`` callable on
        the ``role`` part of the golden set (never the holdout: it is not shown case by case)."""
        if role == "holdout":
            raise ValueError("the holdout is scored with `ragsieve eval --role holdout` only")
        gs = golden if isinstance(golden, GoldenSet) else load_golden(golden)
        split = any(c.role is not None for c in gs.cases)
        gs = select_roles(gs, (role,)) if split else gs
        ks = sorted(set(k))
        specs = expand_metrics(metrics, ks)
        if (run is None) == (retriever is None):
            raise ValueError("pass exactly one of run= or retriever=")
        errors: dict[str, str] = {}
        if retriever is not None:
            got = retrieve_all(retriever, gs.cases, max([*ks, *(s.k or 0 for s in specs)]))
            ranking: Mapping[str, Sequence[str]] = got.run
            errors = got.errors
        elif isinstance(run, str | Path):
            ranking = load_run(run)
        else:
            ranking = run or {}
        report = build_report(gs, ranking, specs)
        report.retriever_errors = errors
        report.roles = [role] if split else None
        return report

    def gate(self, report: EvalReport | Mapping[str, object]) -> GateReport:
        """Apply the policy: floors always, regressions when a baseline is configured."""
        data = report.to_json() if isinstance(report, EvalReport) else report
        candidate = EvalResults.model_validate(data)
        if self.baseline is None:  # compared with itself, only the floors can fail
            policy = self.policy.model_copy(update={"protected_categories": ()})
            return compare(candidate, candidate, policy)
        return compare(self.baseline, candidate, self.policy)

    def check(self, report: EvalReport | Mapping[str, object]) -> GateReport:
        """Like :meth:`gate`, but fails the current test with the rendered table."""
        outcome = self.gate(report)
        if not outcome.passed:
            pytest.fail(render(outcome, "table"), pytrace=False)
        return outcome


def _setting(config: pytest.Config, option: str, ini: str) -> Path | None:
    value = config.getoption(option) or config.getini(ini)
    if not value:
        return None
    path = Path(value)
    return path if path.is_absolute() else Path(config.rootpath) / path


@pytest.fixture
def ragsieve_policy(request: pytest.FixtureRequest) -> GatePolicy:
    """The gate policy from ``--ragsieve-policy`` / ``ragsieve_policy`` (defaults when unset)."""
    path = _setting(request.config, "--ragsieve-policy", "ragsieve_policy")
    return load_policy(path) if path else GatePolicy()


@pytest.fixture
def ragsieve_eval(request: pytest.FixtureRequest, ragsieve_policy: GatePolicy) -> RagEval:
    """A :class:`RagEval` bound to the configured policy and baseline."""
    path = _setting(request.config, "--ragsieve-baseline", "ragsieve_baseline")
    return RagEval(ragsieve_policy, load_results(path) if path else None)
