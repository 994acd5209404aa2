"""A merged candidate's golden case carries the chunk that answers the candidate's own question.

The candidate's evidence is its first failure's; a repeat merged later, read as another root
cause by the judges, used to make the pre-fill read that evidence as the other cause (a tie of
causes went to the alphabetically last one), so the chunk the evidence named was dropped and the
case was promoted without the chunk that answers it.
"""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime
from pathlib import Path

from golden_plant import flagged

from ragsieve.collector.store import Store
from ragsieve.jobs.golden import grow
from ragsieve.jobs.golden.growth.repo import CandidateRepo
from ragsieve.jobs.golden.review.promote import promote
from ragsieve.jobs.golden.review.review import decide, prefill
from ragsieve.jobs.golden.review.suggest import evidence_lines
from ragsieve.jobs.settings import GoldenSettings, Settings
from ragsieve.jobs.verdicts.flagged_case import FlaggedCase
from ragsieve.jobs.verdicts.rootcause import Signals, assign

QUERY = "How many free minutes per day does the Basic plan include?"
CHUNKS = [
    ("plans#basic", "The Basic plan includes 30 minutes of free riding per day."),
    ("plans#pro", "The Pro plan includes 90 minutes of free riding per day."),
]


def _case(n: int, signals: Signals, chunks: list[tuple[str, str]], **meta: object) -> FlaggedCase:
    cause = assign(signals)
    f = flagged(QUERY, cause.label, n, chunks=chunks)
    return dataclasses.replace(f, root_cause=cause.label, evidence=cause.evidence, metadata=meta)


def test_a_repeat_read_as_another_cause_keeps_the_questions_own_chunk(
    store: Store, tmp_path: Path
) -> None:
    first = _case(
        1,
        Signals(query=QUERY, context_relevant=True, relevant_chunks=("plans#basic",),
                n_chunks=2, faithful=False, answer_relevant=True),
        CHUNKS,
    )  # fmt: skip
    line = "the retriever missed plans#basic (answer score 0.81, retrieved by 3 other trace(s))"
    again = _case(
        2,
        Signals(query=QUERY, context_relevant=False, n_chunks=1, faithful=False, missed_chunk=line),
        CHUNKS[1:],
        missed_chunk="plans#basic",
    )  # the same question asked again: the retriever missed the chunk this time
    assert (first.root_cause, again.root_cause) == ("generation", "retrieval")
    grow(store, [first, again], Settings(golden=GoldenSettings()))
    repo = CandidateRepo(store)
    [c] = repo.select(["candidate"])
    assert c.seen == 2 and c.body["root_causes"] == {"generation": 1, "retrieval": 1}

    prefill(c)
    decide(repo, c, "accepted", "ana", None)
    out = tmp_path / "golden_v1.jsonl"
    now = datetime(2026, 12, 7, tzinfo=UTC)
    res = promote(repo, out, {}, by="ana", start=True, now=now)
    [case] = res.added
    assert dict(case.relevant_chunks) == {"plans#basic": 1}


def test_a_wording_answered_by_another_chunk_is_said_and_not_prefilled(store: Store) -> None:
    def missed(n: int, chunk: str) -> FlaggedCase:
        line = f"the retriever missed {chunk} (answer score 0.8, retrieved by 2 other trace(s))"
        signals = Signals(
            query=QUERY, context_relevant=False, n_chunks=1, faithful=False, missed_chunk=line
        )
        return _case(n, signals, [("ebike#unlock", "Unlocking costs 1 EUR.")], missed_chunk=chunk)

    grow(store, [missed(1, "plans#basic"), missed(2, "plans#pro")], Settings())
    [c] = CandidateRepo(store).select(["candidate"])  # the same text: one candidate
    prefill(c)
    assert c.body["relevant_chunks"] == {"plans#basic": 1}
    screen = "\n".join(evidence_lines(c.root_cause, c.body))
    assert "best answered by plans#pro (not pre-filled)" in screen
