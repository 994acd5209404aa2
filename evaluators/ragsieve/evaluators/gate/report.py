"""The gate's verdict as data: one check per metric and per protected category, and the report."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from ragsieve.evaluators.gate.experiments import Change
from ragsieve.evaluators.records import GoldenRole

DEFAULT_GATE_ROLE: GoldenRole = "regression"
Status = Literal["pass", "improved", "regression", "floor", "regression+floor"]


@dataclass
class MetricCheck:
    """One metric's verdict."""

    metric: str
    baseline: float
    candidate: float
    delta: float
    ci_low: float
    ci_high: float
    floor: float | None
    status: Status


@dataclass
class CategoryCheck:
    """One protected category × metric."""

    category: str
    metric: str
    n: int
    baseline: float
    candidate: float
    delta: float
    failed: bool


@dataclass
class GateReport:
    """The gate's outcome; ``passed`` decides the exit code."""

    passed: bool
    n_paired: int
    confidence: float
    resamples: int
    checks: list[MetricCheck]
    categories: list[CategoryCheck] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    role: str = DEFAULT_GATE_ROLE
    method: Literal["paired bootstrap", "unpaired normal"] = "paired bootstrap"
    changes: list[Change] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    log_line: str = ""

    def to_json(self) -> dict[str, Any]:
        """Plain-JSON form of the report."""
        return asdict(self)
