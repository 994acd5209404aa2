"""An exact test for small eval sets: the paired sign-flip (randomization) test over queries.

On a handful of queries the paired bootstrap's percentile interval is far too narrow: on one
query it is that query's change, zero width, so a single query that got worse reads as a
significant regression. With no change between the runs, each query's change is as likely to
have come out with the other sign; the test counts, over all ``2^n`` sign patterns, how often
the mean change is at least as far from zero as the one observed. That p-value is exact for any
``n`` and assumes nothing about the changes' spread. Whatever the changes, the smallest p it can
give is ``2 / 2^n`` (every query moved the same way), so below :func:`fewest_queries` queries no
change can be significant: the gate says so instead of failing on noise.

Up to :data:`EXACT_MAX` queries every pattern is counted; beyond it the bootstrap alone decides
(the gate's other test), where it is reliable.
"""

from __future__ import annotations

import itertools
import math

import numpy as np

EXACT_MAX = 16  # 2^16 sign patterns: an exact count in milliseconds


def sign_flip_p(diffs: np.ndarray) -> np.ndarray | None:
    """Two-sided exact p-value of each column of ``diffs`` (queries × metrics), or None when
    there are more than :data:`EXACT_MAX` queries."""
    n = diffs.shape[0]
    if n > EXACT_MAX:
        return None
    if n == 0:
        return np.ones(diffs.shape[1])
    signs = np.array(list(itertools.product((1.0, -1.0), repeat=n)))  # 2^n × n
    means = np.abs(signs @ diffs) / n  # 2^n × metrics
    observed = np.abs(diffs.mean(0))
    return (means >= observed - 1e-12).mean(0)


def fewest_queries(confidence: float) -> int:
    """The fewest paired queries on which a change can be significant at ``confidence``."""
    return max(1, math.ceil(math.log2(2.0 / (1.0 - confidence))))


def small_set_note(n: int, confidence: float) -> str:
    """What the report says of a paired test on ``n`` <= :data:`EXACT_MAX` queries."""
    least, what = fewest_queries(confidence), f"{n} paired quer{'y' if n == 1 else 'ies'}"
    if n < least:
        return (
            f"{what}: no change can be significant at {confidence:.0%} on fewer than"
            f" {least} (exact sign-flip test), so none is called a regression; floors still apply"
        )
    return f"{what}: a regression also needs an exact sign-flip test to agree"


__all__ = ["EXACT_MAX", "fewest_queries", "sign_flip_p", "small_set_note"]
