"""Category ids stay one per category when an area splits away from the failure that founded it."""

from __future__ import annotations

import numpy as np

from ragsieve.collector.store import Store
from ragsieve.jobs.golden.growth.categories import categorise, category_id
from ragsieve.jobs.golden.growth.repo import Candidate, CandidateRepo, encode_vector
from ragsieve.jobs.golden.growth.topics import unit


def _rows(old: str) -> list[Candidate]:
    """Five failures of one old category: the founder and one other about one thing, three
    about another (their topic vectors as far apart as vectors get)."""
    rng = np.random.default_rng(7)
    out = []
    for i, axis in enumerate((0, 0, 1, 1, 1)):
        vec = np.zeros(512, dtype=np.float32)
        vec[axis] = 1.0
        vec = unit(vec + 0.01 * rng.standard_normal(512).astype(np.float32))
        body = {"query": f"question {i}", "topic_embedding": encode_vector(vec)}
        out.append(Candidate(f"q_{i:012x}", "candidate", f"question {i}", old, body=body))
    return out


def test_the_part_without_the_founder_keeps_the_id_and_the_founder_s_part_gets_its_own(
    store: Store,
) -> None:
    old = category_id("q_000000000000")  # founded by the first failure
    rows = _rows(old)
    CandidateRepo(store).save(rows)
    stored = CandidateRepo(store).select()
    assigned, events = categorise(stored)
    by_part = {
        "founder's": {assigned[f"q_{i:012x}"] for i in (0, 1)},
        "other": {assigned[f"q_{i:012x}"] for i in (2, 3, 4)},
    }
    # each part is one category; the larger keeps the old id, the founder's part gets a new one
    assert by_part["other"] == {old}
    (founders,) = by_part["founder's"]
    assert founders is not None and founders != old
    assert [(e.kind, e.category, e.other) for e in events] == [("split", founders, old)]


def _lone_near(shares: bool) -> list[Candidate]:
    """Two failures about one thing (one chunk) and a third the tree leaves alone, near their
    centre (cosine 0.55): it shares that chunk or not."""
    e0, e1 = np.eye(512, dtype=np.float32)[:2]
    vecs = [e0, unit(e0 + 0.01 * e1), unit(0.55 * e0 + 0.835 * e1)]
    chunks = [["kb-cooling", "kb-claims"], ["kb-cooling", "kb-waiting"]]
    chunks.append(["kb-cooling"] if shares else ["kb-discounts", "kb-payment"])
    return [
        Candidate(
            f"q_{i:012x}",
            "candidate",
            f"question {i}",
            body={
                "query": f"question {i}",
                "topic_embedding": encode_vector(v),
                "signature": {"chunks": c, "missed": None, "values": [], "answers": []},
            },
        )
        for i, (v, c) in enumerate(zip(vecs, chunks, strict=True))
    ]


def test_a_failure_the_tree_left_alone_joins_an_area_only_through_what_failed() -> None:
    # near the area's centre but sharing no chunk with its failures: a one-subject deployment
    # puts every failure that near every area, so it stays uncategorised
    assigned, _ = categorise(_lone_near(shares=False))
    pair = {assigned["q_000000000000"], assigned["q_000000000001"]}
    assert len(pair) == 1 and None not in pair
    assert assigned["q_000000000002"] is None
    # the same failure retrieving one of the area's chunks joins it
    assigned, _ = categorise(_lone_near(shares=True))
    assert assigned["q_000000000002"] == assigned["q_000000000000"] is not None
