"""Topic areas of failures: agglomerative clustering with a cut the data chooses, and ids that
survive re-clustering.

A failure's *topic vector* is its question and the documents it retrieved or should have
retrieved, added as unit vectors and renormalised (:func:`topic_vector`), so two questions about
one document area land together whatever their wording or language (documents unrelated to the
question weigh less, down to nothing). :func:`cluster` builds an average-linkage tree over
cosine distances (scipy) and cuts it at the height, within ``[min_cut, max_cut]``, that gives
the best mean silhouette: the cut adapts to how tight the areas of this data are instead of one
fixed radius (and when no split has real structure while the whole tree fits under
``max_cut``, everything is one area). :func:`carry_ids` maps the new groups onto the ids of the
previous run: a group keeps the id most of its members had; when two old groups now form one,
the larger id stays and the merge is recorded; when one old group is now two, the larger part
keeps the id and the other is recorded as split from it.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import TypeVar

import numpy as np

# words a category's name never takes (English and Spanish question words and fillers)
NAME_STOPWORDS = frozenset(
    """a an the and or but if of to in on at by for with from into about as is are was were be been
    being do does did doing have has had i me my we our you your he she it its they them their his
    him her hers himself herself itself themselves what which who whom this that these those am can
    could should would will shall may might must not no nor so than too very just how why when
    where there here all any both each few more most other some such only own same s t don now get
    got also please need needs
    want wants use using many much
    el la los las un una unos unas y o pero si de del al a en con por para sin sobre entre como
    que qué es son fue ser está están estar hay mi mis tu tus su sus nuestro nuestra yo tú él
    ella nosotros ellos ellas me te se lo le les nos cómo como cuál cual cuáles cuándo cuando
    dónde donde quién quiénes por qué porque muy más menos ya no sí este esta estos estas ese esa
    eso puedo puede pueden hacer tengo tiene tener necesito necesita quiero cuántos cuántas
    cuánto cuánta""".split()
)

G = TypeVar("G", bound=Hashable)
CUTS = 24  # candidate cut heights tried between min_cut and max_cut
# a best split scoring under this mean silhouette is no real structure (Kaufman & Rousseeuw's
# "no substantial structure"); silhouettes cannot score one cluster, so without this a handful
# of failures of one topic would always be split
WEAK_STRUCTURE = 0.25
MAX_POINTS = 3000  # clustered exactly (a 3000² distance matrix is 72 MB); the rest join the nearest


def unit(vec: np.ndarray) -> np.ndarray:
    """``vec`` scaled to length 1 (a zero vector stays zero)."""
    return np.asarray(vec / max(float(np.linalg.norm(vec)), 1e-12), dtype=np.float32)


def topic_vector(
    query: np.ndarray,
    docs: np.ndarray | None,
    doc_weight: float,
    *,
    related: tuple[float, float] | None = None,
) -> np.ndarray:
    """``unit(query + w * docs)``; the query alone when no document is known.

    ``w`` is ``doc_weight``; with ``related = (lo, hi)`` it shrinks to nothing as the query's
    cosine with the documents falls from ``hi`` to ``lo``: what a retriever returned for a
    question the corpus cannot answer says nothing about the question's topic, and would
    otherwise pull unrelated questions together through the chunks they happened to retrieve.
    """
    if docs is None or doc_weight <= 0:
        return unit(query)
    w = doc_weight
    if related is not None:
        lo, hi = related
        w *= min(1.0, max(0.0, (float(query @ docs) - lo) / (hi - lo)))
    return unit(query + w * docs)


def _silhouette(dist: np.ndarray, labels: np.ndarray) -> float:
    """Mean silhouette over points of clusters of size >= 2; singletons score 0."""
    ids = np.unique(labels)
    if len(ids) < 2 or len(ids) >= len(labels):
        return -1.0
    order = np.argsort(labels, kind="stable")
    sizes = np.bincount(np.searchsorted(ids, labels)).astype(np.float64)
    starts = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64)
    # distance of each point to each cluster, summed: O(n²) whatever the number of clusters
    sums = np.add.reduceat(dist[:, order], starts, axis=1)
    own = np.searchsorted(ids, labels)
    n_own = sizes[own]
    a = sums[np.arange(len(labels)), own] / np.maximum(n_own - 1, 1)
    other = sums / sizes[None, :]
    other[np.arange(len(labels)), own] = np.inf
    b = other.min(axis=1)
    s = np.where(n_own > 1, (b - a) / np.maximum(np.maximum(a, b), 1e-12), 0.0)
    return float(s.mean())


def cluster(
    vectors: np.ndarray, *, min_cut: float, max_cut: float, max_points: int = MAX_POINTS
) -> np.ndarray:
    """Cluster labels (0..k-1) for unit ``vectors``: average linkage, best-silhouette cut.

    Past ``max_points`` (the tree needs n² memory) the first ``max_points`` vectors are
    clustered and every other one joins the cluster whose centroid is closest.
    """
    if len(vectors) > max_points:
        head = cluster(vectors[:max_points], min_cut=min_cut, max_cut=max_cut)
        k = int(head.max()) + 1
        cents = np.vstack([unit(vectors[:max_points][head == j].sum(axis=0)) for j in range(k)])
        rest = np.argmax(vectors[max_points:] @ cents.T, axis=1)
        return np.concatenate([head, rest]).astype(np.int64)
    n = len(vectors)
    if n <= 2:
        return (
            np.arange(n)
            if n == 2 and float(vectors[0] @ vectors[1]) < 1 - max_cut
            else (np.zeros(n, dtype=np.int64))
        )
    from scipy.cluster.hierarchy import fcluster, linkage  # type: ignore[import-untyped]
    from scipy.spatial.distance import squareform  # type: ignore[import-untyped]

    dist = np.clip(1.0 - vectors.astype(np.float64) @ vectors.T.astype(np.float64), 0.0, 2.0)
    np.fill_diagonal(dist, 0.0)
    dist = (dist + dist.T) / 2
    tree = linkage(squareform(dist, checks=False), method="average")
    best, best_score = None, -2.0
    for cut in np.linspace(min_cut, max_cut, CUTS):
        labels = fcluster(tree, t=cut, criterion="distance")
        score = _silhouette(dist, labels)
        if score > best_score + 1e-9:
            best, best_score = labels, score
    if best is None or (best_score < WEAK_STRUCTURE and float(tree[-1, 2]) <= max_cut):
        # every cut gave one cluster or all singletons, or the best split is no real structure
        # while all of them can be one cluster (a few failures of one topic): the widest cut
        best = fcluster(tree, t=max_cut, criterion="distance")
    _, out = np.unique(best, return_inverse=True)
    return np.asarray(out, dtype=np.int64)


@dataclass(frozen=True)
class Event:
    """One change of the category map between two runs."""

    kind: str  # merge | split
    category: str  # the id that stays (merge) or the new id (split)
    other: str  # the id merged away (merge) or split from (split)
    members: int  # how many items moved


def fresh_id(prefix: str, founder: str) -> str:
    """``<prefix>-<6 hex>`` from the founding member's id: stable for the same data."""
    return f"{prefix}-{hashlib.sha256(f'{prefix}:{founder}'.encode()).hexdigest()[:6]}"


def carry_ids(
    groups: Mapping[G, Sequence[str]],
    previous: Mapping[str, str | None],
    prefix: Mapping[G, str],
) -> tuple[dict[G, str], list[Event]]:
    """Name each group (of member ids) by the old id most of its members had.

    ``previous`` maps member → old group id (None for new members); an old id is only taken by
    a group with the same ``prefix`` (its root cause). A group that takes no old id is named
    after its first member whose id is free: the founder of an old category may now sit in a
    part that lost that id to a larger one. Returns group → id and the merges and splits seen.
    """
    votes: dict[G, Counter[str]] = {
        g: Counter(old for m in ms if (old := previous.get(m))) for g, ms in groups.items()
    }
    claims = sorted(
        ((n, g, old) for g, c in votes.items() for old, n in c.items()),
        key=lambda x: (-x[0], str(x[1]), x[2]),
    )
    names: dict[G, str] = {}
    for _, g, old in claims:
        free = old not in names.values() and old.startswith(prefix[g] + "-")
        if g not in names and free:
            names[g] = old
    taken = {*names.values(), *(old for old in previous.values() if old)}
    for g, ms in groups.items():
        if g not in names:  # founded by a member; never an id another group has or had
            ids = (
                fresh_id(prefix[g], m) for m in [*sorted(ms), *(f"{min(ms)}#{i}" for i in range(9))]
            )
            names[g] = next(i for i in ids if i not in taken)
            taken.add(names[g])
    kept = set(names.values())
    events = [
        Event("split" if old in kept else "merge", names[g], old, n)
        for g, c in votes.items()
        for old, n in c.items()
        if old != names[g]
    ]
    return names, sorted(events, key=lambda e: (e.category, e.other))


__all__ = ["NAME_STOPWORDS", "Event", "carry_ids", "cluster", "fresh_id", "topic_vector", "unit"]
