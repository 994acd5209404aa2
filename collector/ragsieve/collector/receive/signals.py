"""One OTLP request body to a write job, per signal: pure functions both receivers share.

A :class:`Signal` pairs the decoder of ``/v1/traces`` or ``/v1/logs`` (HTTP) and of the trace or
logs ``Export`` service (gRPC) with its response. Decoding needs no server: bytes and settings in,
a :class:`Decoded` out, or :class:`BadPayload` / :class:`PayloadTooLarge` raised.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from ragsieve.collector.receive.writer import WriteJob
from ragsieve.collector.settings import CollectorSettings
from ragsieve.collector.wire import codec
from ragsieve.collector.wire import logs as otlp_logs
from ragsieve.collector.wire import traces as otlp_traces
from ragsieve.evaluators.errors import PayloadTooLarge

FORWARD_TOPIC = "otlp"


@dataclass(frozen=True, slots=True)
class Decoded:
    """What one request asks to store, and the items refused one by one (partial success)."""

    job: WriteJob
    rejected: int = 0
    message: str = ""


def decode_traces(body: bytes, encoding: codec.Encoding, cfg: CollectorSettings) -> Decoded:
    """A traces request as store rows, plus its outbox row when forwarding is on.

    The forwarded payload is the body as received when nothing was rejected (protobuf), else the
    request re-encoded without the rejected spans.
    """
    dec = otlp_traces.decode_span_rows(body, encoding)
    if len(dec.rows) > cfg.max_spans_per_request:
        raise PayloadTooLarge(
            f"{len(dec.rows)} spans in one request; the limit is"
            f" {cfg.max_spans_per_request}: send smaller batches"
        )
    job = WriteJob(spans=list(dec.rows))
    if cfg.forward_otlp and dec.rows and dec.request is not None:
        as_received = encoding == "protobuf" and not dec.rejected
        payload = body if as_received else codec.as_protobuf(dec.request)
        job.forward.append((FORWARD_TOPIC, payload, "application/x-protobuf", len(dec.rows)))
    return Decoded(job, dec.rejected, codec.rejection_message(dec.reasons, dec.rejected))


def decode_logs(body: bytes, encoding: codec.Encoding, cfg: CollectorSettings) -> Decoded:
    """A logs request: the GenAI content events it carries."""
    logs = otlp_logs.decode_logs(body, encoding)
    message = codec.rejection_message(logs.reasons, logs.rejected)
    return Decoded(WriteJob(log_events=logs.events), logs.rejected, message)


@dataclass(frozen=True, slots=True)
class Signal:
    """A signal's name (in logs), its decoder and its success response."""

    name: str
    decode: Callable[[bytes, codec.Encoding, CollectorSettings], Decoded]
    respond: Callable[[codec.Encoding, int, str], bytes]


TRACES = Signal("traces", decode_traces, codec.trace_response)
LOGS = Signal("logs", decode_logs, codec.logs_response)

__all__ = ["FORWARD_TOPIC", "LOGS", "TRACES", "Decoded", "Signal", "decode_logs", "decode_traces"]
