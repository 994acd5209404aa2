"""Categories a reviewer can read: no area swallows the traffic, no failure is left alone when
an area is near it.

:func:`balanced` splits an area holding more than ``MAX_SHARE`` of the candidates: a deployment
about one subject (a town hall, one product) has every failure near every other, and one
category of everything tells a reviewer nothing. The split is made on what sets the members
apart (:func:`split_residual`), then, while a part is still too large, along the tree.
:func:`adopt` puts a failure that shares its topic with no other into the nearest area, when one
is near enough; it stays uncategorised only when it is truly alone.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from ragsieve.jobs.golden.growth.topics import cluster, unit

# no category holds more than this share of the candidates (issue 46: a reviewer reads a short
# list of distinct problems, not one bucket of everything), once there are this many candidates
MAX_SHARE = 0.4
BALANCE_FROM = 10
# residuals (a member minus its area's centre) further apart than orthogonal are other problems
RESIDUAL_CUT = 1.0


def balanced(
    vectors: np.ndarray, groups: list[list[int]], share: float, least: int, *, min_cut: float
) -> list[list[int]]:
    """``groups`` with every group over ``share`` of all points split (when there are at least
    ``least`` points): first along its residuals (:func:`split_residual`), then, while a part is
    still too large, into the fewest parts of its average-linkage tree that fit."""
    n = len(vectors)
    cap = max(1, int(share * n))
    if n < least:
        return groups
    out: list[list[int]] = []
    todo = [(g, True) for g in groups]
    while todo:
        g, first = todo.pop()
        if len(g) <= cap:
            out.append(g)
            continue
        parts = split_residual(vectors[g], min_cut) if first else []
        if len(parts) < 2:  # no structure left in the residuals: the fewest tree parts that fit
            parts = split_tree(vectors[g], math.ceil(len(g) / cap))
        if len(parts) < 2:  # identical vectors cannot be split: leave them be
            out.append(g)
            continue
        todo += [([g[i] for i in p], False) for p in parts]
    return out


def split_residual(vectors: np.ndarray, min_cut: float) -> list[list[int]]:
    """The sub-areas of one area: its members clustered on what sets each apart from the area's
    centre (vector minus the mean, renormalised). Failures of a one-subject deployment share the
    subject (and the pages they retrieved); what is left is the problem (passports, a tax)."""
    residual = np.vstack([unit(v) for v in vectors - vectors.mean(axis=0)])
    labels = cluster(residual, min_cut=min_cut, max_cut=RESIDUAL_CUT)
    return [np.flatnonzero(labels == k).tolist() for k in np.unique(labels)]


def split_tree(vectors: np.ndarray, k: int) -> list[list[int]]:
    """``vectors`` cut into ``k`` (at most) clusters of their average-linkage tree."""
    from scipy.cluster.hierarchy import fcluster, linkage  # type: ignore[import-untyped]
    from scipy.spatial.distance import squareform  # type: ignore[import-untyped]

    dist = np.clip(1.0 - vectors.astype(np.float64) @ vectors.T.astype(np.float64), 0.0, 2.0)
    np.fill_diagonal(dist, 0.0)
    tree = linkage(squareform((dist + dist.T) / 2, checks=False), method="average")
    labels = fcluster(tree, t=k, criterion="maxclust")
    return [np.flatnonzero(labels == j).tolist() for j in np.unique(labels)]


def adopt(
    vectors: np.ndarray,
    groups: list[list[int]],
    alone: Sequence[int],
    *,
    cap: int,
    max_cut: float,
    chunks: Sequence[frozenset[str]] | None = None,
) -> list[list[int]]:
    """``groups`` with each point of ``alone`` added to the group whose centre is nearest, when
    that centre lies within ``max_cut`` (cosine distance), the group has room under ``cap`` and,
    given each point's ``chunks``, the point shares one with a member (a point that names no
    chunk is judged by nearness alone)."""
    if not groups or not alone:
        return groups
    out = [list(g) for g in groups]
    cents = np.vstack([unit(vectors[g].sum(axis=0)) for g in groups])
    for i in alone:
        sims = cents @ vectors[i]
        for j in np.argsort(-sims):
            if 1.0 - float(sims[j]) > max_cut:
                break
            if chunks and chunks[i] and not any(chunks[i] & chunks[m] for m in groups[j]):
                continue
            if len(out[j]) < cap:
                out[j].append(i)
                break
    return out


__all__ = ["BALANCE_FROM", "MAX_SHARE", "adopt", "balanced", "split_residual", "split_tree"]
