"""Per-signal decoding without a server: rows equal records, limits, forwarding, NaN kept exact."""

from __future__ import annotations

import json
import math
from dataclasses import replace

import pytest
from google.protobuf import json_format
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from test_store_contract import BACKENDS

from ragsieve.collector.receive.signals import FORWARD_TOPIC, LOGS, TRACES
from ragsieve.collector.settings import CollectorSettings
from ragsieve.collector.store import Store
from ragsieve.collector.wire import codec, traces
from ragsieve.collector.wire.spans import (
    FLAG_HAS_IS_REMOTE,
    FLAG_PARENT_IS_REMOTE,
    SpanRecord,
    span_row,
)
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
    return codec._fix_ids(json.loads(json.dumps(node)))


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


def test_rows_keep_the_bytes_and_give_back_the_records() -> None:
    raw = _request(SPANS)
    records, rows = traces.decode_traces(raw, "protobuf"), traces.decode_span_rows(raw, "protobuf")
    assert (rows.rejected, rows.reasons) == (records.rejected, records.reasons)
    assert rows.reasons == ["invalid span_id"] and rows.rejected == 1
    assert len(rows.rows) == len(records.spans) == 4
    for record, row in zip(records.spans, rows.rows, strict=True):
        assert isinstance(row.body, bytes)
        assert row == span_row(record)._replace(body=row.body)  # same columns as a record's
        assert traces.span_from_bytes(row.body) == record
    assert [r.is_root for r in rows.rows] == [True, False, True, False]
    assert rows.request is not None
    assert len(rows.request.resource_spans[0].scope_spans[0].spans) == 4


def test_repeated_attribute_keys_read_back_last_wins() -> None:
    kvs = [_kv("k", {"stringValue": "a"}), _kv("k", {"stringValue": "b"}), _kv("j", {})]
    raw = _request([_span("00000000000000c1", attributes=kvs)])
    row = traces.decode_span_rows(raw, "protobuf").rows[0]
    assert row.n_attributes == 3  # entries as sent (counting keys would cost 12% of ingest CPU)
    assert traces.span_from_bytes(row.body).attributes == {"k": "b", "j": None}


def _with(record: SpanRecord, **changes: object) -> SpanRecord:
    return replace(record, **changes)  # type: ignore[arg-type]


@pytest.fixture(params=BACKENDS)
def any_store(request: pytest.FixtureRequest) -> Store:
    store: Store = request.getfixturevalue("store" if request.param == "sqlite" else "pg_store")
    return store


def test_stored_bytes_and_json_read_back_alike(any_store: Store) -> None:
    store = any_store
    raw = _request(SPANS[:2])
    records = traces.decode_traces(raw, "protobuf").spans
    store.write_spans(traces.decode_span_rows(raw, "protobuf").rows, now=1.0)
    assert store.spans_for_trace(TID) == sorted(records, key=lambda s: (s.start_ns, s.span_id))
    pb, body = store.query("SELECT pb, body FROM spans LIMIT 1")[0]
    assert bytes(pb) and body == ""  # the bytes once, no JSON copy
    other = "6b8efff798038103d269b633813fc60c"
    as_json = [_with(r, trace_id=other) for r in records]
    store.write_spans(as_json, now=1.0)  # records (e.g. written by the job) keep JSON bodies
    assert store.query("SELECT pb FROM spans WHERE trace_id = ?", (other,))[0][0] is None
    assert store.spans_for_trace(other) == sorted(as_json, key=lambda s: (s.start_ns, s.span_id))


def test_nan_and_infinity_survive_the_store(store: Store) -> None:
    attrs = [
        _kv("a", {"doubleValue": "NaN"}),
        _kv("b", {"arrayValue": {"values": [{"doubleValue": "-Infinity"}]}}),
    ]
    raw = _request([_span("00000000000000b1", attributes=attrs)])
    store.write_spans(traces.decode_span_rows(raw, "protobuf").rows, now=1.0)
    [record] = traces.decode_traces(raw, "protobuf").spans
    store.write_spans([_with(record, span_id="00000000000000b2")], now=1.0)
    stored = store.spans_for_trace(TID)
    assert len(stored) == 2  # one from the bytes, one from a record's JSON
    for span in stored:
        assert math.isnan(span.attributes["a"]) and span.attributes["b"] == [-math.inf]


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
