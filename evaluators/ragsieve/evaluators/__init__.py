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


def __getattr__(name: str) -> object:
    # evaluate_dataframe imports the judges; load it on first use, not with every record import
    if name == "evaluate_dataframe":
        from ragsieve.evaluators.dataframe import evaluate_dataframe

        return evaluate_dataframe
    raise AttributeError(f"module 'ragsieve.evaluators' has no attribute {name!r}")


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
    "evaluate_dataframe",
]
