"""The pure evaluation layer: records in; verdicts, metrics and a gate decision out.

No store, no server, no network but an LLM judge's own calls.

Takes :class:`RagInteraction` records (built by the collector, or by hand) and golden sets; gives
judge verdicts (:class:`EvalResult`), retrieval and generation metrics, and the CI gate's report.
The rooms, lower first (each imports only the ones before it; ``tests/test_layering.py``):

- ``tools/``: shared helpers (redaction, embeddings, JSONL and TOML reading, limits);
- ``judges/``: one interaction in, verdicts out, by kind: ``offline/`` (heuristic), ``llm/``,
  ``combined/`` (cascade, calibrated). Where a claim is checked:
  ``judges/offline/faithfulness.py`` splits the answer into claims and
  ``judges/offline/support.py`` weighs the evidence for each;
- ``quality/``: how far the judges can be trusted (calibration, agreement, PPI);
- ``golden/``: golden sets, their roles (dev, regression, holdout) and retrieval runs;
- ``metrics/``: ranking and generation metrics over a golden set, and the eval report;
- ``gate/``: two eval results and a policy in, pass or fail out.

At the top: ``records`` (the data model) and ``errors`` (the exception tree), which every room
uses, and the edges users call by name: ``cli`` (``ragsieve eval|gate|experiments``),
``dataframe`` (:func:`evaluate_dataframe`), ``pytest_plugin`` (the ``ragsieve_eval`` fixture)
and ``testing`` (a scripted OpenAI-compatible server and ``make_interaction``).
"""

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
