"""Inputs that once broke the receiver: good spans are kept and bad data never gets a 5xx."""

from __future__ import annotations

import gzip
import sqlite3
import threading
import time
from typing import Any

import httpx
import pytest

from ragsieve.collector.receive.writer import SpanWriter, WriteJob
from ragsieve.collector.wire.spans import SpanRecord

TRACE = "5b8efff798038103d269b633813fc60c"


def body(*span_ids: str, trace_id: str = TRACE, **extra: Any) -> dict[str, Any]:
    spans = [
        {
            "traceId": trace_id,
            "spanId": sid,
            "name": "s",
            "startTimeUnixNano": "1700000000000000000",
            "endTimeUnixNano": "1700000001000000000",
            **extra,
        }
        for sid in span_ids
    ]
    return {"resourceSpans": [{"scopeSpans": [{"spans": spans}]}]}


def post_gzip(url: str, raw: bytes) -> httpx.Response:
    headers = {"content-type": "application/json", "content-encoding": "gzip"}
    return httpx.post(url, content=raw, headers=headers)


def test_concatenated_gzip_members_are_all_read(collector: Any) -> None:
    a = httpx.Request("POST", "/", json=body("00000000000000a1")).read()
    raw = gzip.compress(a)
    r = post_gzip(collector.traces_url, raw + raw)
    # Two JSON documents back to back are not one OTLP body: refused whole, nothing half-stored.
    assert r.status_code == 400
    one = gzip.compress(a[: len(a) // 2]) + gzip.compress(a[len(a) // 2 :])
    assert post_gzip(collector.traces_url, one).status_code == 200
    assert collector.store.count_spans() == 1


def test_trailing_garbage_after_gzip_is_400(collector: Any) -> None:
    raw = gzip.compress(httpx.Request("POST", "/", json=body("00000000000000a1")).read())
    r = post_gzip(collector.traces_url, raw + b"GARBAGE")
    assert r.status_code == 400 and "trailing data" in r.json()["message"]
    assert collector.store.count_spans() == 0


def test_timestamps_beyond_int64_are_rejected_per_span(collector: Any) -> None:
    good = body("00000000000000a1")
    bad = body("00000000000000a2", endTimeUnixNano=str(2**64 - 1))
    good["resourceSpans"] += bad["resourceSpans"]
    r = httpx.post(collector.traces_url, json=good)
    assert r.status_code == 200
    assert r.json()["partialSuccess"]["rejectedSpans"] == "1"
    assert "timestamp out of range" in r.json()["partialSuccess"]["errorMessage"]
    assert [s.span_id for s in collector.store.spans_for_trace(TRACE)] == ["00000000000000a1"]


def test_nul_in_span_name_is_stored(collector: Any) -> None:
    r = httpx.post(collector.traces_url, json=body("00000000000000a1", name="a\u0000b"))
    assert r.status_code == 200
    (span,) = collector.store.spans_for_trace(TRACE)
    assert span.name == "a\ufffdb"


@pytest.mark.parametrize("path", ["/v1/traces", "/v1/logs", "/v1/feedback"])
def test_deeply_nested_json_is_400(collector: Any, path: str) -> None:
    deep = b"[" * 100_000 + b"]" * 100_000
    r = httpx.post(collector.url + path, content=deep, headers={"content-type": "application/json"})
    assert r.status_code == 400


def test_too_many_spans_in_one_request_is_413(start_collector: Any) -> None:
    live = start_collector(max_spans_per_request=3)
    ids = [f"{i:016x}" for i in range(1, 5)]
    r = httpx.post(live.traces_url, json=body(*ids))
    assert r.status_code == 413 and "smaller batches" in r.json()["message"]
    assert httpx.post(live.traces_url, json=body(*ids[:3])).status_code == 200


def test_resent_logs_change_nothing(collector: Any) -> None:
    logs = {
        "resourceLogs": [
            {
                "scopeLogs": [
                    {
                        "logRecords": [
                            {
                                "timeUnixNano": "1700000000500000000",
                                "traceId": TRACE,
                                "spanId": "00000000000000a1",
                                "eventName": "gen_ai.user.message",
                                "body": {"stringValue": "hola"},
                            }
                        ]
                    }
                ]
            }
        ]
    }
    for _ in range(3):
        assert httpx.post(f"{collector.url}/v1/logs", json=logs).status_code == 200
    assert len(collector.store.log_events_for_trace(TRACE)) == 1
    assert collector.store.trace_state(TRACE)["late_spans"] == 0


def test_resent_spans_are_forwarded_once(start_collector: Any) -> None:
    # Forwarding to a closed port: rows stay pending, so the outbox shows what was queued.
    live = start_collector(forward_otlp="http://127.0.0.1:9/v1/traces")
    for _ in range(3):
        assert httpx.post(live.traces_url, json=body("00000000000000a1")).status_code == 200
    assert live.store.outbox_stats()["otlp"]["pending"] == 1


def test_feedback_ids_are_normalised_or_refused(collector: Any) -> None:
    httpx.post(collector.traces_url, json=body("00000000000000a1"))
    upper = {"trace_id": TRACE.upper(), "label": "thumbs_down"}
    r = httpx.post(f"{collector.url}/v1/feedback", json=upper)
    assert r.status_code == 200 and r.json()["trace_id"] == TRACE
    assert collector.store.feedback_for_trace(TRACE)[0].polarity == -1
    bad = httpx.post(f"{collector.url}/v1/feedback", json={"span_id": "xyz", "label": "up"})
    assert bad.status_code == 400 and "hex" in bad.json()["error"]


def _span(span_id: str, end_ns: int = 2_000) -> SpanRecord:
    return SpanRecord(
        trace_id=TRACE,
        span_id=span_id,
        parent_span_id=None,
        name="s",
        start_ns=1_000,
        end_ns=end_ns,
    )


def test_one_bad_request_does_not_fail_the_others_in_its_batch(store: Any) -> None:
    writer = SpanWriter(store)
    blocker = sqlite3.connect(store.path, timeout=30, check_same_thread=False)
    blocker.execute("BEGIN IMMEDIATE")  # hold the database so the next jobs queue up together
    try:
        first = writer.submit(WriteJob(spans=[_span("00000000000000a1")]))
        time.sleep(0.2)
        bad = writer.submit(WriteJob(spans=[_span("00000000000000a2", end_ns=2**64)]))
        good = writer.submit(WriteJob(spans=[_span("00000000000000a3")]))
        threading.Timer(0.2, blocker.rollback).start()
        assert first.result(10).written == 1
        with pytest.raises(OverflowError):
            bad.result(10)
        assert good.result(10).written == 1
    finally:
        writer.close()
        blocker.close()
    assert {s.span_id for s in store.spans_for_trace(TRACE)} == {
        "00000000000000a1",
        "00000000000000a3",
    }
