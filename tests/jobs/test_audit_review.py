"""Audit reviews and the judge's measured quality: planted labels, then a real terminal review."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

import pexpect
import pytest
from click.testing import CliRunner
from console_script import ragsieve_script
from test_run_support import KINDS, send, wait_stored

from ragsieve.collector.store import Store
from ragsieve.jobs.cli import cli
from ragsieve.jobs.golden.growth.repo import Candidate, CandidateRepo
from ragsieve.jobs.golden.review.audit import audit_id
from ragsieve.jobs.results import resultstore
from ragsieve.jobs.results.reviews import ReviewLabel
from ragsieve.jobs.run.estimate import judge_quality, wilson

KEY = "faithfulness=1"


def _sample(store: Store, run: str, tid: str, verdict: str, p: float, key: str = KEY) -> None:
    resultstore.save_samples(
        store, run, [resultstore.SampleRow(tid, "uniform", p, verdict, None, {"key": key}, {})]
    )


def _row(tid: str, status: str, *, audit: bool = False, reason: str | None = None) -> Candidate:
    body: dict[str, Any] = {"query": f"q {tid}", "source_trace_ids": [tid, "later-merge"]}
    if reason is not None:
        body["review"] = {"decision": status, "reason": reason}
    if audit:
        body["audit"] = True
    return Candidate(
        id=audit_id(tid) if audit else f"q_{tid}", status=status, norm_query=f"q {tid}", body=body
    )


def test_planted_reviews_give_exact_rates(store: Store) -> None:
    resultstore.begin_run(store, "r1", 1.0)
    plan = [  # trace, verdict, inclusion p, candidate row
        ("f1", "fail", 1.0, _row("f1", "accepted")),
        ("f2", "fail", 0.5, _row("f2", "accepted")),
        ("f3", "fail", 1.0, _row("f3", "rejected", reason="false_alarm: the judge was wrong")),
        ("f4", "fail", 1.0, _row("f4", "rejected", reason="duplicate")),
        ("f5", "fail", 1.0, _row("f5", "rejected", reason="out_of_scope")),
        ("f6", "fail", 1.0, _row("f6", "candidate")),  # not reviewed yet
        ("a1", "pass", 0.25, _row("a1", "audit_pass", audit=True)),
        ("a2", "pass", 1.0, _row("a2", "audit_fail", audit=True)),
        ("a3", "pass", 1.0, _row("a3", "accepted", audit=True)),  # missed, taken as a case
        ("a4", "pass", 0.5, _row("a4", "audit_pass", audit=True)),
        ("a5", "pass", 1.0, _row("a5", "audit", audit=True)),  # open
    ]
    for tid, verdict, p, _ in plan:
        _sample(store, "r1", tid, verdict, p)
    # reviewed under another judge set only: says nothing about the current judges
    _sample(store, "r1", "old", "fail", 1.0, key="faithfulness=0")
    CandidateRepo(store).save([row for *_, row in plan] + [_row("old", "accepted")])

    labels = resultstore.review_labels(store, KEY)
    assert sorted((lab.trace_id, lab.outcome, lab.weight) for lab in labels) == [
        ("a1", "tn", 4.0),
        ("a2", "fn", 1.0),
        ("a3", "fn", 1.0),
        ("a4", "tn", 2.0),
        ("f1", "tp", 1.0),
        ("f2", "tp", 2.0),
        ("f3", "fp", 1.0),
        ("f4", "excluded", 1.0),
        ("f5", "excluded", 1.0),
    ]
    assert resultstore.open_audits(store) == 1

    q = judge_quality(0.2, (0.1, 0.3), labels)
    assert (q["reviewed_flagged"], q["confirmed_failures"], q["false_alarms"]) == (3, 2, 1)
    assert q["rejections_not_counted"] == 2
    assert (q["reviewed_audits"], q["missed_failures"]) == (4, 2)
    assert q["precision"] == 0.75  # (1 + 2) / (1 + 2 + 1), weights 1/p
    assert q["false_omission_rate"] == 0.25  # (1 + 1) / (1 + 1 + 4 + 2)
    lo, hi = wilson(0.75, 16 / 6)  # Kish: (1+2+1)^2 / (1+4+1)
    assert q["precision_ci"] == [round(lo, 6), round(hi, 6)]
    c = q["corrected_failure_rate"]
    assert c["estimate"] == 0.35  # 0.2 * 0.75 + 0.8 * 0.25
    assert q["tpr"] == round(0.15 / 0.35, 6) and q["fpr"] == round(0.05 / 0.65, 6)
    # the same number through Rogan-Gladen with the measured sensitivity and specificity
    assert (0.2 - q["fpr"]) / (q["tpr"] - q["fpr"]) == pytest.approx(0.35, abs=1e-5)
    assert c["ci_low"] <= 0.35 <= c["ci_high"] and 0 <= c["ci_low"] and c["ci_high"] <= 1
    assert c["ci_low"] < 0.1 * 0.75 + 0.9 * 0.25  # wider than the raw interval alone
    assert "box" in c["ci_method"]


def test_partial_reviews_leave_the_rest_unknown() -> None:
    only_flags = judge_quality(0.3, (0.2, 0.4), [ReviewLabel("x", "tp"), ReviewLabel("y", "fp")])
    assert only_flags["precision"] == 0.5 and only_flags["false_omission_rate"] is None
    assert only_flags["tpr"] is None and only_flags["corrected_failure_rate"] is None
    # every audited pass was a miss and every flag right: corrected rate clamps to 1
    q = judge_quality(0.4, None, [ReviewLabel("x", "tp"), ReviewLabel("z", "fn")])
    assert q["corrected_failure_rate"]["estimate"] == 1.0 and q["fpr"] is None
    with pytest.raises(ValueError):
        judge_quality(0.4, None, [ReviewLabel("x", "maybe")])


def _jobs_run(store: Store, *args: str) -> dict[str, Any]:
    res = CliRunner().invoke(
        cli,
        [
            "jobs",
            "run",
            "--store",
            store.url,
            "--since",
            "1h",
            "--settle",
            "0",
            "--json",
            "--all",
            *args,
        ],
        env={"RAGSIEVE_JOBS__AUDIT_SHARE": "1"},
        catch_exceptions=False,
    )
    assert res.exit_code == 0, res.output
    out: dict[str, Any] = json.loads(res.stdout)
    return out


def test_audit_through_the_terminal_then_rates_in_the_report(
    collector: Any, tmp_path: Path
) -> None:
    exe = ragsieve_script()
    store = collector.store
    kinds = ("good", "good_refund", "unfaithful", "missing_abstention")
    send(collector.traces_url, [KINDS[k][0] for k in kinds])
    wait_stored(store, 4)
    first = _jobs_run(store)
    assert first["flagged"] == 2 and first["passed"] == 2
    assert first["audit"]["routed"] == 2 and first["audit"]["queued"] == 2
    assert first["audit"]["open"] == 2
    assert first["judge_quality"]["corrected_failure_rate"] is None

    listed = CliRunner().invoke(
        cli, ["golden", "candidates", "--json", "--store", store.url], catch_exceptions=False
    )
    lines = [json.loads(x) for x in listed.stdout.splitlines()]
    audits = [x for x in lines if x["audit"]]
    assert len(audits) == 2 and all(
        x["kind"] == "audit" and x["status"] == "audit" and x["judge_verdict"] == "pass"
        for x in audits
    )
    assert {x["kind"] for x in lines if not x["audit"]} == {"failure"}

    env = {k: v for k, v in os.environ.items() if not k.startswith(("RAGSIEVE_", "OTEL_"))}
    env.update(RAGSIEVE_STORE=store.url, COLUMNS="120")
    child = pexpect.spawn(
        str(exe),
        ["golden", "review", "--reviewer", "carol"],
        env=env,
        cwd=str(tmp_path),
        encoding="utf-8",
        timeout=30,
        dimensions=(50, 120),
    )
    try:
        # two flagged failures first: one real (a no-answer case), one false alarm
        child.expect_exact("[q]uit")
        child.send("a")
        child.expect_exact("no-answer case")
        child.send("y")
        child.expect(r"accepted q_[0-9a-f]{12}")
        child.expect_exact("[q]uit")
        child.send("r")
        child.expect_exact("Reason")
        child.sendline("f")
        child.expect_exact("rejected")
        # then the audited passes, asked the other way round
        child.expect_exact("the judges PASSED this answer")
        child.expect_exact("Is this really a pass?")
        child.expect_exact("ANSWER")
        child.expect_exact("[q]uit")
        child.send("y")
        child.expect_exact("confirmed pass audit:")
        child.expect_exact("Is this really a pass?")
        child.expect_exact("[q]uit")
        child.send("n")
        child.expect_exact("Also add it to the golden set as a case?")
        child.send("n")
        child.expect_exact("missed failure audit:")
        child.expect_exact(
            "1 accepted, 1 rejected, 0 skipped, 0 edits;"
            " audits: 1 confirmed passes, 1 missed failures"
        )
        child.expect(pexpect.EOF)
    finally:
        child.close()
    assert child.exitstatus == 0, child.before

    statuses = sorted(c.status for c in CandidateRepo(store).select())
    assert statuses == ["accepted", "audit_fail", "audit_pass", "rejected"]
    again = _jobs_run(store)
    assert again["audit"]["open"] == 0 and again["audit"]["routed"] == 0
    q = again["judge_quality"]
    assert (
        q["reviewed_flagged"],
        q["false_alarms"],
        q["reviewed_audits"],
        q["missed_failures"],
    ) == (2, 1, 2, 1)
    assert q["precision"] == 0.5 and q["false_omission_rate"] == 0.5
    assert again["failure_rate"]["estimate"] == 0.5
    assert q["corrected_failure_rate"]["estimate"] == 0.5  # 0.5 * 0.5 + 0.5 * 0.5
    assert q["tpr"] == 0.5 and q["fpr"] == 0.5
    table = CliRunner().invoke(
        cli,
        ["jobs", "run", "--store", store.url, "--since", "1h", "--settle", "0", "--all"],
        catch_exceptions=False,
    )
    # each measure reads with its interval and the labels it rests on: two reviews say little
    assert q["tpr_ci"][0] < 0.5 < q["tpr_ci"][1] and q["fpr_ci"][0] < 0.5 < q["fpr_ci"][1]
    assert re.search(
        r"judge TPR / FPR +50\.0% \(95% CI [\d.]+%-[\d.]+%, 4 labels\) / 50\.0% \(95% CI",
        table.stdout,
    )
    assert re.search(r"judge precision +50\.0% \(95% CI [\d.]+%-[\d.]+%, 2 labels\)", table.stdout)
    assert re.search(r"judge false-omission rate +50\.0% \(95% CI .*, 2 labels\)", table.stdout)
    assert re.search(r"corrected failure rate +50\.0% \(95% CI", table.stdout), table.stdout
    ppi = q["failure_rate_ppi"]
    assert ppi["estimate"] == 0.5  # the same correction, prediction-powered, with its interval
    assert re.search(r"prediction-powered rate +50\.0% \(95% CI .*4 labels\)", table.stdout)
