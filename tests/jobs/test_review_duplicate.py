"""A reviewer's ``[d]uplicate`` says of which candidate: the two merge, and repeats follow."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from console_script import ragsieve_script
from golden_plant import flagged

from ragsieve.collector.store import Store
from ragsieve.evaluators.records import normalize_text
from ragsieve.jobs.golden import grow
from ragsieve.jobs.golden.growth.candidates import candidate_id
from ragsieve.jobs.golden.growth.repo import Candidate, CandidateRepo
from ragsieve.jobs.golden.review.duplicates import reviewed_pairs
from ragsieve.jobs.settings import GoldenSettings, Settings
from ragsieve.jobs.verdicts.flagged_case import FlaggedCase

KB = [
    ("kb-cooling", "You may cancel the policy within 14 days of purchase for a full refund."),
    ("kb-claims", "Claims are reported online or by phone within 30 days of the loss."),
]
# one failure (the same chunks, the same made-up 21 days) asked in words too far apart for
# dedup to merge them: two candidates until a person says they are one
COOLING = "What is the cooling-off period on my policy?"
CANCEL = "How long do I have to cancel after buying?"
SETTINGS = Settings(golden=GoldenSettings(path=None))


def _case(query: str, n: int, answer: str, run: str = "run-1") -> FlaggedCase:
    f = flagged(query, "generation", n, run_id=run, chunks=KB)
    it = f.interaction.model_copy(update={"answer": answer})
    return FlaggedCase(it, f.results, f.root_cause, f.evidence, run, f.stratum, f.inclusion_p)


def _row(repo: CandidateRepo, query: str) -> Candidate:
    row = repo.get(candidate_id(normalize_text(query)))
    assert row is not None, query
    return row


def _review(store: Store, tmp_path: Path, answers: str) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("RAGSIEVE_", "OTEL_"))}
    env.update(RAGSIEVE_STORE=store.url, COLUMNS="120")
    out = subprocess.run(
        [str(ragsieve_script()), "golden", "review", "--reviewer", "alice"],
        input=answers, env=env, cwd=tmp_path, capture_output=True, text=True, timeout=60,
        check=False,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    return " ".join(out.stdout.split())


def _two(store: Store) -> tuple[Candidate, Candidate]:
    grow(
        store,
        [
            _case(COOLING, 1, "The cooling-off period is 21 days."),
            _case(CANCEL, 2, "You have 21 days to cancel."),
        ],
        SETTINGS,
    )
    repo = CandidateRepo(store)
    first, other = _row(repo, COOLING), _row(repo, CANCEL)
    assert first.status == other.status == "candidate"  # dedup kept them apart
    return first, other


def test_duplicate_lists_the_nearest_with_why_and_merges_into_the_one_picked(
    store: Store, tmp_path: Path
) -> None:
    first, other = _two(store)
    said = _review(store, tmp_path, "d\n1\nq\n")
    # the reviewer sees the nearest candidate, numbered, and why it is near
    assert f"1. {other.id} [candidate] {CANCEL}" in said
    assert "the same made-up value 21" in said and "2 of 2 chunks shared" in said
    assert "asked alike: cosine" in said and "1 merged as duplicates" in said
    repo = CandidateRepo(store)
    gone, kept = _row(repo, COOLING), _row(repo, CANCEL)
    assert gone.status == "merged" and gone.body["merged_into"] == kept.id
    assert gone.body["review"]["by"] == "alice" and kept.id in gone.body["review"]["reason"]
    # the survivor holds both askings, both failures and their counts, and says what came in
    assert kept.status == "candidate" and kept.body["askings"] == [CANCEL, COOLING]
    assert kept.source_trace_ids == [f"{2:032x}", f"{1:032x}"] and kept.seen == 2
    assert kept.body["root_causes"] == {"generation": 2}
    assert [m["id"] for m in kept.body["merged"]] == [gone.id]
    # a person's decision is kept as a pair of wordings the matching could learn from
    (pair,) = reviewed_pairs(store)
    assert (pair["a"], pair["b"], pair["same"], pair["by"]) == (CANCEL, COOLING, True, "alice")
    assert pair["b_signature"]["values"] == ["21"]
    # a later repeat of either wording joins the survivor; the merged row takes nothing
    grow(
        store,
        [
            _case(COOLING.upper(), 3, "21 days.", run="run-2"),
            _case(CANCEL, 4, "21 days.", run="run-2"),
        ],
        SETTINGS,
    )
    kept, gone = _row(repo, CANCEL), _row(repo, COOLING)
    assert kept.source_trace_ids[-2:] == [f"{3:032x}", f"{4:032x}"] and kept.seen == 4
    assert gone.source_trace_ids == [f"{1:032x}"] and gone.status == "merged"
    # the survivor's screen shows what was merged in, and the merged row is not reviewed again
    again = _review(store, tmp_path, "q\n")
    assert f"merged in: {COOLING} ({gone.id}, by alice)" in again and "[1/1]" in again


def test_duplicate_by_typed_id_through_reject_and_going_back_writes_nothing(
    store: Store, tmp_path: Path
) -> None:
    first, other = _two(store)
    # '-' goes back to the candidate's screen: nothing merged
    said = _review(store, tmp_path, "d\n-\nq\n")
    assert "Duplicate of which?" in said
    repo = CandidateRepo(store)
    assert _row(repo, COOLING).status == "candidate" and reviewed_pairs(store) == []
    # [r]eject with the reason [d]uplicate asks the same; an unknown id is refused, a typed
    # id of an open candidate is taken
    said = _review(store, tmp_path, f"r\nd\nq_nosuchrow\n{other.id}\nq\n")
    assert "q_nosuchrow: not the number of one above" in said
    assert _row(repo, COOLING).body["merged_into"] == other.id
    assert _row(repo, CANCEL).body["askings"] == [CANCEL, COOLING]


def test_a_typed_audit_row_is_no_candidate_to_fold_into(store: Store, tmp_path: Path) -> None:
    """An accepted audit (a pass a person checked) is not listed among the nearest; typed by its
    id it is refused as well (an independent review)."""
    _two(store)
    repo = CandidateRepo(store)
    repo.save([Candidate("audit:t1", "accepted", "Is cover included?", body={"askings": []})])
    assert repo.get("audit:t1") is not None
    said = _review(store, tmp_path, "d\naudit:t1\n-\nq\n")
    assert "audit:t1: not the number of one above" in said
    assert "merged_into" not in _row(repo, COOLING).body
