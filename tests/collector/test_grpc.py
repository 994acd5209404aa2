"""OTLP/gRPC: the real ``OTLPSpanExporter`` (gRPC) and raw grpc calls against a loopback collector.

Same semantics as HTTP: durable before OK, the bearer token, gzip, partial success,
INVALID_ARGUMENT for garbage, RESOURCE_EXHAUSTED with a RetryInfo delay when over budget, the
message size limit, the logs service, and one line / exit 2 for a gRPC port in use.
"""

from __future__ import annotations

import socket
import subprocess
import time
from collections.abc import Iterator
from typing import Any

import grpc
import pytest
from console_script import ragsieve_script
from google.rpc.error_details_pb2 import RetryInfo
from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import (
    ExportLogsServiceRequest,
    ExportLogsServiceResponse,
)
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExportResult

from ragsieve.collector.instrument import llm_span, rag_span, retriever_span
from ragsieve.collector.serve.app import create_app
from ragsieve.collector.serve.server import ServerThread
from ragsieve.collector.settings import CollectorSettings

TRACE_EXPORT = "/opentelemetry.proto.collector.trace.v1.TraceService/Export"
LOGS_EXPORT = "/opentelemetry.proto.collector.logs.v1.LogsService/Export"


class GrpcCollector:
    def __init__(self, store: Any, token: str | None = None, **cfg: Any) -> None:
        settings = CollectorSettings(port=0, quiet_period_s=0.2, settle_interval_s=0.1, **cfg)
        self.app = create_app(store, settings, token=token, grpc_port=0)
        self.server = ServerThread(self.app, port=0).start()
        self.store = store
        self.target = f"127.0.0.1:{self.app.state.grpc_port}"

    def call(self, method: str, body: bytes, **kw: Any) -> Any:
        with grpc.insecure_channel(self.target) as channel:
            stub = channel.unary_unary(method)
            return stub(body, timeout=10, **kw)


@pytest.fixture
def grpc_collector(store) -> Iterator[Any]:
    made: list[GrpcCollector] = []

    def start(**kw: Any) -> GrpcCollector:
        c = GrpcCollector(store, **kw)
        made.append(c)
        return c

    yield start
    for c in made:
        c.server.stop()


def _send_pipeline(endpoint: str, n: int, **exporter_kw: Any) -> tuple[TracerProvider, Any]:
    exporter = OTLPSpanExporter(endpoint=endpoint, insecure=True, **exporter_kw)
    provider = TracerProvider(resource=Resource.create({"service.name": "grpc-test"}))
    provider.add_span_processor(BatchSpanProcessor(exporter, schedule_delay_millis=50))
    chunks = [{"id": "kb#1", "content": "The Starter plan allows 120 requests per minute."}]
    for i in range(n):
        question = f"How many requests does Starter allow? ({i})"
        with rag_span(question, tracer_provider=provider) as rag:
            with retriever_span(question, tracer_provider=provider) as r:
                r.record(chunks)
            with llm_span("m", documents=chunks, tracer_provider=provider) as g:
                g.record("Starter allows 120 requests per minute.")
            rag.record("Starter allows 120 requests per minute.")
    return provider, exporter


def test_the_real_grpc_exporter_stores_every_span_durably_with_gzip(grpc_collector):
    live = grpc_collector()
    provider, _ = _send_pipeline(live.target, 20, compression=grpc.Compression.Gzip)
    assert provider.force_flush(10_000)
    provider.shutdown()
    assert live.store.count_spans() == 60  # committed before the OK the exporter saw
    assert live.app.state.counters.accepted_spans == 60
    deadline = time.monotonic() + 15
    while len(live.store.list_interactions()) < 20:
        assert time.monotonic() < deadline
        time.sleep(0.1)
    rec = live.store.list_interactions()[0]
    assert rec.answer == "Starter allows 120 requests per minute."
    assert [(d.id, d.in_prompt) for d in rec.documents] == [("kb#1", True)]


def test_bearer_token_from_metadata(grpc_collector):
    live = grpc_collector(token="s3cret")
    provider, exporter = _send_pipeline(live.target, 1)
    provider.shutdown()
    assert live.store.count_spans() == 0  # no token: UNAUTHENTICATED, nothing stored
    with pytest.raises(grpc.RpcError) as err:
        live.call(TRACE_EXPORT, ExportTraceServiceRequest().SerializeToString())
    assert err.value.code() == grpc.StatusCode.UNAUTHENTICATED
    good = OTLPSpanExporter(
        endpoint=live.target, insecure=True, headers={"authorization": "Bearer s3cret"}
    )
    provider, _ = _send_pipeline(live.target, 0)
    spans = _finished_spans(2)
    assert good.export(spans) == SpanExportResult.SUCCESS
    assert live.store.count_spans() == 2


def _finished_spans(n: int) -> list[Any]:
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    memory = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(memory))
    tracer = provider.get_tracer("t")
    with tracer.start_as_current_span("root"):
        for _ in range(n - 1):
            with tracer.start_as_current_span("child"):
                pass
    return list(memory.get_finished_spans())


def test_garbage_is_invalid_argument_and_bad_spans_are_a_partial_success(grpc_collector):
    live = grpc_collector()
    with pytest.raises(grpc.RpcError) as err:
        live.call(TRACE_EXPORT, b"\xff\xff not protobuf")
    assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    req = ExportTraceServiceRequest()
    spans = req.resource_spans.add().scope_spans.add().spans
    good = spans.add(name="ok", trace_id=b"\x01" * 16, span_id=b"\x02" * 8)
    good.start_time_unix_nano, good.end_time_unix_nano = 1, 2
    spans.add(name="bad", trace_id=b"", span_id=b"\x03" * 8)  # no trace id
    out = ExportTraceServiceResponse.FromString(live.call(TRACE_EXPORT, req.SerializeToString()))
    assert out.partial_success.rejected_spans == 1
    assert "trace" in out.partial_success.error_message
    assert live.store.count_spans() == 1


def test_over_budget_is_resource_exhausted_with_a_retry_delay(grpc_collector):
    live = grpc_collector(max_inflight_bytes=1024, retry_after_s=3)
    req = ExportTraceServiceRequest()
    spans = req.resource_spans.add().scope_spans.add().spans
    for i in range(40):
        spans.add(name="x" * 40, trace_id=b"\x01" * 16, span_id=i.to_bytes(8, "big"))
    body = req.SerializeToString()
    assert len(body) > 1024
    held = live.app.state.byte_budget.claim()  # another request in flight holds 1000 bytes
    held.charge(1000)
    try:
        with pytest.raises(grpc.RpcError) as err:
            live.call(TRACE_EXPORT, body)
    finally:
        held.release()
    assert err.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
    retry = dict(err.value.trailing_metadata())["google.rpc.retryinfo-bin"]
    assert RetryInfo.FromString(retry).retry_delay.seconds == 3
    assert live.store.count_spans() == 0


def test_message_size_limit(grpc_collector):
    live = grpc_collector(max_body_bytes=2048)
    with pytest.raises(grpc.RpcError) as err:
        live.call(TRACE_EXPORT, b"\x0a" + b"\x00" * 5000)
    assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT  # as HTTP's 413: not retried
    assert live.store.count_spans() == 0


def test_logs_service(grpc_collector):
    live = grpc_collector()
    req = ExportLogsServiceRequest()
    rec = req.resource_logs.add().scope_logs.add().log_records.add()
    rec.trace_id, rec.span_id = b"\x01" * 16, b"\x02" * 8
    rec.time_unix_nano = 1
    rec.body.string_value = "hello"
    out = ExportLogsServiceResponse.FromString(live.call(LOGS_EXPORT, req.SerializeToString()))
    assert out.partial_success.rejected_log_records == 0
    assert live.app.state.counters.requests == 1


def test_a_grpc_port_in_use_is_one_line_and_exit_2(tmp_path):
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        res = subprocess.run(
            [str(ragsieve_script()), "collector", "serve", "--port", "0", "--grpc-port", str(port)]
            + ["--store", f"sqlite:///{tmp_path / 'x.db'}"],
            capture_output=True,
            text=True,
            timeout=60,
            cwd=tmp_path,
        )
    assert res.returncode == 2 and res.stdout == ""
    assert res.stderr.splitlines() == [
        f"error: --grpc-port {port}: 127.0.0.1:{port} is already in use (another collector?);"
        " stop it or choose another --grpc-port"
    ]
