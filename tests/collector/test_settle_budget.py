"""The settling bound in seconds (issue 47, row 3): ``collector.max_trace_settle_s``.

A span count alone does not bound a trace's settling time (spans differ in cost; the machine's
load changes). A settler's :class:`SettleBudget` measures seconds per span on the traces it
settles and derives the next large trace from as many of its first spans as fit; the record says
which bound cut it. Real SQLite, the product's ``settle``, the bench's agent traces.
"""

from __future__ import annotations

import importlib.util
import logging
from pathlib import Path

import httpx
import pytest

from ragsieve.collector.derive.settle import TRUNCATED, SettleBudget, settle
from ragsieve.collector.serve.app import create_app
from ragsieve.collector.serve.server import ServerThread
from ragsieve.collector.settings import CollectorSettings
from ragsieve.collector.store import Store

_spec = importlib.util.spec_from_file_location(
    "settle_scale", Path(__file__).resolve().parents[2] / "bench" / "settle_scale.py"
)
assert _spec is not None and _spec.loader is not None
bench = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(bench)


def _trace(store: Store, n: int, trace_no: int) -> str:
    spans = bench.agent_trace(n, trace_no=trace_no)
    store.write_spans(spans, now=1000.0)
    return str(spans[0].trace_id)


def test_a_trace_is_cut_to_what_the_seconds_allow_at_the_pace_measured(
    store: Store, caplog: pytest.LogCaptureFixture
) -> None:
    budget = SettleBudget(0.05, min_spans=300)  # 50 ms: far less than 2,000 spans take
    first = _trace(store, 2001, 1)
    caplog.set_level(logging.WARNING, logger="ragsieve.collector.derive.settle")
    assert settle(store, quiet_s=0, max_wait_s=60, now=2000.0, budget=budget) == 1
    whole = store.get_interaction(first)
    assert whole is not None and whole.span_count == 2001  # nothing measured yet: whole
    assert TRUNCATED not in whole.attributes
    assert budget.per_span_s is not None and "took" in caplog.text  # the overrun is said
    second = _trace(store, 2001, 2)
    settle(store, quiet_s=0, max_wait_s=60, now=2000.0, budget=budget)
    cut = store.get_interaction(second)
    assert cut is not None and cut.span_count < 2001
    note = str(cut.attributes[TRUNCATED])
    assert f"first {cut.span_count} of 2001 spans" in note
    assert "collector.max_trace_settle_s 0.05 s" in note


def test_a_budget_never_cuts_below_its_floor_nor_a_trace_that_fits(store: Store) -> None:
    budget = SettleBudget(0.001, min_spans=500)
    budget.per_span_s = 1.0  # a second a span: the seconds allow none; the floor holds
    assert budget.span_cap(20_000) == 500
    roomy = SettleBudget(3600.0)
    roomy.per_span_s = 1e-4
    assert roomy.span_cap(20_000) == 20_000  # the span bound is the smaller one
    small = _trace(store, 401, 3)
    settle(store, quiet_s=0, max_wait_s=60, now=2000.0, budget=budget)
    record = store.get_interaction(small)
    assert record is not None and record.span_count == 401 and TRUNCATED not in record.attributes


def test_bad_budgets_are_refused() -> None:
    with pytest.raises(ValueError, match="seconds must be > 0"):
        SettleBudget(0)
    with pytest.raises(ValueError, match="greater than 0"):
        CollectorSettings(max_trace_settle_s=0)


def test_the_collector_settles_large_traces_within_its_budget(store: Store) -> None:
    cfg = CollectorSettings(
        port=0, quiet_period_s=0.1, settle_interval_s=0.05, max_trace_settle_s=0.05
    )
    ids = [_trace(store, 1601, 10 + k) for k in range(3)]
    with ServerThread(create_app(store, cfg), port=0) as server:
        assert httpx.get(f"{server.url}/readyz", timeout=10).status_code == 200
        records = _wait_for(store, ids)
    cut = [r for r in records if TRUNCATED in r.attributes]
    assert cut, [r.span_count for r in records]  # the first measured; a later one was cut
    assert all("max_trace_settle_s" in str(r.attributes[TRUNCATED]) for r in cut)


def _wait_for(store: Store, ids: list[str]) -> list:  # type: ignore[type-arg]
    import time

    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        got = [store.get_interaction(t) for t in ids]
        if all(r is not None for r in got):
            return got
        time.sleep(0.1)
    raise AssertionError("traces did not settle within 120 s")
