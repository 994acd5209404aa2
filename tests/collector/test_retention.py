"""Retention: old traces go whole (spans, events, interaction), old outbox rows go, results stay."""

from __future__ import annotations

import threading
import time

import pytest
from test_store_contract import BACKENDS, interaction, span, tid

from ragsieve.collector.settings import CollectorSettings
from ragsieve.collector.store import Store
from ragsieve.collector.store.retention import DAY_S, purge_expired
from ragsieve.collector.wire.spans import LogEvent
from ragsieve.evaluators.records import Feedback

NOW = 1_800_000_000.0


@pytest.fixture(params=BACKENDS)
def any_store(request: pytest.FixtureRequest) -> Store:
    store: Store = request.getfixturevalue("store" if request.param == "sqlite" else "pg_store")
    return store


def _trace(store: Store, n: int, *, age_days: float, spans: int = 3) -> None:
    at = NOW - age_days * DAY_S
    batch = [span(n, 1)] + [span(n, k, parent=1) for k in range(2, spans + 1)]
    event = LogEvent(tid(n), None, "gen_ai.user.message", 1, {}, "hi")
    store.write_spans(batch, log_events=[event], now=at)
    store.save_interaction(interaction(n), seen_at=at, now=at)


def _count(store: Store, table: str) -> int:
    return int(store.query(f"SELECT COUNT(*) FROM {table}")[0][0])


def test_old_traces_go_whole_and_the_rest_stays(any_store: Store) -> None:
    for n, age in ((1, 40), (2, 31), (3, 29), (4, 1)):
        _trace(any_store, n, age_days=age)
    any_store.write_feedback(Feedback(trace_id=tid(1), score=1.0))
    any_store.execute(
        "INSERT INTO results (trace_id, evaluator, judge_version, run_id, label, created_at, body)"
        " VALUES (?, 'faithfulness', 'v1', 'r1', 'pass', ?, '{}')",
        (tid(1), NOW - 40 * DAY_S),
    )
    naps: list[float] = []

    report = purge_expired(
        any_store, retention_days=30, now=NOW, batch_traces=1, sleep=naps.append, pause_s=0.01
    )

    assert (report.traces, report.spans, report.interactions) == (2, 6, 2)
    assert report.batches == 2 and naps == [0.01, 0.01]  # one trace per batch, a pause after each
    kept = {r[0] for r in any_store.query("SELECT DISTINCT trace_id FROM spans")}
    assert kept == {tid(3), tid(4)}
    assert any_store.get_interaction(tid(1)) is None and any_store.get_interaction(tid(3))
    assert any_store.trace_state(tid(2)) is None and any_store.trace_state(tid(4)) is not None
    assert _count(any_store, "log_events") == 2
    assert _count(any_store, "results") == 1  # results, feedback: kept
    assert _count(any_store, "feedback") == 1
    again = purge_expired(any_store, retention_days=30, now=NOW, sleep=naps.append)
    assert (again.traces, again.outbox, again.batches) == (0, 0, 0)


def test_outbox_rows_older_than_the_cutoff_go_delivered_or_not(any_store: Store) -> None:
    for n, age in enumerate((45, 35, 20)):
        any_store.enqueue("otlp", b"p%d" % n, "application/x-protobuf", now=NOW - age * DAY_S)
    report = purge_expired(
        any_store, retention_days=30, now=NOW, batch_rows=1, sleep=lambda s: None
    )
    assert (report.outbox, report.batches) == (2, 2)
    left = any_store.query("SELECT payload FROM outbox")
    assert [bytes(r[0]) for r in left] == [b"p2"]


def test_a_late_span_after_the_purge_starts_the_trace_afresh(any_store: Store) -> None:
    _trace(any_store, 7, age_days=60)
    purge_expired(any_store, retention_days=30, now=NOW, sleep=lambda s: None)
    any_store.write_spans([span(7, 9, parent=1)], now=NOW)
    state = any_store.trace_state(tid(7))
    assert state is not None and state["span_count"] == 1 and state["state"] == "open"


def test_ingest_is_not_blocked_while_purging(store: Store) -> None:
    for n in range(1, 401):
        _trace(store, n, age_days=90, spans=5)
    done = threading.Event()
    waits: list[float] = []

    def ingest() -> None:
        k = 10_000
        while not done.is_set():
            k += 1
            t0 = time.perf_counter()
            store.write_spans([span(k, 1)], now=NOW)
            waits.append(time.perf_counter() - t0)

    writer = threading.Thread(target=ingest)
    writer.start()
    try:
        report = purge_expired(store, retention_days=30, now=NOW, batch_traces=50, pause_s=0.005)
    finally:
        done.set()
        writer.join()
    assert report.traces == 400 and report.batches >= 8
    assert len(waits) >= report.batches  # writes went through between the batches
    assert _count(store, "spans") == len(waits)


def test_retention_days_setting() -> None:
    assert CollectorSettings().retention_days is None
    assert CollectorSettings(retention_days=7).retention_days == 7
    with pytest.raises(ValueError, match="greater than 0"):
        CollectorSettings(retention_days=0)
    with pytest.raises(ValueError, match="retention_days must be > 0"):
        purge_expired(None, retention_days=0)  # type: ignore[arg-type]
