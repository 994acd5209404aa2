"""Interaction assembly on spans recorded by the real opentelemetry-sdk (SPAN_SPEC §1.4, §3.6)."""

from __future__ import annotations

import pytest
import tracefixtures as tf
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import SpanLimits, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import (
    NonRecordingSpan,
    SpanContext,
    Status,
    StatusCode,
    TraceFlags,
    set_span_in_context,
)

from ragsieve.collector.derive.normalize import derive, local_root
from ragsieve.evaluators.records import TokenUsage


@pytest.fixture
def recorder():
    """A tracer with plain SDK defaults except the attribute limit, and its exporter."""

    def make(max_attributes: int = 10_000):
        exporter = InMemorySpanExporter()
        provider = TracerProvider(
            resource=Resource.create({"service.name": "hand-rag", "service.version": "2.0.0"}),
            span_limits=SpanLimits(max_span_attributes=max_attributes),
        )
        provider.add_span_processor(SimpleSpanProcessor(exporter))
        return provider.get_tracer("my-rag"), exporter, provider

    made = []

    def factory(max_attributes: int = 10_000):
        tracer, exporter, provider = make(max_attributes)
        made.append(provider)
        return tracer, exporter

    yield factory
    for provider in made:
        provider.shutdown()


def _hand_instrumented(tracer, hits, *, fail: bool = False, context=None) -> None:
    """The SPAN_SPEC §1.4 contract, as a user on plain opentelemetry-sdk writes it."""
    prompt = tf.stuffed_prompt(hits)
    with tracer.start_as_current_span(
        "rag",
        context=context,
        attributes={
            "openinference.span.kind": "CHAIN",
            "input.value": tf.QUESTION,
            "session.id": "s-1",
            "user.id": "u-1",
        },
    ) as root:
        with tracer.start_as_current_span(
            "retrieve",
            attributes={"openinference.span.kind": "RETRIEVER", "input.value": tf.QUESTION},
        ) as r:
            for i, hit in enumerate(hits):
                r.set_attribute(f"retrieval.documents.{i}.document.id", hit["id"])
                r.set_attribute(f"retrieval.documents.{i}.document.content", hit["content"])
                r.set_attribute(f"retrieval.documents.{i}.document.score", float(hit["score"]))
        with tracer.start_as_current_span(
            "generate",
            attributes={
                "openinference.span.kind": "LLM",
                "llm.model_name": "gpt-4o-mini",
                "llm.input_messages.0.message.role": "user",
                "llm.input_messages.0.message.content": prompt,
            },
        ) as g:
            if fail:
                g.set_status(Status(StatusCode.ERROR, "upstream timeout"))
                g.record_exception(TimeoutError("upstream timeout"))
                return
            g.set_attribute("llm.output_messages.0.message.role", "assistant")
            g.set_attribute("llm.output_messages.0.message.content", tf.ANSWER)
            g.set_attribute("llm.token_count.prompt", 210)
            g.set_attribute("llm.token_count.completion", 31)
        root.set_attribute("output.value", tf.ANSWER)


def test_sdk_hand_instrumented_trace(recorder):
    tracer, exporter = recorder()
    _hand_instrumented(tracer, tf.CHUNKS[:3])
    finished = exporter.get_finished_spans()
    spans = [tf.from_readable(s) for s in finished]  # children first, root last
    assert [s.name for s in spans] == ["retrieve", "generate", "rag"]
    rec = derive(spans)
    assert rec is not None
    root = spans[-1]
    assert local_root(spans) == root
    assert (rec.trace_id, rec.span_id) == (root.trace_id, root.span_id)
    assert (rec.query, rec.answer) == (tf.QUESTION, tf.ANSWER)
    assert [(d.id, d.rank, d.score, d.in_prompt) for d in rec.documents] == [
        (c["id"], i, c["score"], True) for i, c in enumerate(tf.CHUNKS[:3])
    ]
    assert rec.tokens == TokenUsage(prompt=210, completion=31, total=241)
    assert (rec.session_id, rec.user_id, rec.service_name) == ("s-1", "u-1", "hand-rag")
    assert rec.instrumentation == ("my-rag",)
    assert rec.latency_ms == pytest.approx((root.end_ns - root.start_ns) / 1e6)
    assert (rec.status, rec.completeness, rec.attributes_dropped) == ("ok", "complete", False)
    assert rec.attributes["service.version"] == "2.0.0"


def test_sdk_exception_is_an_error(recorder):
    tracer, exporter = recorder()
    _hand_instrumented(tracer, tf.CHUNKS[:2], fail=True)
    rec = derive([tf.from_readable(s) for s in exporter.get_finished_spans()])
    assert rec is not None
    assert rec.status == "error"
    assert [(e.span_name, e.role, e.type, e.message) for e in rec.errors] == [
        ("generate", "LLM", "TimeoutError", "upstream timeout")
    ]
    assert rec.answer is None


def test_sdk_attribute_eviction_with_default_limit(recorder):
    """Plain SDK keeps 128 attributes and evicts the oldest: kind and first documents go."""
    tracer, exporter = recorder(max_attributes=128)
    hits = [dict(tf.CHUNKS[i % 5], id=f"doc-{i}", score=1.0 - i / 100) for i in range(50)]
    _hand_instrumented(tracer, hits)  # 50 documents x 3 attributes overflow the retriever span
    spans = [tf.from_readable(s) for s in exporter.get_finished_spans()]
    retriever = next(s for s in spans if s.name == "retrieve")
    assert retriever.dropped_attributes_count == 24
    assert "openinference.span.kind" not in retriever.attributes
    rec = derive(spans)
    assert rec is not None
    assert (rec.kind_inferred, rec.attributes_dropped, rec.possibly_truncated) == (True, True, True)
    # 150 document attributes + 2 = 152; the 24 oldest are gone: docs 0-6 fully, doc 7's id
    assert [d.rank for d in rec.documents][:3] == [7, 8, 9]
    assert (rec.documents[0].id_source, rec.documents[1].id) == ("content_hash", "doc-8")
    assert len(rec.documents) == 43
    assert rec.query == tf.QUESTION  # the root still has it


def test_sdk_remote_parent_makes_a_local_root(recorder):
    tracer, exporter = recorder()
    gateway = SpanContext(
        trace_id=0x5CE0E9A56015FEC5AADFA328AE398115,
        span_id=0xAB54A98CEB1F0AD2,
        is_remote=True,
        trace_flags=TraceFlags(TraceFlags.SAMPLED),
    )
    _hand_instrumented(
        tracer, tf.CHUNKS[:2], context=set_span_in_context(NonRecordingSpan(gateway))
    )
    spans = [tf.from_readable(s) for s in exporter.get_finished_spans()]
    root = spans[-1]
    assert root.parent_span_id == "ab54a98ceb1f0ad2" and root.parent_is_remote
    assert local_root(spans) == root
    rec = derive(spans)
    assert rec is not None
    assert (rec.trace_id, rec.span_id) == ("5ce0e9a56015fec5aadfa328ae398115", root.span_id)
    assert (rec.completeness, rec.status) == ("complete", "ok")
