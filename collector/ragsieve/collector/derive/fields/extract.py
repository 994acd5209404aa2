"""Field extractors over classified spans: question, prompt, answer, model and tokens."""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ragsieve.collector.derive.trace.attrs import (
    as_float,
    as_int,
    as_str,
    cap,
    get_str,
    is_redacted,
    mapping,
    parse_json,
    parse_object,
    text_of,
    unflatten,
)
from ragsieve.collector.derive.trace.classify import TraceTree
from ragsieve.collector.derive.trace.genai import (
    genai_messages,
    log_messages,
    openllmetry_messages,
    span_event_messages,
    system_instructions,
)
from ragsieve.collector.derive.trace.taskio import MODEL_KEYS, usage_details
from ragsieve.collector.wire.spans import LogEvent, SpanRecord
from ragsieve.evaluators.records import Message, Prompt, TokenUsage

QUESTION_KEYS = (
    "question",
    "query",
    "input",
    "query_str",
    "user_input",
    "message",
    "prompt",
    "inputs",  # OpenLLMetry's task input envelope {"inputs": ..., "tags", "metadata", "kwargs"}
)
ANSWER_KEYS = ("answer", "output", "result", "response", "text", "content", "outputs")
INPUT_KEYS = (
    "input.value",
    "traceloop.entity.input",
    "gen_ai.task.input",
    "langfuse.trace.input",
    "langfuse.observation.input",
)
OUTPUT_KEYS = (
    "output.value",
    "traceloop.entity.output",
    "gen_ai.task.output",
    "langfuse.trace.output",
    "langfuse.observation.output",
)


@dataclass
class Notes:
    """Data-quality observations collected while extracting."""

    redacted: bool = False
    truncated: bool = False


def first_value(attrs: Mapping[str, Any], keys: Sequence[str], notes: Notes) -> str | None:
    """The first non-empty, non-redacted string among ``keys``."""
    for key in keys:
        value = attrs.get(key)
        if is_redacted(value):
            notes.redacted = True
            continue
        text = value if isinstance(value, str) and value.strip() else None
        if text is not None:
            return text
    return None


def _find_key(obj: Any, keys: Sequence[str], depth: int = 0) -> str | None:
    """Breadth-first search of nested dicts for the first string under one of ``keys``."""
    if not isinstance(obj, Mapping) or depth > 3:
        return None
    for key in keys:
        text = text_of(obj.get(key)) if key in obj else None
        if text and not is_redacted(text):
            return text
    msgs = obj.get("messages")
    if isinstance(msgs, list):
        users = [text for role, text in map(_role_text, msgs) if role in ("user", "human")]
        if users and users[-1]:
            return users[-1]
    for value in obj.values():
        found = _find_key(value, keys, depth + 1)
        if found:
            return found
    return None


def _role_text(msg: Any) -> tuple[str | None, str | None]:
    """(role, text) of a chat message as OpenAI dicts, LangChain dumps or (role, text) pairs."""
    if isinstance(msg, list | tuple) and len(msg) == 2:
        return as_str(msg[0]), text_of(msg[1])
    if not isinstance(msg, Mapping):
        return None, None
    kwargs = mapping(msg.get("kwargs"))
    role = as_str(msg.get("role")) or as_str(kwargs.get("type")) or as_str(msg.get("type"))
    return (role.lower() if role else None), text_of(msg.get("content", kwargs.get("content")))


def value_text(value: str | None, keys: Sequence[str]) -> str | None:
    """Plain text as is; a JSON string unquoted; a JSON object searched for ``keys``."""
    if value is None:
        return None
    stripped = value.strip()
    if stripped[:1] in '{["':
        parsed = parse_json(stripped)
        if isinstance(parsed, str):
            return parsed if parsed.strip() else None
        if isinstance(parsed, Mapping):
            return _find_key(parsed, keys)
        if parsed is not None:
            return None
    return value


def oi_messages(attrs: Mapping[str, Any], prefix: str, notes: Notes) -> list[Message]:
    """OpenInference ``llm.input_messages`` / ``llm.output_messages`` as text messages."""
    out = []
    for _, item in unflatten(attrs, prefix):
        content = item.get("message.content")
        if is_redacted(content):
            notes.redacted = True
            content = None
        text = content if isinstance(content, str) and content.strip() else None
        if text is None:
            text = _content_parts(item, notes)
        if text is not None:
            role = (as_str(item.get("message.role")) or "user").lower()
            out.append(
                Message(role=role, content=cap(text) or "", name=as_str(item.get("message.name")))
            )
    return out


def _content_parts(item: Mapping[str, Any], notes: Notes) -> str | None:
    """The text of a multi-part OpenInference message (``message.contents``), images marked."""
    parts = []
    for _, part in unflatten(item, "message.contents"):
        kind = as_str(part.get("message_content.type")) or "text"
        ptext = part.get("message_content.text")
        if kind == "text" and isinstance(ptext, str) and not is_redacted(ptext):
            parts.append(ptext)
        elif kind == "image":
            parts.append("[image]")
        notes.redacted = notes.redacted or is_redacted(ptext)
    return "\n".join(parts) or None


def _legacy_prompts(attrs: Mapping[str, Any]) -> list[Message]:
    raw = attrs.get("llm.prompts")
    texts = [t for t in raw if isinstance(t, str)] if isinstance(raw, list) else []
    texts += [
        t
        for _, it in unflatten(attrs, "llm.prompts")
        if isinstance(t := it.get("prompt.text"), str)
    ]
    return [Message(role="user", content=cap(t) or "") for t in texts if not is_redacted(t)]


def input_messages(
    span: SpanRecord, logs: Sequence[LogEvent], notes: Notes
) -> tuple[list[Message], str | None]:
    """(messages, system instructions) of one LLM span from whichever convention it used."""
    attrs = mapping(span.attributes)
    system = system_instructions(attrs.get("gen_ai.system_instructions"))
    for msgs in (
        oi_messages(attrs, "llm.input_messages", notes),
        genai_messages(attrs.get("gen_ai.input.messages")),
        openllmetry_messages(attrs, "gen_ai.prompt"),
        genai_messages(attrs.get("langfuse.observation.input")),
        span_event_messages(span)[0],
        log_messages(logs)[0],
        _legacy_prompts(attrs),
    ):
        if msgs:
            if any(is_redacted(m.content) for m in msgs):
                notes.redacted = True
                msgs = [m for m in msgs if not is_redacted(m.content)]
            return msgs, system
    return [], system


def output_text(span: SpanRecord, logs: Sequence[LogEvent], notes: Notes) -> tuple[str | None, str]:
    """(text of the first output message, source) of one LLM span."""
    attrs = mapping(span.attributes)
    oi = oi_messages(attrs, "llm.output_messages", notes)
    if oi:
        return oi[0].content, "generation_output"
    for _, item in unflatten(attrs, "llm.choices"):
        text = item.get("completion.text")
        if isinstance(text, str) and not is_redacted(text):
            return cap(text), "generation_output"
    for msgs in (
        genai_messages(attrs.get("gen_ai.output.messages"), "assistant"),
        openllmetry_messages(attrs, "gen_ai.completion"),
        genai_messages(attrs.get("langfuse.observation.output"), "assistant"),
        span_event_messages(span)[1],
        log_messages(logs)[1],
    ):
        if msgs and not is_redacted(msgs[0].content):
            return msgs[0].content, "genai_output"
    text = first_value(attrs, ("output.value", "langfuse.observation.output"), notes)
    return (cap(value_text(text, ANSWER_KEYS)), "generation_output") if text else (None, "none")


def template_info(
    tree: TraceTree, gen: SpanRecord | None, notes: Notes
) -> tuple[str | None, dict[str, Any] | None, str | None]:
    """(template, variables, version) from the generation, its ancestors, or a PROMPT sibling."""
    if gen is None:
        return None, None, None
    candidates = [gen, *tree.ancestors(gen)]
    earlier = tree.prompts_ended_by(gen.start_ns, {s.span_id for s in candidates})
    for span in itertools.chain(candidates, earlier):
        attrs = mapping(span.attributes)
        template = get_str(attrs, "llm.prompt_template.template")
        raw_vars = attrs.get("llm.prompt_template.variables")
        variables = parse_object(raw_vars)
        if template or variables:
            if is_redacted(template) or is_redacted(raw_vars):
                notes.redacted = True
            return (
                None if is_redacted(template) else cap(template),
                variables,
                get_str(attrs, "llm.prompt_template.version"),
            )
    return None, None, None


def build_prompt(
    messages: list[Message],
    system: str | None,
    template: str | None,
    variables: dict[str, Any] | None,
    version: str | None,
) -> Prompt:
    """The record's Prompt; ``text`` joins every message's text."""
    if system is None:
        system = next((m.content for m in messages if m.role == "system"), None)
    texts = [system] if system and not any(m.role == "system" for m in messages) else []
    texts += [m.content for m in messages]
    return Prompt(
        template=template,
        template_variables=variables,
        template_version=version,
        system=system,
        messages=tuple(messages),
        text="\n\n".join(texts) or None,
    )


def chain_attr(chain: Sequence[SpanRecord], keys: Sequence[str]) -> Any:
    """First present value of ``keys`` over the generation span, then its LLM wrappers."""
    for key in keys:
        for span in chain:
            value = mapping(span.attributes).get(key)
            if value is not None and value != "":
                return value
    return None


def model_info(chain: Sequence[SpanRecord]) -> tuple[str | None, str | None, str | None]:
    """(model, request_model, provider) of the generation."""
    params = {}
    for span in chain:
        params = parse_object(mapping(span.attributes).get("llm.invocation_parameters")) or {}
        if params:
            break
    model = _known_model(
        chain_attr(
            chain,
            (
                "llm.response.model_name",
                "llm.model_name",
                "gen_ai.response.model",
                "gen_ai.request.model",
            ),
        )
    )
    request = _known_model(chain_attr(chain, ("llm.request.model_name", "gen_ai.request.model")))
    request = request or as_str(params.get("model")) or as_str(params.get("model_name"))
    # Framework-reported names: Langfuse's observation model, LangChain's ls_model_name (which
    # OpenLLMetry copies into its association properties when gen_ai.*.model says "unknown").
    request = request or _known_model(chain_attr(chain, MODEL_KEYS))
    provider = as_str(
        chain_attr(chain, ("llm.provider", "llm.system", "gen_ai.provider.name", "gen_ai.system"))
    )
    return model or request, request, provider


def _known_model(value: Any) -> str | None:
    text = as_str(value)
    return None if text is None or text.strip().lower() in ("", "unknown") else text


def tokens(chain: Sequence[SpanRecord]) -> TokenUsage:
    """Token counts: missing is None, never 0; total = prompt + completion when both known."""
    prompt = as_int(
        chain_attr(
            chain,
            ("llm.token_count.prompt", "gen_ai.usage.input_tokens", "gen_ai.usage.prompt_tokens"),
        )
    )
    completion = as_int(
        chain_attr(
            chain,
            (
                "llm.token_count.completion",
                "gen_ai.usage.output_tokens",
                "gen_ai.usage.completion_tokens",
            ),
        )
    )
    total = as_int(chain_attr(chain, ("llm.token_count.total", "gen_ai.usage.total_tokens")))
    if prompt is None and completion is None and total is None:
        for span in chain:
            prompt, completion, total = usage_details(mapping(span.attributes))
            if (prompt, completion, total) != (None, None, None):
                break
    if total is None and prompt is not None and completion is not None:
        total = prompt + completion
    return TokenUsage(prompt=prompt, completion=completion, total=total)


def cost(leaves: Sequence[SpanRecord]) -> float | None:
    """Sum of ``llm.cost.total`` over the LLM calls that report it."""
    values = [as_float(mapping(s.attributes).get("llm.cost.total")) for s in leaves]
    known = [v for v in values if v is not None]
    return sum(known) if known else None
