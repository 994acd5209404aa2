"""Review starts from what the evidence names, and never offers the failing answer as reference.

Issue 29: pressing ``a`` on a failure whose evidence said "security#2fa reached the prompt"
asked to accept it as a no-answer case, and the failing answer was shown as "ANSWER
(suggestion)". The evidence here is written by the job's own root-cause rule.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pexpect
from console_script import ragsieve_script
from golden_plant import flagged
from test_golden_phoenix import datasets  # noqa: F401  (the Phoenix-shaped dataset server)

from ragsieve.collector.store import Store
from ragsieve.evaluators.golden.sets import load_golden
from ragsieve.jobs.golden import grow
from ragsieve.jobs.golden.growth.repo import CandidateRepo
from ragsieve.jobs.golden.review.phoenix import PhoenixDatasets, pull, push
from ragsieve.jobs.golden.review.suggest import evidence_chunks
from ragsieve.jobs.settings import GoldenSettings, Settings
from ragsieve.jobs.verdicts.flagged_case import FlaggedCase
from ragsieve.jobs.verdicts.rootcause import Signals, assign

TWO_FA = "How many backup codes does an account get for two-factor login?"
REFUND = "Can I get my money back after cancelling the yearly subscription?"
TWO_FA_CHUNKS = [
    ("security#2fa", "Each account gets 10 backup codes when two-factor login is enabled."),
    ("security#sso", "Single sign-on is configured by an admin."),
]
REFUND_CHUNKS = [("billing#invoices", "Invoices are issued monthly.")]


def _generation_failure() -> FlaggedCase:
    cause = assign(
        Signals(query=TWO_FA, context_relevant=True, relevant_chunks=("security#2fa",),
                n_chunks=2, faithful=False, answer_relevant=True)
    )  # fmt: skip
    assert cause.label == "generation" and "security#2fa reached the prompt" in cause.evidence
    f = flagged(TWO_FA, cause.label, 1, chunks=TWO_FA_CHUNKS)
    return FlaggedCase(f.interaction, f.results, cause.label, cause.evidence, f.run_id)


def _retrieval_failure() -> FlaggedCase:
    line = "the retriever missed billing#refunds (answer score 0.81, retrieved by 3 other trace(s))"
    cause = assign(
        Signals(query=REFUND, context_relevant=False, n_chunks=1, faithful=False,
                missed_chunk=line)
    )  # fmt: skip
    assert cause.label == "retrieval"
    f = flagged(REFUND, cause.label, 2, chunks=REFUND_CHUNKS)
    return FlaggedCase(
        f.interaction, f.results, cause.label, cause.evidence, f.run_id,
        metadata={"missed_chunk": "billing#refunds"},
    )  # fmt: skip


def test_evidence_names_the_chunks_to_prefill() -> None:
    body = {
        "evidence": "c1, c10 reached the prompt; the answer is unfaithful",
        "chunks": [{"id": "c1"}, {"id": "c10"}, {"id": "c100"}, {"id": "c0", "in_prompt": False}],
    }
    assert evidence_chunks(body)[0] == {"c1": 1, "c10": 1}
    wrongly = {"evidence": "abstained although c100 was relevant", "chunks": body["chunks"]}
    assert evidence_chunks(wrongly)[0] == {"c100": 1}
    missed = {"missed_chunk": "kb#x", "evidence": "none of 1 chunk(s)...", "chunks": []}
    assert evidence_chunks(missed)[0] == {"kb#x": 1}
    none = (
        "none of 2 chunk(s) in the prompt was relevant; "
        "none of the 40 chunks seen in traffic answers this"
    )
    nothing = {"evidence": none, "chunks": body["chunks"]}
    assert evidence_chunks(nothing) == ({}, "")
    # a weighed piece that decided names its chunks in its own words
    for line in (
        "the answer's words are in c1, a chunk of the prompt",
        "the answer's words are in c1, c10, chunks of the prompt (1 of 2 sentences)",
        "c1, in the prompt, is the golden set's relevant chunk for this question",
    ):
        got = evidence_chunks({"evidence": line, "chunks": body["chunks"]})[0]
        assert got and set(got) <= {"c1", "c10"} and "c1" in got, line


def test_review_prefills_the_evidence_and_never_offers_the_failing_answer(
    store: Store, tmp_path: Path
) -> None:
    exe = ragsieve_script()
    golden = tmp_path / "golden_v1.jsonl"
    golden.write_text(
        json.dumps({"id": "g1", "query": "How do I reset my password?", "relevant_chunks": ["a"]})
        + "\n",
        encoding="utf-8",
    )
    grow(store, [_generation_failure(), _retrieval_failure()], Settings(golden=GoldenSettings()))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("RAGSIEVE_", "OTEL_"))}
    env.update(RAGSIEVE_STORE=store.url, COLUMNS="120")
    child = pexpect.spawn(
        str(exe), ["golden", "review", "--reviewer", "alice"], env=env, cwd=str(tmp_path),
        encoding="utf-8", timeout=30, dimensions=(50, 120),
    )  # fmt: skip
    seen: set[str] = set()
    try:
        for _ in range(2):
            which = child.expect_exact([TWO_FA, REFUND])
            seen.add((TWO_FA, REFUND)[which])
            child.expect_exact("ANSWER (the failing answer; not a reference)")
            child.expect_exact("answer: (none)")  # the reference answer: nothing suggested
            want = ("security#2fa", "billing#refunds")[which]
            child.expect_exact(f"relevant chunks: {want}\r\n")
            child.expect_exact("pre-filled from the evidence")
            child.expect_exact("[q]uit")
            child.send("a")
            # accepted straight away: not asked to make it a no-answer case
            idx = child.expect([r"accepted q_[0-9a-f]{12}", "No relevant chunks"])
            assert idx == 0, "asked to accept a case with evidence as a no-answer case"
        child.expect_exact("2 accepted, 0 rejected")
        child.expect(pexpect.EOF)
    finally:
        child.close()
    assert child.exitstatus == 0 and seen == {TWO_FA, REFUND}

    out = subprocess.run(
        [str(exe), "golden", "promote", "--golden", str(golden), "--by", "bob", "--json"],
        env=env, cwd=tmp_path, capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    cases = {c.query: c for c in load_golden(json.loads(out.stdout)["path"]).cases}
    assert cases[TWO_FA].relevant_chunks == {"security#2fa": 1}
    assert cases[REFUND].relevant_chunks == {"billing#refunds": 1}
    assert cases[TWO_FA].reference_answer is None and cases[REFUND].reference_answer is None


def test_phoenix_review_shows_the_prefill_and_accepting_keeps_it(
    store: Store,
    datasets: Any,  # noqa: F811
) -> None:
    state, url = datasets
    grow(store, [_generation_failure()], Settings(golden=GoldenSettings()))
    repo = CandidateRepo(store)
    with PhoenixDatasets(url) as client:
        ds = push(repo, client, "cands", {})["dataset_id"]
        [ex] = state.datasets[ds]["examples"].values()
        assert ex["output"] == {"reference_answer": "", "relevant_chunks": ["security#2fa"]}
        ex["metadata"].update(decision="accept", reviewer="dana")  # accepted as shown
        assert pull(repo, client, "cands")["accepted"] == 1
    [c] = repo.select(["accepted"])
    assert c.body["relevant_chunks"] == {"security#2fa": 1}
    assert c.body["reference_answer"] is None
