"""OTLP bodies as bytes: media types, bounded decompression, parsing, values, responses.

Decoding raises :class:`BadPayload` (400), :class:`UnsupportedMediaType` (415) or
:class:`PayloadTooLarge` (413). :mod:`~ragsieve.collector.wire.traces` and
:mod:`~ragsieve.collector.wire.logs` turn parsed requests into records.
"""

from __future__ import annotations

import base64
import json
import math
import zlib
from collections.abc import Callable
from typing import Any, Literal

from google.protobuf import json_format
from google.protobuf.message import DecodeError, Message
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import (
    ExportLogsPartialSuccess,
    ExportLogsServiceResponse,
)
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTracePartialSuccess,
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue

from ragsieve.evaluators.errors import BadPayload, PayloadTooLarge, UnsupportedMediaType

Encoding = Literal["protobuf", "json"]
PROTOBUF_TYPES = {"application/x-protobuf", "application/protobuf"}
JSON_TYPES = {"application/json"}


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


_ENUM_FIELDS = frozenset({"kind", "code", "severityNumber", "severity_number"})
_INT32 = (-(2**31), 2**31 - 1)


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
            elif (
                key in _ENUM_FIELDS
                and isinstance(value, int)
                and not _INT32[0] <= value <= _INT32[1]
            ):
                # protobuf's JSON parser wraps an enum beyond int32 silently instead of refusing it.
                raise BadPayload(f"cannot decode OTLP/JSON: {key} {value} is out of range")
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


def _finite_float(token: str) -> float:
    value = float(token)
    if math.isinf(value):
        raise ValueError(f"number {token[:40]} is out of range")
    return value


def _no_constant(token: str) -> float:
    # ``NaN`` / ``Infinity`` are not JSON; OTLP/JSON spells them as strings ("NaN", "Infinity").
    raise ValueError(f"{token} is not a JSON number (OTLP/JSON writes it as a string)")


def _parse_json(data: bytes, message: Message) -> None:
    try:
        obj = json.loads(data, parse_float=_finite_float, parse_constant=_no_constant)
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
    except (json_format.ParseError, TypeError, ValueError, OverflowError, RecursionError) as exc:
        raise BadPayload(f"cannot decode OTLP/JSON: {exc}"[:300]) from exc
    except SystemError as exc:  # upb, on a lone surrogate where it expects an object
        raise BadPayload("cannot decode OTLP/JSON: text that is not valid Unicode") from exc


def parse(data: bytes, encoding: Encoding, message: Message) -> None:
    """Fill ``message`` from an OTLP body in ``encoding``; :class:`BadPayload` when it cannot."""
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
