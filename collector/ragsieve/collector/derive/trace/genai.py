"""OTel GenAI content of every era: JSON message attributes, span/log events, OpenLLMetry."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ragsieve.collector.derive.trace.attrs import (
    as_float,
    as_str,
    cap,
    is_redacted,
    mapping,
    parse_json,
    parse_object,
    text_of,
    unflatten,
)
from ragsieve.collector.wire.spans import LogEvent, SpanRecord
from ragsieve.evaluators.records import Message

CONTENT_KEYS = ("content", "text", "page_content", "document", "chunk", "body")
_ROLE_EVENTS = {
    "gen_ai.system.message": "system",
    "gen_ai.user.message": "user",
    "gen_ai.assistant.message": "assistant",
    "gen_ai.tool.message": "tool",
}


def event_name(event: Mapping[str, Any]) -> str:
    """Name of a span event dict (tolerates the usual spellings)."""
    return as_str(event.get("name")) or ""


def event_attrs(event: Mapping[str, Any]) -> Mapping[str, Any]:
    """Attributes of a span event dict, as a mapping."""
    attrs = event.get("attributes")
    if isinstance(attrs, list):  # OTLP/JSON-style [{key, value}] list
        return {str(a.get("key")): a.get("value") for a in attrs if isinstance(a, Mapping)}
    return mapping(attrs)


def event_time(event: Mapping[str, Any]) -> int | None:
    """Event timestamp in Unix ns."""
    for key in ("time_ns", "time_unix_nano", "timeUnixNano", "timestamp", "time"):
        value = event.get(key)
        if isinstance(value, int | str) and not isinstance(value, bool):
            try:
                return int(value)
            except ValueError:
                continue
    return None


def _part_text(part: Any) -> str | None:
    if isinstance(part, str):
        return part
    if not isinstance(part, Mapping):
        return None
    kind = as_str(part.get("type")) or "text"
    if kind == "text":
        return as_str(part.get("content")) or as_str(part.get("text"))
    if kind in {"blob", "uri", "file", "image", "image_url"}:
        return f"[{as_str(part.get('modality')) or 'image'}]"
    return None  # reasoning, tool calls and unknown parts carry no message text


def parts_text(parts: Any) -> str | None:
    """Concatenated text of a GenAI parts list (reasoning and tool parts are skipped)."""
    if isinstance(parts, str):
        return parts
    if not isinstance(parts, list | tuple):
        return None
    texts = [t for t in (_part_text(p) for p in parts) if t]
    return "\n".join(texts) if texts else None


def _message(item: Any, default_role: str = "user") -> Message | None:
    if not isinstance(item, Mapping):
        return None
    role = as_str(item.get("role")) or default_role
    if "parts" in item:
        text = parts_text(item.get("parts"))
    else:
        text = text_of(item.get("content"))
        if text is None and isinstance(item.get("message"), Mapping):
            return _message(item["message"], role)
    if text is None:
        return None
    return Message(role=role.lower(), content=cap(text) or "", name=as_str(item.get("name")))


def genai_messages(value: Any, default_role: str = "user") -> list[Message]:
    """Messages of ``gen_ai.input.messages`` / ``gen_ai.output.messages`` / legacy JSON lists."""
    parsed = parse_json(value) if isinstance(value, str) else value
    if isinstance(parsed, Mapping):
        parsed = [parsed]
    if not isinstance(parsed, list | tuple):
        return []
    return [m for m in (_message(x, default_role) for x in parsed) if m is not None]


def system_instructions(value: Any) -> str | None:
    """Text of ``gen_ai.system_instructions`` (a bare parts array, or a plain string)."""
    parsed = parse_json(value) if isinstance(value, str) else value
    if parsed is None and isinstance(value, str):
        return value if value.strip() else None
    return parts_text(parsed if isinstance(parsed, list | tuple) else [parsed])


def openllmetry_messages(attrs: Mapping[str, Any], prefix: str) -> list[Message]:
    """``gen_ai.prompt.{i}.role/content`` style messages."""
    out = []
    for _, item in unflatten(attrs, prefix):
        text = as_str(item.get("content"))
        if text is not None:
            out.append(
                Message(role=(as_str(item.get("role")) or "user").lower(), content=cap(text) or "")
            )
    return out


def span_event_messages(span: SpanRecord) -> tuple[list[Message], list[Message]]:
    """Prompt and completion messages from ≤v1.27 span events and operation-details events."""
    prompt: list[Message] = []
    completion: list[Message] = []
    for event in span.events or ():
        if not isinstance(event, Mapping):
            continue
        name, attrs = event_name(event), event_attrs(event)
        if name == "gen_ai.content.prompt":
            prompt += genai_messages(attrs.get("gen_ai.prompt"))
        elif name == "gen_ai.content.completion":
            completion += genai_messages(attrs.get("gen_ai.completion"), "assistant")
        elif name == "gen_ai.client.inference.operation.details":
            prompt += genai_messages(attrs.get("gen_ai.input.messages"))
            completion += genai_messages(attrs.get("gen_ai.output.messages"), "assistant")
    return prompt, completion


def log_messages(events: Sequence[LogEvent]) -> tuple[list[Message], list[Message]]:
    """Prompt and completion messages from v1.28-v1.36 log events (already filtered to one span)."""
    prompt: list[Message] = []
    completion: list[Message] = []
    for ev in sorted(events, key=lambda e: e.time_ns if isinstance(e.time_ns, int) else 0):
        body = ev.body
        if isinstance(body, str):
            body = parse_json(body) or {"content": body}
        if ev.event_name in _ROLE_EVENTS:
            role = as_str(mapping(body).get("role")) or _ROLE_EVENTS[ev.event_name]
            text = text_of(mapping(body).get("content"))
            if text:
                prompt.append(Message(role=role, content=cap(text) or ""))
        elif ev.event_name == "gen_ai.choice":
            msg = mapping(mapping(body).get("message"))
            text = text_of(msg.get("content"))
            if text:
                completion.append(Message(role="assistant", content=cap(text) or ""))
        elif ev.event_name == "gen_ai.client.inference.operation.details":
            attrs = mapping(ev.attributes)
            prompt += genai_messages(attrs.get("gen_ai.input.messages"))
            completion += genai_messages(attrs.get("gen_ai.output.messages"), "assistant")
    return prompt, completion


def lc_document(item: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The fields of a LangChain-serialized Document (``{"lc": 1, "id": [..., "Document"],
    "kwargs": {id, page_content, metadata}}``), else None."""
    path = item.get("id")
    kwargs = item.get("kwargs")
    if (
        item.get("lc") is not None
        and isinstance(path, list)
        and path[-1:] == ["Document"]
        and isinstance(kwargs, Mapping)
    ):
        return kwargs
    return None


def retrieval_documents(value: Any) -> list[tuple[int, dict[str, Any]]]:
    """``[(rank, {id, content, score, metadata})]`` of ``gen_ai.retrieval.documents`` or of a
    framework retriever's JSON output (a list, or ``{"documents": [...]}``)."""
    parsed = parse_json(value) if isinstance(value, str) else value
    if isinstance(parsed, Mapping):
        parsed = parsed.get("documents", [parsed])
    if not isinstance(parsed, list | tuple):
        return []
    out = []
    for rank, item in enumerate(parsed):
        if isinstance(item, str):
            item = {"content": item}
        if not isinstance(item, Mapping):
            continue
        item = lc_document(item) or item
        content = None
        for key in CONTENT_KEYS:
            value_ = item.get(key)
            if isinstance(value_, str) and (value_.strip() or is_redacted(value_)):
                content = value_
                break
        meta = item.get("metadata")
        out.append(
            (
                rank,
                {
                    "id": item.get("id"),
                    "content": content,
                    "score": as_float(item.get("score")),
                    "metadata": meta if isinstance(meta, Mapping) else parse_object(meta),
                },
            )
        )
    return out
