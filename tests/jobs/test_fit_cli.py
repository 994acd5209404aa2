"""``ragsieve judges labels|fit`` on a live collector's store, then ``jobs run`` under the fit."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from click.testing import CliRunner
from test_run_support import KINDS, send, wait_stored

from ragsieve.jobs.cli import cli


def _run(*args: str) -> tuple[int, Any, str]:
    res = CliRunner().invoke(cli, list(args))
    try:
        return res.exit_code, json.loads(res.stdout), res.output
    except ValueError:
        return res.exit_code, None, res.output


def test_fit_is_stored_and_the_job_rejudges_under_it(collector: Any, tmp_path: Path) -> None:
    store = collector.store.url
    kinds = ["good", "unfaithful"] * 22
    unlabelled = ["good", "unfaithful", "good"]
    ids = send(collector.traces_url, [KINDS[k][0] for k in kinds + unlabelled])
    wait_stored(collector.store, len(ids))
    code, rep, _ = _run(
        "jobs", "run", "--store", store, "--since", "1h", "--settle", "0", "--all", "--json"
    )
    assert code == 0 and all(j["calibration"] is None for j in rep["judges"])
    labels = tmp_path / "labels.jsonl"
    with labels.open("w") as f:
        for tid, kind in zip(ids[: len(kinds)], kinds, strict=True):
            verdict = "pass" if KINDS[kind][1] is None else "fail"
            f.write(json.dumps({"trace_id": tid, "verdict": verdict}) + "\n")

    code, counts, _ = _run("judges", "labels", "--store", store, "--labels", str(labels), "--json")
    assert code == 0
    assert counts["by_source"] == {"file": 44}
    assert counts["fit_by_verdict"] == {"pass": 22, "fail": 22} and counts["fit_traces"] == 44

    code, _, out = _run("judges", "fit", "--store", store, "--labels", str(labels), "--dry-run")
    assert code == 0 and "balanced_accuracy" in out and "nothing stored" in out
    # the judge already agrees with these labels: the fit says it changes nothing
    assert out.splitlines()[-1].startswith("the fit changes nothing; nothing stored")
    code, costly, _ = _run(
        "judges", "fit", "--store", store, "--labels", str(labels), "--dry-run", "--json",
        "--false-flag-cost", "2",
    )  # fmt: skip
    assert code == 0 and costly["false_flag_cost"] == 2.0 and costly["written"] is None
    assert {"false_flag_rate", "cost_weighted_accuracy"} <= set(costly["agreement"]["delta"])
    code, fit, _ = _run(
        "judges", "fit", "--store", store, "--labels", str(labels), "--force", "--json"
    )
    assert code == 0 and fit["written"] and fit["active"] == fit["written"]
    assert fit["anchors"] == len(unlabelled)  # what a change would do to the unlabelled traces
    assert {"before", "after", "delta"} <= set(fit["agreement"])
    assert (
        fit["agreement"]["after"]["kappa"]["ci"][0] <= fit["agreement"]["after"]["kappa"]["value"]
    )

    code, rep, _ = _run(
        "jobs", "run", "--store", store, "--since", "1h", "--settle", "0", "--all", "--json"
    )
    assert code == 0
    assert {j["calibration"] for j in rep["judges"]} == {fit["written"]}
    assert rep["judge_calls"] == 3 * len(ids)  # a new judge version: every trace judged again
    payloads = [
        json.loads(body)
        for (body,) in collector.store.query(
            "SELECT payload FROM outbox WHERE topic = ?", ("phoenix_annotations",)
        )
    ]
    cals = {a["metadata"].get("calibration") for p in payloads for a in p.get("data", [p])}
    assert fit["written"] in cals

    code, moved, _ = _run(
        "judges", "fit", "--store", store, "--export", str(tmp_path / "c.json"), "--json"
    )
    assert code == 0 and moved["exported"] == fit["written"]
    code, moved, _ = _run("judges", "fit", "--store", store, "--reset", "--json")
    assert code == 0 and moved["reset"] == 1 and moved["active"] is None
    code, rep, _ = _run(
        "jobs", "run", "--store", store, "--since", "1h", "--settle", "0", "--all", "--json"
    )
    assert all(j["calibration"] is None for j in rep["judges"]) and rep["judge_calls"] == 0
    code, moved, _ = _run(
        "judges", "fit", "--store", store, "--import", str(tmp_path / "c.json"), "--json"
    )
    assert code == 0 and moved["active"] == moved["imported"] != fit["written"]


def test_fit_refuses_with_too_few_labels(collector: Any, tmp_path: Path) -> None:
    ids = send(collector.traces_url, [KINDS["good"][0], KINDS["unfaithful"][0]])
    wait_stored(collector.store, len(ids))
    _run(
        "jobs",
        "run",
        "--store",
        collector.store.url,
        "--since",
        "1h",
        "--settle",
        "0",
        "--all",
        "--json",
    )
    labels = tmp_path / "l.jsonl"
    labels.write_text(json.dumps({"trace_id": ids[0], "verdict": "pass"}) + "\n")
    res = CliRunner().invoke(
        cli, ["judges", "fit", "--store", collector.store.url, "--labels", str(labels)]
    )
    assert res.exit_code == 1
    assert "label 20 more failures and 19 more passes" in str(res.exception)
