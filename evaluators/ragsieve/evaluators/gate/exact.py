"""An exact test for changes on few queries: the paired sign-flip (randomization) test.

When few queries changed between the runs (a tiny eval set, or a large one where a handful
moved), the paired bootstrap's percentile interval is far too narrow: on one changed query it is
that query's change, zero width, so a single query that got worse reads as significant. With no
change between the runs, each query's change is as likely to have come out with the other sign;
the test counts, over all ``2^k`` sign patterns of the ``k`` queries that changed (those that did
not change add nothing either way), how often the mean change is at least as far from zero as
the one observed. That p-value is exact and assumes nothing about the changes' spread. Whatever
the changes, the smallest p it can give is ``2 / 2^k`` (every changed query moved the same way),
so below :func:`fewest_queries` changed queries no change can be significant: the gate says so
instead of failing on noise. A holdout, kept without per-query rows, is compared unpaired: the
permutation test's bound (:func:`too_few`) plays the same part there.

Up to :data:`EXACT_MAX` changed queries every pattern is counted; beyond them the bootstrap
alone decides (the gate's other test), which is reliable there.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

EXACT_MAX = 16  # 2^16 sign patterns, counted exactly


def _signs(k: int) -> np.ndarray:
    """Every pattern of ``k`` signs (``2^k × k``), from the bits of 0 .. 2^k - 1."""
    bits = (np.arange(2**k)[:, None] >> np.arange(k)[None, :]) & 1
    return 1.0 - 2.0 * bits


def sign_flip_p(diffs: np.ndarray) -> np.ndarray:
    """Two-sided exact p-value of each column of ``diffs`` (queries × metrics) over the queries
    whose value changed; NaN for a column where more than :data:`EXACT_MAX` changed."""
    out = np.full(diffs.shape[1], np.nan)
    for j in range(diffs.shape[1]):
        changed = diffs[:, j][np.abs(diffs[:, j]) > 1e-12]
        if len(changed) > EXACT_MAX:
            continue
        if not len(changed):
            out[j] = 1.0
            continue
        means = np.abs(_signs(len(changed)) @ changed)
        out[j] = float((means >= abs(changed.sum()) - 1e-9).mean())
    return out


def fewest_queries(confidence: float) -> int:
    """The fewest changed queries on which a change can be significant at ``confidence``: all
    moving one way gives ``p = 2 / 2^k``, which must be under ``1 - confidence``."""
    return math.floor(math.log2(2.0 / (1.0 - confidence))) + 1


def significant(p_exact: np.ndarray | None, j: int, confidence: float) -> bool:
    """Whether the exact test lets the bootstrap call a change in metric ``j`` (no test, or NaN:
    too many changed to count, the bootstrap decides alone)."""
    return p_exact is None or bool(np.isnan(p_exact[j]) or p_exact[j] < 1.0 - confidence)


def fewest_unpaired(confidence: float) -> int:
    """The fewest queries per run on which two unpaired runs of equal size can differ
    significantly (:func:`unpaired_floor`)."""
    n = 1
    while unpaired_floor(n, n) >= 1.0 - confidence:
        n += 1
    return n


def unpaired_floor(nb: float, nc: float) -> float:
    """The smallest two-sided p any permutation test can give two unpaired runs of ``nb`` and
    ``nc`` queries: the most extreme of the ``C(nb + nc, nb)`` ways to split their values."""
    b, c = int(nb), int(nc)  # counts, read from JSON
    return min(1.0, 2.0 / math.comb(b + c, b)) if b and c else 1.0


def too_few(
    sizes: Sequence[tuple[float, float]], metrics: Sequence[str], confidence: float
) -> tuple[np.ndarray | None, list[str]]:
    """For an unpaired (holdout) comparison, per metric its queries in each run (``sizes``): p = 1
    where they are too few for any change to be significant, with the note naming them; NaN (the
    interval decides) elsewhere. ``(None, [])`` when every metric has enough."""
    floors = np.array([unpaired_floor(nb, nc) for nb, nc in sizes])
    short = floors >= 1.0 - confidence
    if not short.any():
        return None, []
    nb, nc = (int(x) for x in sizes[int(np.argmax(short))])
    runs = f"{nb} quer{'y' if nb == 1 else 'ies'} per run" if nb == nc else f"{nb} and {nc} queries"
    named = ", ".join(m for m, s in zip(metrics, short, strict=True) if s)
    return np.where(short, 1.0, np.nan), [
        f"{named}: holdout of {runs}: no change can be significant at {confidence:.0%} (exact"
        f" permutation bound; {fewest_unpaired(confidence)} per run at least), so none is called"
        " a regression or an improvement; floors and protected categories still apply"
    ]


def small_set_note(changed: int, confidence: float) -> str:
    """What the report says when the exact test decided (``changed`` <= :data:`EXACT_MAX`)."""
    least, what = fewest_queries(confidence), f"{changed} quer{'y' if changed == 1 else 'ies'}"
    if changed < least:
        return (
            f"{what} changed: no change can be significant at {confidence:.0%} on fewer than"
            f" {least} (exact sign-flip test), so none is called a regression or an improvement;"
            " floors and protected categories still apply"
        )
    return f"{what} changed: a regression or improvement also needs an exact sign-flip test"


def few_changed(diffs: np.ndarray, confidence: float, metrics: Sequence[str]) -> list[str]:
    """The report's notes for the metrics the exact test decides (at most :data:`EXACT_MAX` of
    their queries changed, at least one), grouped by how many changed, each naming its metrics."""
    by_k: dict[int, list[str]] = {}
    for m, k in zip(metrics, (np.abs(diffs) > 1e-12).sum(0), strict=True):
        if 0 < k <= EXACT_MAX:
            by_k.setdefault(int(k), []).append(m)
    return [f"{', '.join(ms)}: {small_set_note(k, confidence)}" for k, ms in sorted(by_k.items())]


__all__ = [
    "EXACT_MAX",
    "few_changed",
    "fewest_queries",
    "fewest_unpaired",
    "sign_flip_p",
    "significant",
    "small_set_note",
    "too_few",
    "unpaired_floor",
]
