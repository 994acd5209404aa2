"""A report of one run says "not enough runs yet" instead of drawing empty charts (issue 29).

Before, one run drew a time axis spanning six years and empty plots for every chart over time.
"""

from __future__ import annotations

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
