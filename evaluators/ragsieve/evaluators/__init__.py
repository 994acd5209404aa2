"""Pure evaluation layer: records, judges, metrics and the regression gate (no store, no server)."""

from __future__ import annotations

from ragsieve.evaluators.errors import (
    BadPayload,
    ConfigError,
    GateError,
    JudgeError,
    RagsieveError,
    StoreError,
)
from ragsieve.evaluators.records import (
    EvalResult,
    Feedback,
    GoldenCase,
    RagInteraction,
    RetrievedDocument,
)

__all__ = [
    "BadPayload",
    "ConfigError",
    "EvalResult",
    "Feedback",
    "GateError",
    "GoldenCase",
    "JudgeError",
    "RagInteraction",
    "RagsieveError",
    "RetrievedDocument",
    "StoreError",
]
