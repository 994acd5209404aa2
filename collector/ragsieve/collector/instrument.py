"""OpenTelemetry setup and OpenInference span helpers for hand-written RAG pipelines.

``instrument()`` points the OTel SDK at a ragsieve collector (OTLP/HTTP protobuf, gzip) with a
batch queue sized for bursts and a flush at interpreter exit. The context managers emit the spans
the collector understands (SPAN_SPEC §1.4)::

    provider = instrument(service_name="support-bot")
    with rag_span(question, session_id=sid) as rag:
        with retriever_span(question) as r:
            r.record(hits)                  # dicts or objects with id/content/score/metadata
        with llm_span("gpt-4o-mini", messages, documents=hits) as llm:
            llm.record(answer, prompt_tokens=812, completion_tokens=41)

``documents`` are the chunks the model was given: the collector then knows they reached the
prompt (``in_prompt``) even when ``messages`` hold only the question.
        rag.record(answer)
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any
from urllib.parse import urlsplit

from opentelemetry import trace
from opentelemetry.exporter.otlp.proto.http import Compression
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import SpanLimits, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor

DEFAULT_ENDPOINT = "http://127.0.0.1:4318/v1/traces"
SCOPE = "ragsieve.collector.instrument"
_KIND = "openinference.span.kind"
_session: ContextVar[dict[str, str] | None] = ContextVar("ragsieve_session", default=None)


def instrument(
    service_name: str = "rag-app",
    endpoint: str = DEFAULT_ENDPOINT,
    *,
    headers: Mapping[str, str] | None = None,
    project_name: str | None = None,
    resource_attributes: Mapping[str, str] | None = None,
    max_queue_size: int = 65_536,
    max_export_batch_size: int = 1_024,
    schedule_delay_ms: float = 200.0,
    export_timeout_ms: float = 30_000.0,
    request_timeout_s: float = 10.0,
    gzip: bool = True,
    max_span_attributes: int = 4_096,
    set_global: bool = True,
    flush_on_exit: bool = True,
) -> TracerProvider:
    """Build (and by default install globally) a TracerProvider exporting to ``endpoint``.

    The SDK's batch defaults (queue 2048, 5 s delay) drop spans in a burst; the queue here holds
    64k spans and exports every 200 ms in batches of 1024. With ``flush_on_exit`` the provider is
    flushed and shut down by ``atexit``. Settings come only from these parameters.
    """
    _check(service_name, endpoint, max_queue_size, max_export_batch_size)
    attrs: dict[str, str] = {"service.name": service_name, **(resource_attributes or {})}
    if project_name:
        attrs["openinference.project.name"] = project_name
    provider = TracerProvider(
        resource=Resource.create(attrs),
        span_limits=SpanLimits(max_span_attributes=max_span_attributes),
        shutdown_on_exit=flush_on_exit,
    )
    exporter = OTLPSpanExporter(
        endpoint=endpoint,
        headers=dict(headers or {}),
        timeout=request_timeout_s,
        compression=Compression.Gzip if gzip else Compression.NoCompression,
    )
    provider.add_span_processor(
        BatchSpanProcessor(
            exporter,
            max_queue_size=max_queue_size,
            schedule_delay_millis=schedule_delay_ms,
            max_export_batch_size=max_export_batch_size,
            export_timeout_millis=export_timeout_ms,
        )
    )
    if set_global:
        trace.set_tracer_provider(provider)
    return provider


def _check(service_name: str, endpoint: str, max_queue: int, max_batch: int) -> None:
    """Refuse arguments the SDK would accept and misbehave with, naming the value."""
    parts = urlsplit(endpoint)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ValueError(
            f"endpoint must be an http(s) URL like {DEFAULT_ENDPOINT}, got {endpoint!r}"
        )
    if not service_name:
        raise ValueError("service_name must not be empty")
    if not 1 <= max_batch <= max_queue:
        raise ValueError(
            f"need 1 <= max_export_batch_size ({max_batch}) <= max_queue_size ({max_queue})"
        )


def current_trace_id() -> str | None:
    """The active trace id as 32 lowercase hex (for attaching feedback), or None outside a span."""
    ctx = trace.get_current_span().get_span_context()
    return format(ctx.trace_id, "032x") if ctx.is_valid else None


class SpanHandle:
    """The span of one pipeline step; subclasses add ``record`` for the step's output."""

    def __init__(self, span: trace.Span) -> None:
        self.span = span

    @property
    def trace_id(self) -> str:
        """This span's trace id as 32 lowercase hex."""
        return format(self.span.get_span_context().trace_id, "032x")

    @property
    def span_id(self) -> str:
        """This span's id as 16 lowercase hex."""
        return format(self.span.get_span_context().span_id, "016x")

    def set(self, key: str, value: Any) -> None:
        """Set one attribute; None is skipped, mappings and lists of mappings become JSON."""
        if value is None:
            return
        if isinstance(value, Mapping) or (
            isinstance(value, list | tuple) and any(isinstance(v, Mapping) for v in value)
        ):
            value = json.dumps(value, ensure_ascii=False, default=str)
        self.span.set_attribute(key, value)


class RagSpan(SpanHandle):
    """The CHAIN root: question in, answer out."""

    def record(self, answer: str) -> None:
        """Set the final answer as ``output.value``."""
        self.set("output.value", answer)
        self.set("output.mime_type", "text/plain")


class RetrieverSpan(SpanHandle):
    """A RETRIEVER step."""

    def record(self, documents: Iterable[Any]) -> None:
        """Set ``retrieval.documents.{i}.document.*`` from dicts or objects."""
        _set_documents(self, "retrieval.documents", documents)


class RerankerSpan(SpanHandle):
    """A RERANKER step."""

    def record(self, output_documents: Iterable[Any]) -> None:
        """Set ``reranker.output_documents.{i}.document.*`` (score = rerank relevance)."""
        _set_documents(self, "reranker.output_documents", output_documents)


class LLMSpan(SpanHandle):
    """An LLM call."""

    def record(
        self,
        answer: str,
        *,
        prompt_tokens: int | None = None,
        completion_tokens: int | None = None,
        finish_reason: str | None = None,
    ) -> None:
        """Set the assistant message, ``output.value`` and the token counts that are known."""
        self.set("llm.output_messages.0.message.role", "assistant")
        self.set("llm.output_messages.0.message.content", answer)
        self.set("output.value", answer)
        self.set("llm.finish_reason", finish_reason)
        self.set("llm.token_count.prompt", prompt_tokens)
        self.set("llm.token_count.completion", completion_tokens)
        if prompt_tokens is not None and completion_tokens is not None:
            self.set("llm.token_count.total", prompt_tokens + completion_tokens)


def _field(doc: Any, *names: str) -> Any:
    for name in names:
        value = doc.get(name) if isinstance(doc, Mapping) else getattr(doc, name, None)
        if value is not None:
            return value
    return None


def _set_documents(handle: SpanHandle, prefix: str, documents: Iterable[Any]) -> None:
    for i, doc in enumerate(documents):
        base = f"{prefix}.{i}.document"
        doc_id = _field(doc, "id", "chunk_id", "document_id")
        handle.set(f"{base}.id", None if doc_id is None else str(doc_id))
        handle.set(f"{base}.content", _field(doc, "content", "text", "page_content"))
        score = _field(doc, "score")
        handle.set(f"{base}.score", None if score is None else float(score))
        metadata = _field(doc, "metadata")
        handle.set(
            f"{base}.metadata",
            json.dumps(metadata, ensure_ascii=False, default=str) if metadata else None,
        )


@contextmanager
def _span(
    name: str, kind: str, attrs: Mapping[str, Any], handle_type: type, provider: Any
) -> Iterator[Any]:
    tracer = trace.get_tracer(SCOPE, tracer_provider=provider)
    # record_exception / set_status_on_exception (SDK defaults) turn an error into status + event
    with tracer.start_as_current_span(
        name, record_exception=True, set_status_on_exception=True
    ) as span:
        handle = handle_type(span)
        handle.set(_KIND, kind)
        for key, value in {**(_session.get() or {}), **attrs}.items():
            handle.set(key, value)
        yield handle


@contextmanager
def rag_span(
    question: str,
    session_id: str | None = None,
    user_id: str | None = None,
    metadata: Mapping[str, Any] | None = None,
    *,
    name: str = "rag",
    tracer_provider: trace.TracerProvider | None = None,
) -> Iterator[RagSpan]:
    """The CHAIN root of one RAG turn; session and user ids are copied onto its child spans."""
    ids = {k: v for k, v in (("session.id", session_id), ("user.id", user_id)) if v}
    token = _session.set(ids)
    try:
        attrs = {"input.value": question, "input.mime_type": "text/plain", "metadata": metadata}
        with _span(name, "CHAIN", attrs, RagSpan, tracer_provider) as handle:
            yield handle
    finally:
        _session.reset(token)


@contextmanager
def retriever_span(
    query: str, *, name: str = "retrieve", tracer_provider: trace.TracerProvider | None = None
) -> Iterator[RetrieverSpan]:
    """A RETRIEVER step for ``query``; call ``.record(documents)`` with the ranked hits."""
    attrs = {"input.value": query, "input.mime_type": "text/plain"}
    with _span(name, "RETRIEVER", attrs, RetrieverSpan, tracer_provider) as handle:
        yield handle


@contextmanager
def reranker_span(
    query: str,
    input_documents: Iterable[Any],
    *,
    model_name: str | None = None,
    top_k: int | None = None,
    name: str = "rerank",
    tracer_provider: trace.TracerProvider | None = None,
) -> Iterator[RerankerSpan]:
    """A RERANKER step over ``input_documents``; call ``.record(output_documents)``."""
    attrs = {
        "input.value": query,
        "reranker.query": query,
        "reranker.model_name": model_name,
        "reranker.top_k": top_k,
    }
    with _span(name, "RERANKER", attrs, RerankerSpan, tracer_provider) as handle:
        _set_documents(handle, "reranker.input_documents", input_documents)
        yield handle


@contextmanager
def llm_span(
    model: str,
    messages: Sequence[Mapping[str, Any]] = (),
    provider: str | None = None,
    *,
    documents: Iterable[Any] | None = None,
    invocation_parameters: Mapping[str, Any] | None = None,
    prompt_template: str | None = None,
    template_variables: Mapping[str, Any] | None = None,
    name: str = "generate",
    tracer_provider: trace.TracerProvider | None = None,
) -> Iterator[LLMSpan]:
    """An LLM call with chat ``messages`` (role/content dicts; a missing or None content, as in
    tool-call messages, is left out); call ``.record(answer, ...)``.

    ``documents`` are the retrieved chunks given to the model (dicts or objects with
    ``content``/``text``, as for ``RetrieverSpan.record``). Their text is recorded as the prompt
    template variable ``context`` (``retrieved_context`` when ``template_variables`` already
    has a ``context``), so the collector marks those chunks ``in_prompt`` without the caller
    building the prompt string itself.
    """
    variables = dict(template_variables or {})
    if documents is not None:
        texts = [_field(d, "content", "text", "page_content") for d in documents]
        key = "retrieved_context" if "context" in variables else "context"
        variables[key] = "\n\n".join(str(t) for t in texts if t)
    attrs: dict[str, Any] = {
        "llm.model_name": model,
        "llm.provider": provider,
        "llm.invocation_parameters": invocation_parameters,
        "llm.prompt_template.template": prompt_template,
        "llm.prompt_template.variables": variables or None,
    }
    for i, msg in enumerate(messages):
        # tool-call and tool-result messages may carry no "content" (or None): keep the rest
        attrs[f"llm.input_messages.{i}.message.role"] = msg.get("role")
        attrs[f"llm.input_messages.{i}.message.content"] = msg.get("content")
    if messages:
        attrs["input.value"] = messages[-1].get("content")
    with _span(name, "LLM", attrs, LLMSpan, tracer_provider) as handle:
        yield handle
