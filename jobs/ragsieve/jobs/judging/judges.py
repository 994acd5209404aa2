"""The judges a job pass runs, built by registry name from settings (backend, LLM, cache)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


def make_judges(settings: Any, names: Sequence[str] | None = None) -> list[Any]:
    """Build the configured judges (backend, LLM endpoint, cache) from settings."""
    from ragsieve.evaluators.judges import build_judges

    llm = settings.llm.to_config(settings.golden.pii_patterns)
    judges = build_judges(
        list(names or settings.jobs.judges),
        backend=settings.jobs.backend,
        llm=llm,
        cache_path=settings.jobs.cache_path,
        thresholds=settings.jobs.thresholds,
    )
    return redacting(judges, settings)


def redacting(judges: list[Any], settings: Any) -> list[Any]:
    """With ``golden.scrub_pii`` on, results are redacted before they are stored, exported or
    sent to Phoenix (an answer's e-mail address must not survive in ``metadata.claims``)."""
    from ragsieve.evaluators.redact import RedactingJudge

    if not settings.golden.scrub_pii:
        return judges
    return [RedactingJudge(j, settings.golden.pii_patterns) for j in judges]


__all__ = ["make_judges", "redacting"]
