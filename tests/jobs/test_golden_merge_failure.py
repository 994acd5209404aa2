"""Merging on the failure: both sides of a failure agreeing, every asking found again, a golden
neighbour that is not the failure's own question does not split a repeat; a golden case lies in
the area that retrieved its pages."""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest
from golden_plant import flagged

from ragsieve.collector.store import Store, open_store
from ragsieve.evaluators.records import normalize_text
from ragsieve.evaluators.tools.embeddings import DIM, embed
from ragsieve.jobs.golden import grow
from ragsieve.jobs.golden.growth.candidates import candidate_id
from ragsieve.jobs.golden.growth.categories import summarize
from ragsieve.jobs.golden.growth.reference import GoldenReference
from ragsieve.jobs.golden.growth.repo import Candidate, CandidateRepo, encode_vector
from ragsieve.jobs.golden.growth.signature import (
    DedupRule,
    Signature,
    both_sides_agree,
    duplicate_reason,
)
from ragsieve.jobs.golden.growth.topics import unit
from ragsieve.jobs.settings import GoldenSettings
from ragsieve.jobs.verdicts.flagged_case import FlaggedCase

IBI = [  # the issue's pair: one wrong discount, asked by two people
    "¿Hay descuento por domiciliar el IBI?",
    "¿Qué bonificación tiene domiciliar el recibo de la contribución?",
]
IBI_CHUNKS = [
    (
        "muni_4#c1",
        "El IBI se paga en dos plazos, en junio y en noviembre. Domiciliar el recibo del IBI"
        " da una bonificación del 3 % de la cuota.",
    ),
    ("muni_4#c2", "Las tasas de basuras se pagan una vez al año, en marzo."),
]


def _sig(chunks: set[str], missed: str | None = None, values: tuple[str, ...] = ()) -> Signature:
    return Signature("q", "q", "generation", frozenset(chunks), missed, frozenset(values), "es")


def test_both_sides_of_the_failure_must_agree() -> None:
    both = both_sides_agree(_sig({"a", "b"}, values=("7",)), _sig({"a", "b"}, values=("7", "x")))
    assert both == "same 2 chunks and same wrong value '7'"
    missed = both_sides_agree(_sig({"a"}, "m", ("7",)), _sig({"b"}, "m", ("7",)))
    assert missed == "same missed chunk m and same wrong value '7'"
    assert both_sides_agree(_sig({"a", "b"}), _sig({"a", "b"})) is None  # retrieval side only
    assert both_sides_agree(_sig({"a"}, values=("7",)), _sig({"b"}, values=("7",))) is None
    assert (
        both_sides_agree(_sig({"a", "b"}, values=("7",)), _sig({"a", "b"}, values=("9",))) is None
    )
    rule = DedupRule()
    a, b = _sig({"a", "b"}, values=("7",)), _sig({"a", "b"}, values=("7",))
    floor = rule.both_sides_floor
    assert floor < rule.support_cosine - rule.strong_relief  # only both sides merge down there
    assert duplicate_reason(a, dataclasses.replace(b, norm="other"), floor + 0.01, rule)
    # questions about different subjects stay apart whatever their failures share
    assert duplicate_reason(a, dataclasses.replace(b, norm="other"), floor - 0.01, rule) is None


def _answered(case: FlaggedCase, answer: str) -> FlaggedCase:
    return dataclasses.replace(
        case, interaction=case.interaction.model_copy(update={"answer": answer})
    )


def _ibi(query: str, n: int, answer: str) -> FlaggedCase:
    return _answered(flagged(query, "generation", n, chunks=IBI_CHUNKS), answer)


def test_strong_failure_evidence_is_never_asked_more_than_weak() -> None:
    rule = DedupRule()
    q = dict(root_cause="generation", missed=None, values=frozenset(), lang="en")
    a = Signature("How long is the ride?", "a", chunks=frozenset({"c1", "c2", "c3"}), **q)
    # one key term in common (questions sharing none ask different things: signature.asks_apart)
    # and no other kind of answer read ("What does the ride cost?" asks a price: apart)
    other = "What does the ride include?"
    same = Signature(other, "b", chunks=frozenset({"c1", "c2", "c3"}), **q)  # exactly: strong
    mostly = Signature(other, "b", chunks=frozenset({"c1", "c2", "c4"}), **q)  # mostly: weak
    for cosine in (rule.support_cosine, (rule.support_cosine + rule.strong_score) / 2):
        assert duplicate_reason(a, mostly, cosine, rule) is not None
        assert duplicate_reason(a, same, cosine, rule) is not None
    below = rule.support_cosine - 0.01
    assert duplicate_reason(a, mostly, below, rule) is None


@pytest.mark.xfail(
    strict=True,
    reason="the real encoder puts the issue's IBI pair at cosine 0.41, under the both-sides floor"
    " of 0.475 chosen on licence-clean questions (bench/paraphrase_clean.py): this re-wording is"
    " not merged today",
)
def test_the_issues_own_ibi_pair_is_one_failure_with_the_real_encoder() -> None:
    first, second = embed(IBI)
    ids = frozenset(c for c, _ in IBI_CHUNKS)
    sig = [
        Signature(q, normalize_text(q), "generation", ids, None, frozenset({"7"}), "es")
        for q in IBI
    ]
    assert duplicate_reason(sig[1], sig[0], float(first @ second), DedupRule()) is not None


def test_a_rewording_with_the_same_wrong_value_is_one_candidate(store: Store) -> None:
    """The issue's IBI pair: other words, the same chunks, the same made-up 7 %; a third person
    asking when the IBI is paid (another made-up value, further away) is another case. The
    vectors put the pair just over the shipped both-sides floor and the third just under it
    (the encoder puts the issue's own pair at 0.41, under the licence-clean floor of 0.475)."""
    floor = DedupRule().both_sides_floor
    e0, e1, e2 = np.eye(DIM, dtype=np.float32)[:3]
    third = "¿Cuándo se paga el IBI?"
    vecs = {
        IBI[0]: e0,
        IBI[1]: (floor + 0.02) * e0 + np.sqrt(1 - (floor + 0.02) ** 2) * e1,
        third: (floor - 0.02) * e0 + np.sqrt(1 - (floor - 0.02) ** 2) * e2,
    }
    cases = [
        _ibi(IBI[0], 1, "Sí, domiciliar el recibo da un 7 % de descuento."),
        _ibi(IBI[1], 2, "La bonificación por domiciliar el recibo es del 7 %."),
        _ibi(third, 3, "El IBI se paga el 15 de abril."),
    ]
    report = grow(store, cases, GoldenSettings(), embed=_fixed_embed(vecs))
    assert report["new_candidates"] == 2 and report["merged_duplicates"] == 1
    row = CandidateRepo(store).get(candidate_id(normalize_text(IBI[0])))
    assert row is not None and row.body["askings"] == IBI
    why = row.body["merged_because"][f"{2:032x}"]
    assert why.endswith("same 2 chunks and same wrong value '7'"), why


def _fixed_embed(vectors: dict[str, np.ndarray]):  # type: ignore[no-untyped-def]
    """An encoder that knows these texts (unit vectors chosen by the test) and maps any other
    text to a vector of its own far from them."""

    def embed(texts: Sequence[str]) -> np.ndarray:
        out = []
        for t in texts:
            if t in vectors:
                out.append(vectors[t])
                continue
            seed = int(hashlib.sha256(t.encode()).hexdigest()[:8], 16)
            rng = np.random.default_rng(seed)
            v = rng.normal(size=DIM)
            out.append(v / np.linalg.norm(v))
        return np.vstack(out).astype(np.float32)

    return embed


def _chain() -> tuple[list[str], dict[str, np.ndarray]]:
    """Three wordings: A~B 0.95, B~C 0.95, A~C 0.81 (C is near B only)."""
    e0, e1 = np.eye(DIM, dtype=np.float32)[:2]
    angle = np.arccos(0.95)
    at = {k: np.cos(k * angle) * e0 + np.sin(k * angle) * e1 for k in (0, 1, 2)}
    qs = ["wording A?", "wording B?", "wording C?"]
    return qs, {q: at[k] for k, q in enumerate(qs)}


def test_a_third_wording_near_the_second_finds_the_candidate(store: Store) -> None:
    qs, vecs = _chain()
    own = {q: [(f"kb-{n}", f"chunk {n} text")] for n, q in enumerate(qs)}  # nothing shared
    cases = [flagged(q, "retrieval", n, chunks=own[q]) for n, q in enumerate(qs, 1)]
    report = grow(store, cases, GoldenSettings(), embed=_fixed_embed(vecs))
    assert report["new_candidates"] == 1 and report["merged_duplicates"] == 2
    assert report["merges"][1]["reason"] == "query cosine 0.95"  # C to B, not C to A (0.81)


def test_a_later_run_finds_a_candidate_through_a_wording_merged_earlier(tmp_path: Path) -> None:
    qs, vecs = _chain()
    embed = _fixed_embed(vecs)
    own = {q: [(f"kb-{n}", f"chunk {n} text")] for n, q in enumerate(qs)}
    store = open_store(f"sqlite:///{tmp_path / 'runs.db'}")
    first = [flagged(q, "retrieval", n, chunks=own[q]) for n, q in enumerate(qs[:2], 1)]
    assert grow(store, first, GoldenSettings(), embed=embed)["merged_duplicates"] == 1
    row = CandidateRepo(store).get(candidate_id(normalize_text(qs[0])))
    assert row is not None and [a["query"] for a in row.body["asking_index"]] == [qs[1]]
    later = grow(store, [flagged(qs[2], "retrieval", 3, chunks=own[qs[2]])], GoldenSettings(),
                 embed=embed)  # fmt: skip
    assert later["merged_duplicates"] == 1 and later["merges"][0]["into"] == row.id
    after = CandidateRepo(store).get(row.id)
    assert after is not None and after.body["askings"] == qs
    # B asked again word for word: the same normalised query as one of the candidate's askings,
    # kept once
    again = grow(store, [flagged(qs[1], "retrieval", 4, chunks=own[qs[1]])], GoldenSettings(),
                 embed=embed)  # fmt: skip
    assert again["merges"] == [{"trace_id": f"{4:032x}", "into": row.id,
                                "reason": "same normalised query"}]  # fmt: skip
    last = CandidateRepo(store).get(row.id)
    assert last is not None and [a["query"] for a in last.body["asking_index"]] == qs[1:]


def test_a_golden_neighbour_does_not_split_a_repeat(store: Store, tmp_path: Path) -> None:
    """The repeat's query lies nearer a golden case (0.85, another question of the topic) than
    to the candidate it repeats (0.8): it still merges; only the golden case's own question
    (0.9 or more) is covered."""
    e = np.eye(DIM, dtype=np.float32)
    rep_a = e[0]
    rep_b = 0.8 * e[0] + 0.6 * e[1]
    gold = 0.85 * rep_b / np.linalg.norm(rep_b) + np.sqrt(1 - 0.85**2) * e[2]
    vecs = {"ask one?": rep_a, "ask two?": rep_b, "golden question?": gold}
    path = tmp_path / "golden_v1.jsonl"
    path.write_text(json.dumps({"id": "g1", "query": "golden question?"}) + "\n")
    chunks = [("kb-a", "alpha text"), ("kb-b", "beta text")]
    cases = [
        _answered(flagged("ask one?", "generation", 1, chunks=chunks), "It costs 7 euros."),
        _answered(flagged("ask two?", "generation", 2, chunks=chunks), "That is 7 euros."),
    ]
    report = grow(store, cases, GoldenSettings(path=str(path)), embed=_fixed_embed(vecs))
    assert report["merged_duplicates"] == 1 and report["covered_by_golden"] == 0


def _area(cat: str, vectors: list[np.ndarray], chunks: list[list[str]]) -> list[Candidate]:
    return [
        Candidate(id=f"{cat}{i}", status="candidate", norm_query=f"{cat}{i}", category=cat,
                  body={"query": f"question {cat}{i}", "topic": cat,
                        "topic_embedding": encode_vector(v), "signature": {"chunks": c}})
        for i, (v, c) in enumerate(zip(vectors, chunks, strict=True))
    ]  # fmt: skip


def test_a_golden_case_lies_in_the_area_that_retrieved_its_pages() -> None:
    """A golden case about page p7 is nearer in meaning to area b's centre (0.57) than to area
    a's (0.45), but two of a's failures retrieved p7: the case lies in a, and b (about other
    pages) is new. With one failure of a retrieving p7 (any page a retriever returns may be
    one), the case goes by meaning, as before: b is covered and a is new."""
    e = np.eye(8, dtype=np.float32)
    gold = unit(0.45 * e[0] + 0.85 * e[1] + 0.27 * e[2])
    spread = [unit(e[1] + 1.9 * e[k]) for k in (3, 4, 5)]  # each 0.40 from the case
    b = _area("b", spread, [["p4"], ["p5"], ["p6"]])
    ref = GoldenReference(["g"], ["g"], ["g"], [None], gold[None, :], "test", relevant=[["p7"]])
    a = _area("a", [e[0]] * 3, [["p7", "p1"], ["p7", "p2"], ["p3"]])
    out = {s.id: s for s in summarize(a + b, ref, new_threshold=0.5)}
    assert out["a"].golden_cases == 1 and not out["a"].new
    assert out["b"].golden_cases == 0 and out["b"].new
    once = _area("a", [e[0]] * 3, [["p7", "p1"], ["p2"], ["p3"]])
    out = {s.id: s for s in summarize(once + b, ref, new_threshold=0.5)}
    assert out["b"].golden_cases == 1 and not out["b"].new
    assert out["a"].golden_cases == 0 and out["a"].new
