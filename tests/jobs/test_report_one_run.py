"""A report of one run says "not enough runs yet" instead of drawing empty charts (issue 29).

Before, one run drew a time axis spanning six years and empty plots for every chart over time.
"""

from __future__ import annotations

import re
import warnings
from datetime import timedelta
from pathlib import Path

import pytest

from ragsieve.collector.store import Store
from ragsieve.evaluators.records import utcnow
from ragsieve.jobs.report.cli import write_report
from ragsieve.jobs.run.simulate import HistorySpec, simulate, store_run
from ragsieve.jobs.settings import Settings

CHARTS_OVER_TIME = ("Failure rate per run", "Root causes over time", "Cost per run")


def _runs(store: Store, n: int) -> None:
    start = (utcnow() - timedelta(hours=n + 0.5)).replace(microsecond=0)
    for started, report in simulate(HistorySpec(runs=n, rate=lambda i: 0.05, start=start)):
        store_run(store, started, report)


def _section(page: str, title: str) -> str:
    return page.split(f"<h2>{title}</h2>", 1)[1].split("<h2>", 1)[0]


@pytest.mark.parametrize("runs", [1, 2])
def test_charts_over_time_need_two_runs(store: Store, tmp_path: Path, runs: int) -> None:
    _runs(store, runs)
    out = write_report(store, Settings(), tmp_path / "report.html")
    assert out["runs"] == runs
    page = Path(out["path"]).read_text(encoding="utf-8")
    for title in CHARTS_OVER_TIME:
        section = _section(page, title)
        if runs == 1:
            assert "Not enough runs yet: 1 run in this window" in section
            assert "<svg" not in section
        else:
            assert "<svg" in section and "Not enough runs" not in section
    assert "<svg" in _section(page, "Failure rate by stratum")  # one run's rates still shown


def test_runs_minutes_apart_draw_without_warnings(store: Store, tmp_path: Path) -> None:
    """Runs a minute and a half apart (a first try of `jobs run`) once made matplotlib warn on
    stderr that it found no tick interval for the time axis."""
    start = (utcnow() - timedelta(minutes=10)).replace(microsecond=0)
    spec = HistorySpec(runs=4, rate=lambda i: 0.05, start=start, every=timedelta(seconds=89))
    for started, report in simulate(spec):
        store_run(store, started, report)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = write_report(store, Settings(), tmp_path / "report.html")
    assert out["runs"] == 4
    assert "<svg" in _section(Path(out["path"]).read_text(encoding="utf-8"), "Cost per run")


def test_agreement_measured_only_by_the_latest_run_is_drawn_on_the_runs_axis(
    store: Store, tmp_path: Path
) -> None:
    """People reviewed after the earlier runs: only the latest run measured precision. A new user
    saw an empty agreement chart on a 2024-2030 axis; the point is drawn, on the runs' span."""
    start = (utcnow() - timedelta(hours=3.5)).replace(microsecond=0)
    history = list(simulate(HistorySpec(runs=3, rate=lambda i: 0.05, start=start)))
    for i, (started, report) in enumerate(history):
        quality = dict(report.get("judge_quality") or {})
        for key in ("precision", "false_omission_rate"):
            quality[key] = 0.733 if i == len(history) - 1 and key == "precision" else None
        store_run(store, started, {**report, "judge_quality": quality})
    out = write_report(store, Settings(), tmp_path / "report.html")
    page = Path(out["path"]).read_text(encoding="utf-8")
    chart = _section(page, "Judge agreement with reviewers")
    assert "<svg" in chart and 'id="line2d' in chart
    years = {int(y) for y in re.findall(r">\s*(20\d\d)\s*<", chart)}
    assert years <= {start.year, utcnow().year}, years  # no axis running years either way


def test_flagged_cases_show_what_a_reviewer_said(store: Store, tmp_path: Path) -> None:
    """The latest flagged cases read the review: a flag a person called a pass, and a root cause
    they corrected, are shown as theirs beside the job's (a new user's report still listed both
    as the job had decided them)."""
    from ragsieve.jobs.fitting.labels import Label, add_label
    from ragsieve.jobs.history.runs import load_runs

    _runs(store, 2)
    cases = [c for run in load_runs(store) for c in run.report["flagged_cases"]]
    wrong, corrected = cases[0], next(c for c in cases[1:] if c["root_cause"] != "generation")
    add_label(store, Label(str(wrong["trace_id"]), "pass", "review"), by="ana")
    add_label(
        store, Label(str(corrected["trace_id"]), "fail", "review", None, "generation"), by="ana"
    )
    out = write_report(store, Settings(), tmp_path / "report.html")
    rows = _section(Path(out["path"]).read_text(encoding="utf-8"), "Latest flagged cases")
    assert f"reviewed pass (job FLAGGED {wrong['root_cause']})" in rows
    assert f"generation (reviewed; job {corrected['root_cause']})" in rows
