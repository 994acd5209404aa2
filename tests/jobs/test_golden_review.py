"""The real ``ragsieve golden review`` driven through a terminal, then promoted by the real CLI."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pexpect
from console_script import ragsieve_script
from golden_plant import PORTS_EN, PORTS_ES, stream, write_golden_v3

from ragsieve.collector.store import Store
from ragsieve.evaluators.golden.sets import load_golden
from ragsieve.evaluators.records import normalize_text
from ragsieve.jobs.golden import grow
from ragsieve.jobs.golden.growth.candidates import candidate_id
from ragsieve.jobs.golden.growth.repo import Candidate, CandidateRepo
from ragsieve.jobs.golden.review.audit import MISSED, OPEN, audit_id
from ragsieve.jobs.settings import GoldenSettings, Settings


def _env(v3: Path, store: Store) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("RAGSIEVE_", "OTEL_"))}
    env.update(RAGSIEVE_GOLDEN__PATH=str(v3), RAGSIEVE_STORE=store.url, COLUMNS="120")
    return env


def test_review_in_a_terminal_then_promote(store: Store, tmp_path: Path) -> None:
    exe = ragsieve_script()
    v3 = write_golden_v3(tmp_path)
    grow(store, stream(), Settings(golden=GoldenSettings(path=str(v3))))
    for cid in ("kb-ports", "kb-firewall"):  # chunks other traces retrieved: the observed corpus
        store.execute(
            "INSERT INTO corpus_chunks (chunk_id, content, first_seen) VALUES (?, ?, 0)",
            (cid, f"{cid} text"),
        )
    env = _env(v3, store)
    child = pexpect.spawn(
        str(exe),
        ["golden", "review", "--reviewer", "alice"],
        env=env,
        cwd=str(tmp_path),
        encoding="utf-8",
        timeout=30,
        dimensions=(50, 120),
    )
    try:
        # first screen: the most seen candidate of the new category, with everything a person needs
        child.expect("NEW FAILURE CATEGORY")
        child.expect_exact(PORTS_EN)
        child.expect("RETRIEVED CHUNKS")
        child.expect_exact("kb-install")
        child.expect_exact("ANSWER")
        child.expect_exact("[EMAIL]")  # the suggestion was scrubbed before it was stored
        child.expect_exact("faithfulness: unfaithful (score 0.10)")
        child.expect_exact("not supported by the retrieved chunks")
        child.expect_exact("[q]uit")
        child.send("e")  # one key, no Enter: a terminal acts on the key pressed
        child.expect_exact("Reference answer")
        child.sendline("Open TCP 443 and 8443 outbound.")
        child.expect_exact("Relevant chunk ids")
        child.sendline("1, kb-ports")  # a list position is not a chunk id
        child.expect_exact("not a chunk of this trace nor of the observed corpus: 1")
        child.expect_exact("Relevant chunk ids")
        child.sendline("kb-ports=3, kb-firewall")
        child.expect_exact("relevant chunks: kb-ports=3, kb-firewall")
        child.expect_exact("[q]uit")
        child.send("c")  # the reviewer reads the failure another way than the job
        child.expect_exact("Root cause")
        child.sendline("no_answer_expected")
        child.expect_exact("root cause: no_answer_expected (the job said ")
        child.expect_exact("[q]uit")
        child.send("a")
        child.expect(r"accepted q_[0-9a-f]{12}")
        # second: the Spanish paraphrases of the same failure
        child.expect_exact(PORTS_ES)
        child.expect_exact("[q]uit")
        child.send("r")
        child.expect_exact("Reason")
        child.sendline("f")
        child.expect_exact("rejected")
        child.expect_exact("[q]uit")
        child.send("s")
        child.expect_exact("[q]uit")
        child.send("q")
        child.expect_exact("1 accepted, 1 rejected, 1 skipped, 1 edits")
        child.expect(pexpect.EOF)
    finally:
        child.close()
    assert child.exitstatus == 0, child.before

    repo = CandidateRepo(store)
    ports = repo.get(candidate_id(normalize_text(PORTS_EN)))
    assert ports is not None and ports.status == "accepted"
    assert ports.body["review"]["by"] == "alice"
    assert ports.body["relevant_chunks"] == {"kb-ports": 3, "kb-firewall": 1}
    es = repo.get(candidate_id(normalize_text(PORTS_ES)))
    assert es is not None and es.status == "rejected"
    assert es.body["review"]["reason"].startswith("false_alarm")
    assert len(repo.select(["candidate"])) == 3

    out = subprocess.run(
        [str(exe), "golden", "promote", "--golden", str(v3), "--by", "bob", "--json"],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert out.returncode == 0, out.stderr
    res = json.loads(out.stdout)
    assert res["added"] == [ports.id]
    gs = load_golden(res["path"])
    assert gs.version == 4 and [c.id for c in gs.cases][-1] == ports.id
    assert gs.cases[-1].reference_answer == "Open TCP 443 and 8443 outbound."
    # the golden case keeps the reviewer's root cause, and the job's beside it
    assert gs.cases[-1].metadata["root_cause"] == "no_answer_expected"
    assert gs.cases[-1].metadata["judged_root_cause"] == ports.root_cause != "no_answer_expected"
    # so do the changelog and the candidate listing: the reviewed cause, not the job's
    entry = Path(res["changelog"]).read_text(encoding="utf-8").split("By category:")[-1]
    assert "(no_answer_expected" in entry and f"({ports.root_cause}" not in entry
    listed = subprocess.run(
        [str(exe), "golden", "candidates", "--status", "accepted", "--json"],
        env=env, cwd=tmp_path, capture_output=True, text=True, timeout=60, check=True,
    ).stdout  # fmt: skip
    row = next(json.loads(x) for x in listed.splitlines() if json.loads(x)["id"] == ports.id)
    assert (row["root_cause"], row["judged_root_cause"]) == ("no_answer_expected", ports.root_cause)


def test_review_from_a_pipe_reads_one_answer_a_line(store: Store, tmp_path: Path) -> None:
    """Scripts keep line input: only a terminal acts on a single key."""
    v3 = write_golden_v3(tmp_path)
    grow(store, stream(), Settings(golden=GoldenSettings(path=str(v3))))
    out = subprocess.run(
        [str(ragsieve_script()), "golden", "review", "--reviewer", "alice"],
        input="x\ns\nq\n", env=_env(v3, store), cwd=tmp_path, capture_output=True, text=True,
        timeout=60, check=False,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert "0 accepted, 0 rejected, 1 skipped, 0 edits" in out.stdout
    assert "'x' is not one of" in out.stdout + out.stderr  # a line that is no answer is refused


def _piped_review(store: Store, tmp_path: Path, v3: Path, answers: str, *args: str) -> str:
    out = subprocess.run(
        [str(ragsieve_script()), "golden", "review", "--reviewer", "alice", *args],
        input=answers, env=_env(v3, store), cwd=tmp_path, capture_output=True, text=True,
        timeout=60, check=False,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert "aborted" not in out.stderr
    return out.stdout


def test_piped_answers_that_run_out_at_a_yes_no_question_take_its_default(
    store: Store, tmp_path: Path
) -> None:
    """``printf 'n\\n' | golden review --audit``: the follow-up "also a case?" takes its No."""
    v3 = write_golden_v3(tmp_path)
    body = {"query": "How do I reset it?", "source_trace_ids": ["t-audit"], "audit": True}
    row = Candidate(audit_id("t-audit"), OPEN, "how do i reset it", body=body)
    CandidateRepo(store).save([row])
    said = _piped_review(store, tmp_path, v3, "n\n", "--audit")
    assert "end of input: no, the default" in said
    assert "audits: 0 confirmed passes, 1 missed failures" in said
    (row,) = CandidateRepo(store).select()
    assert row.status == MISSED  # a missed failure, not added to the golden set


def test_piped_answers_that_run_out_at_a_choice_stop_the_review_keeping_them(
    store: Store, tmp_path: Path
) -> None:
    v3 = write_golden_v3(tmp_path)
    grow(store, stream(), Settings(golden=GoldenSettings(path=str(v3))))
    first = CandidateRepo(store).select(["candidate"])
    assert len(first) >= 2  # answers run out before the second candidate
    said = _piped_review(store, tmp_path, v3, "r\no\n")
    assert "end of input: review stopped" in said
    assert "0 accepted, 1 rejected, 0 skipped, 0 edits" in said
    statuses = sorted(c.status for c in CandidateRepo(store).select())
    assert statuses.count("rejected") == 1 and "candidate" in statuses
