"""Judges: a :class:`RagInteraction` in, ``EvalResult`` verdicts out, by the names config uses.

Where a claim is checked: :mod:`ragsieve.evaluators.judges.offline.faithfulness` splits the answer
into claims and :mod:`ragsieve.evaluators.judges.offline.support` decides how well the retrieved
chunks back each one (the LLM judge's equivalent is the ``faithfulness`` prompt in
``llm/prompts/``). The judges by kind:

- ``offline/``: heuristic judges, no model call (``text/`` holds their word-level helpers);
- ``llm/``: judges that ask an OpenAI-compatible model, prompts as packaged data;
- ``model/``: judges that run a local ONNX model the user has on disk (extra ``model``);
- ``combined/``: judges built from the others (``cascade``, ``tiers``, ``calibrated``).

Beside them: ``protocol`` (the :class:`Judge` protocol and :func:`safe_evaluate`, which turns
any failure into a ``label="error"`` result), ``registry`` (names to judges, plus the
``ragsieve.judges`` entry points), ``thresholds`` (the decision threshold per metric) and ``cli``
(what ``ragsieve judges list|calibrate`` print).
"""

from __future__ import annotations

from ragsieve.evaluators.judges.llm.client import LLMConfig
from ragsieve.evaluators.judges.protocol import Judge, error_result, safe_evaluate
from ragsieve.evaluators.judges.registry import available_judges, build_judges, get_judge

__all__ = [
    "Judge",
    "LLMConfig",
    "available_judges",
    "build_judges",
    "error_result",
    "get_judge",
    "safe_evaluate",
]
