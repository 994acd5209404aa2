"""The judges a worker runs: built by registry name, optionally paced, cached per process."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ragsieve.collector.store import Store
from ragsieve.evaluators.errors import ConfigError
from ragsieve.evaluators.records import EvalResult, RagInteraction


class PacedJudge:
    """Public testing/drill judge: wraps a real judge and adds a fixed latency per call.

    Models a remote LLM judge's latency around the deterministic offline judges, for crash drills
    and throughput benchmarks (``--judge-latency-ms``). Verdicts, name and version are the wrapped
    judge's, so checkpoints are shared with unpaced runs.
    """

    def __init__(self, inner: Any, latency_s: float) -> None:
        self.inner, self.latency_s = inner, latency_s
        self.name: str = inner.name
        self.version: str = inner.version

    async def evaluate(self, interaction: RagInteraction) -> Sequence[EvalResult]:
        """Sleep ``latency_s``, then delegate."""
        await asyncio.sleep(self.latency_s)
        return list(await self.inner.evaluate(interaction))


def build_judge_set(
    names: Sequence[str],
    backend: str = "offline",
    *,
    latency_ms: float = 0.0,
    store: Store | None = None,
    **options: Any,
) -> list[Any]:
    """Judges by registry name via ``ragsieve.evaluators.judges.build_judges`` when available;
    with ``store`` (and no ``calibration`` option), under that store's active calibration, so
    the scheduler's judge versions are the workers' (``ragsieve judges fit``)."""
    from ragsieve.evaluators import judges as registry

    if store is not None and "calibration" not in options:
        from ragsieve.jobs.judging.judges import load_active

        options["calibration"] = load_active(None, store)

    build = getattr(registry, "build_judges", None)
    if build is not None:
        judges = list(build(list(names), backend=backend, **options))
    else:  # the registry is still being built: the offline judges are importable directly
        if backend != "offline":
            raise ConfigError(f"jobs.backend: {backend!r} needs the judge registry; use 'offline'")
        from ragsieve.evaluators.judges.offline.faithfulness import FaithfulnessJudge
        from ragsieve.evaluators.judges.offline.relevance import (
            AnswerRelevanceJudge,
            ContextRelevanceJudge,
        )

        classes = (FaithfulnessJudge, AnswerRelevanceJudge, ContextRelevanceJudge)
        known = {c.name: c for c in classes}
        unknown = [n for n in names if n not in known]
        if unknown:
            raise ConfigError(f"jobs.judges: unknown judge {unknown[0]!r}; known: {sorted(known)}")
        judges = [known[n]() for n in names]
    if latency_ms > 0:
        judges = [PacedJudge(j, latency_ms / 1000.0) for j in judges]
    return judges


@dataclass
class WorkerRuntime:
    """What a worker process needs to run batches: the store and judges (built once per spec)."""

    store: Store
    latency_ms: float = 0.0
    judge_options: dict[str, Any] = field(default_factory=dict)
    pii_patterns: tuple[str, ...] | None = None  # None: results kept as judged; else redacted
    _judges: dict[tuple[tuple[str, ...], str, str | None], list[Any]] = field(default_factory=dict)

    def judges(self, names: Sequence[str], backend: str) -> list[Any]:
        """The judge objects for a batch's judge names and backend, under the store's active
        calibration (``ragsieve judges fit``), read per batch so a new fit is picked up."""
        from ragsieve.jobs.judging.judges import load_active

        cal = load_active(None, self.store)
        key = (tuple(names), backend, cal.id if cal else None)
        if key not in self._judges:
            built = build_judge_set(
                names, backend, latency_ms=self.latency_ms, calibration=cal, **self.judge_options
            )
            if self.pii_patterns is not None:
                from ragsieve.evaluators.tools.redact import RedactingJudge

                built = [RedactingJudge(j, self.pii_patterns) for j in built]
            self._judges[key] = built
        return self._judges[key]


__all__ = ["PacedJudge", "WorkerRuntime", "build_judge_set"]
