"""The CI regression gate: floors plus a paired bootstrap over queries, rendered for humans or CI.

A metric regresses only when the bootstrap confidence interval of its mean change (candidate −
baseline, paired by query id) lies entirely below zero, so the tolerance follows the size of the
eval set. A floor is an absolute minimum on the candidate's mean. A protected category fails on
any drop of its mean larger than ``protected_max_drop``, significant or not.

Policy file (TOML)::

    [gate]
    metrics = ["recall@10", "ndcg@10", "mrr"]   # checked for regressions; default: all shared
    confidence = 0.95
    resamples = 1000
    seed = 0
    min_effect = 0.0            # ignore significant drops smaller than this
    protected_categories = ["billing"]
    protected_max_drop = 0.0

    [floors]
    "recall@10" = 0.90
    mrr = 0.70
"""

from __future__ import annotations

import json
import re
import tomllib
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ragsieve.evaluators.errors import ConfigError, GateError
from ragsieve.evaluators.golden import first_error
from ragsieve.evaluators.metrics import parse_metric

_EPS = 1e-12
Status = Literal["pass", "improved", "regression", "floor", "regression+floor"]


class GatePolicy(BaseModel):
    """Thresholds of the gate; build with :func:`load_policy` or directly."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    floors: dict[str, float] = Field(default_factory=dict, description="metric → minimum mean")
    metrics: tuple[str, ...] | None = Field(default=None, description="metrics to regress-check")
    confidence: float = Field(default=0.95, gt=0.5, lt=1.0)
    resamples: int = Field(default=1000, ge=100, le=1_000_000)
    seed: int = 0
    min_effect: float = Field(default=0.0, ge=0.0, le=1.0)
    protected_categories: tuple[str, ...] = ()
    protected_max_drop: float = Field(default=0.0, ge=0.0, le=1.0)


def _line_of(text: str, table: str, key: str | None) -> int:
    current, header_line = "", 0
    for i, line in enumerate(text.splitlines(), start=1):
        m = re.match(r"^\s*\[([^\]]+)\]", line)
        if m:
            current = m.group(1).strip()
            header_line = i if current == table else header_line
            continue
        km = re.match(r"""^\s*(["']?)([^"'=]+?)\1\s*=""", line)
        if current == table and key is not None and km and km.group(2).strip() == key:
            return i
    return header_line or 1


def load_policy(path: str | Path) -> GatePolicy:
    """Read a gate TOML; errors are ``path:line: field: message``."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"{p}: cannot read: {exc.strerror or exc}") from exc
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        m = re.search(r"\(at line (\d+)", str(exc))
        raise ConfigError(f"{p}:{m.group(1) if m else 1}: toml: {exc}") from None
    for table in doc:
        if table not in ("gate", "floors"):
            raise ConfigError(
                f"{p}:{_line_of(text, table, None)}: {table}: unknown table; "
                "expected [gate] and [floors]"
            )
    floors = doc.get("floors", {})
    for key, value in floors.items():
        where = f"{p}:{_line_of(text, 'floors', key)}: floors.{key}"
        try:
            parse_metric(key)
        except ConfigError as exc:
            raise ConfigError(f"{where}: {exc}") from None
        if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= 1:
            raise ConfigError(f"{where}: must be a number in [0, 1] (got {value!r})")
    gate = doc.get("gate", {})
    for name in gate.get("metrics", []) if isinstance(gate.get("metrics"), list) else []:
        try:
            parse_metric(str(name))
        except ConfigError as exc:
            raise ConfigError(
                f"{p}:{_line_of(text, 'gate', 'metrics')}: gate.metrics: {exc}"
            ) from None
    try:
        return GatePolicy.model_validate({**gate, "floors": floors})
    except ValidationError as exc:
        loc, msg = first_error(exc, "gate")
        key = loc.split(".")[0]
        table = "floors" if key == "floors" else "gate"
        line = _line_of(text, table, None if key == "floors" else key)
        raise ConfigError(f"{p}:{line}: {table}.{key}: {msg}") from None


class EvalResults(BaseModel):
    """The part of an ``ragsieve eval --json`` file the gate reads."""

    model_config = ConfigDict(extra="allow")

    metrics: dict[str, float]
    per_query: dict[str, dict[str, float]]
    golden_version: int | None = None
    query_category: dict[str, str] = Field(default_factory=dict)


def load_results(path: str | Path) -> EvalResults:
    """Read an eval results JSON file; errors name the file and the field."""
    p = Path(path)
    try:
        data = json.loads(p.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ConfigError(f"{p}: cannot read: {exc.strerror or exc}") from exc
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{p}:{exc.lineno}: json: {exc.msg}") from None
    try:
        return EvalResults.model_validate(data)
    except ValidationError as exc:
        loc, msg = first_error(exc, "results")
        raise ConfigError(f"{p}: {loc}: {msg}") from None


@dataclass
class MetricCheck:
    """One metric's verdict."""

    metric: str
    baseline: float
    candidate: float
    delta: float
    ci_low: float
    ci_high: float
    floor: float | None
    status: Status


@dataclass
class CategoryCheck:
    """One protected category × metric."""

    category: str
    metric: str
    n: int
    baseline: float
    candidate: float
    delta: float
    failed: bool


@dataclass
class GateReport:
    """The gate's outcome; ``passed`` decides the exit code."""

    passed: bool
    n_paired: int
    confidence: float
    resamples: int
    checks: list[MetricCheck]
    categories: list[CategoryCheck] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        """Plain-JSON form of the report."""
        return asdict(self)


def paired_bootstrap(
    diffs: np.ndarray, *, resamples: int, confidence: float, seed: int
) -> tuple[np.ndarray, np.ndarray]:
    """Percentile CI of the mean of each column of ``diffs`` (queries × metrics); rows resampled."""
    n = diffs.shape[0]
    rng = np.random.default_rng(seed)
    counts = rng.multinomial(n, np.full(n, 1.0 / n), size=resamples).astype(np.float64)
    means = counts @ diffs / n
    alpha = 1.0 - confidence
    low, high = np.quantile(means, [alpha / 2, 1 - alpha / 2], axis=0)
    return low, high


def compare(baseline: EvalResults, candidate: EvalResults, policy: GatePolicy) -> GateReport:
    """Apply the policy to a baseline and a candidate; raises GateError when they don't compare."""
    shared = [m for m in candidate.metrics if m in baseline.metrics]
    metrics = list(policy.metrics) if policy.metrics is not None else shared
    for m in [*metrics, *policy.floors]:
        if m not in candidate.metrics:
            raise GateError(f"metric {m!r} is not in the candidate results")
    for m in metrics:
        if m not in baseline.metrics:
            raise GateError(f"metric {m!r} is not in the baseline results")
    ids = [q for q in candidate.per_query if q in baseline.per_query]
    if not ids:
        raise GateError("baseline and candidate share no query ids")
    notes: list[str] = []
    dropped = len(candidate.per_query) + len(baseline.per_query) - 2 * len(ids)
    if dropped:
        notes.append(f"{dropped} queries present in only one file were left out of the paired test")
    if baseline.golden_version != candidate.golden_version:
        notes.append(
            f"golden versions differ: baseline v{baseline.golden_version}, "
            f"candidate v{candidate.golden_version}"
        )
    try:
        base = np.array([[baseline.per_query[q][m] for m in metrics] for q in ids], dtype=float)
        cand = np.array([[candidate.per_query[q][m] for m in metrics] for q in ids], dtype=float)
    except KeyError as exc:
        raise GateError(f"per_query lacks metric {exc.args[0]!r} for some queries") from None
    base, cand = base.reshape(len(ids), len(metrics)), cand.reshape(len(ids), len(metrics))
    diffs = cand - base
    low, high = paired_bootstrap(
        diffs, resamples=policy.resamples, confidence=policy.confidence, seed=policy.seed
    )
    checks: list[MetricCheck] = []
    for j, m in enumerate([*metrics, *(f for f in policy.floors if f not in metrics)]):
        floor = policy.floors.get(m)
        below = floor is not None and candidate.metrics[m] < floor - _EPS
        if j < len(metrics):
            delta = float(diffs[:, j].mean())
            regressed = high[j] < 0 and -delta > policy.min_effect
            row = (
                float(base[:, j].mean()),
                float(cand[:, j].mean()),
                delta,
                float(low[j]),
                float(high[j]),
            )
        else:  # floor-only metric: no regression test
            regressed, row = False, (float("nan"), candidate.metrics[m], 0.0, 0.0, 0.0)
        status: Status = (
            "regression+floor"
            if regressed and below
            else "regression"
            if regressed
            else "floor"
            if below
            else "improved"
            if row[3] > 0
            else "pass"
        )
        checks.append(MetricCheck(m, *row, floor=floor, status=status))
    cats = [candidate.query_category.get(q, baseline.query_category.get(q, "")) for q in ids]
    categories: list[CategoryCheck] = []
    for cat in policy.protected_categories:
        mask = np.array([c == cat for c in cats], dtype=bool)
        if not mask.any():
            raise GateError(f"protected category {cat!r} has no paired queries")
        for j, m in enumerate(metrics):
            d = float(diffs[mask, j].mean())
            categories.append(
                CategoryCheck(
                    cat,
                    m,
                    int(mask.sum()),
                    float(base[mask, j].mean()),
                    float(cand[mask, j].mean()),
                    d,
                    failed=d < -policy.protected_max_drop - _EPS,
                )
            )
    passed = all(c.status in ("pass", "improved") for c in checks) and not any(
        c.failed for c in categories
    )
    return GateReport(
        passed, len(ids), policy.confidence, policy.resamples, checks, categories, notes
    )


def _summary(report: GateReport) -> str:
    reg = sum(c.status.startswith("regression") for c in report.checks)
    flo = sum(c.status.endswith("floor") for c in report.checks)
    cat = sum(c.failed for c in report.categories)
    parts = [
        f"{reg} regression(s)" if reg else "",
        f"{flo} floor breach(es)" if flo else "",
        f"{cat} protected-category drop(s)" if cat else "",
    ]
    return "passed" if report.passed else "failed: " + ", ".join(p for p in parts if p)


def _fmt(x: float, signed: bool = False) -> str:
    return "—" if x != x else (f"{x:+.4f}" if signed else f"{x:.4f}")


def render(report: GateReport, fmt: str = "table") -> str:
    """Render as ``table`` (terminal), ``markdown`` (PR comment) or ``json``."""
    if fmt == "json":
        return json.dumps(report.to_json(), indent=2, default=lambda x: None)
    pct = f"{report.confidence:.0%}"
    head = ["metric", "baseline", "candidate", "Δ", f"{pct} CI", "floor", "status"]
    rows = [
        [
            c.metric,
            _fmt(c.baseline),
            _fmt(c.candidate),
            _fmt(c.delta, True),
            "—" if c.baseline != c.baseline else f"[{c.ci_low:+.4f}, {c.ci_high:+.4f}]",
            "—" if c.floor is None else f"≥ {c.floor:.2f}",
            c.status,
        ]
        for c in report.checks
    ]
    crow = [
        [
            c.category,
            str(c.n),
            c.metric,
            _fmt(c.baseline),
            _fmt(c.candidate),
            _fmt(c.delta, True),
            "drop" if c.failed else "ok",
        ]
        for c in report.categories
    ]
    chead = ["category", "n", "metric", "baseline", "candidate", "Δ", "status"]
    intro = (
        f"Paired bootstrap over {report.n_paired} queries "
        f"({report.resamples:,} resamples, {pct} CI)."
    )
    if fmt == "markdown":
        icon = "✅" if report.passed else "❌"
        out = [
            f"### {icon} ragsieve gate {_summary(report)}",
            "",
            intro,
            "",
            "| " + " | ".join(head) + " |",
            "|---|---:|---:|---:|---|---:|---|",
        ]
        out += [
            "| "
            + " | ".join(r[:-1] + [("❌ " if r[-1] not in ("pass", "improved") else "") + r[-1]])
            + " |"
            for r in rows
        ]
        if crow:
            out += [
                "",
                "**Protected categories**",
                "",
                "| " + " | ".join(chead) + " |",
                "|---|---:|---|---:|---:|---:|---|",
            ]
            out += ["| " + " | ".join(r) + " |" for r in crow]
        out += [""] + [f"> {n}" for n in report.notes]
        return "\n".join(out).rstrip() + "\n"
    if fmt != "table":
        raise ValueError(f"unknown format {fmt!r}; expected table, markdown or json")

    def table(h: list[str], body: list[list[str]]) -> list[str]:
        w = [max(len(r[i]) for r in [h, *body]) for i in range(len(h))]
        return ["  ".join(c.ljust(w[i]) for i, c in enumerate(r)).rstrip() for r in [h, *body]]

    out = [f"gate {_summary(report)}", intro, "", *table(head, rows)]
    if crow:
        out += ["", "protected categories:", *table(chead, crow)]
    out += [f"note: {n}" for n in report.notes]
    return "\n".join(out) + "\n"


def gate_files(
    baseline: str | Path,
    candidate: str | Path,
    policy: GatePolicy | Mapping[str, Any] | None = None,
) -> GateReport:
    """Load two results files and compare them (a convenience for scripts and the pytest plugin)."""
    pol = policy if isinstance(policy, GatePolicy) else GatePolicy.model_validate(policy or {})
    return compare(load_results(baseline), load_results(candidate), pol)
