"""Issue 47 row 6: a review and a run's golden growth saving the same candidate keep both.

Each side works through its own store connection (as ``golden review`` and ``jobs run`` do, in two
processes), on real SQLite and real PostgreSQL.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence

import numpy as np
import pytest
from golden_plant import PORTS_EN, flagged

from ragsieve.collector.store import Store, open_store
from ragsieve.evaluators.records import normalize_text
from ragsieve.evaluators.tools.embeddings import embed
from ragsieve.jobs.golden import grow
from ragsieve.jobs.golden.growth.candidates import candidate_id
from ragsieve.jobs.golden.growth.merge import CandidateConflict
from ragsieve.jobs.golden.growth.repo import CandidateRepo
from ragsieve.jobs.golden.review.review import decide
from ragsieve.jobs.settings import GoldenSettings, Settings

CID = candidate_id(normalize_text(PORTS_EN))


@pytest.fixture(params=["sqlite", "postgres"])
def two_stores(request: pytest.FixtureRequest, tmp_path) -> Iterator[tuple[Store, Store]]:  # type: ignore[no-untyped-def]
    """Two connections to one store: the reviewer's and the job's."""
    if request.param == "sqlite":
        url = f"sqlite:///{tmp_path / 'ragsieve.db'}"
    else:
        url = request.getfixturevalue("pg_database")
    job, person = open_store(url), open_store(url)
    yield job, person
    job.close()
    person.close()


def _failures(first: int, n: int) -> list:  # type: ignore[type-arg]
    return [flagged(PORTS_EN, "retrieval", i) for i in range(first, first + n)]


def _grow(store: Store, cases: Sequence, embed_fn: Callable = embed) -> dict:  # type: ignore[type-arg]
    return grow(store, cases, Settings(golden=GoldenSettings()), embed=embed_fn)


def test_review_save_after_a_run_merged_keeps_the_merge(two_stores) -> None:  # type: ignore[no-untyped-def]
    job, person = two_stores
    _grow(job, _failures(1, 5))
    on_screen = CandidateRepo(person).get(CID)  # the review shows the candidate...
    assert on_screen is not None and on_screen.seen == 5
    _grow(job, _failures(6, 5))  # ...while a run merges five more failures into it
    decide(CandidateRepo(person), on_screen, "accepted", "ana", None)  # then the person decides
    stored = CandidateRepo(job).get(CID)
    assert stored is not None
    assert stored.status == "accepted" and stored.body["review"]["by"] == "ana"
    assert stored.seen == 10
    assert stored.source_trace_ids == [f"{n:032x}" for n in range(1, 11)]
    assert len(stored.body["sources"]) == 10 and stored.body["root_causes"] == {"retrieval": 10}
    assert on_screen.seen == 10 and on_screen.version == stored.version  # the screen caught up


def test_growth_never_undoes_a_decision_saved_while_it_ran(two_stores) -> None:  # type: ignore[no-untyped-def]
    job, person = two_stores
    _grow(job, _failures(1, 3))
    decided: list[str] = []

    def embed_then_review(texts: Sequence[str]) -> np.ndarray:
        # growth has read every candidate by the time it embeds the new failures: the person
        # rejects the candidate now, between growth's read and its save
        if not decided and PORTS_EN in texts:
            row = CandidateRepo(person).get(CID)
            assert row is not None
            decide(CandidateRepo(person), row, "rejected", "ben", "out_of_scope")
            decided.append(row.id)
        return embed(texts)

    report = _grow(job, _failures(4, 2), embed_then_review)
    assert decided == [CID] and report["merged_duplicates"] == 2
    stored = CandidateRepo(person).get(CID)
    assert stored is not None
    assert stored.status == "rejected"
    assert stored.body["review"] == {**stored.body["review"], "by": "ben", "reason": "out_of_scope"}
    assert stored.seen == 5 and len(stored.source_trace_ids) == 5


def test_two_different_decisions_on_one_candidate_are_refused(two_stores) -> None:  # type: ignore[no-untyped-def]
    job, person = two_stores
    _grow(job, _failures(1, 2))
    ana, ben = CandidateRepo(job).get(CID), CandidateRepo(person).get(CID)
    assert ana is not None and ben is not None
    decide(CandidateRepo(job), ana, "accepted", "ana", None)
    with pytest.raises(CandidateConflict, match=r"ana decided 'accepted'.*'rejected'"):
        decide(CandidateRepo(person), ben, "rejected", "ben", "duplicate")
    stored = CandidateRepo(person).get(CID)
    assert stored is not None and stored.status == "accepted"
    assert stored.body["review"]["by"] == "ana"


def test_an_edit_and_a_merge_both_stay_and_versions_grow(two_stores) -> None:  # type: ignore[no-untyped-def]
    job, person = two_stores
    _grow(job, _failures(1, 2))
    repo = CandidateRepo(person)
    row = repo.get(CID)
    assert row is not None and row.version >= 1
    first = row.version
    _grow(job, _failures(3, 1))
    row.body["reference_answer"] = "Ports 443 and 8443."
    row.body.setdefault("review", {})["edited_by"] = "ana"
    repo.save([row])
    stored = repo.get(CID)
    assert stored is not None
    assert stored.body["reference_answer"] == "Ports 443 and 8443." and stored.seen == 3
    assert stored.version > first + 1  # the run's save and this one each raised it


def test_askings_merged_by_either_side_are_all_kept() -> None:
    from ragsieve.jobs.golden.growth.merge import merge
    from ragsieve.jobs.golden.growth.repo import Candidate

    def row(*askings: str, version: int = 0) -> Candidate:
        return Candidate(CID, "candidate", "q", body={"askings": list(askings)}, version=version)

    base, mine = row(PORTS_EN, version=1), row(PORTS_EN, "ports, again?")
    theirs = row(PORTS_EN, "which ports", version=2)
    assert merge(base, mine, theirs).body["askings"] == [PORTS_EN, "which ports", "ports, again?"]


def test_duplicates_folded_in_by_two_reviewers_at_once_are_both_kept() -> None:
    """Two reviewers fold a duplicate each into one candidate: the survivor indexes both wordings
    and lists both folded rows (the saver's side alone once won; an independent review)."""
    from ragsieve.jobs.golden.growth.merge import merge
    from ragsieve.jobs.golden.growth.repo import Candidate

    def row(*folded: str, version: int = 0) -> Candidate:
        body = {
            "askings": [PORTS_EN, *folded],
            "asking_index": [{"query": q, "embedding": [0.0]} for q in folded],
            "merged": [{"id": f"c_{q}", "query": q, "trace_ids": [q]} for q in folded],
        }
        return Candidate(CID, "candidate", "q", body=body, version=version)

    base, mine, theirs = row(version=1), row("ports A"), row("ports B", version=2)
    body = merge(base, mine, theirs).body
    assert [e["query"] for e in body["asking_index"]] == ["ports B", "ports A"]
    assert [m["id"] for m in body["merged"]] == ["c_ports B", "c_ports A"]
