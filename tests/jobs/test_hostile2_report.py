"""Hostile inputs, second round (issue 28 row 2): trace strings that matplotlib would read as
mathtext (``$\\frac{$``) are drawn as text, and a report that cannot be written is never a
silent skip of ``jobs run``."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path

from click.testing import CliRunner

from ragsieve.collector.store import Store
from ragsieve.evaluators.records import utcnow
from ragsieve.jobs.cli import cli
from ragsieve.jobs.run.simulate import HistorySpec, simulate, store_run

MATH = "$\\frac{$"  # an unbalanced mathtext fragment: matplotlib's parser raises on it
TEX = "$x^2$ costs $5"  # balanced: would silently render as math (and drop the dollars)


def _history(store: Store, tenant: str, runs: int = 6) -> None:
    start = (utcnow() - timedelta(hours=runs)).replace(microsecond=0)
    for started, report in simulate(HistorySpec(runs=runs, rate=lambda i: 0.1, start=start)):
        text = json.dumps(report).replace("tenant=acme", json.dumps(tenant)[1:-1])
        text = text.replace('"retrieval"', json.dumps(MATH))  # a root cause name too
        store_run(store, started, json.loads(text))


def test_mathtext_in_trace_strings_is_drawn_as_text(tmp_path: Path, store: Store) -> None:
    _history(store, MATH)
    out = tmp_path / "report.html"
    res = CliRunner().invoke(
        cli, ["report", "--store", store.url, "--since", "7d", "--html", str(out)]
    )
    assert res.exit_code == 0, res.output
    page = out.read_text(encoding="utf-8")
    assert page.count(MATH) >= 2  # the tenant cell's bar label and the root-cause legend
    assert MATH.replace("$", "") not in page.replace(MATH, "")  # never drawn as math


def test_balanced_dollars_stay_literal_text(tmp_path: Path, store: Store) -> None:
    _history(store, TEX)
    out = tmp_path / "report.html"
    res = CliRunner().invoke(
        cli, ["report", "--store", store.url, "--since", "7d", "--html", str(out)]
    )
    assert res.exit_code == 0, res.output
    assert TEX in out.read_text(encoding="utf-8")


def test_jobs_run_says_when_its_report_was_not_written(tmp_path: Path, store: Store) -> None:
    cfg = tmp_path / "ragsieve.toml"
    blocked = tmp_path / "not-a-dir"
    blocked.write_text("a file where the report's folder should be", encoding="utf-8")
    cfg.write_text(f'[report]\nhtml_path = "{blocked / "report.html"}"\n', encoding="utf-8")
    res = CliRunner().invoke(
        cli,
        ["--config", str(cfg), "jobs", "run", "--store", store.url, "--since", "1h"],
    )
    assert res.exit_code == 0, res.output
    assert f"report {blocked / 'report.html'} not written: " in res.stderr
