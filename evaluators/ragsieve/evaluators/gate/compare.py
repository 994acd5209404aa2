"""The CI regression gate: floors plus a paired bootstrap over queries (or a holdout interval).

A metric regresses only when the bootstrap confidence interval of its mean change (candidate −
baseline, paired by query id) lies entirely below zero, so the tolerance follows the size of the
eval set; where few queries changed, an exact sign-flip test must agree (:mod:`.exact`). A floor
is a minimum on the candidate's mean. A protected category fails on any drop of its mean larger
than ``protected_max_drop``, significant or not.

The gate reads the ``regression`` part of a split golden set by default. ``role="holdout"`` (a
release check) compares two aggregate-only holdout results by an unpaired normal interval from
each run's mean and spread, since they carry no per-query rows to pair. Runs on different golden
versions or roles are refused unless ``allow_version_change``; the report says which pipeline
settings differ (``eval --config``), warns when more than one did, and carries the experiment log
line (see :mod:`ragsieve.evaluators.gate.experiments`).

The policy and the results it compares are read by :mod:`ragsieve.evaluators.gate.policy`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from statistics import NormalDist
from typing import Any

import numpy as np

import ragsieve.evaluators.gate.exact as sign_flip
from ragsieve.evaluators.errors import GateError
from ragsieve.evaluators.gate.experiments import (
    Change,
    changes_warning,
    config_changes,
    log_line,
)
from ragsieve.evaluators.gate.policy import EvalResults, GatePolicy, load_results
from ragsieve.evaluators.gate.report import (
    DEFAULT_GATE_ROLE,
    CategoryCheck,
    GateReport,
    MetricCheck,
    Status,
)
from ragsieve.evaluators.records import GoldenRole

_EPS = 1e-12
_BLOCK_CELLS = 4_000_000  # resample counts drawn at once: 32 MB of float64, whatever the size


def paired_bootstrap(
    diffs: np.ndarray, *, resamples: int, confidence: float, seed: int
) -> tuple[np.ndarray, np.ndarray]:
    """Percentile CI of the mean of each column of ``diffs`` (queries × metrics); rows resampled.

    The resample counts are drawn in blocks of rows: all at once they are ``resamples × queries``
    numbers (1,000 × 200,000 queries is 1.6 GB, twice over as integers and floats). A block
    continues the same random stream, so the interval is the one drawing them at once gives.
    """
    n = diffs.shape[0]
    rng = np.random.default_rng(seed)
    p = np.full(n, 1.0 / n)
    step = max(1, _BLOCK_CELLS // max(n, 1))
    means = np.empty((resamples, diffs.shape[1]))
    for lo in range(0, resamples, step):
        size = min(step, resamples - lo)
        counts = rng.multinomial(n, p, size=size).astype(np.float64)
        means[lo : lo + size] = counts @ diffs / n
    alpha = 1.0 - confidence
    low, high = np.quantile(means, [alpha / 2, 1 - alpha / 2], axis=0)
    return low, high


@dataclass
class _Stats:
    """Per gated metric: baseline and candidate means, the mean change and its interval."""

    n: int
    base: np.ndarray
    cand: np.ndarray
    delta: np.ndarray
    low: np.ndarray
    high: np.ndarray
    rows: tuple[np.ndarray, np.ndarray] | None = None  # paired: (baseline, candidate) per query
    p_exact: np.ndarray | None = None  # the exact sign-flip test's p (exact.py); NaN: too many


def _gated_metrics(baseline: EvalResults, candidate: EvalResults, policy: GatePolicy) -> list[str]:
    shared = [m for m in candidate.metrics if m in baseline.metrics]
    metrics = list(policy.metrics) if policy.metrics is not None else shared
    for m in [*metrics, *policy.floors]:
        if m not in candidate.metrics:
            raise GateError(f"metric {m!r} is not in the candidate results")
    for m in metrics:
        if m not in baseline.metrics:
            raise GateError(f"metric {m!r} is not in the baseline results")
    return metrics


def _cutoffs(results: EvalResults) -> set[int]:
    return {int(k) for m in results.metrics if (k := m.partition("@")[2]).isdigit()}


def _same_cutoffs(baseline: EvalResults, candidate: EvalResults, policy: GatePolicy) -> None:
    """Runs with different ``-k`` sets leave the metrics of one side ungated: refuse, unless the
    policy names the metrics to gate (then a missing one is refused by name)."""
    kb, kc = _cutoffs(baseline), _cutoffs(candidate)
    if kb == kc or policy.metrics is not None:
        return

    def ks(cut: set[int]) -> str:
        return ", ".join(map(str, sorted(cut)))

    raise GateError(
        f"k differs (baseline k {ks(kb)}; candidate k {ks(kc)}): the metrics at k {ks(kb ^ kc)}"
        " would go ungated; re-run eval with the same -k for both, or list the metrics to gate"
        " ([gate] metrics = [...])"
    )


def _retriever(results: EvalResults) -> str | None:
    """The retriever ``eval`` recorded (``module:function``, ``baseline bm25``); None for a run
    file, which is an output: two runs of one retriever are two files."""
    name = (results.model_extra or {}).get("retriever")
    return name if isinstance(name, str) and not name.startswith("run file ") else None


def _changes(baseline: EvalResults, candidate: EvalResults) -> list[Change]:
    """The pipeline settings that differ, a different retriever first."""
    before, after = _retriever(baseline), _retriever(candidate)
    changes = config_changes(baseline.config, candidate.config)
    if before is not None and after is not None and before != after:
        changes.insert(0, Change("retriever", before, after))
    return changes


def _role_notes(
    baseline: EvalResults, candidate: EvalResults, role: GoldenRole, allow: bool
) -> list[str]:
    """Refuse comparisons across golden versions or roles unless ``allow``; say what they mean."""
    notes: list[str] = []
    b, c = baseline.golden_version, candidate.golden_version
    if b is None or c is None:  # BEIR files, or results written before versions were kept
        notes += [
            f"golden version unknown for the {w}"
            for w, v in (("baseline", b), ("candidate", c))
            if v is None and b != c
        ]
    elif b != c:
        if not allow:
            raise GateError(
                f"golden versions differ (baseline v{b}, candidate v{c}): re-run the baseline on "
                f"v{c}, or pass --allow-version-change"
            )
        notes.append(
            f"golden versions differ (baseline v{b}, candidate v{c}): only the queries in both "
            "are compared, so the change measured mixes the pipeline's and the golden set's"
        )
    if baseline.aggregate_only != candidate.aggregate_only or baseline.aggregate_only != (
        role == "holdout"
    ):
        raise GateError(
            f"--role {role}: "
            + (
                "both files must come from `ragsieve eval --role holdout`"
                if role == "holdout"
                else "a holdout (aggregate-only) results file has no queries to pair; "
                "gate it with --role holdout"
            )
        )
    notes += _role_mismatch(baseline, candidate, role, allow)
    return notes


def _role_mismatch(
    baseline: EvalResults, candidate: EvalResults, role: GoldenRole, allow: bool
) -> list[str]:
    have = [set(r.roles) if r.roles is not None else None for r in (baseline, candidate)]
    if have == [None, None]:
        return []  # a set never split: every query is compared
    if all(h is not None and role in h for h in have):
        return []
    shown = ["+".join(sorted(h)) if h is not None else "none" for h in have]
    message = f"roles differ from --role {role} (baseline {shown[0]}, candidate {shown[1]})"
    if not allow:
        raise GateError(f"{message}: re-run eval with --role {role}, or --allow-version-change")
    return [f"{message}: every shared query is compared, whatever its role"]


def _paired(
    baseline: EvalResults,
    candidate: EvalResults,
    metrics: Sequence[str],
    policy: GatePolicy,
    role: GoldenRole,
) -> tuple[_Stats, list[str], list[str]]:
    """Paired bootstrap over the shared queries of ``role``; also returns ids and notes."""
    roles = {**baseline.query_role, **candidate.query_role}
    keep = (lambda q: roles.get(q, role) == role) if roles else (lambda q: True)  # noqa: E731
    b_ids = [q for q in baseline.per_query if keep(q)]
    c_ids = [q for q in candidate.per_query if keep(q)]
    ids = [q for q in c_ids if q in baseline.per_query and keep(q)]
    if not ids:
        raise GateError(f"baseline and candidate share no query ids of role {role}")
    notes = []
    dropped = len(b_ids) + len(c_ids) - 2 * len(ids)
    if dropped:
        notes.append(f"{dropped} queries present in only one file were left out of the paired test")
    base = _matrix(baseline.per_query, ids, metrics)
    cand = _matrix(candidate.per_query, ids, metrics)
    low, high = paired_bootstrap(
        cand - base, resamples=policy.resamples, confidence=policy.confidence, seed=policy.seed
    )
    diff, p_exact = (cand - base).mean(0), sign_flip.sign_flip_p(cand - base)
    stats = _Stats(len(ids), base.mean(0), cand.mean(0), diff, low, high, (base, cand), p_exact)
    return stats, ids, notes + sign_flip.few_changed(cand - base, policy.confidence, metrics)


def _matrix(
    rows: Mapping[str, Mapping[str, float]], ids: Sequence[str], metrics: Sequence[str]
) -> np.ndarray:
    """queries × metrics, each query's row read once (a results file decodes it when read)."""
    out = np.empty((len(ids), len(metrics)))
    try:
        for i, q in enumerate(ids):
            row = rows[q]
            out[i] = [row[m] for m in metrics]
    except KeyError as exc:
        raise GateError(f"per_query lacks metric {exc.args[0]!r} for some queries") from None
    return out


def _unpaired(
    baseline: EvalResults, candidate: EvalResults, metrics: Sequence[str], policy: GatePolicy
) -> _Stats:
    """Normal interval on the difference of means from each file's ``spread`` (n, sd).

    Holdout results carry no per-query rows, so the runs cannot be paired; ignoring the
    (positive) correlation between them widens the interval: fewer false alarms, less power.
    """
    z = NormalDist().inv_cdf(0.5 + policy.confidence / 2)
    rows = []
    for m in metrics:
        try:
            sb, sc = baseline.spread[m], candidate.spread[m]
        except KeyError:
            raise GateError(f"spread lacks metric {m!r}: re-run eval with this version") from None
        b, c = baseline.metrics[m], candidate.metrics[m]
        se = math.sqrt(sb["sd"] ** 2 / max(sb["n"], 1) + sc["sd"] ** 2 / max(sc["n"], 1))
        rows.append((b, c, c - b, c - b - z * se, c - b + z * se))
    cols = np.array(rows, dtype=float).reshape(len(metrics), 5).T
    n = min((min(baseline.spread[m]["n"], candidate.spread[m]["n"]) for m in metrics), default=0)
    return _Stats(int(n), *cols)


def _status(regressed: bool, below: bool, ci_low: float, exact: bool) -> Status:
    if regressed and below:
        return "regression+floor"
    if regressed:
        return "regression"
    if below:
        return "floor"
    return "improved" if ci_low > 0 and exact else "pass"


def _checks(
    stats: _Stats, candidate: EvalResults, metrics: Sequence[str], policy: GatePolicy
) -> list[MetricCheck]:
    checks: list[MetricCheck] = []
    nan = float("nan")
    for j, m in enumerate([*metrics, *(f for f in policy.floors if f not in metrics)]):
        floor = policy.floors.get(m)
        below = floor is not None and candidate.metrics[m] < floor - _EPS
        if j < len(metrics):
            delta, low, high = float(stats.delta[j]), float(stats.low[j]), float(stats.high[j])
            exact = sign_flip.significant(stats.p_exact, j, policy.confidence)
            regressed = high < 0 and -delta > policy.min_effect and exact
            row = (float(stats.base[j]), float(stats.cand[j]), delta, low, high)
        else:  # floor-only metric: no regression test
            exact, regressed, row = False, False, (nan, candidate.metrics[m], 0.0, nan, nan)
        status = _status(regressed, below, row[3], exact)
        checks.append(MetricCheck(m, *row, floor=floor, status=status))
    return checks


def _category_row(
    cat: str, m: str, n: int, means: tuple[float, float, float], policy: GatePolicy
) -> CategoryCheck:
    b, c, d = means
    return CategoryCheck(cat, m, n, b, c, d, failed=d < -policy.protected_max_drop - _EPS)


def _paired_categories(
    baseline: EvalResults,
    candidate: EvalResults,
    ids: Sequence[str],
    stats: _Stats,
    metrics: Sequence[str],
    policy: GatePolicy,
) -> list[CategoryCheck]:
    if stats.rows is None:
        raise GateError("protected categories need per-query rows")
    base, cand = stats.rows
    cats = [candidate.query_category.get(q, baseline.query_category.get(q, "")) for q in ids]
    out: list[CategoryCheck] = []
    for cat in policy.protected_categories:
        mask = np.array([c == cat for c in cats], dtype=bool)
        if not mask.any():
            raise GateError(f"protected category {cat!r} has no paired queries")
        for j, m in enumerate(metrics):
            b, c = float(base[mask, j].mean()), float(cand[mask, j].mean())
            d = float((cand[mask, j] - base[mask, j]).mean())
            out.append(_category_row(cat, m, int(mask.sum()), (b, c, d), policy))
    return out


def _aggregate_categories(
    baseline: EvalResults, candidate: EvalResults, metrics: Sequence[str], policy: GatePolicy
) -> list[CategoryCheck]:
    out: list[CategoryCheck] = []
    for cat in policy.protected_categories:
        b_row, c_row = baseline.by_category.get(cat), candidate.by_category.get(cat)
        if not b_row or not c_row:
            raise GateError(
                f"protected category {cat!r} is not in both holdout results (categories with "
                "few holdout cases are pooled, never shown alone)"
            )
        for m in metrics:
            b, c = float(b_row["metrics"][m]), float(c_row["metrics"][m])
            out.append(_category_row(cat, m, int(c_row["n"]), (b, c, c - b), policy))
    return out


def compare(
    baseline: EvalResults,
    candidate: EvalResults,
    policy: GatePolicy,
    *,
    role: GoldenRole = DEFAULT_GATE_ROLE,
    allow_version_change: bool = False,
) -> GateReport:
    """Apply the policy to the ``role`` part of a baseline and a candidate.

    Raises:
        GateError: the files do not compare (metrics, queries, golden versions or roles).
    """
    notes = _role_notes(baseline, candidate, role, allow_version_change)
    _same_cutoffs(baseline, candidate, policy)
    metrics = _gated_metrics(baseline, candidate, policy)
    if role == "holdout":
        stats = _unpaired(baseline, candidate, metrics, policy)
        categories = _aggregate_categories(baseline, candidate, metrics, policy)
        notes.append("holdout: no per-query rows, so an unpaired interval (wider) is used")
        sizes = [(baseline.spread[m]["n"], candidate.spread[m]["n"]) for m in metrics]
        stats.p_exact, few = sign_flip.too_few(sizes, metrics, policy.confidence)
        notes += few
    else:
        stats, ids, more = _paired(baseline, candidate, metrics, policy, role)
        categories = _paired_categories(baseline, candidate, ids, stats, metrics, policy)
        notes += more
    checks = _checks(stats, candidate, metrics, policy)
    changes = _changes(baseline, candidate)
    warning = changes_warning(changes)
    passed = all(c.status in ("pass", "improved") for c in checks) and not any(
        c.failed for c in categories
    )
    return GateReport(
        passed,
        stats.n,
        policy.confidence,
        policy.resamples,
        checks,
        categories,
        notes,
        role=role,
        method="unpaired normal" if role == "holdout" else "paired bootstrap",
        changes=changes,
        warnings=[warning] if warning else [],
        log_line=log_line(changes, checks, policy.metrics),
    )


def gate_files(
    baseline: str | Path,
    candidate: str | Path,
    policy: GatePolicy | Mapping[str, Any] | None = None,
    *,
    role: GoldenRole = DEFAULT_GATE_ROLE,
    allow_version_change: bool = False,
) -> GateReport:
    """Load two results files and compare them (a convenience for scripts and the pytest plugin)."""
    pol = policy if isinstance(policy, GatePolicy) else GatePolicy.model_validate(policy or {})
    return compare(
        load_results(baseline),
        load_results(candidate),
        pol,
        role=role,
        allow_version_change=allow_version_change,
    )
