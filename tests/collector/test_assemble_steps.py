"""The pure steps of derivation: completeness, status and latency, from spans passed in."""

from __future__ import annotations

from dataclasses import replace

import pytest
from tracefixtures import MS, T0, langchain_retrievalqa

from ragsieve.collector.derive.fields.chunks import build_stages
from ragsieve.collector.derive.fields.outcome import completeness, latency, status
from ragsieve.collector.derive.trace.classify import TraceTree
from ragsieve.collector.derive.trace.scope import pipeline_scope
from ragsieve.collector.wire.spans import SpanRecord


def _span(
    span_id: str, start_ms: float, end_ms: float | None, parent: str | None = None
) -> SpanRecord:
    return SpanRecord(
        trace_id="ab" * 16,
        span_id=span_id,
        parent_span_id=parent,
        name=span_id,
        start_ns=T0 + int(start_ms * MS),
        end_ns=T0 + int(end_ms * MS) if end_ms is not None else 0,
    )


def test_completeness_from_root_generation_and_stages() -> None:
    spans = langchain_retrievalqa()
    tree = TraceTree.build(spans)
    root = tree.root()
    assert root is not None
    gen = next(s for s in spans if tree.role(s) == "LLM")
    stages = build_stages(tree, pipeline_scope(tree)[0])
    assert stages, "the fixture has a retriever"
    assert completeness(None, gen, stages) == "no_root"
    assert completeness(root, None, stages) == "missing_generation"
    assert completeness(replace(root, end_ns=0), gen, stages) == "timed_out"
    assert completeness(root, gen, []) == "generation_only"
    assert completeness(root, gen, stages) == "complete"


@pytest.mark.parametrize(
    ("errors", "done", "expected"),
    [
        (["boom"], "complete", "error"),
        ([], "complete", "ok"),
        ([], "generation_only", "ok"),
        ([], "timed_out", "incomplete"),
        ([], "no_root", "incomplete"),
    ],
)
def test_status(errors: list[str], done: str, expected: str) -> None:
    spans = [_span("a1", 0, 10)]
    assert status(errors, spans, done) == expected  # type: ignore[arg-type]


def test_status_cancelled_before_incomplete() -> None:
    cancelled = replace(_span("a1", 0, 10), events=({"name": "span.cancelled", "time_ns": T0},))
    assert status([], [cancelled], "timed_out") == "cancelled"
    assert status(["boom"], [cancelled], "timed_out") == "error"


def test_latency_root_duration_else_estimate() -> None:
    root, child = _span("a1", 0, 250), _span("a2", 10, 400, parent="a1")
    assert latency(root, [root, child]) == (250.0, False)
    open_root = _span("a1", 0, None)
    assert latency(open_root, [open_root, child]) == (400.0, True)
    assert latency(None, [child]) == (390.0, True)
    assert latency(None, [_span("a3", 5, None)]) == (None, True)
