"""The judges a job pass runs, built by registry name from settings (backend, LLM, cache)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


def make_judges(settings: Any, names: Sequence[str] | None = None) -> list[Any]:
    """Build the configured judges (backend, LLM endpoint, cache) from settings."""
    from ragsieve.evaluators.judges import build_judges

    llm = settings.llm.to_config(settings.golden.pii_patterns)
    return build_judges(
        list(names or settings.jobs.judges),
        backend=settings.jobs.backend,
        llm=llm,
        cache_path=settings.jobs.cache_path,
        thresholds=settings.jobs.thresholds,
    )


__all__ = ["make_judges"]
