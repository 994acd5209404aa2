"""Run history: `ragsieve runs list` reads back what each run stored."""

from __future__ import annotations

import json
from datetime import timedelta

from click.testing import CliRunner

from ragsieve.collector.store import Store
from ragsieve.evaluators.records import utcnow
from ragsieve.jobs.cli import cli
from ragsieve.jobs.history.runs import load_runs, rate_of
from ragsieve.jobs.run.simulate import HistorySpec, simulate, store_run


def test_runs_list_shows_the_runs_within_since(store: Store) -> None:
    start = (utcnow() - timedelta(hours=47.5)).replace(microsecond=0)
    spec = HistorySpec(runs=48, rate=lambda i: 0.05, start=start)
    for started, report in simulate(spec):
        store_run(store, started, report)
    store.execute("INSERT INTO runs (run_id, started_at) VALUES ('unfinished', ?)", (1e12,))
    runner = CliRunner()
    out = runner.invoke(cli, ["runs", "list", "--store", store.url, "--since", "1d", "--json"])
    assert out.exit_code == 0, out.output
    rows = json.loads(out.output)
    assert len(rows) == 24  # hourly; the unfinished run has no report
    stored = load_runs(store)
    last = stored[-1]
    tail = load_runs(store, last=3)  # the latest three, still oldest first
    assert [r.run_id for r in tail] == [r.run_id for r in stored[-3:]]
    assert [r.run_id for r in load_runs(store, until=stored[5].started_at, last=2)] == [
        r.run_id for r in stored[3:5]
    ]
    assert rows[-1]["run_id"] == last.run_id
    rate = rate_of(last.report)
    assert rate is not None and rows[-1]["failure_rate"] == [
        rate.estimate,
        rate.ci_low,
        rate.ci_high,
    ]
    assert rows[-1]["sampled_by_stratum"] == {"error": 12, "low_retrieval": 45, "uniform": 200}
    assert set(rows[-1]["flagged_by_root_cause"]) <= {"retrieval", "generation"}
    text = runner.invoke(cli, ["runs", "list", "--store", store.url, "--since", "3h"]).output
    lines = text.splitlines()
    assert lines[0].split()[:3] == ["run", "started", "sampled"] and len(lines) == 1 + 3
    assert f"{rate.estimate:.1%}" in lines[-1]
