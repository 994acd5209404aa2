"""instrument(): the real OTel SDK sends OpenInference spans over OTLP/HTTP to a loopback port."""

from __future__ import annotations

import gzip
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.trace import StatusCode

from ragsieve.collector.instrument import (
    current_trace_id,
    instrument,
    llm_span,
    rag_span,
    reranker_span,
    retriever_span,
)

REPO = Path(__file__).resolve().parents[2]


def _value(v):  # OTLP AnyValue -> python
    kind = v.WhichOneof("value")
    return getattr(v, kind) if kind else None


class Receiver:
    """A minimal OTLP/HTTP protobuf trace receiver on 127.0.0.1 (test-only)."""

    def __init__(self) -> None:
        self.spans: list[dict] = []
        self.requests: list[dict] = []
        self.lock = threading.Lock()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802
                body = self.rfile.read(int(self.headers["Content-Length"]))
                headers = {k.lower(): v for k, v in self.headers.items()}
                if headers.get("content-encoding") == "gzip":
                    body = gzip.decompress(body)
                req = ExportTraceServiceRequest.FromString(body)
                with outer.lock:
                    outer.requests.append(headers)
                    for rs in req.resource_spans:
                        res = {a.key: _value(a.value) for a in rs.resource.attributes}
                        for ss in rs.scope_spans:
                            for s in ss.spans:
                                outer.spans.append(
                                    {
                                        "name": s.name,
                                        "trace_id": s.trace_id.hex(),
                                        "span_id": s.span_id.hex(),
                                        "parent": s.parent_span_id.hex(),
                                        "attrs": {a.key: _value(a.value) for a in s.attributes},
                                        "status": s.status.code,
                                        "events": [e.name for e in s.events],
                                        "event_attrs": [
                                            {a.key: _value(a.value) for a in e.attributes}
                                            for e in s.events
                                        ],
                                        "resource": res,
                                    }
                                )
                out = ExportTraceServiceResponse().SerializeToString()
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", str(len(out)))
                self.end_headers()
                self.wfile.write(out)

            def log_message(self, *args) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1/traces"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def by_name(self, name: str) -> dict:
        return next(s for s in self.spans if s["name"] == name)

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    r = Receiver()
    yield r
    r.close()


DOCS = [
    {
        "id": "doc_1#chunk_0",
        "content": "Starter allows 120 requests per minute.",
        "score": 0.91,
        "metadata": {"lang": "en"},
    },
    {"id": "doc_2#chunk_0", "content": "Starter permite 120 solicitudes por minuto.", "score": 0.5},
]


def test_pipeline_spans_reach_the_collector_with_openinference_attributes(receiver):
    provider = instrument(
        "support-bot",
        receiver.url,
        set_global=False,
        flush_on_exit=False,
        project_name="demo",
        headers={"x-tenant": "acme"},
    )
    with rag_span(
        "What is the Starter limit?",
        session_id="s1",
        user_id="u1",
        metadata={"route": "faq"},
        tracer_provider=provider,
    ) as rag:
        seen_trace = current_trace_id()
        with retriever_span("starter limit", tracer_provider=provider) as r:
            r.record(DOCS)
        with reranker_span(
            "starter limit", DOCS, model_name="rr", top_k=1, tracer_provider=provider
        ) as rr:
            rr.record(DOCS[:1])
        messages = [
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": "Context: ... Question: What is the Starter limit?"},
        ]
        with llm_span("gpt-4o-mini", messages, "openai", tracer_provider=provider) as llm:
            llm.record("120 requests per minute.", prompt_tokens=30, completion_tokens=6)
        rag.record("120 requests per minute.")
    assert current_trace_id() is None
    provider.shutdown()

    assert len(receiver.spans) == 4
    assert receiver.requests[0]["content-encoding"] == "gzip"
    assert receiver.requests[0]["content-type"] == "application/x-protobuf"
    assert receiver.requests[0]["x-tenant"] == "acme"
    root, ret = receiver.by_name("rag"), receiver.by_name("retrieve")
    rer, gen = receiver.by_name("rerank"), receiver.by_name("generate")
    assert seen_trace == root["trace_id"] == rag.trace_id
    assert {s["trace_id"] for s in receiver.spans} == {root["trace_id"]}
    assert root["parent"] == "" and {ret["parent"], rer["parent"], gen["parent"]} == {
        root["span_id"]
    }
    assert root["resource"]["service.name"] == "support-bot"
    assert root["resource"]["openinference.project.name"] == "demo"
    a = root["attrs"]
    assert a["openinference.span.kind"] == "CHAIN"
    assert a["input.value"] == "What is the Starter limit?"
    assert a["output.value"] == "120 requests per minute."
    assert a["session.id"] == "s1" and a["user.id"] == "u1" and a["metadata"] == '{"route": "faq"}'
    a = ret["attrs"]
    assert a["openinference.span.kind"] == "RETRIEVER" and a["session.id"] == "s1"
    assert a["retrieval.documents.0.document.id"] == "doc_1#chunk_0"
    assert a["retrieval.documents.1.document.content"] == DOCS[1]["content"]
    assert a["retrieval.documents.0.document.score"] == pytest.approx(0.91)
    assert a["retrieval.documents.0.document.metadata"] == '{"lang": "en"}'
    assert "retrieval.documents.1.document.metadata" not in a
    a = rer["attrs"]
    assert a["openinference.span.kind"] == "RERANKER" and a["reranker.top_k"] == 1
    assert a["reranker.input_documents.1.document.id"] == "doc_2#chunk_0"
    assert a["reranker.output_documents.0.document.id"] == "doc_1#chunk_0"
    assert "reranker.output_documents.1.document.id" not in a
    a = gen["attrs"]
    assert a["openinference.span.kind"] == "LLM" and a["llm.model_name"] == "gpt-4o-mini"
    assert a["llm.provider"] == "openai"
    assert a["llm.input_messages.0.message.role"] == "system"
    assert a["llm.input_messages.1.message.content"].endswith("Starter limit?")
    assert a["llm.output_messages.0.message.content"] == "120 requests per minute."
    assert (
        a["llm.token_count.prompt"],
        a["llm.token_count.completion"],
        a["llm.token_count.total"],
    ) == (30, 6, 36)


def test_errors_become_status_and_exception_event(receiver):
    provider = instrument("bot", receiver.url, set_global=False, flush_on_exit=False)
    with pytest.raises(TimeoutError):
        with rag_span("q", tracer_provider=provider):
            with llm_span("m", [{"role": "user", "content": "q"}], tracer_provider=provider):
                raise TimeoutError("model took too long")
    provider.shutdown()
    for name in ("rag", "generate"):
        span = receiver.by_name(name)
        assert span["status"] == StatusCode.ERROR.value
        assert span["events"] == ["exception"]
        assert span["event_attrs"][0]["exception.type"] == "TimeoutError"
        assert span["event_attrs"][0]["exception.message"] == "model took too long"


def test_tool_call_messages_without_content_are_kept(receiver):
    provider = instrument("bot", receiver.url, set_global=False, flush_on_exit=False)
    messages = [
        {"role": "user", "content": "weather in Paris?"},
        {"role": "assistant", "tool_calls": [{"id": "t1", "type": "function"}]},
        {"role": "tool", "content": None, "tool_call_id": "t1"},
    ]
    with llm_span("m", messages, tracer_provider=provider) as llm:
        llm.record("sunny")
    provider.shutdown()
    a = receiver.by_name("generate")["attrs"]
    assert a["llm.input_messages.0.message.content"] == "weather in Paris?"
    assert a["llm.input_messages.1.message.role"] == "assistant"
    assert "llm.input_messages.1.message.content" not in a and "input.value" not in a


def test_a_one_second_burst_is_not_dropped(receiver):
    provider = instrument("bot", receiver.url, set_global=False, flush_on_exit=False)
    n = 6000  # about three times the SDK's default queue of 2048
    for i in range(n):
        with rag_span(f"question {i}", tracer_provider=provider) as rag:
            rag.record("answer")
    assert provider.force_flush(timeout_millis=30_000)
    provider.shutdown()
    assert len(receiver.spans) == n
    assert len({s["trace_id"] for s in receiver.spans}) == n


def test_parameters_win_over_otel_environment(receiver, monkeypatch):
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "http://127.0.0.1:9/v1/traces")
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_TRACES_COMPRESSION", "none")
    provider = instrument("bot", receiver.url, set_global=False, flush_on_exit=False)
    with rag_span("q", tracer_provider=provider):
        pass
    provider.shutdown()
    assert len(receiver.spans) == 1
    assert receiver.requests[0]["content-encoding"] == "gzip"


def test_spans_are_flushed_at_interpreter_exit(receiver):
    script = (
        "from ragsieve.collector.instrument import instrument, rag_span\n"
        f"instrument('exit-bot', {receiver.url!r}, schedule_delay_ms=60000)\n"
        "with rag_span('last words') as r:\n"
        "    r.record('bye')\n"
    )
    path = ":".join(str(REPO / p) for p in ("collector", "evaluators", "jobs"))
    subprocess.run(
        [sys.executable, "-c", script],
        check=True,
        timeout=60,
        env={"PYTHONPATH": path, "PATH": "/usr/bin:/bin"},
    )
    assert [s["attrs"]["input.value"] for s in receiver.spans] == ["last words"]


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"endpoint": "127.0.0.1:4318"}, "http(s) URL"),
        ({"endpoint": "ftp://x/v1/traces"}, "http(s) URL"),
        ({"service_name": ""}, "service_name"),
        ({"max_queue_size": 100, "max_export_batch_size": 200}, "max_export_batch_size"),
    ],
)
def test_bad_settings_are_rejected(kwargs, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        instrument(**kwargs, set_global=False, flush_on_exit=False)
