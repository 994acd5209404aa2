"""A slow, throttling or refusing OTLP endpoint (real uvicorn) never slows ingest or loses spans."""

from __future__ import annotations

import asyncio
import contextlib
import gzip
import threading
import time
from collections.abc import Callable, Iterator

import pytest
from opentelemetry.exporter.otlp.proto.http import Compression
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from ragsieve.collector.forward.forwarder import Forwarder, parse_retry_after
from ragsieve.collector.serve.app import create_app
from ragsieve.collector.serve.server import ServerThread
from ragsieve.collector.settings import CollectorSettings
from ragsieve.collector.store import Store


class Endpoint:
    """An OTLP/HTTP endpoint whose answers the test scripts; records what it stored."""

    def __init__(self) -> None:
        self.mode = "ok"  # ok | slow | 503
        self.script: list[tuple[int, dict[str, str]]] = []  # answers used before ``mode``
        self.received: list[tuple[str, str]] = []
        self.attempts: list[float] = []
        self.inflight = 0
        self.max_inflight_during_ingest = 0
        self.on_request: Callable[[], None] = lambda: None
        self._lock = threading.Lock()
        self.app = Starlette(routes=[Route("/v1/traces", self.traces, methods=["POST"])])

    async def traces(self, request: Request) -> Response:
        self.attempts.append(time.monotonic())
        self.on_request()
        body = await request.body()
        if self.script:
            status, headers = self.script.pop(0)
            return Response(b"scripted", status_code=status, headers=headers)
        if self.mode == "slow":
            self.inflight += 1
            try:
                await asyncio.sleep(3.0)
            finally:
                self.inflight -= 1
            return Response(b"busy", status_code=503)
        if request.headers.get("content-type") != "application/x-protobuf":
            return Response(b"protobuf only", status_code=415)
        if request.headers.get("content-encoding") == "gzip":
            body = gzip.decompress(body)
        msg = ExportTraceServiceRequest()
        msg.ParseFromString(body)
        with self._lock:
            for rs in msg.resource_spans:
                for ss in rs.scope_spans:
                    self.received += [(s.trace_id.hex(), s.span_id.hex()) for s in ss.spans]
        return Response(b"", media_type="application/x-protobuf")


@pytest.fixture
def endpoint() -> Iterator[tuple[Endpoint, str]]:
    ep = Endpoint()
    with ServerThread(ep.app, port=0) as server:
        yield ep, f"{server.url}/v1/traces"


@contextlib.contextmanager
def collector_forwarding_to(store: Store, forwarder: Forwarder) -> Iterator[str]:
    settings = CollectorSettings(port=0, forward_otlp=forwarder.url)
    app = create_app(store, settings, run_settler=False, forwarder_factory=lambda s, c: forwarder)
    with ServerThread(app, port=0) as server:
        yield f"{server.url}/v1/traces"


def send_spans(
    traces_url: str, n: int, on_each: Callable[[], None] = lambda: None
) -> tuple[set[tuple[str, str]], list[float]]:
    """Export ``n`` one-span requests with the real exporter; returns ids and each latency."""
    provider = TracerProvider()
    provider.add_span_processor(
        SimpleSpanProcessor(
            OTLPSpanExporter(endpoint=traces_url, compression=Compression.Gzip, timeout=10)
        )
    )
    tracer = provider.get_tracer("test")
    sent: set[tuple[str, str]] = set()
    latencies = []
    for i in range(n):
        t0 = time.monotonic()
        with tracer.start_as_current_span(f"span-{i}") as span:
            span.set_attribute("input.value", "x" * 200)
        latencies.append(time.monotonic() - t0)  # SimpleSpanProcessor exports on end
        ctx = span.get_span_context()
        sent.add((f"{ctx.trace_id:032x}", f"{ctx.span_id:016x}"))
        on_each()
    provider.shutdown()
    return sent, latencies


def wait_until(cond: Callable[[], bool], timeout_s: float = 20.0) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if cond():
            return True
        time.sleep(0.05)
    return cond()


def test_a_slow_failing_endpoint_never_slows_ingest_and_loses_nothing(
    endpoint: tuple[Endpoint, str], store: Store
) -> None:
    ep, url = endpoint
    ep.mode = "slow"  # holds every request 3 s, then 503
    forwarder = Forwarder(store, url, max_backoff_s=0.5, timeout_s=10)
    with collector_forwarding_to(store, forwarder) as traces_url:
        send_spans(traces_url, 1)  # the forwarder now sits in a 3 s request to the endpoint
        assert wait_until(lambda: ep.inflight == 1, 5)

        def track() -> None:
            ep.max_inflight_during_ingest = max(ep.max_inflight_during_ingest, ep.inflight)

        sent, latencies = send_spans(traces_url, 40, track)
        assert ep.max_inflight_during_ingest == 1  # ingest ran while a forward was stuck
        assert max(latencies) < 1.0, latencies  # far below the endpoint's 3 s
        assert store.count_spans() == 41
        ep.mode = "ok"
        assert wait_until(lambda: store.outbox_stats()["otlp"]["pending"] == 0, 30)
    assert sent <= set(ep.received)
    assert len(ep.received) == len(set(ep.received)) == 41
    assert forwarder.worker.stats.retried >= 1 and forwarder.worker.stats.dead_lettered == 0


def test_503_halves_the_pace_and_retry_after_is_honoured(
    endpoint: tuple[Endpoint, str], store: Store
) -> None:
    ep, url = endpoint
    ep.script = [(503, {"Retry-After": "1"}), (503, {}), (503, {})]
    forwarder = Forwarder(store, url, max_spans_per_s=1000.0, max_backoff_s=0.2)
    paces: list[float] = []
    ep.on_request = lambda: paces.append(forwarder.spans_per_s)
    with collector_forwarding_to(store, forwarder) as traces_url:
        sent, _ = send_spans(traces_url, 10)
        assert wait_until(lambda: store.outbox_stats()["otlp"]["pending"] == 0, 20)
    assert set(ep.received) == sent
    assert ep.attempts[1] - ep.attempts[0] >= 0.95  # Retry-After: 1
    assert paces[0] == 1000.0 and paces[3] == 125.0  # halved by each of the three 503s
    assert paces[-1] > paces[3]  # and climbing back with deliveries


def test_a_refused_payload_is_dead_lettered_not_lost_and_others_flow(
    endpoint: tuple[Endpoint, str], store: Store
) -> None:
    ep, url = endpoint
    ep.script = [(400, {})]
    forwarder = Forwarder(store, url)
    with collector_forwarding_to(store, forwarder) as traces_url:
        sent, _ = send_spans(traces_url, 3)
        assert wait_until(lambda: store.outbox_stats()["otlp"]["delivered"] == 2)
    assert forwarder.worker.stats.dead_lettered == 1
    (row,) = store.query("SELECT items, last_error FROM outbox WHERE delivered_at IS NULL")
    assert row[0] == 1 and row[1].startswith("dead letter: HTTP 400")
    assert len(set(ep.received)) == 2 and set(ep.received) < sent


@pytest.mark.parametrize(
    ("header", "expected"),
    [
        ("3", 3.0),
        ("0", 0.0),
        ("-2", 0.0),
        ("soon", None),
        (None, None),
        ("Wed, 21 Oct 2015 07:28:00 GMT", 30.0),
    ],
)
def test_retry_after_parsing(header: str | None, expected: float | None) -> None:
    now = 1445412450.0  # 30 s before the HTTP-date above
    assert parse_retry_after(header, now=now) == expected
