"""The review's "the judge was wrong" key: a label for `judges fit`, golden set untouched."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from ragsieve.collector.store import open_store
from ragsieve.jobs.cli import cli
from ragsieve.jobs.fitting.labels import store_labels


def _candidate(st, cid: str, status: str, trace: str, audit: bool = False) -> None:
    body = {
        "query": f"question of {trace}",
        "answer": "an answer",
        "source_trace_ids": [trace],
        "chunks": [{"id": "kb-1", "rank": 0, "content": "some text"}],
        "judges": [],
        **({"audit": True} if audit else {}),
    }
    st.execute(
        "INSERT INTO candidates (id, status, category, root_cause, norm_query, seen, created_at,"
        " updated_at, body) VALUES (?, ?, NULL, ?, ?, 1, 0, 0, ?)",
        (cid, status, None if audit else "generation", cid, json.dumps(body)),
    )


def test_judge_was_wrong_becomes_a_label(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 's.db'}"
    st = open_store(url)
    try:
        _candidate(st, "q1", "candidate", "t1")
        _candidate(st, "audit:t2", "audit", "t2", audit=True)
    finally:
        st.close()
    res = CliRunner().invoke(
        cli,
        ["golden", "review", "--store", url, "--reviewer", "ann"],
        input="w\nthe answer is in kb-1\nw\nthe number is wrong\ngeneration\n",
    )
    assert res.exit_code == 0, res.output
    assert "kb-1  (rank 0)" in res.output  # chunk ids, not list positions
    assert "golden set untouched" in res.output
    # the summary tells a false alarm from a rejected case (a new user read "2 rejected")
    assert "reviewed: 0 accepted, 1 rejected (of them 1 false alarm)," in res.output
    st = open_store(url, create=False)
    try:
        labels = {(x.trace_id, x.verdict, x.source, x.root_cause) for x in store_labels(st)}
        statuses = dict(st.query("SELECT id, status FROM candidates"))
        reasons = [r[0] for r in st.query("SELECT reason FROM labels ORDER BY id")]
    finally:
        st.close()
    assert ("t1", "pass", "review", None) in labels
    assert ("t2", "fail", "review", "generation") in labels
    assert reasons == ["the answer is in kb-1", "the number is wrong"]
    assert statuses == {"q1": "rejected", "audit:t2": "audit_fail"}  # neither accepted


def test_review_audit_flag_shows_audits_only(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 's.db'}"
    st = open_store(url)
    try:
        _candidate(st, "q1", "candidate", "t1")
        _candidate(st, "audit:t2", "audit", "t2", audit=True)
    finally:
        st.close()
    res = CliRunner().invoke(
        cli, ["golden", "review", "--store", url, "--audit", "--reviewer", "ann"], input="q\n"
    )
    assert res.exit_code == 0, res.output
    assert "AUDIT audit:t2" in res.output and "candidate q1" not in res.output
