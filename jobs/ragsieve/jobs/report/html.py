"""The report page: one self-contained HTML file (inline CSS and SVG, no script, no fetch).

Every external reference is a plain link a person may click (a trace in Phoenix); nothing is
loaded from the network to render the page. Text from traces (queries, category names) is
escaped. Sections: headline tiles, failure rate per run with its interval band, root causes over
time, failure rate by stratum and by attribute cell, new failure categories, judge agreement
with reviewers, cost per run, alerts, and the latest flagged cases.
"""

from __future__ import annotations

import html
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import Any

from ragsieve.jobs.report import charts
from ragsieve.jobs.report.data import ReportData, iso

CSS = """
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:0;color:#1d2430;
background:#f6f7f9}main{max-width:1040px;margin:0 auto;padding:24px}
h1{font-size:22px;margin:0 0 4px}h2{font-size:16px;margin:28px 0 8px}
.sub{color:#5b6472;margin:0 0 16px}.tiles{display:flex;gap:12px;flex-wrap:wrap}
.tile{background:#fff;border:1px solid #e3e6ea;border-radius:8px;padding:10px 14px;min-width:150px}
.tile b{display:block;font-size:20px}.tile span{color:#5b6472;font-size:12px}
.card{background:#fff;border:1px solid #e3e6ea;border-radius:8px;padding:12px;overflow-x:auto}
.card svg{max-width:100%;height:auto;display:block}
table{border-collapse:collapse;width:100%;font-size:13px}
th,td{text-align:left;padding:4px 8px;border-bottom:1px solid #eef0f3;vertical-align:top}
th{color:#5b6472;font-weight:600}.firing{color:#b3261e;font-weight:600}.muted{color:#8a93a0}
.grid{display:grid;grid-template-columns:1fr 1fr;gap:12px}
@media(max-width:800px){.grid{grid-template-columns:1fr}}
"""


def _e(v: Any) -> str:
    return html.escape("" if v is None else str(v))


def _pct(v: float | None) -> str:
    return "–" if v is None else f"{100 * v:.1f}%"


def _table(head: Sequence[str], rows: Sequence[Sequence[str]], empty: str) -> str:
    if not rows:
        return f'<p class="muted">{_e(empty)}</p>'
    th = "".join(f"<th>{_e(h)}</th>" for h in head)
    body = "".join("<tr>" + "".join(f"<td>{c}</td>" for c in r) + "</tr>" for r in rows)
    return f"<table><thead><tr>{th}</tr></thead><tbody>{body}</tbody></table>"


def _tiles(data: ReportData, firing: int) -> str:
    rate = next((r for r in reversed(data.series.rate) if r is not None), None)
    corr = next((r for r in reversed(data.series.corrected) if r is not None), None)
    tiles = [
        ("latest failure rate", _pct(rate.estimate) if rate else "–",
         f"95% CI {_pct(rate.ci_low)}–{_pct(rate.ci_high)}" if rate else "not estimated"),
        ("judge-corrected", _pct(corr.estimate) if corr else "–",
         f"95% CI {_pct(corr.ci_low)}–{_pct(corr.ci_high)}" if corr else "needs reviews"),
        ("runs", str(data.runs), f"{iso(data.times[0])} → {iso(data.times[-1])}"
         if data.times else "none"),
        ("new categories", str(len(data.categories)), "not covered by the golden set"),
        ("alerts firing", str(firing), "see Alerts"),
        ("judge spend", f"${sum(data.series.usd):.2f}", f"{sum(data.series.calls)} calls"),
    ]  # fmt: skip
    return (
        '<div class="tiles">'
        + "".join(
            f'<div class="tile"><span>{_e(a)}</span><b>{_e(b)}</b><span>{_e(c)}</span></div>'
            for a, b, c in tiles
        )
        + "</div>"
    )


def _categories(data: ReportData) -> str:
    rows = [
        [_e(c["name"]), _e(c["root_cause"]), str(c["size"]), _e(iso(c["first_seen"])),
         "<br>".join(_e(x) for x in c["examples"])]
        for c in data.categories
    ]  # fmt: skip
    head = ("category", "root cause", "failures", "first seen", "example queries")
    return _table(head, rows, "No new failure categories in this window.")


def _trace_link(trace_id: str, phoenix: str | None) -> str:
    if not phoenix:
        return f"<code>{_e(trace_id[:16])}</code>"
    url = f"{phoenix.rstrip('/')}/redirects/traces/{trace_id}"
    return f'<a href="{_e(url)}" rel="noreferrer">{_e(trace_id[:16])}</a>'


def _cause(case: Mapping[str, Any], reviewed: tuple[str, str | None] | None) -> str:
    """The job's root cause, or a reviewer's word where it differs: ``reviewed pass (job
    FLAGGED generation)``, ``abstained_wrongly (reviewed; job no_answer_expected)``."""
    job = case.get("root_cause") or ""
    if reviewed is None:
        return str(job)
    verdict, cause = reviewed
    if verdict != "fail":
        return f"reviewed {verdict} (job FLAGGED {job})".replace(" )", ")")
    return f"{cause} (reviewed; job {job})" if cause and cause != job else str(job)


def _flagged(data: ReportData, phoenix: str | None) -> str:
    rows = [
        [_e(iso(c["started"])), _trace_link(str(c["trace_id"]), phoenix),
         _e(_cause(c, data.reviewed.get(str(c["trace_id"])))), _e(c.get("stratum")),
         _e(c.get("query"))]
        for c in data.flagged
    ]  # fmt: skip
    head = ("run", "trace" + (" (Phoenix)" if phoenix else ""), "root cause", "stratum", "query")
    return _table(head, rows, "No flagged cases in this window.")


def _measured(q: Mapping[str, Any], name: str, labels: int) -> str:
    """A judge measure with its 95% interval and the labels it rests on: read off a handful of
    reviews, it is wide (as the job's table prints it: ``estimate.pct_ci``)."""
    ci = q.get(f"{name}_ci")
    if q.get(name) is None or not ci:
        return _pct(q.get(name))
    return f"{_pct(q[name])} (95% CI {_pct(ci[0])}–{_pct(ci[1])}, {labels} labels)"


def _quality(data: ReportData) -> str:
    q = data.quality
    if not (q.get("reviewed_flagged") or q.get("reviewed_audits")):
        return '<p class="muted">No reviewed labels yet: agreement appears once people review.</p>'
    flagged_n, audits_n = q.get("reviewed_flagged") or 0, q.get("reviewed_audits") or 0
    both = flagged_n + audits_n
    flagged = f"{q.get('reviewed_flagged', 0)} ({q.get('false_alarms', 0)} false alarms)"
    audits = f"{q.get('reviewed_audits', 0)} ({q.get('missed_failures', 0)} missed)"
    rows = [
        ["reviewed flagged", flagged],
        ["audited passes", audits],
        ["precision", _measured(q, "precision", flagged_n)],
        ["false-omission rate", _measured(q, "false_omission_rate", audits_n)],
        ["TPR / FPR", f"{_measured(q, 'tpr', both)} / {_measured(q, 'fpr', both)}"],
    ]
    s = data.series
    chart = _over_time(data, lambda: charts.agreement(data.times, s.precision, s.false_omission))
    return chart + _table(("measure", "latest"), rows, "")


def _alerts(alerts: Sequence[Mapping[str, Any]]) -> str:
    rows = [
        [
            f'<span class="{"firing" if a["status"] == "firing" else "muted"}">'
            f"{_e(a['status'])}</span>",
            _e(a["alert"]),
            _e(a.get("since") or ""),
            _e(a.get("why")),
        ]
        for a in alerts
    ]
    return _table(("state", "alert", "since", "why"), rows, "No alert rules have fired.")


def _cells(data: ReportData) -> str:
    if not data.by_cell:
        return '<p class="muted">No attribute cells (report.cells) in these runs.</p>'
    parts = [
        f'<div class="card">{charts.rates_bar(rates, f"cell-{i}", title=name, width=4.8)}</div>'
        for i, (name, rates) in enumerate(sorted(data.by_cell.items()))
    ]
    return '<div class="grid">' + "".join(parts) + "</div>"


def _over_time(data: ReportData, chart: Callable[[], str]) -> str:
    """A chart over runs, or why there is none: one run draws no line, only an empty axis."""
    if len(data.times) < 2:
        n = len(data.times)
        return (
            f'<p class="muted">Not enough runs yet: {n} run{"" if n == 1 else "s"} in this'
            " window; charts over time start at two (the latest run is in the tiles above).</p>"
        )
    return f'<div class="card">{chart()}</div>'


def render(
    data: ReportData,
    *,
    title: str,
    generated: datetime,
    phoenix: str | None = None,
    alerts: Sequence[Mapping[str, Any]] = (),
) -> str:
    """The whole page."""
    s = data.series
    firing = sum(a["status"] == "firing" for a in alerts)
    sections = [
        f'<h1>{_e(title)}</h1><p class="sub">Generated {_e(iso(generated))} UTC from'
        f" {data.runs} runs. Rates are weighted by inclusion probability; bands are 95%"
        " intervals.</p>",
        _tiles(data, firing),
        "<h2>Failure rate per run</h2>",
        _over_time(data, lambda: charts.failure_rate(data.times, s.rate, s.corrected)),
        "<h2>Root causes over time</h2>",
        _over_time(data, lambda: charts.root_causes(data.times, s.causes)),
        "<h2>Failure rate by stratum</h2>",
        f'<div class="card">{charts.rates_bar(data.by_stratum, "strata")}</div>'
        if data.by_stratum
        else '<p class="muted">No strata.</p>',
        "<h2>Failure rate by attribute cell</h2>",
        _cells(data),
        "<h2>New failure categories</h2>",
        _categories(data),
        "<h2>Judge agreement with reviewers</h2>",
        _quality(data),
        "<h2>Cost per run</h2>",
        _over_time(data, lambda: charts.cost(data.times, s.usd, s.judge_errors)),
        "<h2>Alerts</h2>",
        _alerts(alerts),
        "<h2>Latest flagged cases</h2>",
        _flagged(data, phoenix),
    ]
    return (
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width,initial-scale=1">'
        f"<title>{_e(title)}</title><style>{CSS}</style></head><body><main>"
        + "\n".join(sections)
        + "</main></body></html>"
    )


__all__ = ["render"]
