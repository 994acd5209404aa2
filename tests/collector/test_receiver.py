"""The OTLP/HTTP receiver on a real uvicorn server: real exporter, raw posts, bad input."""

from __future__ import annotations

import gzip
import json
import zlib
from typing import Any

import httpx
import pytest
from opentelemetry.exporter.otlp.proto.http import Compression
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor

TRACE = "5b8efff798038103d269b633813fc60c"
SPAN_A = "eee19b7ec3c1b174"
SPAN_B = "eee19b7ec3c1b173"
JSON_TYPE = {"content-type": "application/json"}


def otlp_json(spans: list[dict[str, Any]], service: str = "rag-app") -> dict[str, Any]:
    """An OTLP/JSON body as a JS exporter sends it (hex ids, int64 as strings)."""
    return {
        "resourceSpans": [
            {
                "resource": {
                    "attributes": [{"key": "service.name", "value": {"stringValue": service}}]
                },
                "scopeSpans": [{"scope": {"name": "test"}, "spans": spans}],
            }
        ]
    }


def span_json(
    span_id: str, parent: str = "", trace_id: str = TRACE, **extra: Any
) -> dict[str, Any]:
    body = {
        "traceId": trace_id,
        "spanId": span_id,
        "parentSpanId": parent,
        "name": f"span-{span_id[:4]}",
        "kind": 1,
        "startTimeUnixNano": "1700000000000000000",
        "endTimeUnixNano": "1700000001000000000",
        "attributes": [
            {"key": "openinference.span.kind", "value": {"stringValue": "CHAIN"}},
            {"key": "retrieval.documents.0.document.score", "value": {"intValue": 1}},
            {"key": "tag.tags", "value": {"arrayValue": {"values": [{"stringValue": "a"}]}}},
        ],
        "status": {"code": 1},
    }
    body.update(extra)
    return body


def error_message(r: httpx.Response) -> str:
    """The message of a google.rpc.Status body in whichever encoding the server answered."""
    if r.headers["content-type"].startswith("application/x-protobuf"):
        from google.rpc.status_pb2 import Status

        return str(Status.FromString(r.content).message)
    return str(r.json()["message"])


def test_real_exporter_protobuf_gzip_is_stored(collector: Any) -> None:
    provider = TracerProvider(resource=Resource.create({"service.name": "rag-app"}))
    exporter = OTLPSpanExporter(endpoint=collector.traces_url, compression=Compression.Gzip)
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("test")
    with tracer.start_as_current_span("rag", attributes={"input.value": "¿Qué es?"}) as root:
        with tracer.start_as_current_span("retrieve") as child:
            child.set_attribute("retrieval.documents.0.document.id", "doc_1#chunk_0")
    provider.shutdown()
    trace_id = format(root.get_span_context().trace_id, "032x")
    spans = {s.span_id: s for s in collector.store.spans_for_trace(trace_id)}
    assert len(spans) == 2
    child_id = format(child.get_span_context().span_id, "016x")
    root_id = format(root.get_span_context().span_id, "016x")
    assert spans[child_id].parent_span_id == root_id
    assert spans[root_id].parent_span_id is None
    assert spans[root_id].attributes["input.value"] == "¿Qué es?"
    assert spans[root_id].resource["service.name"] == "rag-app"
    assert spans[child_id].attributes["retrieval.documents.0.document.id"] == "doc_1#chunk_0"


def test_json_hex_ids_and_value_types(collector: Any) -> None:
    body = otlp_json([span_json(SPAN_A), span_json(SPAN_B, parent=SPAN_A)])
    r = httpx.post(collector.traces_url, json=body)
    assert r.status_code == 200
    assert r.headers["content-type"].startswith("application/json")
    assert r.json() == {}
    spans = {s.span_id: s for s in collector.store.spans_for_trace(TRACE)}
    assert set(spans) == {SPAN_A, SPAN_B}
    assert spans[SPAN_B].parent_span_id == SPAN_A
    assert spans[SPAN_A].attributes["retrieval.documents.0.document.score"] == 1
    assert spans[SPAN_A].attributes["tag.tags"] == ["a"]
    assert spans[SPAN_A].start_ns == 1700000000000000000


def test_resending_changes_nothing_and_later_copy_wins(collector: Any) -> None:
    body = otlp_json([span_json(SPAN_A)])
    for _ in range(3):
        assert httpx.post(collector.traces_url, json=body).status_code == 200
    assert collector.store.count_spans() == 1
    state = collector.store.trace_state(TRACE)
    assert state["span_count"] == 1
    later = otlp_json([span_json(SPAN_A, endTimeUnixNano="1700000009000000000", name="final")])
    assert httpx.post(collector.traces_url, json=later).status_code == 200
    (span,) = collector.store.spans_for_trace(TRACE)
    assert span.name == "final" and span.end_ns == 1700000009000000000
    # an older copy arriving after the newer one does not overwrite it
    assert httpx.post(collector.traces_url, json=body).status_code == 200
    (span,) = collector.store.spans_for_trace(TRACE)
    assert span.name == "final"


def test_partial_success_for_invalid_ids(collector: Any) -> None:
    body = otlp_json([span_json(SPAN_A), span_json(SPAN_B, trace_id="0" * 32)])
    r = httpx.post(collector.traces_url, json=body)
    assert r.status_code == 200
    assert r.json() == {
        "partialSuccess": {"rejectedSpans": "1", "errorMessage": "1 rejected: invalid trace_id"}
    }
    assert collector.store.count_spans() == 1


def test_protobuf_response_in_protobuf(collector: Any) -> None:
    req = ExportTraceServiceRequest()
    rs = req.resource_spans.add()
    span = rs.scope_spans.add().spans.add()
    span.trace_id = bytes.fromhex(TRACE)
    span.span_id = b"\x00" * 8  # invalid
    r = httpx.post(
        collector.traces_url,
        content=req.SerializeToString(),
        headers={"content-type": "application/x-protobuf"},
    )
    assert r.status_code == 200
    assert r.headers["content-type"] == "application/x-protobuf"
    resp = ExportTraceServiceResponse.FromString(r.content)
    assert resp.partial_success.rejected_spans == 1


def test_chunked_deflate_body(collector: Any) -> None:
    raw = json.dumps(otlp_json([span_json(SPAN_A)])).encode()
    compressed = zlib.compress(raw)

    def chunks() -> Any:
        for i in range(0, len(compressed), 7):
            yield compressed[i : i + 7]

    r = httpx.post(
        collector.traces_url,
        content=chunks(),
        headers={"content-type": "application/json; charset=utf-8", "content-encoding": "deflate"},
    )
    assert r.status_code == 200
    assert collector.store.count_spans() == 1


BOMB = gzip.compress(b"\0" * (3 * 1024 * 1024))


@pytest.mark.parametrize(
    ("headers", "body", "status", "reason"),
    [
        ({"content-type": "application/x-protobuf"}, b"\x0a\xff\xff\xff", 400, "cannot decode"),
        ({"content-type": "application/json"}, b'{"resourceSpans": [', 400, "cannot decode"),
        (
            {"content-type": "application/json"},
            b'{"resourceSpans": "nope"}',
            400,
            "cannot decode",
        ),
        (
            {"content-type": "application/x-protobuf", "content-encoding": "gzip"},
            b"garbage-not-gzip",
            400,
            "decompress",
        ),
        (
            {"content-type": "application/x-protobuf", "content-encoding": "gzip"},
            gzip.compress(b"\x0a\x02\x0a\x00")[:-6],
            400,
            "truncated",
        ),
        ({"content-type": "text/plain"}, b"hello", 415, "Content-Type"),
        ({"content-type": "application/x-protobuf", "content-encoding": "br"}, b"x", 415, "br"),
        (
            {"content-type": "application/x-protobuf", "content-encoding": "gzip"},
            BOMB,
            413,
            "limit",
        ),
        (
            {"content-type": "application/json"},
            b'{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"5b8efff798038103d269b633813fc60c","spanId":"eee19b7ec3c1b174","name":"\xff\xfe"}]}]}]}',
            400,
            "cannot decode",
        ),
    ],
    ids=[
        "truncated-protobuf",
        "truncated-json",
        "wrong-types",
        "garbage-gzip",
        "truncated-gzip",
        "wrong-media-type",
        "unknown-encoding",
        "zip-bomb",
        "invalid-utf8",
    ],
)
def test_bad_input_table(
    start_collector: Any, headers: dict[str, str], body: bytes, status: int, reason: str
) -> None:
    live = start_collector(max_body_bytes=2 * 1024 * 1024)
    r = httpx.post(live.traces_url, content=body, headers=headers)
    assert r.status_code == status, r.text
    assert reason in error_message(r)
    assert live.store.count_spans() == 0


def test_invalid_utf8_in_protobuf_string_is_400(collector: Any) -> None:
    req = ExportTraceServiceRequest()
    span = req.resource_spans.add().scope_spans.add().spans.add()
    span.trace_id = bytes.fromhex(TRACE)
    span.span_id = bytes.fromhex(SPAN_A)
    span.name = "x"
    # Swap the one-byte name for two bytes that are not UTF-8, fixing the nested lengths.
    bad_span = span.SerializeToString().replace(b"\x2a\x01x", b"\x2a\x02\xff\xfe")
    scope = b"\x12" + bytes([len(bad_span)]) + bad_span
    resource = b"\x12" + bytes([len(scope)]) + scope
    body = b"\x0a" + bytes([len(resource)]) + resource
    r = httpx.post(
        collector.traces_url, content=body, headers={"content-type": "application/x-protobuf"}
    )
    assert r.status_code == 400
    assert collector.store.count_spans() == 0


def test_large_attribute_is_kept(collector: Any) -> None:
    big = "x" * (10 * 1024 * 1024)
    sp = span_json(SPAN_A)
    sp["attributes"].append({"key": "input.value", "value": {"stringValue": big}})
    r = httpx.post(collector.traces_url, json=otlp_json([sp]), timeout=60)
    assert r.status_code == 200
    (span,) = collector.store.spans_for_trace(TRACE)
    assert len(span.attributes["input.value"]) == len(big)


def test_empty_request_and_method_and_health(collector: Any) -> None:
    assert httpx.post(collector.traces_url, json={}).status_code == 200
    assert httpx.get(collector.traces_url).status_code == 405
    assert httpx.get(f"{collector.url}/healthz").json() == {"status": "ok"}
    ready = httpx.get(f"{collector.url}/readyz")
    assert ready.status_code == 200 and ready.json()["status"] == "ready"


def test_bearer_token(start_collector: Any) -> None:
    live = start_collector(token="s3cret")
    body = otlp_json([span_json(SPAN_A)])
    assert httpx.post(live.traces_url, json=body).status_code == 401
    bad = {"authorization": "Bearer nope"}
    assert httpx.post(live.traces_url, json=body, headers=bad).status_code == 401
    ok = {"authorization": "Bearer s3cret"}
    assert httpx.post(live.traces_url, json=body, headers=ok).status_code == 200
    assert live.store.count_spans() == 1


def test_overload_answers_429_with_retry_after(start_collector: Any) -> None:
    """The in-flight cap counts requests being decoded or stored, not ones still being sent."""
    import sqlite3
    import threading
    import time

    live = start_collector(max_inflight_requests=1)
    blocker = sqlite3.connect(live.store.path, timeout=30, check_same_thread=False)
    blocker.execute("BEGIN IMMEDIATE")  # the first request waits for the store, holding its slot
    first: list[int] = []
    t = threading.Thread(
        target=lambda: first.append(
            httpx.post(live.traces_url, json=otlp_json([span_json(SPAN_A)])).status_code
        )
    )
    t.start()
    try:
        deadline = time.monotonic() + 10
        while live.app.state.counters.inflight < 1:
            assert time.monotonic() < deadline, "the first request never reached the store"
            time.sleep(0.01)
        r = httpx.post(live.traces_url, json=otlp_json([span_json(SPAN_B)]))
    finally:
        blocker.rollback()
        blocker.close()
        t.join()
    assert r.status_code == 429
    assert r.headers["retry-after"] == "1"
    assert first == [200]
    assert [s.span_id for s in live.store.spans_for_trace(TRACE)] == [SPAN_A]


def test_feedback_by_span_id(collector: Any) -> None:
    httpx.post(collector.traces_url, json=otlp_json([span_json(SPAN_A)]))
    r = httpx.post(
        f"{collector.url}/v1/feedback",
        json={"span_id": SPAN_A, "label": "thumbs_down", "comment": "wrong price"},
    )
    assert r.status_code == 200
    assert r.json() == {"stored": True, "trace_id": TRACE}
    (fb,) = collector.store.feedback_for_trace(TRACE)
    assert fb.polarity == -1 and fb.comment == "wrong price"
    bad = httpx.post(f"{collector.url}/v1/feedback", json={"span_id": SPAN_A})
    assert bad.status_code == 400
    assert "score or label" in bad.json()["error"]
    broken = httpx.post(f"{collector.url}/v1/feedback", content=b"{", headers=JSON_TYPE)
    assert broken.status_code == 400 and broken.json()["error"].startswith("body: invalid JSON")


def test_logs_endpoint_keeps_genai_events(collector: Any) -> None:
    body = {
        "resourceLogs": [
            {
                "scopeLogs": [
                    {
                        "logRecords": [
                            {
                                "timeUnixNano": "1700000000500000000",
                                "traceId": TRACE,
                                "spanId": SPAN_A,
                                "eventName": "gen_ai.user.message",
                                "body": {
                                    "kvlistValue": {
                                        "values": [
                                            {"key": "content", "value": {"stringValue": "hola"}}
                                        ]
                                    }
                                },
                            },
                            {"timeUnixNano": "1", "body": {"stringValue": "plain app log"}},
                            {"eventName": "gen_ai.choice", "body": {"stringValue": "x"}},
                        ]
                    }
                ]
            }
        ]
    }
    r = httpx.post(f"{collector.url}/v1/logs", json=body)
    assert r.status_code == 200
    assert r.json()["partialSuccess"]["rejectedLogRecords"] == "1"
    (event,) = collector.store.log_events_for_trace(TRACE)
    assert event.event_name == "gen_ai.user.message"
    assert event.body == {"content": "hola"}
    assert event.span_id == SPAN_A
