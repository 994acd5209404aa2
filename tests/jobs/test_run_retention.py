"""The job applies collector.retention_days after a pass; off by default."""

from __future__ import annotations

import time

from ragsieve.collector.store import Store
from ragsieve.collector.store.retention import DAY_S
from ragsieve.collector.store.testing import temporary_store
from ragsieve.collector.wire.spans import SpanRecord
from ragsieve.jobs.run.run import run_once
from ragsieve.jobs.settings import load_settings


def _trace(store: Store, n: int, *, age_days: float) -> str:
    trace_id = f"{n:032x}"
    at = time.time() - age_days * DAY_S
    root = SpanRecord(
        trace_id=trace_id,
        span_id=f"{n:016x}",
        parent_span_id=None,
        name="rag",
        start_ns=1_000,
        end_ns=2_000,
    )
    store.write_spans([root], now=at)
    return trace_id


def _traces(store: Store) -> set[str]:
    return {r[0] for r in store.query("SELECT trace_id FROM traces")}


def test_the_run_purges_traces_past_retention_and_reports_it() -> None:
    with temporary_store() as store:
        old, recent = _trace(store, 1, age_days=10), _trace(store, 2, age_days=1)
        settings = load_settings(
            None, {"store": store.url, "collector.retention_days": 7, "jobs.settle_s": 0.0}
        )
        report = run_once(store, settings, deliver=False, judges=[]).report
        assert report["retention"]["traces"] == 1 and report["retention"]["spans"] == 1
        assert _traces(store) == {recent}
        assert old not in _traces(store)


def test_without_retention_days_nothing_is_deleted() -> None:
    with temporary_store() as store:
        ids = {_trace(store, 1, age_days=400), _trace(store, 2, age_days=1)}
        settings = load_settings(None, {"store": store.url, "jobs.settle_s": 0.0})
        report = run_once(store, settings, deliver=False, judges=[]).report
        assert report["retention"] is None
        assert _traces(store) == ids


def test_a_dry_run_deletes_nothing() -> None:
    with temporary_store() as store:
        ids = {_trace(store, 1, age_days=10)}
        settings = load_settings(
            None, {"store": store.url, "collector.retention_days": 7, "jobs.settle_s": 0.0}
        )
        report = run_once(store, settings, dry_run=True, judges=[]).report
        assert "retention" not in report
        assert _traces(store) == ids
