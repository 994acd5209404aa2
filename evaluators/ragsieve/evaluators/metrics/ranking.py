"""Vectorised ranking metrics over a (queries × ranks) relevance matrix.

Every function takes a :class:`Relevance` and a cutoff ``k`` (``None`` means the whole retrieved
list) and returns one float per query, all in [0, 1]. Rows are built by :func:`build_relevance`
with the project's edge rules: rank is the order of the run, a repeated chunk id counts only at
its first position (later copies are dropped), and a query with no run is a row of zeros.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence, Sized
from dataclasses import dataclass
from functools import cached_property

import numpy as np


@dataclass(frozen=True)
class Relevance:
    """Graded relevance of each retrieved position, one row per query.

    Attributes:
        gains: ``(Q, L)`` float array, the grade of the chunk at rank ``j`` (0 when not relevant).
        n_relevant: ``(Q,)`` number of chunks with grade > 0 in the golden set.
        ideal: ``(Q, R)`` golden grades > 0 sorted in decreasing order, zero padded.
    """

    gains: np.ndarray
    n_relevant: np.ndarray
    ideal: np.ndarray

    @property
    def n_queries(self) -> int:
        """Number of rows."""
        return int(self.gains.shape[0])

    @property
    def depth(self) -> int:
        """Number of rank columns (the longest run; trailing columns past a short run are zeros)."""
        return int(self.gains.shape[1])

    @cached_property
    def hits(self) -> np.ndarray:
        """``(Q, L)`` bool: the chunk at this rank is relevant (grade > 0)."""
        return self.gains > 0

    def cum_hits(self, k: int | None) -> np.ndarray:
        """``(Q, min(k, L))`` number of relevant chunks in the top ``j + 1``, for ``j < k``."""
        return np.cumsum(self.hits[:, : self.cut(k)], axis=1, dtype=np.int32)

    def cut(self, k: int | None) -> int:
        """Columns to read for cutoff ``k``: ``min(k, depth)``; raises on k < 1."""
        if k is None:
            return self.depth
        if k < 1:
            raise ValueError(f"k must be >= 1, got {k}")
        return min(k, self.depth)

    def hits_at(self, k: int | None) -> np.ndarray:
        """``(Q,)`` number of relevant chunks in the top k."""
        return self.hits[:, : self.cut(k)].sum(axis=1, dtype=np.int32)


def build_relevance(
    qrels: Sequence[Mapping[str, int]], runs: Iterable[Sequence[str] | None]
) -> Relevance:
    """Align golden grades with run rankings, row by row.

    ``qrels[i]`` maps chunk id → grade and ``runs[i]`` is the ranked list of chunk ids (or
    ``None`` when the query is missing from the run). ``runs`` may be an iterator, so that
    each ranking can be decoded, scored and freed in turn.
    """
    if isinstance(runs, Sized) and len(qrels) != len(runs):
        raise ValueError(f"qrels and runs differ in length ({len(qrels)} != {len(runs)})")
    n = len(qrels)
    rows: list[int] = []
    cols: list[int] = []
    vals: list[int] = []
    rel_rows: list[int] = []
    rel_grades: list[int] = []
    width = 1
    for qi, (grades, ids) in enumerate(zip(qrels, runs, strict=True)):
        ranked: Sequence[str] = ids or ()
        width = max(width, len(ranked))
        found: list[tuple[int, int]] = []
        for cid, grade in grades.items():
            if grade <= 0:
                continue
            rel_rows.append(qi)
            rel_grades.append(grade)
            if not ranked:
                continue
            try:
                found.append((ranked.index(cid), grade))  # first copy; a C scan beats a dict
            except ValueError:
                continue
        if not found:
            continue
        # rank after dropping repeated ids = number of distinct ids before the first copy,
        # counted once per query up to the deepest hit
        found.sort()
        seen: set[str] = set()
        upto = 0
        for j, grade in found:
            seen.update(ranked[upto:j])
            upto = j
            rows.append(qi)
            cols.append(len(seen))
            vals.append(grade)
    gains = np.zeros((n, width), dtype=np.float64)
    if rows:
        gains[np.asarray(rows), np.asarray(cols)] = np.asarray(vals, dtype=np.float64)
    q = np.asarray(rel_rows, dtype=np.int64)
    g = np.asarray(rel_grades, dtype=np.float64)
    n_rel = np.bincount(q, minlength=n)
    ideal = np.zeros((n, max(int(n_rel.max(initial=0)), 1)), dtype=np.float64)
    if q.size:
        order = np.lexsort((-g, q))  # by query, then grade descending
        q, g = q[order], g[order]
        ideal[q, np.arange(q.size) - np.searchsorted(q, q, side="left")] = g
    return Relevance(gains=gains, n_relevant=n_rel, ideal=ideal)


def hit_rate(rel: Relevance, k: int | None) -> np.ndarray:
    """1 when at least one relevant chunk is in the top k, else 0."""
    return (rel.hits_at(k) > 0).astype(np.float64)


def precision(rel: Relevance, k: int | None) -> np.ndarray:
    """Relevant chunks in the top k divided by k (by the list length when k is None)."""
    denom = rel.depth if k is None else k
    return rel.hits_at(k) / max(denom, 1)


def recall(rel: Relevance, k: int | None) -> np.ndarray:
    """Relevant chunks in the top k divided by all relevant chunks (0 when there are none)."""
    found = rel.hits_at(k)
    out: np.ndarray = np.divide(
        found, rel.n_relevant, out=np.zeros(rel.n_queries), where=rel.n_relevant > 0
    )
    return out


def mrr(rel: Relevance, k: int | None) -> np.ndarray:
    """Reciprocal rank ``1 / rank`` of the first relevant chunk in the top k, 0 when none."""
    c = rel.cut(k)
    if c == 0:
        return np.zeros(rel.n_queries)
    window = rel.hits[:, :c]
    first = np.argmax(window, axis=1)
    found = window[np.arange(rel.n_queries), first]
    return np.where(found, 1.0 / (first + 1.0), 0.0)


def _discounts(n: int) -> np.ndarray:
    return 1.0 / np.log2(np.arange(2, n + 2, dtype=np.float64))


def ndcg(rel: Relevance, k: int | None) -> np.ndarray:
    """nDCG with linear gain: DCG = Σ rel_i / log2(i + 1) over the top k, over the ideal DCG."""
    c = rel.cut(k)
    kk = rel.depth if k is None else k
    dcg = rel.gains[:, :c] @ _discounts(c)
    ic = min(kk, rel.ideal.shape[1])
    idcg = rel.ideal[:, :ic] @ _discounts(ic)
    out: np.ndarray = np.divide(dcg, idcg, out=np.zeros(rel.n_queries), where=idcg > 0)
    return out


def context_precision(rel: Relevance, k: int | None) -> np.ndarray:
    """Σ_{i≤k} precision@i · rel_i over the relevant chunks in the top k (0 when none)."""
    c = rel.cut(k)
    if c == 0:
        return np.zeros(rel.n_queries)
    hits = rel.hits[:, :c]
    prec_i = rel.cum_hits(c) / np.arange(1, c + 1, dtype=np.float64)
    num = np.einsum("ij,ij->i", prec_i, hits)
    den = rel.hits_at(k)
    out: np.ndarray = np.divide(num, den, out=np.zeros(rel.n_queries), where=den > 0)
    return out
