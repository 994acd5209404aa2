"""Cross-validation folds for :mod:`ragsieve.jobs.fitting.fit`, a conversation or question whole.

The same question asked twice, or two turns of one conversation, would let a fold be tested on a
near copy of what it was fitted on, and the agreement "after" would flatter the fit. So the
labelled examples are dealt to folds by their :attr:`~ragsieve.jobs.fitting.table.Example.group`,
round-robin within each class (a group with a labelled failure counts as failing), and every item
of an example follows it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

import numpy as np

from ragsieve.jobs.fitting.table import Example


class Labelled(Protocol):
    """What the folds read of a fit's problem (:class:`~ragsieve.jobs.fitting.fit.Problem`):
    its examples (the anchors last), the anchors' indices, and per item its example and label."""

    @property
    def examples(self) -> Sequence[Example]: ...
    @property
    def anchor(self) -> np.ndarray: ...
    @property
    def ex(self) -> np.ndarray: ...
    @property
    def truth(self) -> np.ndarray: ...


def folds(problem: Labelled, k: int, seed: int) -> np.ndarray:
    """A fold per item: labelled examples dealt round-robin per class, a group (one conversation
    or question, :attr:`Example.group`) whole, with all their items."""
    rng = np.random.default_rng(seed)
    n = len(problem.examples) - len(problem.anchor)
    names = [ex.group or f"trace:{ex.trace_id}" for ex in problem.examples[:n]]
    groups = {g: i for i, g in enumerate(dict.fromkeys(names))}
    of_group_example = np.array([groups[g] for g in names], int)
    any_fail = np.zeros(len(groups), bool)
    np.logical_or.at(any_fail, of_group_example[problem.ex], problem.truth)
    of_group = np.zeros(len(groups), int)
    for cls in (True, False):
        idx = np.flatnonzero(any_fail == cls)
        rng.shuffle(idx)
        of_group[idx] = np.arange(len(idx)) % k
    return of_group[of_group_example][problem.ex]


__all__ = ["Labelled", "folds"]
