"""``jobs run`` settles with the collector's span bound (``collector.max_trace_spans``), as the
collector does: a trace past it is derived from its first spans and says so."""

from __future__ import annotations

import importlib.util
import time
from pathlib import Path

from test_run_support import settings

from ragsieve.collector.derive.settle import TRUNCATED
from ragsieve.collector.store import Store
from ragsieve.jobs.run.run import run_once

_spec = importlib.util.spec_from_file_location(
    "settle_scale", Path(__file__).resolve().parents[2] / "bench" / "settle_scale.py"
)
assert _spec is not None and _spec.loader is not None
bench = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(bench)


def test_jobs_run_settles_with_the_configured_span_bound(store: Store) -> None:
    big, small = bench.agent_trace(81, trace_no=7), bench.agent_trace(21, trace_no=8)
    store.write_spans([*big, *small], now=time.time() - 60)
    run_once(store, settings(store=store.url, **{"collector.max_trace_spans": 50}), deliver=False)
    cut, whole = store.get_interaction(big[0].trace_id), store.get_interaction(small[0].trace_id)
    assert cut is not None and whole is not None
    assert cut.span_count == 50 and TRUNCATED in cut.attributes
    assert whole.span_count == len(small) and TRUNCATED not in whole.attributes
