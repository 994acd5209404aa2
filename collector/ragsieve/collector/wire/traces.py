"""OTLP trace requests to span records or store rows; invalid spans rejected one by one.

Spans that are individually invalid are counted as rejected (OTLP partial success), never fail
the whole request.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.trace.v1.trace_pb2 import ResourceSpans, Span

from ragsieve.collector.wire.codec import Encoding, attributes, parse
from ragsieve.collector.wire.spans import (
    FLAG_HAS_IS_REMOTE,
    FLAG_PARENT_IS_REMOTE,
    SpanRecord,
    SpanRow,
)

_ZERO_TRACE_B = bytes(16)
_ZERO_SPAN_B = bytes(8)
_REMOTE_PARENT = FLAG_HAS_IS_REMOTE | FLAG_PARENT_IS_REMOTE
_new_row = tuple.__new__
MAX_TIME_NS = 2**63 - 1  # fixed64 on the wire; stores keep signed 64-bit integers


# -- traces ------------------------------------------------------------------------------------
@dataclass
class _Rejections:
    """Spans refused one by one (OTLP partial success), removed from the request at the end."""

    rejected: int = 0
    reasons: list[str] = field(default_factory=list)
    _bad: list[tuple[Any, int]] = field(default_factory=list, repr=False)

    def reject(self, reason: str, spans: Any, index: int) -> None:
        self.rejected += 1
        self._bad.append((spans, index))
        if reason not in self.reasons:
            self.reasons.append(reason)

    def drop_from_request(self) -> None:
        """Delete rejected spans from the canonical request, so they are never forwarded."""
        for spans, index in reversed(self._bad):
            del spans[index]
        self._bad.clear()


@dataclass
class DecodedTraces(_Rejections):
    """Accepted spans, rejections and the canonical protobuf for forwarding."""

    spans: list[SpanRecord] = field(default_factory=list)
    request: ExportTraceServiceRequest | None = None


@dataclass
class DecodedRows(_Rejections):
    """Accepted spans as store rows (the receiver's path), rejections and the request."""

    rows: list[SpanRow] = field(default_factory=list)
    request: ExportTraceServiceRequest | None = None


@dataclass(frozen=True, slots=True)
class _Scope:
    """What every span of one ``ScopeSpans`` shares."""

    resource: dict[str, Any]
    name: str
    version: str
    attributes: dict[str, Any]


def _scopes(req: ExportTraceServiceRequest) -> Iterator[tuple[_Scope, Any]]:
    """``(scope, spans)`` for every ScopeSpans of the request."""
    for rs in req.resource_spans:
        resource = attributes(rs.resource.attributes)
        for ss in rs.scope_spans:
            sc = ss.scope
            yield _Scope(resource, sc.name, sc.version, attributes(sc.attributes)), ss.spans


def _invalid(s: Span) -> str | None:
    """Why one span cannot be stored, or None."""
    trace_id, span_id = s.trace_id, s.span_id
    if len(trace_id) != 16 or trace_id == _ZERO_TRACE_B:
        return "invalid trace_id"
    if len(span_id) != 8 or span_id == _ZERO_SPAN_B:
        return "invalid span_id"
    if s.parent_span_id and len(s.parent_span_id) != 8:
        return "invalid parent_span_id"
    if max(s.start_time_unix_nano, s.end_time_unix_nano) > MAX_TIME_NS:
        return "timestamp out of range"
    return None


def _parent(s: Span) -> str | None:
    parent = s.parent_span_id
    return parent.hex() if parent and parent != _ZERO_SPAN_B else None


def _events(s: Span) -> tuple[dict[str, Any], ...]:
    return tuple(
        {"name": e.name, "time_ns": int(e.time_unix_nano), "attributes": attributes(e.attributes)}
        for e in s.events
    )


def _links(s: Span) -> tuple[dict[str, Any], ...]:
    return tuple(
        {
            "trace_id": link.trace_id.hex(),
            "span_id": link.span_id.hex(),
            "attributes": attributes(link.attributes),
        }
        for link in s.links
    )


def _record(s: Span, scope: _Scope) -> SpanRecord:
    return SpanRecord(
        trace_id=s.trace_id.hex(),
        span_id=s.span_id.hex(),
        parent_span_id=_parent(s),
        name=s.name.replace("\x00", "\ufffd"),
        kind=int(s.kind),
        start_ns=int(s.start_time_unix_nano),
        end_ns=int(s.end_time_unix_nano),
        status_code=int(s.status.code),
        status_message=s.status.message,
        attributes=attributes(s.attributes),
        events=_events(s),
        links=_links(s),
        resource=scope.resource,
        scope_name=scope.name,
        scope_version=scope.version,
        scope_attributes=scope.attributes,
        flags=int(s.flags),
        trace_state=s.trace_state,
        dropped_attributes_count=int(s.dropped_attributes_count),
        dropped_events_count=int(s.dropped_events_count),
        dropped_links_count=int(s.dropped_links_count),
    )


def _field(number: int, payload: bytes) -> bytes:
    """One length-delimited protobuf field (wire type 2) of a field number below 16."""
    size = len(payload)
    if size < 0x80:
        head = bytes((number << 3 | 2, size))
    elif size < 0x4000:
        head = bytes((number << 3 | 2, size & 0x7F | 0x80, size >> 7))
    else:
        head = bytes((number << 3 | 2,)) + _varint(size)
    return head + payload


def _varint(n: int) -> bytes:
    out = bytearray()
    while n > 0x7F:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def _row(s: Span, res_field: bytes, scope_field: bytes) -> SpanRow:
    """One span straight to its store row: its protobuf bytes as received, no flattening.

    ``n_attributes`` counts the KeyValue entries (a record counts distinct keys: the two differ
    only for a span that repeats a key, which OTLP forbids). The body is a one-span
    ``ResourceSpans`` (``res_field`` and ``scope_field``: the request's serialized resource and
    scope fields), from which :func:`span_from_bytes` gives back the record
    :func:`decode_traces` would have built.
    """
    parent = _parent(s)
    flags = int(s.flags)
    body = res_field + _field(2, scope_field + _field(2, s.SerializeToString()))
    return _new_row(
        SpanRow,
        (
            s.trace_id.hex(),
            s.span_id.hex(),
            parent,
            s.name.replace("\x00", "\ufffd"),
            int(s.start_time_unix_nano),
            int(s.end_time_unix_nano),
            len(s.attributes),  # keys are unique in OTLP; a repeated one counts twice
            body,
            not parent or (flags & _REMOTE_PARENT) == _REMOTE_PARENT,
        ),
    )


def span_from_bytes(data: bytes) -> SpanRecord:
    """The record of a span stored by :func:`decode_span_rows` (a one-span ``ResourceSpans``)."""
    rs = ResourceSpans.FromString(data)
    ss = rs.scope_spans[0]
    sc = ss.scope
    resource = attributes(rs.resource.attributes)
    return _record(ss.spans[0], _Scope(resource, sc.name, sc.version, attributes(sc.attributes)))


def _request(data: bytes, encoding: Encoding) -> ExportTraceServiceRequest:
    req = ExportTraceServiceRequest()
    parse(data, encoding, req)
    return req


def decode_traces(data: bytes, encoding: Encoding) -> DecodedTraces:
    """Decode an ``ExportTraceServiceRequest`` body into span records."""
    out = DecodedTraces(request=_request(data, encoding))
    assert out.request is not None  # noqa: S101 - set on the line above
    for scope, spans in _scopes(out.request):
        for index, s in enumerate(spans):
            reason = _invalid(s)
            if reason:
                out.reject(reason, spans, index)
            else:
                out.spans.append(_record(s, scope))
    out.drop_from_request()
    return out


def decode_span_rows(data: bytes, encoding: Encoding) -> DecodedRows:
    """Decode an ``ExportTraceServiceRequest`` body straight into store rows (the hot path).

    Same spans and rejections as :func:`decode_traces`, without a :class:`SpanRecord` per span:
    each row keeps the span's protobuf bytes (flattened only when the trace is derived).
    """
    out = DecodedRows(request=_request(data, encoding))
    assert out.request is not None  # noqa: S101 - set on the line above
    for res_field, scope_field, spans in _scope_fields(out.request):
        for index, s in enumerate(spans):
            reason = _invalid(s)
            if reason:
                out.reject(reason, spans, index)
            else:
                out.rows.append(_row(s, res_field, scope_field))
    out.drop_from_request()
    return out


def _scope_fields(req: ExportTraceServiceRequest) -> Iterator[tuple[bytes, bytes, Any]]:
    """``(resource field, scope field, spans)`` per ScopeSpans, the fields serialized once."""
    for rs in req.resource_spans:
        res_field = _field(1, rs.resource.SerializeToString()) if rs.HasField("resource") else b""
        for ss in rs.scope_spans:
            scope_field = _field(1, ss.scope.SerializeToString()) if ss.HasField("scope") else b""
            yield res_field, scope_field, ss.spans
