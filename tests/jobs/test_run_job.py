"""`ragsieve jobs run` end to end: OTel SDK → live collector → job with the offline judges."""

from __future__ import annotations

import json
from typing import Any

from click.testing import CliRunner
from test_run_support import KINDS, Turn, send, settings, wait_stored

from ragsieve.evaluators.judges import get_judge
from ragsieve.jobs.cli import cli
from ragsieve.jobs.judging.judges import make_judges
from ragsieve.jobs.run.run import run_once


def traffic(collector: Any) -> list[str]:
    turns = [KINDS[k][0] for k in ("good", "good_refund", "unfaithful", "missing_abstention")]
    turns.append(Turn("Why did the generator crash today?", ["Nothing here."], "", fail=True))
    ids = send(collector.traces_url, turns)
    wait_stored(collector.store, len(ids))
    return ids


def jobs_run(store: Any, *args: str) -> tuple[int, dict[str, Any]]:
    res = CliRunner().invoke(
        cli,
        ["jobs", "run", "--store", store.url, "--since", "1h", "--settle", "0", "--json", *args],
        catch_exceptions=False,
    )
    return res.exit_code, json.loads(res.stdout)


def test_report_numbers_and_idempotent_rerun(collector: Any) -> None:
    ids = traffic(collector)
    code, rep = jobs_run(collector.store, "--all")
    assert code == 0
    assert rep["discovered"] == 5
    assert rep["not_applicable"]["count"] == 1
    assert sum(rep["not_applicable"]["reasons"].values()) == 1
    assert rep["sampled"]["by_stratum"]["all"] == {
        "population": 4,
        "sampled": 4,
        "inclusion_p": 1.0,
    }
    assert rep["judged"] == 4 and rep["judge_calls"] == 12
    assert rep["judge_errors"] == 0 and rep["already_judged"] == 0
    assert rep["flagged"] == 2
    assert rep["flagged_by_root_cause"] == {"generation": 1, "no_answer_expected": 1}
    assert rep["failure_rate"]["estimate"] == 0.5
    assert rep["failure_rate"]["ci_low"] < 0.5 < rep["failure_rate"]["ci_high"]
    assert rep["annotations"]["queued"] == 16  # 3 results + 1 verdict per trace
    rows = collector.store.query("SELECT trace_id, COUNT(*) FROM checkpoints GROUP BY trace_id")
    assert len(rows) == 4 and all(n == 3 for _, n in rows)
    assert {r[0] for r in rows} <= set(ids)

    code, again = jobs_run(collector.store, "--all")
    assert code == 0
    assert again["judged"] == 0 and again["judge_calls"] == 0
    assert again["already_judged"] == 4
    assert again["flagged"] == 0 and again["flagged_in_sample"] == 2
    assert again["failure_rate"]["estimate"] == 0.5
    assert collector.store.query("SELECT COUNT(*) FROM results")[0][0] == 12


def test_table_output_and_dry_run_writes_nothing(collector: Any) -> None:
    traffic(collector)
    res = CliRunner().invoke(
        cli,
        [
            "jobs",
            "run",
            "--store",
            collector.store.url,
            "--since",
            "1h",
            "--settle",
            "0",
            "--dry-run",
        ],
        catch_exceptions=False,
    )
    assert res.exit_code == 0
    assert "discovered" in res.stdout and "dry run" in res.stdout
    for table in ("results", "checkpoints", "samples", "runs"):
        assert collector.store.query(f"SELECT COUNT(*) FROM {table}")[0][0] == 0


def test_budget_and_version_bump_backfills(collector: Any) -> None:
    traffic(collector)
    code, rep = jobs_run(collector.store, "--all", "--budget-calls", "6")
    assert code == 0 and rep["judge_calls"] == 6 and rep["judged"] == 2
    assert rep["budget"]["exhausted"] is True
    code, rep = jobs_run(collector.store, "--all")
    assert rep["already_judged"] == 2 and rep["judged"] == 2  # the rest, nothing twice
    s = settings(store=collector.store.url)
    judges = make_judges(s)
    bumped = [
        get_judge("faithfulness", threshold=0.5) if j.name == "faithfulness" else j for j in judges
    ]
    out = run_once(collector.store, s, judges=bumped, take_all=True)
    assert out.report["judge_calls"] == 4  # only the new faithfulness series
    assert out.report["judged"] == 4 and out.report["already_judged"] == 0


def test_usage_errors_exit_2(collector: Any) -> None:
    res = CliRunner().invoke(
        cli,
        [
            "jobs",
            "run",
            "--store",
            collector.store.url,
            "--since",
            "1h",
            "--window",
            "2026-01-01..2026-01-02",
        ],
    )
    assert res.exit_code == 2
    import pytest

    from ragsieve.jobs.cli import main

    with pytest.raises(SystemExit) as exc:
        main(["jobs", "run", "--store", collector.store.url, "--since", "yesterday"])
    assert exc.value.code == 2
