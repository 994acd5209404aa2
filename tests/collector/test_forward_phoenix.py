"""Forwarding to a real Phoenix on loopback: exporter → collector → outbox → Phoenix's REST API."""

from __future__ import annotations

import contextlib
import json
import socket
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest
from fixtures_phoenix import PhoenixServer, free_port
from opentelemetry.exporter.otlp.proto.http import Compression
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor

from ragsieve.collector.forward.forwarder import Forwarder
from ragsieve.collector.serve.app import create_app
from ragsieve.collector.serve.server import ServerThread
from ragsieve.collector.settings import CollectorSettings
from ragsieve.collector.store import Store

pytestmark = pytest.mark.phoenix


def send_rag_traces(traces_url: str, n: int) -> set[tuple[str, str]]:
    """Send ``n`` three-span RAG traces with the real exporter; returns (trace_id, span_id)s."""
    provider = TracerProvider(resource=Resource.create({"service.name": "rag-app"}))
    exporter = OTLPSpanExporter(endpoint=traces_url, compression=Compression.Gzip, timeout=5)
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("test")
    sent: set[tuple[str, str]] = set()
    for i in range(n):
        with tracer.start_as_current_span("rag") as root:
            root.set_attribute("openinference.span.kind", "CHAIN")
            root.set_attribute("input.value", f"question {i}?")
            with tracer.start_as_current_span("retrieve") as ret:
                ret.set_attribute("openinference.span.kind", "RETRIEVER")
                ret.set_attribute("retrieval.documents.0.document.content", f"chunk {i}")
            with tracer.start_as_current_span("llm") as llm:
                llm.set_attribute("openinference.span.kind", "LLM")
                llm.set_attribute("output.value", f"answer {i}")
        for span in (root, ret, llm):
            ctx = span.get_span_context()
            sent.add((f"{ctx.trace_id:032x}", f"{ctx.span_id:016x}"))
    provider.shutdown()
    return sent


def phoenix_ids(phoenix: PhoenixServer, sent: set[tuple[str, str]]) -> set[tuple[str, str]]:
    found = phoenix.wait_for_spans({t for t, _ in sent}, len(sent), timeout_s=30)
    return {(s["context"]["trace_id"], s["context"]["span_id"]) for s in found}


def wait_until(cond: Callable[[], bool], timeout_s: float = 20.0) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if cond():
            return True
        time.sleep(0.05)
    return cond()


@contextlib.contextmanager
def forwarding_collector(store: Store, forwarder: Forwarder) -> Iterator[ServerThread]:
    settings = CollectorSettings(port=0, forward_otlp=forwarder.url)
    app = create_app(store, settings, run_settler=False, forwarder_factory=lambda s, c: forwarder)
    with ServerThread(app, port=0) as server:
        yield server


class TcpProxy:
    """A loopback TCP relay to ``upstream_port``: brings an endpoint up at a fixed port."""

    def __init__(self, port: int, upstream_port: int) -> None:
        self.upstream_port = upstream_port
        self.listener = socket.create_server(("127.0.0.1", port))
        self._threads: list[threading.Thread] = []
        self._spawn(self._accept)

    def _spawn(self, target: Callable[..., None], *args: Any) -> None:
        thread = threading.Thread(target=target, args=args, daemon=True)
        thread.start()
        self._threads.append(thread)

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:  # closed
                return
            upstream = socket.create_connection(("127.0.0.1", self.upstream_port))
            self._spawn(self._pipe, client, upstream)
            self._spawn(self._pipe, upstream, client)

    @staticmethod
    def _pipe(src: socket.socket, dst: socket.socket) -> None:
        with contextlib.suppress(OSError):
            while data := src.recv(65536):
                dst.sendall(data)
        with contextlib.suppress(OSError):
            dst.shutdown(socket.SHUT_WR)

    def close(self) -> None:
        self.listener.close()


def test_spans_from_the_exporter_appear_in_phoenix(
    phoenix_server: PhoenixServer, start_collector: Callable[..., Any], store: Store
) -> None:
    live = start_collector(forward_otlp=phoenix_server.traces_url, run_settler=False)
    sent = send_rag_traces(live.traces_url, 4)
    assert store.count_spans() == 12
    assert phoenix_ids(phoenix_server, sent) == sent
    spans = phoenix_server.spans(trace_ids={t for t, _ in sent})
    kinds = sorted(s["span_kind"] for s in spans)
    assert kinds == ["CHAIN"] * 4 + ["LLM"] * 4 + ["RETRIEVER"] * 4
    questions = sorted(
        s["attributes"].get("input.value") for s in spans if s["span_kind"] == "CHAIN"
    )
    assert questions == [f"question {i}?" for i in range(4)]
    stats = {"pending": 0, "dead": 0, "delivered": 12}
    assert wait_until(lambda: store.outbox_stats()["otlp"] == stats)


def test_phoenix_down_at_first_gets_everything_once_it_is_up(
    phoenix_server: PhoenixServer, store: Store
) -> None:
    port = free_port()
    phoenix_port = int(phoenix_server.base_url.rsplit(":", 1)[1])
    forwarder = Forwarder(store, f"http://127.0.0.1:{port}/v1/traces", max_backoff_s=1.0)
    with forwarding_collector(store, forwarder) as server:
        sent = send_rag_traces(f"{server.url}/v1/traces", 5)
        assert store.count_spans() == 15  # ingest is acknowledged while Phoenix is away
        assert wait_until(lambda: forwarder.worker.stats.retried >= 2)
        assert "ConnectError" in (forwarder.worker.stats.last_error or "")
        assert store.outbox_stats()["otlp"]["pending"] == 15
        assert phoenix_server.spans(trace_ids={t for t, _ in sent}) == []
        proxy = TcpProxy(port, phoenix_port)
        try:
            assert phoenix_ids(phoenix_server, sent) == sent
            assert wait_until(lambda: store.outbox_stats()["otlp"]["pending"] == 0)
        finally:
            proxy.close()
    assert forwarder.worker.stats.dead_lettered == 0
    assert forwarder.worker.stats.delivered_items == 15


def test_otlp_json_input_is_re_encoded_as_protobuf_for_phoenix(
    phoenix_server: PhoenixServer, start_collector: Callable[..., Any], store: Store
) -> None:
    live = start_collector(forward_otlp=phoenix_server.traces_url, run_settler=False)
    trace_id, root_id, child_id = (
        "4bf92f3577b34da6a3ce929d0e0e4736",
        "00f067aa0ba902b7",
        "a2fb4a1d1a96d312",
    )

    def span(span_id: str, parent: str, name: str) -> dict[str, Any]:
        return {
            "traceId": trace_id.upper(),  # hex ids are case-insensitive
            "spanId": span_id,
            "parentSpanId": parent,
            "name": name,
            "kind": 1,
            "startTimeUnixNano": str(time.time_ns() - 2_000_000),
            "endTimeUnixNano": str(time.time_ns()),
            "attributes": [
                {"key": "openinference.span.kind", "value": {"stringValue": "CHAIN"}},
                {"key": "input.value", "value": {"stringValue": f"json {name}"}},
                {"key": "llm.token_count.total", "value": {"intValue": "17"}},
            ],
            "status": {"code": 1},
        }

    body = {
        "resourceSpans": [
            {
                "resource": {
                    "attributes": [{"key": "service.name", "value": {"stringValue": "js"}}]
                },
                "scopeSpans": [
                    {
                        "scope": {"name": "js"},
                        "spans": [span(root_id, "", "root"), span(child_id, root_id, "child")],
                    }
                ],
            }
        ]
    }
    resp = httpx.post(
        live.traces_url, content=json.dumps(body), headers={"Content-Type": "application/json"}
    )
    assert resp.status_code == 200, resp.text
    (row,) = store.query("SELECT content_type, items FROM outbox WHERE topic = 'otlp'")
    assert row == ("application/x-protobuf", 2)
    sent = {(trace_id, root_id), (trace_id, child_id)}
    assert phoenix_ids(phoenix_server, sent) == sent
    by_id = {s["context"]["span_id"]: s for s in phoenix_server.spans(trace_ids=[trace_id])}
    assert by_id[child_id]["parent_id"] == root_id
    assert by_id[root_id]["attributes"]["input.value"] == "json root"
