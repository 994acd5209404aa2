"""Read the run history back: each finished run's stored report, oldest first, and its key figures.

The job writes one ``runs`` row per pass (``results.samples.finish_run``); this module only reads
them. :func:`rate_of` is the one place that says where a rate lives in a report: the whole
traffic's ``failure_rate``, or an attribute cell's entry of ``failure_rate_by_cell``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from ragsieve.collector.store import Store

Z95 = 1.959963984540054


@dataclass(frozen=True, slots=True)
class Rate:
    """A weighted failure rate with its 95% interval."""

    estimate: float
    ci_low: float
    ci_high: float

    @property
    def variance(self) -> float:
        """The variance the interval implies: ``((ci_high - ci_low) / (2 z))^2``.

        Read from the (Wilson) interval rather than ``p (1 - p) / n``, so a run whose estimate is
        0 or 1 still carries its uncertainty.
        """
        return ((self.ci_high - self.ci_low) / (2 * Z95)) ** 2


@dataclass(frozen=True, slots=True)
class RunRecord:
    """One finished run and its report."""

    run_id: str
    started_at: float
    finished_at: float
    report: Mapping[str, Any]

    @property
    def started(self) -> datetime:
        """When the run started (UTC)."""
        return datetime.fromtimestamp(self.started_at, UTC)


def load_runs(
    store: Store,
    *,
    since: float | None = None,
    until: float | None = None,
    last: int | None = None,
) -> list[RunRecord]:
    """Finished runs that started in ``[since, until)`` (unbounded when None), oldest first.

    ``last``: only the latest N of them (read newest first, so old reports are never decoded).
    """
    sql = "SELECT run_id, started_at, finished_at, report FROM runs WHERE report IS NOT NULL"
    params: list[float] = []
    if since is not None:
        sql += " AND started_at >= ?"
        params.append(since)
    if until is not None:
        sql += " AND started_at < ?"
        params.append(until)
    if last is None:
        rows = store.query(sql + " ORDER BY started_at, run_id", tuple(params))
    else:
        sql += " ORDER BY started_at DESC, run_id DESC LIMIT ?"
        rows = store.query(sql, (*params, max(last, 0)))[::-1]
    return [RunRecord(r[0], float(r[1]), float(r[2] or r[1]), json.loads(r[3])) for r in rows]


def rate_of(report: Mapping[str, Any], cell: str | None = None) -> Rate | None:
    """The whole traffic's failure rate, or the attribute cell's; None when not estimated."""
    if cell is None:
        fr = report.get("failure_rate") or {}
    else:
        fr = (report.get("failure_rate_by_cell") or {}).get(cell) or {}
    if fr.get("estimate") is None or fr.get("ci_low") is None or fr.get("ci_high") is None:
        return None
    return Rate(float(fr["estimate"]), float(fr["ci_low"]), float(fr["ci_high"]))


def corrected_rate(report: Mapping[str, Any]) -> Rate | None:
    """The judge-corrected failure rate, when reviewed labels gave one."""
    c = (report.get("judge_quality") or {}).get("corrected_failure_rate")
    if not c:
        return None
    return Rate(float(c["estimate"]), float(c["ci_low"]), float(c["ci_high"]))


def summary(run: RunRecord) -> dict[str, Any]:
    """The figures ``runs list`` shows for one run."""
    r = run.report
    rate, corr = rate_of(r), corrected_rate(r)
    golden = r.get("golden") or {}
    return {
        "run_id": run.run_id,
        "started": run.started.isoformat(timespec="seconds"),
        "window": r.get("window"),
        "sampled": (r.get("sampled") or {}).get("total", 0),
        "sampled_by_stratum": {
            k: v.get("sampled", 0)
            for k, v in ((r.get("sampled") or {}).get("by_stratum") or {}).items()
        },
        "judged": r.get("judged", 0),
        "flagged": r.get("flagged", 0),
        "flagged_by_root_cause": r.get("flagged_by_root_cause") or {},
        "failure_rate": None if rate is None else [rate.estimate, rate.ci_low, rate.ci_high],
        "corrected_failure_rate": None
        if corr is None
        else [corr.estimate, corr.ci_low, corr.ci_high],
        "judge_errors": r.get("judge_errors", 0),
        "usd": (r.get("cost") or {}).get("usd", 0.0),
        "new_categories": [c.get("category") for c in golden.get("new_categories") or ()],
    }


def _ci(r: Sequence[float] | None) -> str:
    return "-" if r is None else f"{r[0]:.1%} ({r[1]:.1%}-{r[2]:.1%})"


def render(rows: Sequence[Mapping[str, Any]]) -> str:
    """``runs list`` as a table, one run a line."""
    head = ("run", "started", "sampled", "judged", "flagged", "failure rate (95% CI)",
            "corrected", "errors", "USD", "new cat.")  # fmt: skip
    lines = [head]
    for s in rows:
        lines.append(
            (
                s["run_id"],
                s["started"],
                str(s["sampled"]),
                str(s["judged"]),
                str(s["flagged"]),
                _ci(s["failure_rate"]),
                _ci(s["corrected_failure_rate"]),
                str(s["judge_errors"]),
                f"{s['usd']:.4f}",
                str(len(s["new_categories"])),
            )  # fmt: skip
        )
    widths = [max(len(line[i]) for line in lines) for i in range(len(head))]
    return "\n".join(
        "  ".join(c.ljust(w) for c, w in zip(x, widths, strict=True)).rstrip() for x in lines
    )


__all__ = ["Rate", "RunRecord", "corrected_rate", "load_runs", "rate_of", "render", "summary"]
