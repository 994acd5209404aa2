"""OTLP/HTTP bodies (protobuf or JSON, gzip/deflate) in, SpanRecords and LogEvents out.

Decoding raises :class:`BadPayload` (400), :class:`UnsupportedMediaType` (415) or
:class:`PayloadTooLarge` (413). Spans that are individually invalid are counted as rejected
(OTLP partial success), never fail the whole request.
"""

from __future__ import annotations

import base64
import json
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, Literal

from google.protobuf import json_format
from google.protobuf.message import DecodeError, Message
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import (
    ExportLogsPartialSuccess,
    ExportLogsServiceRequest,
    ExportLogsServiceResponse,
)
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTracePartialSuccess,
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.proto.trace.v1.trace_pb2 import ResourceSpans, Span

from ragsieve.collector.spans import (
    FLAG_HAS_IS_REMOTE,
    FLAG_PARENT_IS_REMOTE,
    LogEvent,
    SpanRecord,
    SpanRow,
)
from ragsieve.evaluators.errors import BadPayload, PayloadTooLarge, UnsupportedMediaType

Encoding = Literal["protobuf", "json"]
PROTOBUF_TYPES = {"application/x-protobuf", "application/protobuf"}
JSON_TYPES = {"application/json"}
_ZERO_TRACE = "0" * 32
_ZERO_TRACE_B = bytes(16)
_ZERO_SPAN_B = bytes(8)
_REMOTE_PARENT = FLAG_HAS_IS_REMOTE | FLAG_PARENT_IS_REMOTE
_new_row = tuple.__new__
MAX_TIME_NS = 2**63 - 1  # fixed64 on the wire; stores keep signed 64-bit integers


def media_encoding(content_type: str | None) -> Encoding:
    """Map a Content-Type header (parameters ignored) to the body encoding."""
    base = (content_type or "").split(";", 1)[0].strip().lower()
    if base in PROTOBUF_TYPES:
        return "protobuf"
    if base in JSON_TYPES:
        return "json"
    raise UnsupportedMediaType(
        f"unsupported Content-Type {content_type!r}; use application/x-protobuf or application/json"
    )


DECOMPRESS_STEP = 1 << 20


def decompress(
    body: bytes,
    content_encoding: str | None,
    limit: int,
    charge: Callable[[int], None] | None = None,
) -> bytes:
    """Undo Content-Encoding, refusing output larger than ``limit`` bytes (zip bombs).

    Output is produced :data:`DECOMPRESS_STEP` bytes at a time, and each step is first passed to
    ``charge`` (which may raise to refuse it), so memory is accounted before it is allocated.
    Bytes charged but not produced are given back with a negative charge.
    """
    enc = (content_encoding or "identity").strip().lower()
    if enc in ("", "identity"):
        if len(body) > limit:
            raise PayloadTooLarge(f"body of {len(body)} bytes is over the {limit}-byte limit")
        return body
    if enc == "gzip":
        wbits = 16 + zlib.MAX_WBITS
    elif enc == "deflate":
        wbits = zlib.MAX_WBITS if body[:1] == b"\x78" else -zlib.MAX_WBITS
    else:
        raise UnsupportedMediaType(
            f"unsupported Content-Encoding {content_encoding!r}; use gzip, deflate or identity"
        )
    pay = charge or (lambda n: None)
    out = bytearray()
    data = body
    while True:
        d = zlib.decompressobj(wbits)
        pending = data
        try:
            while not d.eof:
                step = min(DECOMPRESS_STEP, limit + 1 - len(out))
                pay(step)
                piece = d.decompress(pending, step)
                pay(len(piece) - step)
                out += piece
                if len(out) > limit:
                    raise PayloadTooLarge(f"decompressed body is over the {limit}-byte limit")
                pending = d.unconsumed_tail
                if not piece and not pending:
                    break  # all input used and the stream has not ended
        except zlib.error as exc:
            raise BadPayload(f"cannot decompress {enc} body: {exc}") from exc
        if not d.eof:
            raise BadPayload(f"truncated {enc} body")
        data = d.unused_data
        if not data:
            size = len(out)
            pay(size)  # the bytes copy exists beside ``out`` for a moment
            result = bytes(out)
            out.clear()
            pay(-size)
            return result
        # Concatenated gzip members are one valid gzip stream; anything else is trailing junk.
        if enc != "gzip" or data[:2] != b"\x1f\x8b":
            raise BadPayload(f"trailing data after the {enc} stream")


# -- JSON --------------------------------------------------------------------------------------
_ID_FIELDS = {
    "traceId": 16,
    "trace_id": 16,
    "spanId": 8,
    "span_id": 8,
    "parentSpanId": 8,
    "parent_span_id": 8,
}


def _fix_ids(node: Any) -> Any:
    """OTLP/JSON ids are hex; protobuf's JSON mapping wants base64. Convert in place.

    Keys that are not Unicode text (a lone surrogate such as ``"\\ud800"``) are refused here:
    protobuf's field lookup fails on them with a SystemError rather than a parse error.
    """
    if isinstance(node, dict):
        for key, value in node.items():
            if not key.isascii():
                _text(key, "key")
            size = _ID_FIELDS.get(key)
            if size is not None and isinstance(value, str):
                node[key] = _hex_id_to_b64(value, size)
            else:
                _fix_ids(value)
    elif isinstance(node, list):
        for item in node:
            _fix_ids(item)
    return node


def _text(value: str, what: str) -> None:
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise BadPayload(f"cannot decode OTLP/JSON: a {what} is not valid Unicode text") from exc


def _hex_id_to_b64(value: str, size: int) -> str:
    if value == "":
        return ""
    if len(value) == 2 * size:
        try:
            return base64.b64encode(bytes.fromhex(value)).decode()
        except ValueError:
            pass
    # A non-conformant producer may already send base64; leave it for the parser to judge.
    return value


def _parse_json(data: bytes, message: Message) -> None:
    try:
        obj = json.loads(data)
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise BadPayload(f"cannot decode OTLP/JSON: {type(exc).__name__}: {exc}"[:300]) from exc
    if not isinstance(obj, dict):
        raise BadPayload("cannot decode OTLP/JSON: top level must be an object")
    try:
        fixed = _fix_ids(obj)
    except RecursionError as exc:
        raise BadPayload("cannot decode OTLP/JSON: nested too deeply") from exc
    try:
        json_format.ParseDict(fixed, message, ignore_unknown_fields=True)
    except (json_format.ParseError, TypeError, ValueError, RecursionError) as exc:
        raise BadPayload(f"cannot decode OTLP/JSON: {exc}") from exc
    except SystemError as exc:  # upb, on a lone surrogate where it expects an object
        raise BadPayload("cannot decode OTLP/JSON: text that is not valid Unicode") from exc


def _parse(data: bytes, encoding: Encoding, message: Message) -> None:
    if encoding == "json":
        _parse_json(data, message)
        return
    try:
        message.ParseFromString(data)
    except (DecodeError, RuntimeError, ValueError) as exc:
        raise BadPayload(f"cannot decode OTLP protobuf: {exc}") from exc


# -- values ------------------------------------------------------------------------------------
def any_value(v: AnyValue) -> Any:
    """Turn an OTLP AnyValue into a JSON value (bytes → base64 text)."""
    kind = v.WhichOneof("value")
    if kind is None:
        return None
    if kind == "array_value":
        return [any_value(x) for x in v.array_value.values]
    if kind == "kvlist_value":
        return {kv.key: any_value(kv.value) for kv in v.kvlist_value.values}
    if kind == "bytes_value":
        return base64.b64encode(v.bytes_value).decode()
    return getattr(v, kind)


def attributes(kvs: Any) -> dict[str, Any]:
    """KeyValue list → dict (a repeated key keeps its last value).

    Plain strings, the bulk of RAG attributes, are read without the generic dispatch.
    """
    out: dict[str, Any] = {}
    kv: KeyValue
    for kv in kvs:
        value = kv.value
        out[kv.key] = value.string_value if value.HasField("string_value") else any_value(value)
    return out


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
    _parse(data, encoding, req)
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


@dataclass
class DecodedLogs:
    """GenAI content events kept from a logs request."""

    events: list[LogEvent] = field(default_factory=list)
    rejected: int = 0
    ignored: int = 0
    reasons: list[str] = field(default_factory=list)


def decode_logs(data: bytes, encoding: Encoding) -> DecodedLogs:
    """Decode an ``ExportLogsServiceRequest``, keeping ``gen_ai.*`` events with a trace id."""
    req = ExportLogsServiceRequest()
    _parse(data, encoding, req)
    out = DecodedLogs()
    records = (rec for rl in req.resource_logs for sl in rl.scope_logs for rec in sl.log_records)
    for rec in records:
        attrs = attributes(rec.attributes)
        name = getattr(rec, "event_name", "") or str(attrs.get("event.name", ""))
        if not name.startswith("gen_ai."):
            out.ignored += 1
            continue
        trace_id = rec.trace_id.hex()
        if len(rec.trace_id) != 16 or trace_id == _ZERO_TRACE:
            out.rejected += 1
            if "missing trace_id" not in out.reasons:
                out.reasons.append("missing trace_id")
            continue
        out.events.append(
            LogEvent(
                trace_id=trace_id,
                span_id=rec.span_id.hex() if len(rec.span_id) == 8 else None,
                event_name=name,
                time_ns=int(rec.time_unix_nano or rec.observed_time_unix_nano),
                attributes=attrs,
                body=any_value(rec.body),
            )
        )
    return out


def trace_response(encoding: Encoding, rejected: int = 0, message: str = "") -> bytes:
    """``ExportTraceServiceResponse`` in the request's encoding (partial success when needed)."""
    resp = ExportTraceServiceResponse()
    if rejected or message:
        resp.partial_success.CopyFrom(
            ExportTracePartialSuccess(rejected_spans=rejected, error_message=message)
        )
    return _encode(resp, encoding)


def logs_response(encoding: Encoding, rejected: int = 0, message: str = "") -> bytes:
    """``ExportLogsServiceResponse`` in the request's encoding."""
    resp = ExportLogsServiceResponse()
    if rejected or message:
        resp.partial_success.CopyFrom(
            ExportLogsPartialSuccess(rejected_log_records=rejected, error_message=message)
        )
    return _encode(resp, encoding)


def status_body(encoding: Encoding, code: int, message: str) -> bytes:
    """A ``google.rpc.Status``-shaped error body (JSON or protobuf)."""
    if encoding == "json":
        return json.dumps({"code": code, "message": message}).encode()
    from google.rpc.status_pb2 import Status

    return bytes(Status(code=code, message=message).SerializeToString())


def _encode(msg: Message, encoding: Encoding) -> bytes:
    if encoding == "protobuf":
        return bytes(msg.SerializeToString())
    return json_format.MessageToJson(msg, indent=None).encode()


def content_type_for(encoding: Encoding) -> str:
    """Response Content-Type for an encoding."""
    return "application/x-protobuf" if encoding == "protobuf" else "application/json"


def as_protobuf(request: ExportTraceServiceRequest) -> bytes:
    """Canonical protobuf bytes (what Phoenix's endpoint accepts)."""
    return bytes(request.SerializeToString())


def rejection_message(reasons: list[str], rejected: int) -> str:
    """One line describing rejected items."""
    return f"{rejected} rejected: {', '.join(reasons)}" if rejected else ""
