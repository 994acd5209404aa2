"""A report of one run says "not enough runs yet" instead of drawing empty charts (issue 29).

Before, one run drew a time axis spanning six years and empty plots for every chart over time.
"""

from __future__ import annotations

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
