"""Record fields read off the trace as a whole: convention, flat attributes, timing, finish."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, cast

from ragsieve.collector.derive.fields import extract as ex
from ragsieve.collector.derive.trace.attrs import as_bool, as_float, as_str, mapping, parse_object
from ragsieve.collector.derive.trace.classify import TraceTree
from ragsieve.collector.derive.trace.genai import event_name, event_time
from ragsieve.collector.wire.spans import LogEvent, SpanRecord
from ragsieve.evaluators.records import Convention, Message, Prompt

FIRST_TOKEN_EVENT = "First Token Stream Event"
MAX_ATTRIBUTE_KEYS = 64
SAMPLING_KEYS = ("rag.sampling.baseline_percentage", "rag.sampling.config", "tailsampling.policy")
OI_PREFIXES = ("openinference.", "llm.", "retrieval.", "reranker.", "input.value")


def history(prompt: Prompt) -> tuple[Message, ...]:
    """The non-system messages before the last user turn."""
    msgs = [m for m in prompt.messages if m.role != "system"]
    last_user = max((i for i, m in enumerate(msgs) if m.role in ("user", "human")), default=-1)
    return tuple(msgs[:last_user]) if last_user > 0 else ()


def finish_reason(chain: list[SpanRecord]) -> str | None:
    """The generation's finish reason (the first one when a list is given)."""
    value = ex.chain_attr(chain, ("llm.finish_reason", "gen_ai.response.finish_reasons"))
    if isinstance(value, list):
        value = value[0] if value else None
    return as_str(value)


def ttft(chain: list[SpanRecord]) -> tuple[float | None, bool]:
    """Time to first token in ms, and whether the generation streamed."""
    gen = chain[0] if chain else None
    if gen is None:
        return None, False
    for span in chain:
        for event in span.events or ():
            if isinstance(event, Mapping) and event_name(event) == FIRST_TOKEN_EVENT:
                when = event_time(event)
                if when and when >= span.start_ns:
                    return (when - span.start_ns) / 1e6, True
    first = as_float(ex.chain_attr(chain, ("gen_ai.response.time_to_first_chunk",)))
    params = parse_object(ex.chain_attr(chain, ("llm.invocation_parameters",))) or {}
    streaming = bool(
        as_bool(ex.chain_attr(chain, ("gen_ai.request.stream",))) or as_bool(params.get("stream"))
    )
    return (first * 1000 if first is not None else None), streaming or first is not None


def covered(spans: list[SpanRecord]) -> float | None:
    """Milliseconds covered by the union of the spans' time ranges (overlaps counted once)."""
    spans_ = sorted((s.start_ns, s.end_ns) for s in spans if s.end_ns >= s.start_ns > 0)
    if not spans_:
        return None
    total, cur_s, cur_e = 0, *spans_[0]
    for start, end in spans_[1:]:
        if start > cur_e:
            total, cur_s, cur_e = total + cur_e - cur_s, start, end
        else:
            cur_e = max(cur_e, end)
    return (total + cur_e - cur_s) / 1e6


def convention(tree: TraceTree, logs: list[LogEvent]) -> Convention:
    """Which tracing convention(s) the spans follow; ``mixed`` when more than one."""
    found = set()
    for span in tree.spans:
        keys = [k for k in mapping(span.attributes) if isinstance(k, str)]
        if any(k.startswith(OI_PREFIXES) for k in keys):
            found.add("openinference")
        # OpenLLMetry writes today's gen_ai.* names too; its traceloop.* keys tell it apart.
        if any(k.startswith(("gen_ai.prompt.", "traceloop.")) for k in keys):
            found.add("openllmetry")
        elif any(
            k
            in (
                "gen_ai.input.messages",
                "gen_ai.output.messages",
                "gen_ai.provider.name",
                "gen_ai.retrieval.documents",
            )
            for k in keys
        ):
            found.add("genai")
        elif any(k.startswith("gen_ai.") for k in keys):
            found.add("genai_legacy")
        if any(k.startswith("langfuse.") for k in keys):
            found.add("langfuse")
    if not found and any(e.event_name.startswith("gen_ai.") for e in logs):
        found.add("genai_legacy")
    if len(found) > 1:
        return "mixed"
    return cast(Convention, found.pop()) if found else "unknown"


def flat_attributes(
    tree: TraceTree,
    top: SpanRecord,
    metadata: Mapping[str, Any],
    model: str | None,
    provider: str | None,
) -> dict[str, str | int | float | bool]:
    """Flat, capped attributes for filtering: resource, route, sampling stamps, model, metadata."""
    out: dict[str, str | int | float | bool] = {}
    resource = mapping(top.resource)
    for key in (
        "service.name",
        "service.version",
        "deployment.environment.name",
        "deployment.environment",
        "openinference.project.name",
    ):
        if (value := as_str(resource.get(key))) is not None:
            out[key] = value[:200]
    root_attrs = mapping(top.attributes)
    for key in ("http.route", "gen_ai.agent.name", "gen_ai.data_source.id"):
        if (value := as_str(root_attrs.get(key))) is not None:
            out[key] = value[:200]
    out.update(sampling_stamps(tree, top))
    if model:
        out["model"] = model
    if provider:
        out["provider"] = provider
    for key, value in sorted(metadata.items()):
        if len(out) >= MAX_ATTRIBUTE_KEYS or key.startswith("ls_"):
            continue
        if isinstance(value, bool | int | float) or (isinstance(value, str) and value):
            out[f"metadata.{key}"] = value[:200] if isinstance(value, str) else value
    return out


def sampling_stamps(tree: TraceTree, top: SpanRecord) -> dict[str, str | int | float]:
    """What a tail-sampling tier stamped (SPAN_SPEC §5), so the job can weight for its drops.

    Instrumentation-scope attributes first (where the Collector's tail_sampling processor
    records ``tailsampling.policy``), then resource, then span attributes (root first); the
    first usable value wins.
    """
    out: dict[str, str | int | float] = {}
    spans = [top, *(s for s in tree.spans if s is not top)]
    for key in SAMPLING_KEYS:
        for span in spans:
            value = mapping(span.scope_attributes).get(key)
            value = mapping(span.resource).get(key) if value is None else value
            value = mapping(span.attributes).get(key) if value is None else value
            if isinstance(value, int | float) and not isinstance(value, bool):
                out[key] = value
            elif isinstance(value, str) and value.strip():
                out[key] = value.strip()[:200]
            else:
                continue
            break
    return out
