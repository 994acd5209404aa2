"""Spans → settled interactions on a live collector: revisions, late spans, feedback, the CLI."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import httpx
import pytest
from click.testing import CliRunner
from opentelemetry.exporter.otlp.proto.http import Compression
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor

from ragsieve.evaluators.records import RagInteraction
from ragsieve.jobs.cli import cli


def send_rag_trace(url: str, question: str, answer: str) -> str:
    """One hand-instrumented OpenInference RAG trace through the real exporter; returns trace id."""
    return format(send_rag_root(url, question, answer).get_span_context().trace_id, "032x")


def send_rag_root(url: str, question: str, answer: str) -> ReadableSpan:
    """Like :func:`send_rag_trace`, returning the ended root span as the SDK recorded it."""
    provider = TracerProvider(resource=Resource.create({"service.name": "shop-rag"}))
    provider.add_span_processor(
        BatchSpanProcessor(OTLPSpanExporter(endpoint=url, compression=Compression.Gzip))
    )
    tracer = provider.get_tracer("test")
    docs = [
        ("kb_1#chunk_0", "Refunds are issued within 14 days of the return.", 0.91),
        ("kb_2#chunk_3", "Webhooks retry up to 5 times.", 0.42),
    ]
    with tracer.start_as_current_span(
        "rag",
        attributes={
            "openinference.span.kind": "CHAIN",
            "input.value": question,
            "session.id": "s-1",
            "user.id": "u-7",
        },
    ) as root:
        with tracer.start_as_current_span(
            "retrieve", attributes={"openinference.span.kind": "RETRIEVER", "input.value": question}
        ) as r:
            for i, (doc_id, text, score) in enumerate(docs):
                r.set_attribute(f"retrieval.documents.{i}.document.id", doc_id)
                r.set_attribute(f"retrieval.documents.{i}.document.content", text)
                r.set_attribute(f"retrieval.documents.{i}.document.score", score)
        prompt = f"Context:\n{docs[0][1]}\n\nQuestion: {question}"
        with tracer.start_as_current_span(
            "generate",
            attributes={
                "openinference.span.kind": "LLM",
                "llm.model_name": "gpt-4o-mini",
                "llm.input_messages.0.message.role": "user",
                "llm.input_messages.0.message.content": prompt,
                "llm.output_messages.0.message.role": "assistant",
                "llm.output_messages.0.message.content": answer,
                "llm.token_count.prompt": 40,
                "llm.token_count.completion": 9,
            },
        ):
            pass
        root.set_attribute("output.value", answer)
    provider.shutdown()
    assert isinstance(root, ReadableSpan)
    return root


def wait_for(pred: Callable[[], Any], timeout: float = 15.0) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = pred()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError("condition not met in time")


def test_trace_settles_into_one_interaction(collector: Any) -> None:
    root = send_rag_root(collector.traces_url, "How long do refunds take?", "Refunds take 14 days.")
    trace_id = format(root.get_span_context().trace_id, "032x")
    rec: RagInteraction = wait_for(lambda: collector.store.get_interaction(trace_id))
    assert rec.query == "How long do refunds take?"
    assert rec.answer == "Refunds take 14 days."
    assert rec.model == "gpt-4o-mini"
    assert rec.service_name == "shop-rag"
    assert rec.session_id == "s-1" and rec.user_id == "u-7"
    assert [d.id for d in rec.documents] == ["kb_1#chunk_0", "kb_2#chunk_3"]
    assert [d.rank for d in rec.documents] == [0, 1]
    assert [d.in_prompt for d in rec.documents] == [True, False]
    assert rec.documents[0].score == 0.91
    assert rec.tokens.prompt == 40 and rec.tokens.completion == 9
    assert rec.status == "ok" and rec.revision == 1
    assert root.start_time is not None and root.end_time is not None
    assert rec.latency_ms == pytest.approx((root.end_time - root.start_time) / 1e6, abs=1e-3)
    assert rec.latency_is_estimate is False
    started = datetime.fromtimestamp(root.start_time / 1e9, UTC)
    assert abs((rec.started_at - started).total_seconds()) < 1e-5


def test_late_span_and_feedback_raise_revision(collector: Any) -> None:
    trace_id = send_rag_trace(collector.traces_url, "Webhook retries?", "5 times.")
    first = wait_for(lambda: collector.store.get_interaction(trace_id))
    root_id = first.span_id
    late = {
        "resourceSpans": [
            {
                "scopeSpans": [
                    {
                        "spans": [
                            {
                                "traceId": trace_id,
                                "spanId": "00000000000000aa",
                                "parentSpanId": root_id,
                                "name": "late-tool",
                                "startTimeUnixNano": "1",
                                "endTimeUnixNano": "2",
                            }
                        ]
                    }
                ]
            }
        ]
    }
    assert httpx.post(collector.traces_url, json=late).status_code == 200
    second = wait_for(
        lambda: (r := collector.store.get_interaction(trace_id)) and r.revision == 2 and r
    )
    assert second.late_spans == 1
    # re-sending the same late span changes nothing
    assert httpx.post(collector.traces_url, json=late).status_code == 200
    time.sleep(0.8)
    assert collector.store.get_interaction(trace_id).revision == 2
    fb = {"trace_id": trace_id, "score": 0.0, "label": "thumbs_down"}
    assert httpx.post(f"{collector.url}/v1/feedback", json=fb).status_code == 200
    third = wait_for(
        lambda: (r := collector.store.get_interaction(trace_id)) and r.revision == 3 and r
    )
    assert third.feedback_polarity == -1
    assert third.late_spans == 1


def test_interactions_cli_lists_json(collector: Any) -> None:
    trace_id = send_rag_trace(collector.traces_url, "Refund window?", "14 days.")
    wait_for(lambda: collector.store.get_interaction(trace_id))
    runner = CliRunner()
    result = runner.invoke(
        cli,
        ["interactions", "list", "--store", collector.store.url, "--json"],
        catch_exceptions=False,
    )
    assert result.exit_code == 0
    (line,) = result.output.splitlines()
    row = json.loads(line)
    assert row["trace_id"] == trace_id and row["query"] == "Refund window?"
    assert row["answer"] == "14 days." and row["model"] == "gpt-4o-mini" and row["status"] == "ok"
    assert {"id", "content", "score", "rank", "in_prompt"} <= set(row["documents"][0])
    shown = runner.invoke(cli, ["interactions", "show", trace_id, "--store", collector.store.url])
    assert json.loads(shown.output)["trace_id"] == trace_id
    missing = runner.invoke(cli, ["interactions", "show", "f" * 32, "--store", collector.store.url])
    assert missing.exit_code == 2 and "no interaction" in missing.output  # input the user typed


def test_tail_sampler_stamps_reach_the_interaction(collector: Any) -> None:
    """The Collector's tail_sampling records the keeping policy on the instrumentation scope."""
    trace_id = "7" * 32
    spans = [
        {
            "traceId": trace_id,
            "spanId": "00000000000000b1",
            "name": "rag",
            "startTimeUnixNano": "1700000000000000000",
            "endTimeUnixNano": "1700000001000000000",
            "attributes": [
                {"key": "openinference.span.kind", "value": {"stringValue": "CHAIN"}},
                {"key": "input.value", "value": {"stringValue": "Refund window?"}},
                {"key": "output.value", "value": {"stringValue": "14 days."}},
            ],
        }
    ]
    body = {
        "resourceSpans": [
            {
                "resource": {
                    "attributes": [
                        {"key": "rag.sampling.baseline_percentage", "value": {"doubleValue": 10.0}}
                    ]
                },
                "scopeSpans": [
                    {
                        "scope": {
                            "name": "shop",
                            "attributes": [
                                {"key": "tailsampling.policy", "value": {"stringValue": "baseline"}}
                            ],
                        },
                        "spans": spans,
                    }
                ],
            }
        ]
    }
    assert httpx.post(collector.traces_url, json=body).status_code == 200
    rec = wait_for(lambda: collector.store.get_interaction(trace_id))
    assert rec.attributes["tailsampling.policy"] == "baseline"
    assert rec.attributes["rag.sampling.baseline_percentage"] == 10.0
