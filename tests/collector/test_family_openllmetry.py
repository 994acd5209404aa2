"""OpenLLMetry's real LangChain instrumentor on an LCEL RAG chain: in-memory vector store, prompt
template, LangChain's fake chat model; spans from the SDK's in-memory exporter, then derive()."""

from __future__ import annotations

from collections.abc import Iterator
from operator import itemgetter
from typing import Any

import families
import pytest
import tracefixtures as tf
from langchain_core.documents import Document
from langchain_core.embeddings import DeterministicFakeEmbedding
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage
from langchain_core.output_parsers import StrOutputParser
from langchain_core.prompts import ChatPromptTemplate
from langchain_core.runnables import RunnableLambda, RunnablePassthrough
from langchain_core.vectorstores import InMemoryVectorStore
from opentelemetry.instrumentation.langchain import LangchainInstrumentor
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from ragsieve.collector.derive.normalize import derive
from ragsieve.evaluators.records import RagInteraction, TokenUsage

MODEL = "fake-chat-1"
IN_PROMPT = 2  # the chain stuffs the top 2 of the 3 retrieved chunks


class FakeChat(GenericFakeChatModel):
    """LangChain's fake chat model with a model name, as real chat models carry one."""

    model_name: str = MODEL


@pytest.fixture(scope="module")
def recorded() -> Iterator[InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    instrumentor = LangchainInstrumentor()
    instrumentor.instrument(tracer_provider=provider)
    yield exporter
    instrumentor.uninstrument()
    provider.shutdown()


@pytest.fixture
def exporter(recorded: InMemorySpanExporter) -> InMemorySpanExporter:
    recorded.clear()
    return recorded


def vector_store() -> InMemoryVectorStore:
    store = InMemoryVectorStore(DeterministicFakeEmbedding(size=32))
    store.add_documents(
        [Document(page_content=c["content"], metadata={"source": c["source"]}) for c in tf.CHUNKS],
        ids=[c["id"] for c in tf.CHUNKS],
    )
    return store


def chat(fail: bool = False) -> FakeChat:
    reply = AIMessage(
        content=tf.ANSWER,
        usage_metadata={"input_tokens": 212, "output_tokens": 31, "total_tokens": 243},
    )
    return FakeChat(messages=iter([] if fail else [reply]))


PROMPT = ChatPromptTemplate.from_messages(
    [("system", tf.SYSTEM), ("human", "Context:\n{context}\n\nQuestion: {question}")]
)


def stuff(docs: list[Document]) -> str:
    return "\n\n".join(d.page_content for d in docs[:IN_PROMPT])


def derived(exporter: InMemorySpanExporter) -> RagInteraction:
    spans = [tf.from_readable(s) for s in exporter.get_finished_spans()]
    assert len({s.trace_id for s in spans}) == 1
    rec = derive(spans)
    assert rec is not None
    return rec


def expected_hits(store: InMemoryVectorStore) -> list[Document]:
    """The store's own ranking (a direct search: no retriever callbacks, so no spans)."""
    hits = store.similarity_search(tf.QUESTION, k=3)
    assert len(hits) == 3 and all(h.id for h in hits)
    return hits


def assert_documents(rec: RagInteraction, hits: list[Document]) -> None:
    assert [(d.id, d.id_source, d.content, d.rank, d.in_prompt) for d in rec.documents] == [
        (h.id, "native", h.page_content, i, i < IN_PROMPT) for i, h in enumerate(hits)
    ]
    assert [d.metadata for d in rec.documents] == [h.metadata for h in hits]
    # Only the top chunks reached the prompt: containment says which (SPAN_SPEC §3.4.4).
    assert rec.context_source == "containment"


@pytest.mark.parametrize("shape", ["string input", "dict input"])
def test_lcel_rag_chain(exporter: InMemorySpanExporter, shape: str) -> None:
    store = vector_store()
    hits = expected_hits(store)
    retriever = store.as_retriever(search_kwargs={"k": 3})
    if shape == "string input":
        chain: Any = (
            {"context": retriever | stuff, "question": RunnablePassthrough()}
            | PROMPT
            | chat()
            | StrOutputParser()
        )
        assert chain.invoke(tf.QUESTION) == tf.ANSWER
    else:
        chain = (
            {
                "context": itemgetter("question") | retriever | stuff,
                "question": itemgetter("question"),
            }
            | PROMPT
            | chat()
            | StrOutputParser()
        )
        assert chain.invoke({"question": tf.QUESTION}) == tf.ANSWER

    rec = derived(exporter)
    assert (rec.query, rec.query_source) == (tf.QUESTION, "root_input")
    assert (rec.answer, rec.answer_source) == (tf.ANSWER, "root_output")
    assert_documents(rec, hits)
    assert rec.retrieval_queries == (tf.QUESTION,)
    assert (rec.model, rec.request_model) == (MODEL, MODEL)
    assert rec.tokens == TokenUsage(prompt=212, completion=31, total=243)
    assert rec.prompt.system == tf.SYSTEM
    assert (rec.status, rec.completeness, rec.errors) == ("ok", "complete", ())
    assert rec.convention == "openllmetry"
    assert rec.instrumentation == ("opentelemetry.instrumentation.langchain",)
    assert families.summary(rec) == families.ROWS[families.OPENLLMETRY_LANGCHAIN].cells()


def test_failed_chat_call_is_an_error(exporter: InMemorySpanExporter) -> None:
    store = vector_store()
    hits = expected_hits(store)
    chain = (
        {
            "context": store.as_retriever(search_kwargs={"k": 3}) | stuff,
            "question": RunnableLambda(str),
        }
        | PROMPT
        | chat(fail=True)
        | StrOutputParser()
    )
    with pytest.raises(StopIteration):
        chain.invoke(tf.QUESTION)

    rec = derived(exporter)
    assert rec.status == "error"
    failed = {(e.span_name, e.role, e.type) for e in rec.errors}
    assert ("FakeChat.chat", "LLM", "StopIteration") in failed
    assert ("RunnableSequence.workflow", "AGENT", "StopIteration") in failed
    assert (rec.query, rec.answer) == (tf.QUESTION, None)
    assert [d.id for d in rec.documents] == [h.id for h in hits]
