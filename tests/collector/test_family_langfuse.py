"""Langfuse's OpenTelemetry-based SDK pointed at a real ragsieve collector on loopback: its
LangChain callback handler on an LCEL RAG chain (in-memory vector store, LangChain's fake chat
model); the Langfuse client exports through the OTel SDK's OTLP/HTTP exporter."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import families
import pytest
import tracefixtures as tf
from langchain_core.output_parsers import StrOutputParser
from langchain_core.runnables import RunnablePassthrough
from langfuse import Langfuse
from langfuse.langchain import CallbackHandler
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from test_family_openllmetry import (
    IN_PROMPT,
    MODEL,
    PROMPT,
    assert_documents,
    chat,
    expected_hits,
    stuff,
    vector_store,
)

from ragsieve.evaluators.records import RagInteraction, TokenUsage


def wait_for(pred: Callable[[], Any], timeout: float = 15.0) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if value := pred():
            return value
        time.sleep(0.05)
    raise AssertionError("condition not met in time")


@pytest.fixture
def langfuse(collector: Any) -> Iterator[tuple[Langfuse, str]]:
    """A Langfuse client whose span exporter is the collector's OTLP/HTTP endpoint.

    Langfuse keeps one exporter per public key for the process: each test takes a new key.
    """
    provider = TracerProvider(resource=Resource.create({"service.name": "lf-rag"}))
    key = f"pk-lf-{uuid.uuid4().hex}"
    client = Langfuse(
        public_key=key,
        secret_key="sk-lf-ragsieve-test",
        base_url=collector.url,
        tracer_provider=provider,
        span_exporter=OTLPSpanExporter(endpoint=collector.traces_url),
    )
    yield client, key
    client.shutdown()
    provider.shutdown()


def run_chain(
    langfuse: tuple[Langfuse, str], collector: Any, *, fail: bool = False
) -> RagInteraction:
    client, key = langfuse
    store = vector_store()
    handler = CallbackHandler(public_key=key)
    chain = (
        {
            "context": store.as_retriever(search_kwargs={"k": 3}) | stuff,
            "question": RunnablePassthrough(),
        }
        | PROMPT
        | chat(fail=fail)
        | StrOutputParser()
    )
    if fail:
        with pytest.raises(StopIteration):
            chain.invoke(tf.QUESTION, config={"callbacks": [handler]})
    else:
        assert chain.invoke(tf.QUESTION, config={"callbacks": [handler]}) == tf.ANSWER
    client.flush()
    # One trace per test: the fixture's collector and store are fresh.
    return wait_for(lambda: next(iter(collector.store.list_interactions()), None))


def test_langchain_rag_chain(langfuse: tuple[Langfuse, str], collector: Any) -> None:
    hits = expected_hits(vector_store())
    rec = run_chain(langfuse, collector)
    assert (rec.query, rec.query_source) == (tf.QUESTION, "root_input")
    assert (rec.answer, rec.answer_source) == (tf.ANSWER, "root_output")
    assert_documents(rec, hits)
    assert sum(bool(d.in_prompt) for d in rec.documents) == IN_PROMPT
    assert rec.retrieval_queries == (tf.QUESTION,)
    assert (rec.model, rec.request_model) == (MODEL, MODEL)
    assert rec.tokens == TokenUsage(prompt=212, completion=31, total=243)
    assert rec.prompt.system == tf.SYSTEM
    assert (rec.status, rec.completeness, rec.errors) == ("ok", "complete", ())
    assert (rec.convention, rec.service_name) == ("langfuse", "lf-rag")
    assert rec.instrumentation == ("langfuse-sdk",)
    assert families.summary(rec) == families.ROWS[families.LANGFUSE_LANGCHAIN].cells()


def test_failed_generation_is_an_error(langfuse: tuple[Langfuse, str], collector: Any) -> None:
    rec = run_chain(langfuse, collector, fail=True)
    assert rec.status == "error"
    assert ("FakeChat", "LLM") in {(e.span_name, e.role) for e in rec.errors}
    assert (rec.query, rec.answer) == (tf.QUESTION, None)
    assert len(rec.documents) == 3
