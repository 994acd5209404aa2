"""``golden promote`` names what it added in words: a case with no category or no root cause is
shown as such, never as a bare ``-`` (issue 42)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from console_script import ragsieve_script

from ragsieve.collector.store import open_store
from ragsieve.evaluators.golden.sets import changelog_path
from ragsieve.jobs.golden.growth.repo import Candidate, CandidateRepo


def _accepted(cid: str, root_cause: str | None) -> Candidate:
    return Candidate(
        id=cid,
        status="accepted",
        norm_query=f"question {cid}",
        category=None,  # one failure alone makes no category
        root_cause=root_cause,
        body={
            "query": f"Question {cid}?",
            "source_trace_ids": [f"t-{cid}"],
            "relevant_chunks": {"kb-1": 1},
            "reference_answer": "The answer.",
            "review": {"decision": "accepted", "by": "ann"},
        },
    )


def _promote(tmp_path: Path, url: str, start: Path) -> subprocess.CompletedProcess[str]:
    """``ragsieve golden promote --start START`` on the store at ``url``; it must succeed."""
    out = subprocess.run(
        [str(ragsieve_script()), "golden", "promote", "--start", str(start), "--by", "bob"],
        env={"PATH": "/usr/bin:/bin", "RAGSIEVE_STORE": url, "HOME": str(tmp_path)},
        cwd=tmp_path, capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    return out


@pytest.mark.parametrize(
    ("causes", "shown"),
    [
        (["generation", "generation"], "generation"),
        ([None, None], "no root cause"),
        # one group, two causes: both counted, and each case says its own
        (["retrieval", "generation"], "generation 1, retrieval 1"),
    ],
)
def test_promote_names_an_uncategorised_case_and_a_missing_root_cause(
    tmp_path: Path, causes: list[str | None], shown: str
) -> None:
    url = f"sqlite:///{tmp_path / 's.db'}"
    st = open_store(url)
    try:
        CandidateRepo(st).save([_accepted(f"q_{i}", c) for i, c in enumerate(causes)])
    finally:
        st.close()
    start = tmp_path / "golden.jsonl"
    out = _promote(tmp_path, url, start)
    assert "    2  uncategorized" in out.stdout.splitlines()
    assert not any(line.rstrip().endswith("  -") for line in out.stdout.splitlines())
    [written] = [p for p in tmp_path.glob("golden*.jsonl") if p != start] or [start]
    log = changelog_path(written).read_text(encoding="utf-8")
    bullets = [line for line in log.splitlines() if line.startswith("- ")]
    assert len(bullets) == 1, log  # one group: both cases lack a category
    assert bullets[0].startswith(f"- uncategorized ({shown}): 2 — "), bullets
    if len(set(causes)) > 1:
        for i, cause in enumerate(causes):
            assert f"({cause})" in bullets[0].split(" — ")[1].split(f"q_{i}")[1].split(",")[0]
    assert "- - " not in log and "(None" not in log


def _rejected(cid: str, reason: str) -> Candidate:
    return Candidate(
        id=cid,
        status="rejected",
        norm_query=f"question {cid}",
        root_cause="generation",
        body={
            "query": f"Question {cid}?",
            "source_trace_ids": [f"t-{cid}"],
            "answer": "The answer.",
            "judges": [{"evaluator": "faithfulness", "label": "unfaithful"}],
            "review": {"decision": "rejected", "by": "ann", "reason": reason},
        },
    )


def test_a_false_alarm_however_typed_marks_the_judge_wrong_in_the_rejected_labels(
    tmp_path: Path,
) -> None:
    # the terminal writes "false_alarm: ..."; a reviewer in Phoenix types the reason themselves
    reasons = {
        "terminal": "false_alarm: the judge was wrong",
        "phoenix": "False alarm - the answer is in the chunk",
        "dup": "duplicate",
    }
    url = f"sqlite:///{tmp_path / 's.db'}"
    st = open_store(url)
    try:
        repo = CandidateRepo(st)
        repo.save([_accepted("q_ok", "generation")])
        repo.save([_rejected(cid, why) for cid, why in reasons.items()])
        # the fit's labels and the report's read the same reasons the same way
        from ragsieve.jobs.fitting.labels import store_labels
        from ragsieve.jobs.results.reviews import says_false_alarm

        passes = {lab.trace_id for lab in store_labels(st) if lab.verdict == "pass"}
        assert passes == {"t-terminal", "t-phoenix"}
        assert {c.id for c in repo.select(["rejected"]) if c.false_alarm} == {"terminal", "phoenix"}
        assert [says_false_alarm(r) for r in reasons.values()] == [True, True, False]
    finally:
        st.close()
    _promote(tmp_path, url, tmp_path / "golden.jsonl")
    (negatives,) = tmp_path.glob("*.rejected.jsonl")
    rows = {r["id"]: r for r in map(json.loads, negatives.read_text().splitlines())}
    assert rows.keys() == set(reasons)
    assert rows["terminal"]["label_faithful"] is True
    assert rows["phoenix"]["label_faithful"] is True  # was missed: read case-sensitively
    assert "label_faithful" not in rows["dup"]
