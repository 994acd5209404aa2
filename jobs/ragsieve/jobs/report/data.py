"""What the HTML report shows, read from the run history: series per run and pooled breakdowns.

Per run: the weighted failure rate and its 95% interval (and the judge-corrected one when
reviewed labels gave it), each root cause's part of the rate, cost and judge errors. Over the
report's window: the failure rate per stratum and per attribute cell, each pooled over the runs
by estimated traffic (``alerts.evaluate.pooled``, the same pooling the rise rule's baseline
uses); the new failure categories with their first-seen time, latest size and examples; the
judge's measured agreement with reviewers; and the latest flagged cases.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from ragsieve.collector.store import Store
from ragsieve.jobs.alerts.evaluate import pooled
from ragsieve.jobs.history.runs import Rate, RunRecord, corrected_rate, rate_of

MAX_FLAGGED = 100


@dataclass
class Series:
    """One value per run, aligned with ``ReportData.times`` (None where a run has none)."""

    rate: list[Rate | None] = field(default_factory=list)
    corrected: list[Rate | None] = field(default_factory=list)
    causes: dict[str, list[float]] = field(default_factory=dict)
    usd: list[float] = field(default_factory=list)
    calls: list[int] = field(default_factory=list)
    judge_errors: list[int] = field(default_factory=list)
    precision: list[float | None] = field(default_factory=list)
    false_omission: list[float | None] = field(default_factory=list)


@dataclass
class ReportData:
    """Everything the page renders."""

    times: list[datetime]
    series: Series
    by_stratum: dict[str, Rate]
    by_cell: dict[str, dict[str, Rate]]
    categories: list[dict[str, Any]]
    quality: Mapping[str, Any]
    flagged: list[dict[str, Any]]
    runs: int
    latest: Mapping[str, Any]
    reviewed: Mapping[str, tuple[str, str | None]] = field(default_factory=dict)  # see reviews


def _series(runs: Sequence[RunRecord]) -> Series:
    s = Series()
    causes = sorted({c for r in runs for c in r.report.get("failure_rate_by_root_cause") or {}})
    s.causes = {c: [] for c in causes}
    for run in runs:
        r = run.report
        s.rate.append(rate_of(r))
        s.corrected.append(corrected_rate(r))
        parts = r.get("failure_rate_by_root_cause") or {}
        for c in causes:
            s.causes[c].append(float((parts.get(c) or {}).get("estimate") or 0.0))
        cost = r.get("cost") or {}
        s.usd.append(float(cost.get("usd") or 0.0))
        s.calls.append(int(cost.get("calls") or 0))
        s.judge_errors.append(int(r.get("judge_errors") or 0))
        q = r.get("judge_quality") or {}
        s.precision.append(q.get("precision"))
        s.false_omission.append(q.get("false_omission_rate"))
    return s


def _pool(runs: Sequence[RunRecord], key: str) -> dict[str, Rate]:
    """Each domain of ``report[key]`` pooled over the runs by its estimated traffic."""
    parts: dict[str, list[tuple[Rate, float]]] = {}
    for run in runs:
        for name, v in (run.report.get(key) or {}).items():
            if v.get("estimate") is None:
                continue
            rate = Rate(float(v["estimate"]), float(v["ci_low"]), float(v["ci_high"]))
            parts.setdefault(name, []).append((rate, float(v.get("traffic") or 1.0)))
    return {k: p for k, v in sorted(parts.items()) if (p := pooled(v)) is not None}


def _cells(runs: Sequence[RunRecord]) -> dict[str, dict[str, Rate]]:
    out: dict[str, dict[str, Rate]] = {}
    for cell, rate in _pool(runs, "failure_rate_by_cell").items():
        name, _, value = cell.partition("=")
        out.setdefault(name, {})[value] = rate
    return out


def _categories(
    runs: Sequence[RunRecord],
    first_seen: Mapping[str, datetime],
    names: Mapping[str, str] | None = None,
) -> list[dict[str, Any]]:
    """Categories new now (in the latest run's list, which names every category still new: one a
    reviewer's rejections or the golden set have since covered is left out), first seen when (its
    first candidate, else its first run in the window), their latest size and examples. A
    category is its id: its name is the one it has now (``names``, the category log), not the
    one a run gave it."""
    listed = [r for r in runs if "new_categories" in (r.report.get("golden") or {})]
    latest = listed[-1].report["golden"]["new_categories"] or () if listed else ()
    now = {str(c.get("category")) for c in latest}
    seen: dict[str, dict[str, Any]] = {}
    for run in runs:
        for c in (run.report.get("golden") or {}).get("new_categories") or ():
            key = str(c.get("category"))
            if listed and key not in now:
                continue
            first = first_seen.get(key, run.started)
            entry = seen.setdefault(key, {"first_seen": first, "category": key})
            entry.update(
                name=(names or {}).get(key) or c.get("name") or key,
                size=int(c.get("failures_seen") or 0),
                root_cause=c.get("root_cause"),
                examples=list(c.get("examples") or [])[:3],
                last_seen=run.started,
            )
    return sorted(seen.values(), key=lambda e: (-e["size"], e["category"]))


def _flagged(runs: Sequence[RunRecord]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for run in reversed(runs):
        for c in run.report.get("flagged_cases") or ():
            out.append({**c, "run_id": run.run_id, "started": run.started})
            if len(out) >= MAX_FLAGGED:
                return out
    return out


def collect(
    runs: Sequence[RunRecord],
    first_seen: Mapping[str, datetime] | None = None,
    names: Mapping[str, str] | None = None,
) -> ReportData:
    """The report's data from runs oldest first; ``first_seen`` maps category to its first case,
    ``names`` category to its name now."""
    latest = runs[-1].report if runs else {}
    return ReportData(
        times=[r.started for r in runs],
        series=_series(runs),
        by_stratum=_pool(runs, "failure_rate_by_stratum"),
        by_cell=_cells(runs),
        categories=_categories(runs, first_seen or {}, names),
        quality=latest.get("judge_quality") or {},
        flagged=_flagged(runs),
        runs=len(runs),
        latest=latest,
    )


def category_first_seen(store: Store) -> dict[str, datetime]:
    """When each failure category's first candidate was created (the golden growth's table)."""
    rows = store.query(
        "SELECT category, MIN(created_at) FROM candidates WHERE category IS NOT NULL"
        " GROUP BY category"
    )
    return {str(r[0]): datetime.fromtimestamp(float(r[1]), UTC) for r in rows}


def category_names(store: Store) -> dict[str, str]:
    """Each failure category's name now (the category log golden growth keeps)."""
    return {str(r[0]): str(r[1]) for r in store.query("SELECT id, name FROM categories") if r[1]}


def reviews(store: Store, trace_ids: Sequence[str]) -> dict[str, tuple[str, str | None]]:
    """Trace id -> (verdict, root cause) a person gave it last (``labels``, the review's word):
    a flagged case a reviewer called a pass ("the judge was wrong"), or gave a root cause in a
    label (a labels file, an answer to an ``undetermined``), says so. A root cause corrected
    only on a golden candidate's screen (``c``) lives in the candidate and is not read here."""
    rows = store.query_in(
        "SELECT trace_id, verdict, root_cause FROM labels WHERE trace_id IN ({ids})"
        " AND metric IS NULL ORDER BY created_at, id",
        list(trace_ids),
    )
    return {str(t): (str(v), None if c is None else str(c)) for t, v, c in rows}


def iso(t: datetime) -> str:
    """Minutes-precision UTC time for tables."""
    return t.astimezone(UTC).strftime("%Y-%m-%d %H:%M")


__all__ = [
    "ReportData",
    "Series",
    "category_first_seen",
    "category_names",
    "collect",
    "iso",
    "reviews",
]
