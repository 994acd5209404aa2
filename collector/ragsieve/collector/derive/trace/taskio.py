"""Framework task I/O as OpenLLMetry and Langfuse record it: retrieved documents, model, usage.

OpenLLMetry (Traceloop's instrumentors) keeps a step's input and output as JSON in
``traceloop.entity.input`` / ``traceloop.entity.output`` (mirrored in ``gen_ai.task.input`` /
``gen_ai.task.output``); Langfuse's OpenTelemetry SDK keeps them in ``langfuse.observation.input``
/ ``langfuse.observation.output``. A retriever step's output is its ranked documents: OpenLLMetry
writes ``{"documents": [{"page_content", "metadata"}], "count"}`` (no ids), Langfuse a list of
LangChain document dumps with ``id``. The ids OpenLLMetry drops often reappear in the next step's
input, where LangChain serializes the same documents whole; :func:`serialized_document_ids`
collects them so a chunk keeps its store id instead of a content hash.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from ragsieve.collector.derive.trace.attrs import as_int, as_str, mapping, parse_json, parse_object
from ragsieve.collector.derive.trace.genai import lc_document, retrieval_documents
from ragsieve.collector.wire.spans import SpanRecord
from ragsieve.evaluators.records import content_chunk_id

TASK_INPUT_KEYS = ("traceloop.entity.input", "gen_ai.task.input", "langfuse.observation.input")
TASK_OUTPUT_KEYS = ("traceloop.entity.output", "gen_ai.task.output", "langfuse.observation.output")
MODEL_KEYS = ("langfuse.observation.model.name", "traceloop.association.properties.ls_model_name")
USAGE_KEY = "langfuse.observation.usage_details"
MAX_DEPTH = 6


def first_key(attrs: Mapping[str, Any], keys: Sequence[str]) -> str | None:
    """The first of ``keys`` that ``attrs`` holds a value for."""
    return next((k for k in keys if attrs.get(k) not in (None, "")), None)


def task_documents(attrs: Mapping[str, Any]) -> list[tuple[int, dict[str, Any]]] | None:
    """``[(rank, {id, content, score, metadata})]`` of a retriever's task output; None without one.

    Ranks follow the output order; scores are kept when the framework wrote them.
    """
    key = first_key(attrs, TASK_OUTPUT_KEYS)
    return None if key is None else retrieval_documents(attrs[key])


def serialized_document_ids(spans: Iterable[SpanRecord]) -> dict[str, str]:
    """Content hash -> document id for every document with an id in any span's task I/O."""
    found: dict[str, str] = {}
    for span in spans:
        attrs = mapping(span.attributes)
        for key in (*TASK_INPUT_KEYS, *TASK_OUTPUT_KEYS):
            value = attrs.get(key)
            if isinstance(value, str) and "page_content" in value:
                _collect(parse_json(value), found, 0)
    return found


def _collect(obj: Any, found: dict[str, str], depth: int) -> None:
    if depth > MAX_DEPTH:
        return
    if isinstance(obj, list | tuple):
        for item in obj:
            _collect(item, found, depth + 1)
        return
    if not isinstance(obj, Mapping):
        return
    doc = lc_document(obj) or obj
    doc_id, content = as_str(doc.get("id")), doc.get("page_content")
    if doc_id and isinstance(content, str) and content.strip():
        found.setdefault(content_chunk_id(content), doc_id)
        return
    for value in obj.values():
        _collect(value, found, depth + 1)


def usage_details(attrs: Mapping[str, Any]) -> tuple[int | None, int | None, int | None]:
    """(input, output, total) tokens of Langfuse's ``usage_details`` JSON."""
    usage = parse_object(attrs.get(USAGE_KEY)) or {}
    prompt = as_int(usage.get("input", usage.get("prompt_tokens")))
    completion = as_int(usage.get("output", usage.get("completion_tokens")))
    return prompt, completion, as_int(usage.get("total", usage.get("total_tokens")))
