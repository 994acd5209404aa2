"""Rule evaluation: what each ``[[alerts.rules]]`` says about the run history, as findings.

Pure: takes the runs (oldest first, the latest last) and returns one :class:`Finding` per alert
subject (the rule, or the rule and one category for ``new_category``), firing or not, with the
values that decided it. ``alerts.service`` turns changes of state into events.

The rise test. The latest run's weighted rate p1 (variance v1, read from its 95% interval) is
compared with the baseline window's runs pooled by their estimated traffic T_r:
``p0 = sum T_r p_r / sum T_r``, ``v0 = sum (T_r / T)^2 v_r`` (runs are independent samples).
With ``z = (p1 - p0 - min_effect) / sqrt(v1 + v0)`` the rule fires when ``z > z_(1-level)``: a
one-sided test of "the rate rose by more than min_effect" whose false-alarm rate on a stable
rate is at most ``level`` (lower still with ``min_effect > 0``).
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from statistics import NormalDist
from typing import Any

from ragsieve.collector.timeutil import parse_duration
from ragsieve.jobs.history.runs import Rate, RunRecord, corrected_rate, rate_of
from ragsieve.jobs.settings.alerts import AlertRule

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Finding:
    """One alert subject's condition after the latest run."""

    key: str
    rule: AlertRule
    firing: bool
    message: str
    values: Mapping[str, Any] = field(default_factory=dict)
    interval: tuple[float, float] | None = None


def rule_rate(rule: AlertRule, report: Mapping[str, Any]) -> Rate | None:
    """The rate a rule reads: the cell's or the whole traffic's, raw or judge-corrected."""
    if rule.basis == "corrected":
        return corrected_rate(report)
    return rate_of(report, rule.cell)


def _rate_values(rate: Rate) -> dict[str, float]:
    return {"estimate": rate.estimate, "ci_low": rate.ci_low, "ci_high": rate.ci_high}


def _where(rule: AlertRule) -> str:
    return f" in {rule.cell}" if rule.cell else ""


def failure_rate_above(rule: AlertRule, runs: Sequence[RunRecord]) -> list[Finding]:
    """Fires when the latest interval's lower bound exceeds ``value``."""
    rate = rule_rate(rule, runs[-1].report)
    value = float(rule.value or 0.0)
    if rate is None:
        return [Finding(rule.label, rule, False, f"no failure rate estimated{_where(rule)}")]
    firing = rate.ci_low > value
    msg = (
        f"failure rate{_where(rule)} {rate.estimate:.1%} (95% CI {rate.ci_low:.1%}-"
        f"{rate.ci_high:.1%}): lower bound {'above' if firing else 'not above'} {value:.1%}"
    )
    values = {**_rate_values(rate), "value": value}
    return [Finding(rule.label, rule, firing, msg, values, (rate.ci_low, rate.ci_high))]


def pooled(rates: Sequence[tuple[Rate, float]]) -> Rate | None:
    """Traffic-weighted pool of independent run rates ``(rate, traffic)``; interval at 95%."""
    total = sum(t for _, t in rates)
    if total <= 0:
        return None
    p = sum(r.estimate * t for r, t in rates) / total
    var = sum((t / total) ** 2 * r.variance for r, t in rates)
    half = 1.959963984540054 * math.sqrt(var)
    return Rate(p, max(0.0, p - half), min(1.0, p + half))


def _traffic(report: Mapping[str, Any], cell: str | None) -> float:
    if cell is None:
        return float((report.get("failure_rate") or {}).get("traffic_estimate") or 1.0)
    return float(((report.get("failure_rate_by_cell") or {}).get(cell) or {}).get("traffic") or 1.0)


def failure_rate_rise(rule: AlertRule, runs: Sequence[RunRecord]) -> list[Finding]:
    """Fires when the latest rate exceeds the baseline window's by more than ``min_effect``."""
    latest = runs[-1]
    start = latest.started_at - parse_duration(rule.baseline).total_seconds()
    base = [
        (r, _traffic(x.report, rule.cell))
        for x in runs[:-1]
        if x.started_at >= start and (r := rule_rate(rule, x.report)) is not None
    ]
    now = rule_rate(rule, latest.report)
    p0 = pooled(base)
    if now is None or p0 is None:
        why = "no failure rate estimated" if now is None else "no baseline runs"
        return [Finding(rule.label, rule, False, f"{why}{_where(rule)}")]
    se = math.sqrt(now.variance + p0.variance)
    z = (now.estimate - p0.estimate - rule.min_effect) / se if se > 0 else 0.0
    crit = NormalDist().inv_cdf(1 - rule.level)
    firing = z > crit
    msg = (
        f"failure rate{_where(rule)} {now.estimate:.1%} vs baseline {p0.estimate:.1%}"
        f" ({len(base)} runs over {rule.baseline}): z={z:.2f}"
        f" {'>' if firing else '<='} {crit:.2f} (level {rule.level:g},"
        f" min effect {rule.min_effect:.1%})"
    )
    values = {
        **_rate_values(now),
        "baseline": p0.estimate,
        "baseline_ci": [p0.ci_low, p0.ci_high],
        "baseline_runs": len(base),
        "z": round(z, 4),
        "critical_z": round(crit, 4),
    }
    return [Finding(rule.label, rule, firing, msg, values, (now.ci_low, now.ci_high))]


def sustained(rule: AlertRule, runs: Sequence[RunRecord]) -> list[Finding]:
    """Fires when each of the last ``runs`` runs estimates a rate above ``value``."""
    value = float(rule.value or 0.0)
    last = [rule_rate(rule, x.report) for x in runs[-rule.runs :]]
    above = [r is not None and r.estimate > value for r in last]
    firing = len(last) == rule.runs and all(above)
    shown = ", ".join("-" if r is None else f"{r.estimate:.1%}" for r in last)
    msg = (
        f"failure rate{_where(rule)} over the last {len(last)} of {rule.runs} runs: {shown};"
        f" {'all' if firing else 'not all'} above {value:.1%}"
    )
    rate = last[-1] if last else None
    values = {"estimates": [None if r is None else r.estimate for r in last], "value": value}
    interval = None if rate is None else (rate.ci_low, rate.ci_high)
    return [Finding(rule.label, rule, firing, msg, values, interval)]


def new_category(rule: AlertRule, runs: Sequence[RunRecord]) -> list[Finding]:
    """One finding per new failure category of the latest run with ``min_cases`` failures."""
    cats = (runs[-1].report.get("golden") or {}).get("new_categories") or ()
    out = []
    for c in cats:
        size = int(c.get("failures_seen") or 0)
        if size < rule.min_cases:
            continue
        name = c.get("name") or c.get("category")
        msg = (
            f"new failure category {name!r} ({c.get('root_cause')}): {size} failures"
            f" (>= {rule.min_cases}); e.g. {'; '.join(map(str, (c.get('examples') or [])[:2]))}"
        )
        values = {
            "category": c.get("category"),
            "name": name,
            "size": size,
            "root_cause": c.get("root_cause"),
            "examples": list(c.get("examples") or [])[:3],
        }
        out.append(Finding(f"{rule.label}:{c.get('category')}", rule, True, msg, values))
    return out


def root_cause_share(rule: AlertRule, runs: Sequence[RunRecord]) -> list[Finding]:
    """Fires when ``root_cause``'s weighted share of the failures exceeds ``value``."""
    report = runs[-1].report
    value = float(rule.value or 0.0)
    if rule.cell is None:
        parts = report.get("failure_rate_by_root_cause") or {}
        total = sum(float(p.get("estimate") or 0.0) for p in parts.values())
        mine = parts.get(rule.root_cause) or {}
        share = float(mine.get("estimate") or 0.0) / total if total else 0.0
        cases = int(mine.get("failed") or 0)
    else:
        cell = (report.get("failure_rate_by_cell") or {}).get(rule.cell) or {}
        share = float((cell.get("cause_share") or {}).get(rule.root_cause, 0.0))
        cases = round(share * int(cell.get("failed") or 0))
    firing = cases >= rule.min_cases and share > value
    msg = (
        f"{rule.root_cause} share of failures{_where(rule)} {share:.1%} ({cases} cases):"
        f" {'above' if firing else 'not above'} {value:.1%}"
    )
    values = {"share": round(share, 6), "cases": cases, "value": value}
    return [Finding(rule.label, rule, firing, msg, values)]


KINDS: dict[str, Callable[[AlertRule, Sequence[RunRecord]], list[Finding]]] = {
    "failure_rate_above": failure_rate_above,
    "failure_rate_rise": failure_rate_rise,
    "sustained": sustained,
    "new_category": new_category,
    "root_cause_share": root_cause_share,
}


def evaluate_each(
    rules: Sequence[AlertRule], runs: Sequence[RunRecord]
) -> tuple[list[Finding], dict[str, str]]:
    """Every rule's findings on ``runs`` (oldest first), and the rules that failed (label →
    error). A rule that raises is logged and left out; it never silences the others."""
    findings: list[Finding] = []
    failed: dict[str, str] = {}
    if not runs:
        return findings, failed
    for rule in rules:
        try:
            findings.extend(KINDS[rule.kind](rule, runs))
        except Exception as exc:  # one broken rule (a bug, odd history) must not stop the rest
            log.exception("alert rule %s failed", rule.label)
            failed[rule.label] = f"{type(exc).__name__}: {exc}"
    return findings, failed


def evaluate(rules: Sequence[AlertRule], runs: Sequence[RunRecord]) -> list[Finding]:
    """Every rule's findings on ``runs`` (oldest first); nothing when there is no run."""
    return evaluate_each(rules, runs)[0]


__all__ = ["KINDS", "Finding", "evaluate", "evaluate_each", "pooled", "rule_rate"]
