"""Settling large and growing traces (issue 47, rows 3 and 4), on a real SQLite store.

Speed itself is measured in ``bench/settle_scale.py``; these tests hold the behaviour that makes
it linear and bounded: the indexes answer what the per-leaf scans answered, a trace past
``max_trace_spans`` settles truncated and says so, ``max_wait_s`` holds while spans keep arriving,
and settling lanes split traces by size.
"""

from __future__ import annotations

import importlib.util
import random
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from ragsieve.collector.derive.settle import TRUNCATED, settle
from ragsieve.collector.derive.trace.classify import TraceTree
from ragsieve.collector.derive.trace.lookup import NeedleIndex, has_template
from ragsieve.collector.store import Store
from ragsieve.collector.wire.spans import SpanRecord

_spec = importlib.util.spec_from_file_location(
    "settle_scale", Path(__file__).resolve().parents[2] / "bench" / "settle_scale.py"
)
assert _spec is not None and _spec.loader is not None
bench = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(bench)


def test_needle_index_counts_what_a_scan_of_every_needle_counts() -> None:
    rng = random.Random(47)
    words = ["tower", "metres", "Paris", "survey", "the", "a", "330", "Chunk 1-2:"]
    for _ in range(200):
        text = " ".join(rng.choice(words) for _ in range(rng.randint(0, 60)))
        pool = [" ".join(rng.choice(words) for _ in range(rng.randint(1, 6))) for _ in range(90)]
        needles = [rng.choice(pool) for _ in range(rng.randint(0, 150))] + [""]
        expected = sum(1 for n in needles if n and n in text)  # the old per-leaf count
        assert NeedleIndex(needles).count_in(text) == expected


def _tree(spans: list[SpanRecord]) -> TraceTree:
    return TraceTree.build(spans)


def test_indexed_leaves_and_prompts_match_the_scans_they_replace() -> None:
    spans = bench.agent_trace(400)
    # nest a second LLM under one call: the outer one is then no leaf
    inner = SpanRecord(
        trace_id=spans[0].trace_id, span_id="ffffffff00000001", parent_span_id=spans[4].span_id,
        name="inner", start_ns=spans[4].start_ns + 1, end_ns=spans[4].end_ns - 1,
        attributes={"openinference.span.kind": "LLM", "llm.model_name": "m"},
    )  # fmt: skip
    tree = _tree([*spans, inner])
    naive_leaves = [
        s
        for s in tree.spans
        if tree.role(s) == "LLM" and not any(tree.role(d) == "LLM" for d in tree.descendants(s))
    ]
    assert tree.llm_leaves() == naive_leaves and spans[4] not in naive_leaves
    for leaf in naive_leaves[::7]:
        exclude = {leaf.span_id, *(a.span_id for a in tree.ancestors(leaf))}
        naive = sorted(
            (
                s
                for s in tree.spans
                if tree.role(s) == "PROMPT" and s.end_ns and s.end_ns <= leaf.start_ns
                and s.span_id not in exclude and has_template(s)
            ),
            key=lambda s: s.end_ns,
            reverse=True,
        )  # fmt: skip
        assert list(tree.prompts_ended_by(leaf.start_ns, exclude)) == naive


def test_a_trace_past_the_span_bound_settles_truncated_and_says_so(store: Store) -> None:
    spans = bench.agent_trace(401)
    store.write_spans(spans, now=1000.0)
    assert settle(store, quiet_s=0, max_wait_s=60, now=2000.0, max_spans=100) == 1
    record = store.get_interaction(spans[0].trace_id)
    assert record is not None and record.span_count == 100
    assert "first 100 of 401 spans" in str(record.attributes[TRUNCATED])


def test_a_trace_within_the_bound_says_nothing(store: Store) -> None:
    spans = bench.agent_trace(101)
    store.write_spans(spans, now=1000.0)
    assert settle(store, quiet_s=0, max_wait_s=60, now=2000.0, max_spans=101) == 1
    record = store.get_interaction(spans[0].trace_id)
    assert record is not None and record.span_count == 101 and TRUNCATED not in record.attributes


def test_max_wait_holds_while_spans_keep_arriving(store: Store) -> None:
    """A span lands during every derivation; the overdue trace is saved all the same, stays open
    for what arrived, and is not derived again before another ``max_wait_s``."""
    spans = bench.agent_trace(2001)
    trace_id = spans[0].trace_id
    store.write_spans(spans, now=time.time() - 10)  # first seen 10 s ago
    stop = threading.Event()

    def trickle() -> None:
        n = 0
        while not stop.is_set():
            n += 1
            extra = SpanRecord(
                trace_id=trace_id, span_id=f"eeeeeeee{n:08x}", parent_span_id=spans[0].span_id,
                name="late tool", start_ns=spans[0].start_ns + n, end_ns=spans[0].start_ns + n + 1,
            )  # fmt: skip
            store.write_spans([extra])
            time.sleep(0.002)

    writer = threading.Thread(target=trickle, daemon=True)
    writer.start()
    try:
        time.sleep(0.05)
        assert settle(store, quiet_s=3600, max_wait_s=5) == 1
        assert store.get_interaction(trace_id) is not None
        state = store.trace_state(trace_id)
        assert state is not None and state["state"] == "open"  # spans arrived meanwhile
        assert settle(store, quiet_s=3600, max_wait_s=5) == 0  # its clock restarted
        assert settle(store, quiet_s=3600, max_wait_s=5, now=time.time() + 6) == 1
    finally:
        stop.set()
        writer.join(5)
    assert store.get_interaction(trace_id).revision == 2  # type: ignore[union-attr]


def test_lanes_split_traces_by_size(store: Store) -> None:
    big, small = bench.agent_trace(1201, trace_no=1), bench.agent_trace(41, trace_no=2)
    store.write_spans([*big, *small], now=1000.0)
    assert settle(store, quiet_s=0, max_wait_s=60, now=2000.0, lane=(0, 1000)) == 1
    assert store.get_interaction(small[0].trace_id) is not None
    assert store.get_interaction(big[0].trace_id) is None
    assert settle(store, quiet_s=0, max_wait_s=60, now=2000.0, lane=(1000, None)) == 1
    assert store.get_interaction(big[0].trace_id) is not None


def test_the_collector_applies_its_span_bound_setting(start_collector: Any) -> None:
    live = start_collector(quiet_period_s=0.1, settle_interval_s=0.05, max_trace_spans=50)
    spans = bench.agent_trace(81, trace_no=3)
    body = {"resourceSpans": [{"scopeSpans": [{"spans": [_otlp(s) for s in spans]}]}]}
    assert httpx.post(live.traces_url, json=body).status_code == 200
    deadline = time.monotonic() + 15
    while (record := live.store.get_interaction(spans[0].trace_id)) is None:
        if time.monotonic() > deadline:
            pytest.fail("the trace did not settle")
        time.sleep(0.05)
    assert record.span_count == 50 and TRUNCATED in record.attributes


def _otlp(span: SpanRecord) -> dict[str, Any]:
    out: dict[str, Any] = {
        "traceId": span.trace_id,
        "spanId": span.span_id,
        "name": span.name,
        "startTimeUnixNano": str(span.start_ns),
        "endTimeUnixNano": str(span.end_ns),
        "attributes": [
            {"key": k, "value": {"doubleValue": v} if isinstance(v, float) else {"stringValue": v}}
            for k, v in span.attributes.items()
        ],
    }
    if span.parent_span_id:
        out["parentSpanId"] = span.parent_span_id
    return out
