"""Hostile inputs, second round, on OTLP/gRPC (issue 28 rows 1 and 10).

Streams that send their headers and never a message used to hold grpc's RPC slots
(``maximum_concurrent_rpcs``) so that every good Export got RESOURCE_EXHAUSTED; now they cost no
slot, and end with DEADLINE_EXCEEDED. A message over ``max_body_bytes`` is INVALID_ARGUMENT (not
retried by the exporter), as the README says, not grpc's RESOURCE_EXHAUSTED.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any

import grpc
import pytest
from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExportResult
from test_grpc import TRACE_EXPORT, GrpcCollector


@pytest.fixture
def live(store: Any) -> Iterator[GrpcCollector]:
    c = GrpcCollector(store, max_inflight_requests=4, max_queued_writes=4)
    yield c
    c.server.stop()


def _request(n: int = 1, size: int = 10) -> bytes:
    req = ExportTraceServiceRequest()
    spans = req.resource_spans.add().scope_spans.add().spans
    for i in range(n):
        spans.add(
            name="x" * size,
            trace_id=b"\x07" * 16,
            span_id=(i + 1).to_bytes(8, "big"),
            start_time_unix_nano=1,
            end_time_unix_nano=2,
        )
    return req.SerializeToString()


def test_streams_that_never_send_a_message_hold_no_slot_and_time_out(
    live: GrpcCollector,
) -> None:
    live.app.state.grpc_receiver.receive_deadline_s = 3.0
    release = threading.Event()

    def never() -> Iterator[bytes]:
        release.wait(30)
        return
        yield b""  # pragma: no cover - makes this a generator

    channels = [grpc.insecure_channel(live.target) for _ in range(3)]
    # 3 connections x 12 streams: far more than the old slot count (4 + 4)
    calls = [c.stream_unary(TRACE_EXPORT) for c in channels for _ in range(12)]
    stuck = [call.future(never(), timeout=60) for call in calls]
    try:
        time.sleep(0.5)  # the streams are open and waiting
        started = time.monotonic()
        for _ in range(5):  # good clients get through meanwhile
            assert live.call(TRACE_EXPORT, _request()) is not None
        assert time.monotonic() - started < 2.5
        codes = [f.exception(timeout=20) for f in stuck]
        assert {e.code() for e in codes if e is not None} == {grpc.StatusCode.DEADLINE_EXCEEDED}
        assert all(e is not None for e in codes)
        assert "not received within 3 s" in codes[0].details()
    finally:
        release.set()
        for c in channels:
            c.close()
    assert live.app.state.counters.inflight == 0


def test_a_message_over_max_body_bytes_is_invalid_argument_and_not_retried(store: Any) -> None:
    live = GrpcCollector(store, max_body_bytes=4096)
    try:
        big = _request(n=1, size=6000)
        assert 4096 < len(big) < 2 * 4096
        with pytest.raises(grpc.RpcError) as err:
            live.call(TRACE_EXPORT, big)
        assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert "max_body_bytes" in (err.value.details() or "")
        exporter = OTLPSpanExporter(endpoint=f"http://{live.target}", insecure=True, timeout=10)
        provider = TracerProvider(resource=Resource.create({"service.name": "big"}))
        spans = list(_finished(provider))
        started = time.monotonic()
        result = exporter.export(spans)
        assert result == SpanExportResult.FAILURE
        assert time.monotonic() - started < 2.0  # refused once, not retried for seconds
        assert live.store.count_spans() == 0
        assert live.call(TRACE_EXPORT, _request()) is not None  # a normal one still goes in
    finally:
        live.server.stop()


def _finished(provider: TracerProvider) -> Any:
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    mem = InMemorySpanExporter()
    provider.add_span_processor(SimpleSpanProcessor(mem))
    with provider.get_tracer("t").start_as_current_span("s") as span:
        span.set_attribute("blob", "y" * 6000)
    return mem.get_finished_spans()
