"""Per-signal decoding without a server: rows equal records, limits, forwarding, NaN kept exact."""

from __future__ import annotations

import json
import math

import pytest
from google.protobuf import json_format
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from ragsieve.collector import otlp
from ragsieve.collector.settings import CollectorSettings
from ragsieve.collector.signals import FORWARD_TOPIC, LOGS, TRACES
from ragsieve.collector.spans import FLAG_HAS_IS_REMOTE, FLAG_PARENT_IS_REMOTE, span_row
from ragsieve.collector.store.base import span_body
from ragsieve.evaluators.errors import BadPayload, PayloadTooLarge

TID = "5b8efff798038103d269b633813fc60c"


def _kv(key: str, value: dict[str, object]) -> dict[str, object]:
    return {"key": key, "value": value}


def _request(spans: list[dict[str, object]]) -> bytes:
    body = {
        "resourceSpans": [
            {
                "resource": {"attributes": [_kv("service.name", {"stringValue": "rag"})]},
                "scopeSpans": [
                    {
                        "scope": {"name": "openinference", "version": "1.0"},
                        "spans": spans,
                    }
                ],
            }
        ]
    }
    req = ExportTraceServiceRequest()
    json_format.ParseDict(_hex_to_b64(body), req)
    return bytes(req.SerializeToString())


def _hex_to_b64(node: object) -> object:
    return otlp._fix_ids(json.loads(json.dumps(node)))


def _span(span_id: str, parent: str = "", **extra: object) -> dict[str, object]:
    return {
        "traceId": TID,
        "spanId": span_id,
        "parentSpanId": parent,
        "name": f"s-{span_id[-2:]}",
        "startTimeUnixNano": "1764400000000000000",
        "endTimeUnixNano": "1764400000900000000",
        **extra,
    }


SPANS = [
    _span(
        "00000000000000a1",
        attributes=[
            _kv("input.value", {"stringValue": "¿Cuánto dura el reembolso? \u2028"}),
            _kv("n", {"intValue": "7"}),
            _kv("ok", {"boolValue": True}),
            _kv("score", {"doubleValue": 0.5}),
            _kv("tags", {"arrayValue": {"values": [{"stringValue": "a"}, {"intValue": "2"}]}}),
            _kv("raw", {"bytesValue": "AAEC"}),
            _kv("kv", {"kvlistValue": {"values": [_kv("x", {"stringValue": "y"})]}}),
            _kv("empty", {}),
        ],
        events=[{"name": "first_token", "timeUnixNano": "1764400000100000000"}],
        links=[{"traceId": TID, "spanId": "00000000000000ff", "attributes": []}],
        status={"code": 2, "message": "boom"},
    ),
    _span("00000000000000a2", parent="00000000000000a1", kind=3),
    # A child whose parent lives in another process counts as a root of this trace.
    _span(
        "00000000000000a3",
        parent="00000000000000ee",
        flags=FLAG_HAS_IS_REMOTE | FLAG_PARENT_IS_REMOTE,
    ),
    _span("00000000000000a4", parent="00000000000000ee", flags=FLAG_HAS_IS_REMOTE),
    _span("0000000000000000"),  # rejected: zero span id
]


def test_rows_are_the_records_rows() -> None:
    raw = _request(SPANS)
    records, rows = otlp.decode_traces(raw, "protobuf"), otlp.decode_span_rows(raw, "protobuf")
    assert (
        (rows.rejected, rows.reasons)
        == (records.rejected, records.reasons)
        == (1, ["invalid span_id"])
    )
    assert len(rows.rows) == len(records.spans) == 4
    for record, row in zip(records.spans, rows.rows, strict=True):
        assert row == span_row(record)._replace(body=row.body)
        assert json.loads(row.body) == json.loads(span_body(record)) == record.to_json()
    assert [r.is_root for r in rows.rows] == [True, False, True, False]
    assert (
        rows.request is not None and len(rows.request.resource_spans[0].scope_spans[0].spans) == 4
    )


def test_nan_and_infinity_are_stored_as_before() -> None:
    raw = _request(
        [
            _span(
                "00000000000000b1",
                attributes=[
                    _kv("a", {"doubleValue": "NaN"}),
                    _kv("b", {"arrayValue": {"values": [{"doubleValue": "-Infinity"}]}}),
                ],
            )
        ]
    )
    row = otlp.decode_span_rows(raw, "protobuf").rows[0]
    assert '"a": NaN' in row.body and "-Infinity" in row.body  # not null, as json.dumps writes
    stored = json.loads(row.body)["attributes"]
    assert math.isnan(stored["a"]) and stored["b"] == [-math.inf]


def test_traces_signal_counts_forwards_and_limits() -> None:
    raw = _request(SPANS)
    plain = TRACES.decode(raw, "protobuf", CollectorSettings())
    assert (len(plain.job.spans), plain.rejected, plain.job.forward) == (4, 1, [])
    assert plain.message == "1 rejected: invalid span_id"

    fwd = TRACES.decode(
        raw, "protobuf", CollectorSettings(forward_otlp="http://127.0.0.1:1/v1/traces")
    )
    [(topic, payload, ctype, n)] = fwd.job.forward
    assert (topic, ctype, n) == (FORWARD_TOPIC, "application/x-protobuf", 4)
    sent = ExportTraceServiceRequest.FromString(payload)  # the rejected span is not forwarded
    assert len(sent.resource_spans[0].scope_spans[0].spans) == 4

    with pytest.raises(PayloadTooLarge, match="4 spans in one request; the limit is 3"):
        TRACES.decode(raw, "protobuf", CollectorSettings(max_spans_per_request=3))
    with pytest.raises(BadPayload):
        TRACES.decode(b"\xff\x00garbage", "protobuf", CollectorSettings())


def test_logs_signal_keeps_genai_events() -> None:
    body = json.dumps(
        {
            "resourceLogs": [
                {
                    "scopeLogs": [
                        {
                            "logRecords": [
                                {
                                    "traceId": TID,
                                    "eventName": "gen_ai.user.message",
                                    "body": {"stringValue": "hi"},
                                },
                                {"traceId": TID, "eventName": "app.other"},
                                {"eventName": "gen_ai.choice"},
                            ]
                        }
                    ]
                }
            ]
        }
    ).encode()
    decoded = LOGS.decode(body, "json", CollectorSettings())
    assert [e.event_name for e in decoded.job.log_events] == ["gen_ai.user.message"]
    assert (decoded.rejected, decoded.message) == (1, "1 rejected: missing trace_id")
    assert decoded.job.spans == []
