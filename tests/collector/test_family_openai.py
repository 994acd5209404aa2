"""Families that record only the LLM call, each with its real OpenAI instrumentation driving the
real OpenAI client against the scripted OpenAI-compatible server on loopback: OpenTelemetry's
``openai-v2`` (content as log events, exported with spans to a live collector), OpenLLMetry's
OpenAI instrumentor and Logfire's ``instrument_openai`` (in-memory span exporter, then derive()).

These traces hold no retrieval step: documents stay empty and ``context_source`` is ``none``; the
README shows how to add the step with ``ragsieve.collector.instrument.retriever_span``.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import Any

import families
import openai
import pytest
import tracefixtures as tf
from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk._logs.export import SimpleLogRecordProcessor
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from ragsieve.collector.derive.normalize import derive
from ragsieve.evaluators.records import RagInteraction, TokenUsage
from ragsieve.evaluators.testing import FakeOpenAIServer

MODEL = "gpt-4o-mini"
USAGE = (212, 31)
PROMPT = f"Context:\n{tf.context_text(tf.CHUNKS[:2])}\n\nQuestion: {tf.QUESTION}"


@pytest.fixture
def llm() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer(default=lambda body: tf.ANSWER, usage=USAGE) as server:
        yield server


def ask(client: openai.OpenAI) -> None:
    reply = client.chat.completions.create(
        model=MODEL,
        messages=[{"role": "system", "content": tf.SYSTEM}, {"role": "user", "content": PROMPT}],
    )
    assert reply.choices[0].message.content == tf.ANSWER


def assert_llm_only(rec: RagInteraction, family: str) -> None:
    """Exactly what an LLM-call-only trace yields."""
    # The question is the last user message: the whole stuffed prompt, as the call saw it.
    assert (rec.query, rec.query_source) == (PROMPT, "last_user_message")
    assert (rec.answer, rec.answer_source) == (tf.ANSWER, "genai_output")
    assert (rec.documents, rec.stages, rec.context_source) == ((), (), "none")
    assert (rec.model, rec.request_model) == (MODEL, MODEL)
    assert rec.tokens == TokenUsage(prompt=212, completion=31, total=243)
    assert rec.prompt.system == tf.SYSTEM
    assert (rec.status, rec.completeness, rec.errors, rec.llm_call_count) == (
        "ok",
        "generation_only",
        (),
        1,
    )
    assert families.summary(rec) == families.ROWS[family].cells()


def derived(exporter: InMemorySpanExporter) -> RagInteraction:
    rec = derive([tf.from_readable(s) for s in exporter.get_finished_spans()])
    assert rec is not None
    return rec


def wait_for(pred: Callable[[], Any], timeout: float = 15.0) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if value := pred():
            return value
        time.sleep(0.05)
    raise AssertionError("condition not met in time")


def test_otel_openai_v2_content_as_log_events(
    llm: FakeOpenAIServer, collector: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from opentelemetry.instrumentation.openai_v2 import OpenAIInstrumentor

    monkeypatch.setenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "EVENT_ONLY")
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(
        SimpleSpanProcessor(OTLPSpanExporter(endpoint=collector.traces_url))
    )
    logger_provider = LoggerProvider()
    logger_provider.add_log_record_processor(
        SimpleLogRecordProcessor(OTLPLogExporter(endpoint=f"{collector.url}/v1/logs"))
    )
    instrumentor = OpenAIInstrumentor()
    instrumentor.instrument(tracer_provider=tracer_provider, logger_provider=logger_provider)
    try:
        ask(openai.OpenAI(base_url=llm.base_url, api_key="test"))
    finally:
        instrumentor.uninstrument()
        tracer_provider.shutdown()
        logger_provider.shutdown()

    rec: RagInteraction = wait_for(lambda: next(iter(collector.store.list_interactions()), None))
    # The span itself carries no content: question and answer came from the log event.
    spans = collector.store.spans_for_trace(rec.trace_id)
    assert not any("gen_ai.input.messages" in s.attributes for s in spans)
    assert [e.event_name for e in collector.store.log_events_for_trace(rec.trace_id)] == [
        "gen_ai.client.inference.operation.details"
    ]
    assert_llm_only(rec, families.OTEL_OPENAI_V2)
    assert rec.convention == "genai"


def test_logfire_instrument_openai(llm: FakeOpenAIServer) -> None:
    import logfire

    exporter = InMemorySpanExporter()
    local = logfire.configure(
        local=True,
        send_to_logfire=False,
        console=False,
        metrics=False,
        inspect_arguments=False,
        additional_span_processors=[SimpleSpanProcessor(exporter)],
    )
    client = openai.OpenAI(base_url=llm.base_url, api_key="test")
    with local.instrument_openai(client):
        ask(client)
    local.shutdown()
    rec = derived(exporter)
    assert_llm_only(rec, families.LOGFIRE_OPENAI)
    assert rec.instrumentation == ("logfire.openai",)


# Last in this file: OpenLLMetry's uninstrument() leaves a wrapper on the OpenAI client that
# parents later OpenAI spans (Logfire's) under a span of its shut-down provider.
# The instrumentor's own pydantic models still use class-based config (pydantic warns on import).
@pytest.mark.filterwarnings("ignore:Support for class-based:DeprecationWarning")
def test_openllmetry_openai(llm: FakeOpenAIServer) -> None:
    from opentelemetry.instrumentation.openai import OpenAIInstrumentor

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    instrumentor = OpenAIInstrumentor()
    instrumentor.instrument(tracer_provider=provider)
    try:
        ask(openai.OpenAI(base_url=llm.base_url, api_key="test"))
    finally:
        instrumentor.uninstrument()
    rec = derived(exporter)
    provider.shutdown()
    assert_llm_only(rec, families.OPENLLMETRY_OPENAI)
    assert rec.instrumentation == ("opentelemetry.instrumentation.openai.v1",)
