"""Golden queries as vectors, loaded once per file version, for novelty and flag categories."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np


@dataclass
class GoldenIndex:
    """Golden queries as vectors: novelty for sampling, answerability and category for flags."""

    cases: list[Any]
    vectors: np.ndarray
    embed: Callable[[Sequence[str]], np.ndarray]
    near_duplicate: float = 0.9
    new_category: float = 0.6

    def lookup(self, query: str) -> tuple[Any, str]:
        """``(expected, category)`` from the nearest golden case.

        ``expected`` is "answerable" / "no_answer" when the nearest case is a near duplicate,
        else None; the category is that case's when similar enough, else "new".
        """
        if not query or len(self.cases) == 0:
            return None, "new"
        sims = self.embed([query])[0] @ self.vectors.T
        best = int(np.argmax(sims))
        sim = float(sims[best])
        case = self.cases[best]
        expected = None
        if sim >= self.near_duplicate:
            expected = "no_answer" if case.is_no_answer else "answerable"
        category = (case.category or "uncategorized") if sim >= self.new_category else "new"
        return expected, category


_GOLDEN_CACHE: dict[tuple[str, float], GoldenIndex] = {}


def load_golden_index(
    path: str | None,
    near_duplicate: float = 0.9,
    new_category: float = 0.6,
    *,
    cache: Path | None = None,
) -> GoldenIndex | None:
    """Load and embed the golden set at ``path`` (cached per file version in the process, and
    across runs in ``cache``: ``golden_cache.py``); None without a path."""
    if not path:
        return None
    from ragsieve.evaluators.errors import ConfigError
    from ragsieve.evaluators.golden.sets import load_golden
    from ragsieve.evaluators.tools.embeddings import embed
    from ragsieve.evaluators.tools.userfile import regular_file
    from ragsieve.jobs.sampling.golden_cache import golden_vectors

    try:
        file = regular_file(path)  # /dev/zero, a FIFO or a folder is refused, not read
    except ConfigError as exc:
        raise ConfigError(f"golden.path: {exc}") from None
    stamp = (str(file.resolve()), file.stat().st_mtime)
    index = _GOLDEN_CACHE.get(stamp)
    if index is None:
        cases = list(load_golden(file).cases)
        vectors = golden_vectors(file, [c.query for c in cases], embed, cache)
        index = GoldenIndex(cases, vectors, embed)
        _GOLDEN_CACHE.clear()
        _GOLDEN_CACHE[stamp] = index
    return GoldenIndex(index.cases, index.vectors, index.embed, near_duplicate, new_category)


__all__ = ["GoldenIndex", "load_golden_index"]
