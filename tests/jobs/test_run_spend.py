"""The job's spend counter: a cascade only saves a call it would have made."""

from __future__ import annotations

from ragsieve.evaluators.records import EvalResult
from ragsieve.jobs.judging.spend import Spend as _Spend


def _result(label: str, escalated: bool) -> EvalResult:
    return EvalResult(
        trace_id="a" * 32,
        span_id="b" * 16,
        evaluator="faithfulness",
        label=label,
        score=None if label == "skipped" else 1.0,
        metadata={"escalated": escalated},
    )


def test_skipped_results_are_not_counted_as_saved_llm_calls():
    spend = _Spend(None)
    spend.add([_result("faithful", False), _result("skipped", False), _result("error", True)])
    assert spend.cascade_saved == 1 and spend.skipped == 1
