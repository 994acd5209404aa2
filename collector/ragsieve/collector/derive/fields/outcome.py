"""Errors, cancellation and user feedback of one trace (SPAN_SPEC §3.4.10 and §6)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from ragsieve.collector.derive.fields.chunks import StageOutput
from ragsieve.collector.derive.trace.attrs import as_float, as_str, cap, get_str, mapping, unflatten
from ragsieve.collector.derive.trace.classify import TraceTree
from ragsieve.collector.derive.trace.genai import event_attrs, event_name
from ragsieve.collector.wire.spans import STATUS_ERROR, LogEvent, SpanRecord
from ragsieve.evaluators.records import Completeness, Feedback, SpanError, Status

FEEDBACK_NAMES = frozenset(
    {"user_feedback", "user-feedback", "feedback", "thumbs", "rating", "helpfulness"}
)
NEGATIVE_LABELS = frozenset(
    {
        "thumbs_down",
        "👎",
        "negative",
        "bad",
        "not_helpful",
        "incorrect",
        "dislike",
        "false",
        "0",
        "down",
        "no",
        "wrong",
        "-1",
    }
)
POSITIVE_LABELS = frozenset(
    {
        "thumbs_up",
        "👍",
        "positive",
        "good",
        "helpful",
        "correct",
        "like",
        "true",
        "1",
        "+1",
        "up",
        "yes",
    }
)
_ANNOTATION_PREFIXES = (
    ("annotations", "annotation"),
    ("evaluations", "evaluation"),
    ("trace.annotations", "annotation"),
    ("trace.evaluations", "evaluation"),
)
MAX_MESSAGE_CHARS = 2048


def to_datetime(ns: int) -> datetime:
    """Unix nanoseconds to a tz-aware UTC datetime (clamped to datetime's range)."""
    ns = min(max(ns if isinstance(ns, int) else 0, 0), 253_402_300_799 * 10**9)
    return datetime(1970, 1, 1, tzinfo=UTC) + timedelta(microseconds=ns // 1000)


def span_errors(tree: TraceTree, logs: Sequence[LogEvent]) -> list[SpanError]:
    """One entry per failed span: status ERROR, GenAI ``error.type``, or an exception log event."""
    out: list[SpanError] = []
    for span in tree.spans:
        attrs = mapping(span.attributes)
        gen_error = get_str(attrs, "error.type")
        if gen_error is None and get_str(attrs, "langfuse.observation.level") == "ERROR":
            gen_error = "ERROR"  # Langfuse marks a failed observation by its level only
        if span.status_code != STATUS_ERROR and gen_error is None:
            continue
        exc = next(
            (
                event_attrs(e)
                for e in span.events or ()
                if isinstance(e, Mapping) and event_name(e) == "exception"
            ),
            {},
        )
        message = (
            as_str(exc.get("exception.message"))
            or as_str(span.status_message)
            or get_str(attrs, "langfuse.observation.status_message")
        )
        out.append(
            SpanError(
                span_id=span.span_id,
                span_name=str(span.name),
                role=tree.role(span),
                type=as_str(exc.get("exception.type")) or gen_error,
                message=cap(message, MAX_MESSAGE_CHARS),
            )
        )
    seen = {e.span_id for e in out}
    for ev in logs:
        if ev.event_name != "gen_ai.client.operation.exception" or not ev.span_id:
            continue
        if ev.span_id in seen:
            continue
        seen.add(ev.span_id)
        attrs = mapping(ev.attributes)
        found = tree.by_id.get(ev.span_id)
        out.append(
            SpanError(
                span_id=ev.span_id,
                span_name=found.name if found else "",
                role=tree.role(found) if found else None,
                type=as_str(attrs.get("exception.type")),
                message=cap(as_str(attrs.get("exception.message")), MAX_MESSAGE_CHARS),
            )
        )
    return out


def cancelled(spans: Sequence[SpanRecord]) -> bool:
    """True when a span carries LlamaIndex's ``span.cancelled`` event."""
    return any(
        isinstance(e, Mapping) and event_name(e) == "span.cancelled"
        for s in spans
        for e in s.events or ()
    )


def inline_feedback(tree: TraceTree, trace_id: str) -> list[Feedback]:
    """Human feedback recorded inside the trace (OI annotations, GenAI evaluation events)."""
    out: list[Feedback] = []
    for span in tree.spans:
        attrs = mapping(span.attributes)
        when = to_datetime(span.end_ns or span.start_ns)
        for prefix, field_ in _ANNOTATION_PREFIXES:
            for _, item in unflatten(attrs, prefix):
                name = as_str(item.get(f"{field_}.name"))
                kind = (as_str(item.get(f"{field_}.annotator_kind")) or "").upper()
                fb = _feedback(
                    trace_id,
                    span.span_id,
                    name,
                    kind == "HUMAN",
                    item.get(f"{field_}.score"),
                    item.get(f"{field_}.label"),
                    item.get(f"{field_}.explanation"),
                    "oi_inline",
                    when,
                )
                if fb:
                    out.append(fb)
        for event in span.events or ():
            if isinstance(event, Mapping) and event_name(event) == "gen_ai.evaluation.result":
                ea = event_attrs(event)
                fb = _feedback(
                    trace_id,
                    span.span_id,
                    as_str(ea.get("gen_ai.evaluation.name")),
                    True,
                    ea.get("gen_ai.evaluation.score.value"),
                    ea.get("gen_ai.evaluation.score.label"),
                    ea.get("gen_ai.evaluation.explanation"),
                    "genai_event",
                    when,
                )
                if fb:
                    out.append(fb)
    return out


def _feedback(
    trace_id: str,
    span_id: str,
    name: str | None,
    human: bool,
    score: Any,
    label: Any,
    comment: Any,
    source: str,
    when: datetime,
) -> Feedback | None:
    if not human or (name or "").lower() not in FEEDBACK_NAMES:
        return None
    score_f, label_s = as_float(score), as_str(label)
    if score_f is None and label_s is None:
        return None
    return Feedback(
        trace_id=trace_id,
        span_id=span_id,
        score=score_f,
        label=label_s,
        comment=as_str(comment),
        source=source,
        created_at=when,
    )


def polarity(fb: Feedback) -> int:
    """-1/0/+1 of one feedback item: spec label lists first, then the record's own rule."""
    if fb.label:
        low = fb.label.strip().lower()
        if low in NEGATIVE_LABELS:
            return -1
        if low in POSITIVE_LABELS:
            return 1
    if fb.score is not None and fb.score > 1:  # a 1-5 rating: 1-2 bad, 3 neutral, 4-5 good
        return -1 if fb.score <= 2 else 0 if fb.score < 4 else 1
    return fb.polarity


def feedback_polarity(items: Sequence[Feedback]) -> int | None:
    """Polarity of the latest feedback item (None without feedback)."""
    if not items:
        return None
    latest = max(enumerate(items), key=lambda p: (p[1].created_at, p[0]))[1]
    return polarity(latest)


def completeness(
    root: SpanRecord | None, gen: SpanRecord | None, stages: list[StageOutput]
) -> Completeness:
    """How much of a RAG request the trace shows, from its root, generation and stages."""
    if root is None:
        return "no_root"
    if gen is None:
        return "missing_generation"
    if not root.end_ns:
        return "timed_out"
    if not stages:
        return "generation_only"  # the LLM call without a retrieval step (LLM-only families)
    return "complete"


def status(errors: list[Any], spans: list[SpanRecord], done: Completeness) -> Status:
    """``error`` when a span failed, ``cancelled``, ``incomplete`` when parts are missing."""
    if errors:
        return "error"
    if cancelled(spans):
        return "cancelled"
    if done not in {"complete", "generation_only"}:
        return "incomplete"
    return "ok"


def latency(root: SpanRecord | None, spans: list[SpanRecord]) -> tuple[float | None, bool]:
    """``(milliseconds, is_estimate)``: the ended root's duration, else first start to last end."""
    if root is not None and root.end_ns:
        return root.duration_ms, False
    first, ends = starts(spans), [s.end_ns for s in spans if s.end_ns]
    if first and ends and max(ends) >= min(first):
        return (max(ends) - min(first)) / 1e6, True
    return None, True


def starts(spans: list[SpanRecord]) -> list[int]:
    return [s.start_ns for s in spans if s.start_ns]
