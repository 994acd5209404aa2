"""Crash safety: SIGKILL the collector mid-ingest; every acknowledged span survives, once.

Over OTLP/HTTP and OTLP/gRPC, each with the real OTel SDK exporter for that transport.
"""

from __future__ import annotations

import os
import signal
import socket
import sqlite3
import subprocess
import threading
import time
from collections.abc import Sequence
from pathlib import Path

import grpc
import httpx
import pytest
from console_script import ragsieve_script
from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import (
    OTLPSpanExporter as GrpcSpanExporter,
)
from opentelemetry.exporter.otlp.proto.http import Compression
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExportResult

pytestmark = pytest.mark.slow


class AckRecording:
    """Mixed into a real OTLP exporter: notes which spans the collector acknowledged (a 2xx over
    HTTP, OK over gRPC)."""

    def __init__(self, **kwargs: object) -> None:
        super().__init__(**kwargs)
        self.acked: set[tuple[str, str]] = set()
        self.failed_batches = 0
        self._lock = threading.Lock()

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        result: SpanExportResult = super().export(spans)  # type: ignore[misc]
        ids = {(f"{s.context.trace_id:032x}", f"{s.context.span_id:016x}") for s in spans}
        with self._lock:
            if result is SpanExportResult.SUCCESS:
                self.acked |= ids
            else:
                self.failed_batches += 1
        return result


class AckRecordingExporter(AckRecording, OTLPSpanExporter):
    """The real OTLP/HTTP exporter, recording acknowledgements."""


class GrpcAckRecordingExporter(AckRecording, GrpcSpanExporter):
    """The real OTLP/gRPC exporter (``opentelemetry-exporter-otlp-proto-grpc``), recording
    acknowledgements."""


def _ragsieve_cmd() -> list[str]:
    return [str(ragsieve_script())]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class CollectorProcess:
    """``ragsieve collector serve`` as a real subprocess."""

    def __init__(self, port: int, db: Path, log: Path, grpc_port: int = 0) -> None:
        self.port, self.db, self.log, self.grpc_port = port, db, log, grpc_port
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("RAGSIEVE_", "OTEL_"))}
        with open(self.log, "ab") as out:
            self.proc = subprocess.Popen(
                [
                    *_ragsieve_cmd(),
                    "collector",
                    "serve",
                    "--port",
                    str(self.port),
                    "--grpc-port",
                    str(self.grpc_port),  # 0 = off: the HTTP run leaves 4317 alone
                    "--store",
                    f"sqlite:///{self.db}",
                ],
                env=env,
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
            )
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                pytest.fail(f"collector exited with {self.proc.returncode}: {self.log.read_text()}")
            try:
                if httpx.get(f"http://127.0.0.1:{self.port}/healthz", timeout=1).status_code == 200:
                    return
            except httpx.TransportError:
                pass
            time.sleep(0.05)
        pytest.fail(f"collector not ready: {self.log.read_text()}")

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGKILL)
            self.proc.wait(10)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.kill()


def _wait_acked(exporter: AckRecording, n: int, timeout: float, what: str) -> None:
    """Block until the collector has acknowledged ``n`` spans; fail after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while len(exporter.acked) < n:
        if time.monotonic() > deadline:
            pytest.fail(f"{what}: {len(exporter.acked)} of {n} spans acknowledged")
        time.sleep(0.01)


@pytest.mark.parametrize("transport", ["http", "grpc"])
def test_sigkill_during_sustained_ingest_keeps_every_acknowledged_span_once(
    tmp_path: Path, transport: str
) -> None:
    db = tmp_path / "crash.db"
    grpc_port = _free_port() if transport == "grpc" else 0
    collector = CollectorProcess(_free_port(), db, tmp_path / "collector.log", grpc_port)
    collector.start()
    exporter: AckRecordingExporter | GrpcAckRecordingExporter
    if transport == "grpc":
        exporter = GrpcAckRecordingExporter(
            endpoint=f"127.0.0.1:{grpc_port}",
            insecure=True,
            compression=grpc.Compression.Gzip,
            timeout=3,
        )
    else:
        exporter = AckRecordingExporter(
            endpoint=f"http://127.0.0.1:{collector.port}/v1/traces",
            compression=Compression.Gzip,
            timeout=3,
        )
    provider = TracerProvider(resource=Resource.create({"service.name": "crash-test"}))
    provider.add_span_processor(
        BatchSpanProcessor(
            exporter, max_queue_size=50_000, schedule_delay_millis=20, max_export_batch_size=64
        )
    )
    tracer = provider.get_tracer("crash")
    generated: set[tuple[str, str]] = set()
    stop = threading.Event()

    def produce() -> None:  # ~1000 spans/s of five-span RAG traces
        n = 0
        while not stop.is_set():
            with tracer.start_as_current_span("rag") as root:
                root.set_attribute("input.value", f"question {n}")
                spans = [root]
                for kind in ("EMBEDDING", "RETRIEVER", "RERANKER", "LLM"):
                    with tracer.start_as_current_span(kind.lower()) as child:
                        child.set_attribute("openinference.span.kind", kind)
                        child.set_attribute("output.value", "chunk " * 100)
                        spans.append(child)
            for span in spans:
                ctx = span.get_span_context()
                generated.add((f"{ctx.trace_id:032x}", f"{ctx.span_id:016x}"))
            n += 1
            time.sleep(0.005)

    producer = threading.Thread(target=produce, daemon=True)
    try:
        producer.start()
        acked_at_kill = []
        for threshold in (1500, 3000):  # two kills, each during sustained export traffic
            _wait_acked(exporter, threshold, 30, "ingest stalled before the kill")
            acked_at_kill.append(len(exporter.acked))
            collector.kill()  # SIGKILL: no shutdown hooks, mid-request
            collector.start()
        _wait_acked(exporter, acked_at_kill[-1] + 600, 90, "ingest did not resume after restart")
        stop.set()
        producer.join(5)
        assert provider.force_flush(20_000)
    finally:
        stop.set()
        provider.shutdown()
        collector.stop()

    acked = exporter.acked
    assert acked_at_kill[0] >= 1500 and acked_at_kill[1] >= 3000, "ingest stalled"
    assert len(acked) > acked_at_kill[1] + 500, "ingest did not resume after the restart"
    conn = sqlite3.connect(db)
    try:
        assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        stored_rows = conn.execute("SELECT trace_id, span_id FROM spans").fetchall()
        trace_counts = dict(conn.execute("SELECT trace_id, span_count FROM traces").fetchall())
    finally:
        conn.close()
    stored = {(t, s) for t, s in stored_rows}
    assert len(stored_rows) == len(stored), "a span was stored twice"
    missing = acked - stored
    assert not missing, f"{len(missing)} acknowledged spans lost, e.g. {sorted(missing)[:3]}"
    assert stored <= generated
    # Per-trace bookkeeping counts each stored span once, also across the crash.
    per_trace: dict[str, int] = {}
    for trace_id, _ in stored:
        per_trace[trace_id] = per_trace.get(trace_id, 0) + 1
    assert trace_counts == per_trace
