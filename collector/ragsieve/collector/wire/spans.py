"""SpanRecord: one decoded OTLP span with nothing dropped, the row the span store keeps."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import msgspec

# OTLP Span.flags bits (trace/v1/trace.proto)
FLAG_HAS_IS_REMOTE = 0x100
FLAG_PARENT_IS_REMOTE = 0x200

# OTLP Status.code
STATUS_UNSET = 0
STATUS_OK = 1
STATUS_ERROR = 2


@dataclass(frozen=True, slots=True)
class SpanRecord:
    """A flattened span: ids as lowercase hex, times in Unix nanoseconds, attributes as JSON values.

    Attribute values keep their OTLP type: str, bool, int, float, list of those, dict for kvlists,
    and ``bytes`` values as base64 strings.
    """

    trace_id: str
    span_id: str
    parent_span_id: str | None
    name: str
    kind: int = 0
    start_ns: int = 0
    end_ns: int = 0
    status_code: int = STATUS_UNSET
    status_message: str = ""
    attributes: Mapping[str, Any] = field(default_factory=dict)
    events: tuple[Mapping[str, Any], ...] = ()
    links: tuple[Mapping[str, Any], ...] = ()
    resource: Mapping[str, Any] = field(default_factory=dict)
    scope_name: str = ""
    scope_version: str = ""
    scope_attributes: Mapping[str, Any] = field(default_factory=dict)
    flags: int = 0
    trace_state: str = ""
    dropped_attributes_count: int = 0
    dropped_events_count: int = 0
    dropped_links_count: int = 0

    @property
    def parent_is_remote(self) -> bool:
        """True when OTLP flags say the parent lives in another process."""
        return bool(self.flags & FLAG_HAS_IS_REMOTE) and bool(self.flags & FLAG_PARENT_IS_REMOTE)

    @property
    def duration_ms(self) -> float | None:
        """Duration in milliseconds, None when the span has not ended."""
        if not self.end_ns or self.end_ns < self.start_ns:
            return None
        return (self.end_ns - self.start_ns) / 1e6

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready dict (the store's ``body`` column)."""
        return {
            "trace_id": self.trace_id,
            "span_id": self.span_id,
            "parent_span_id": self.parent_span_id,
            "name": self.name,
            "kind": self.kind,
            "start_ns": self.start_ns,
            "end_ns": self.end_ns,
            "status_code": self.status_code,
            "status_message": self.status_message,
            "attributes": dict(self.attributes),
            "events": [dict(e) for e in self.events],
            "links": [dict(link) for link in self.links],
            "resource": dict(self.resource),
            "scope_name": self.scope_name,
            "scope_version": self.scope_version,
            "scope_attributes": dict(self.scope_attributes),
            "flags": self.flags,
            "trace_state": self.trace_state,
            "dropped_attributes_count": self.dropped_attributes_count,
            "dropped_events_count": self.dropped_events_count,
            "dropped_links_count": self.dropped_links_count,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> SpanRecord:
        """Inverse of :meth:`to_json`."""
        return cls(
            trace_id=data["trace_id"],
            span_id=data["span_id"],
            parent_span_id=data.get("parent_span_id"),
            name=data.get("name", ""),
            kind=int(data.get("kind", 0)),
            start_ns=int(data.get("start_ns", 0)),
            end_ns=int(data.get("end_ns", 0)),
            status_code=int(data.get("status_code", 0)),
            status_message=data.get("status_message", ""),
            attributes=data.get("attributes", {}),
            events=tuple(data.get("events", ())),
            links=tuple(data.get("links", ())),
            resource=data.get("resource", {}),
            scope_name=data.get("scope_name", ""),
            scope_version=data.get("scope_version", ""),
            scope_attributes=data.get("scope_attributes", {}),
            flags=int(data.get("flags", 0)),
            trace_state=data.get("trace_state", ""),
            dropped_attributes_count=int(data.get("dropped_attributes_count", 0)),
            dropped_events_count=int(data.get("dropped_events_count", 0)),
            dropped_links_count=int(data.get("dropped_links_count", 0)),
        )


class SpanRow(NamedTuple):
    """A span as the store writes it: the indexed columns and the JSON body, nothing else."""

    trace_id: str
    span_id: str
    parent_span_id: str | None
    name: str
    start_ns: int
    end_ns: int
    n_attributes: int
    body: str | bytes  # JSON text (spans.body), or protobuf bytes as received (spans.pb)
    is_root: bool  # no parent, or a parent in another process


_JSON = msgspec.json.Encoder()


def body_json(data: Mapping[str, Any], *, exact: bool = True) -> str:
    """The ``spans.body`` text of a span's JSON dict.

    msgspec writes the same JSON as ``json.dumps(ensure_ascii=False)`` about ten times faster,
    except for NaN/infinity (it writes ``null``) and lone surrogates (it refuses them): pass
    ``exact=False`` when the data may hold the former; the latter fall back by themselves.
    """
    if exact:
        try:
            return _JSON.encode(data).decode()
        except (UnicodeEncodeError, TypeError, OverflowError):
            pass  # written below exactly as before
    return json.dumps(data, ensure_ascii=False)


def span_row(span: SpanRecord, body: str | None = None) -> SpanRow:
    """The store row of a record (``body``: its JSON when already encoded)."""
    if body is None:
        data = span.to_json()
        body = body_json(data, exact=not nonfinite(data))
    return SpanRow(
        span.trace_id,
        span.span_id,
        span.parent_span_id,
        span.name,
        span.start_ns,
        span.end_ns,
        len(span.attributes),
        body,
        not span.parent_span_id or span.parent_is_remote,
    )


def nonfinite(value: Any) -> bool:
    """True when a NaN or an infinity hides anywhere in a JSON value."""
    if isinstance(value, float):
        return value - value != 0
    if isinstance(value, dict):
        return any(nonfinite(v) for v in value.values())
    if isinstance(value, list | tuple):
        return any(nonfinite(v) for v in value)
    return False


@dataclass(frozen=True, slots=True)
class LogEvent:
    """A GenAI content event received on ``/v1/logs`` (SPAN_SPEC §4.6), joined by trace/span id."""

    trace_id: str
    span_id: str | None
    event_name: str
    time_ns: int
    attributes: Mapping[str, Any] = field(default_factory=dict)
    body: Any = None
