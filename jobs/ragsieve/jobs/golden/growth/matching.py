"""Match a run's flagged failures against the candidates and the golden set, without a store.

:func:`match_candidates` touches no store: it takes the existing rows, the golden reference and
the prepared failures (:class:`Prepared`: scrubbed query, vectors, signature) and returns
:class:`Changes` (rows created or merged into, counts, one merge record per merged trace); a
merge updates the given row in place. ``candidates.grow`` loads, calls it, categorises and saves.

Chunk ids compare through the *twins* ``grow`` reads from the observed corpus
(:func:`ragsieve.jobs.golden.growth.reference.observed_twins`): a chunk and its translation in
a bilingual knowledge base count as one chunk, so an asking in each language of one failure,
each retrieving its own language's copy, has "the same chunks".
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from ragsieve.evaluators.records import normalize_text
from ragsieve.evaluators.tools.embeddings import DIM
from ragsieve.jobs.golden.growth.reference import GoldenReference
from ragsieve.jobs.golden.growth.repo import Candidate, decode_vector, encode_vector
from ragsieve.jobs.golden.growth.signature import DedupRule, Signature, duplicate_reason, from_body
from ragsieve.jobs.verdicts.flagged_case import FlaggedCase

# nearest askings (any root cause) above the cosine floor whose failure is compared in full: a
# translation can lie behind several same-language questions of its article
SHORTLIST = 20
MAX_ASKINGS = 12  # merged wordings a candidate keeps a vector of (beside its founding query)


@dataclass(frozen=True)
class Prepared:
    """One flagged failure ready to match: scrubbed query, its vectors and its signature."""

    case: FlaggedCase
    query: str
    vector: np.ndarray
    topic: np.ndarray
    signature: Signature


@dataclass
class Changes:
    """What matching decided: rows to write, counts for the report, why each merge happened."""

    rows: dict[str, Candidate] = field(default_factory=dict)
    counts: Counter[str] = field(default_factory=Counter)
    merges: list[dict[str, Any]] = field(default_factory=list)
    by_trace: dict[str, Candidate] = field(default_factory=dict)


class _Index:
    """Unit vectors in a growable matrix: nearest neighbours by dot product, amortised appends.

    A candidate is indexed once per asking it holds (its founding query, then each wording
    merged into it, in this run or an earlier one: ``body["asking_index"]``), so a repeat is
    found through whichever of its askings is nearest.
    """

    def __init__(self, rows: Sequence[Candidate]) -> None:
        self.rows: list[tuple[Candidate, Signature | None]] = []
        self._m = np.zeros((max(len(rows) * 2, 64), DIM), dtype=np.float32)
        for r in rows:
            if r.embedding is not None:
                self.add(r, r.embedding)
            for item in r.body.get("asking_index") or ():
                vec = decode_vector(item.get("embedding"))
                if vec is not None:
                    norm = normalize_text(str(item.get("query", "")))
                    self.add(r, vec, from_body(item, norm, r.root_cause))

    def add(self, row: Candidate, vec: np.ndarray, sig: Signature | None = None) -> None:
        if len(self.rows) == len(self._m):
            self._m = np.vstack([self._m, np.zeros_like(self._m)])
        self._m[len(self.rows)] = vec
        self.rows.append((row, sig))

    def nearest(
        self, vec: np.ndarray, k: int, floor: float
    ) -> list[tuple[Candidate, Signature, float]]:
        """Up to ``k`` askings at cosine ``floor`` or more, nearest first: (row, signature of
        that asking, cosine)."""
        if not self.rows:
            return []
        sims = self._m[: len(self.rows)] @ vec
        top = np.argsort(-sims)[:k]
        out = []
        for i in top:
            if float(sims[i]) < floor:
                break
            row, sig = self.rows[i]
            own = sig or from_body(row.body, row.norm_query, row.root_cause)
            out.append((row, own, float(sims[i])))
        return out


def chunks_of(prepared: Sequence[Prepared]) -> list[str]:
    """Every chunk id the failures' signatures name (retrieved, missed, answering)."""
    sigs = [p.signature for p in prepared]
    return sorted({c for s in sigs for c in (*s.chunks, *s.answers, s.missed) if c})


def through(sig: Signature, twins: Mapping[str, str]) -> Signature:
    """``sig`` with each chunk id read as its pair's (a chunk and its twin: the lesser id)."""
    if not twins:
        return sig

    def one(c: str) -> str:
        return min(c, twins.get(c, c))

    return replace(
        sig,
        chunks=frozenset(one(c) for c in sig.chunks),
        missed=one(sig.missed) if sig.missed else sig.missed,
        answers=tuple(dict.fromkeys(one(c) for c in sig.answers)),
    )


def as_one(a: Signature, b: Signature, twins: Mapping[str, str]) -> tuple[Signature, Signature]:
    """The two failures read through the twins when that makes their whole retrieval one (every
    chunk, or the missed chunk, the same or its translation), else as they are.

    A translated repeat retrieves the translation of each chunk its original retrieved; two
    askings whose chunks only partly correspond across languages are other questions on the
    same pages, and "mostly the same chunks" says no more there than in one language.
    """
    ta, tb = through(a, twins), through(b, twins)
    whole = bool(ta.chunks) and ta.chunks == tb.chunks
    if whole or (ta.missed is not None and ta.missed == tb.missed):
        return ta, tb
    return a, b


def _find_duplicate(
    p: Prepared,
    by_norm: dict[str, Candidate],
    index: _Index,
    rule: DedupRule,
    twins: Mapping[str, str],
) -> tuple[Candidate | None, float, str]:
    """The candidate ``p`` repeats, its query cosine and the reason (None, 0, '' when none)."""
    same = by_norm.get(p.signature.norm)
    if same is not None:
        return same, 1.0, "same normalised query"
    for row, old, cos in index.nearest(p.vector, SHORTLIST, rule.floor):
        why = duplicate_reason(*as_one(p.signature, old, twins), cos, rule)
        if why:
            return row, cos, why
    return None, 0.0, ""


def remember_asking(row: Candidate, p: Prepared) -> bool:
    """Keep a merged wording's vector and failure on its candidate, so that later failures find
    the candidate through it too (at most ``MAX_ASKINGS``); False when the candidate already
    holds this wording failing this way."""
    sig = p.signature.to_json()
    if p.signature.norm == row.norm_query and sig == row.body.get("signature"):
        return False
    kept = row.body.setdefault("asking_index", [])
    if any(
        normalize_text(str(k.get("query", ""))) == p.signature.norm and k.get("signature") == sig
        for k in kept
    ):
        return False
    if len(kept) < MAX_ASKINGS:
        kept.append({"query": p.query, "embedding": encode_vector(p.vector), "signature": sig})
    return True


def _golden_match(p: Prepared, reference: GoldenReference) -> tuple[int | None, float]:
    exact = reference.exact(p.signature.norm)
    if exact is not None:
        return exact, 1.0
    if not len(reference):
        return None, 0.0
    sims = reference.vectors @ p.vector
    best = int(np.argmax(sims))
    return best, float(sims[best])


def match_candidates(
    prepared: Sequence[Prepared],
    rows: Sequence[Candidate],
    reference: GoldenReference,
    *,
    rule: DedupRule,
    new_body: Callable[[Prepared], dict[str, Any]],
    merge: Callable[[Candidate, Prepared, float, str], None],
    candidate_id: Callable[[str], str],
    twins: Mapping[str, str] | None = None,
) -> Changes:
    """Merge each failure into the case it repeats, or open a candidate (or a covered row).

    A failure already merged (its trace id is a source of a row) is counted as already seen.
    ``new_body`` and ``merge`` build and extend row bodies (scrubbing, provenance); ``twins``:
    chunk → its translation's chunk, both ways (chunk sets compare through it).
    """
    out = Changes()
    by_norm = {r.norm_query: r for r in rows}
    for r in rows:  # a wording merged earlier is the same normalised query as its candidate's
        for item in r.body.get("asking_index") or ():
            by_norm.setdefault(normalize_text(str(item.get("query", ""))), r)
    seen = {t: r for r in rows for t in r.source_trace_ids}
    index = _Index(rows)
    for p in prepared:
        trace = p.case.interaction.trace_id
        if trace in seen:  # flagged again (a new judge version): the report names its category
            out.counts["already_seen"] += 1
            out.by_trace[trace] = seen[trace]
            continue
        target, sim, why = _find_duplicate(p, by_norm, index, rule, twins or {})
        gold_i, gold_sim = _golden_match(p, reference)
        # a golden case only outbids the repeat when it is the failure's own question
        golden = gold_sim >= rule.near_duplicate_cosine and gold_sim > sim
        if target is not None and (not golden or target.status == "covered"):
            merge(target, p, sim, why)
            by_norm.setdefault(p.signature.norm, target)
            if remember_asking(target, p):  # a wording, or a failure of it, not seen before
                index.add(target, p.vector, p.signature)
            out.counts["merged_duplicates"] += 1
            out.merges.append({"trace_id": trace, "into": target.id, "reason": why})
        else:
            target = _open(p, reference, gold_i, gold_sim, rule, new_body, candidate_id)
            out.counts["covered_by_golden" if target.status == "covered" else "new_candidates"] += 1
            by_norm[target.norm_query] = target
            index.add(target, p.vector)
        seen[trace] = out.by_trace[trace] = target
        out.rows[target.id] = target
    return out


def _open(
    p: Prepared,
    reference: GoldenReference,
    gold_i: int | None,
    gold_sim: float,
    rule: DedupRule,
    new_body: Callable[[Prepared], dict[str, Any]],
    candidate_id: Callable[[str], str],
) -> Candidate:
    """A new row for ``p``: ``covered`` when its query is (nearly) a golden case's."""
    covered = gold_i is not None and gold_sim >= rule.near_duplicate_cosine
    body = new_body(p)
    body["embedding"] = encode_vector(p.vector)
    body["topic_embedding"] = encode_vector(p.topic)
    body["signature"] = p.signature.to_json()
    if covered:
        body["golden_id"] = reference.ids[gold_i]  # type: ignore[index]
        body["golden_similarity"] = round(gold_sim, 4)
    return Candidate(
        id=candidate_id(p.signature.norm),
        status="covered" if covered else "candidate",
        norm_query=p.signature.norm,
        root_cause=p.case.root_cause,
        body=body,
    )


__all__ = [
    "Changes",
    "Prepared",
    "as_one",
    "chunks_of",
    "match_candidates",
    "remember_asking",
    "through",
]
