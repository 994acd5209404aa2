"""OTLP logs requests: the ``gen_ai.*`` content events kept, with their trace and span ids."""

from __future__ import annotations

from dataclasses import dataclass, field

from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest

from ragsieve.collector.wire.codec import Encoding, any_value, attributes, parse
from ragsieve.collector.wire.spans import LogEvent

_ZERO_TRACE = "0" * 32


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
    parse(data, encoding, req)
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
