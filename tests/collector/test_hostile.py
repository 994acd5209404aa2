"""Hostile and broken inputs, one table: each gets one clear answer and leaves nothing bad behind.

Every case asserts the status, a phrase of the body, what was stored (spans, log events, feedback
rows), that the server still answers a good request, and that settling everything stored raises
nothing. The property tests at the end throw generated feedback, log and OTLP bodies at the same
receiver: never a 5xx, never a row that breaks settling.
"""

from __future__ import annotations

import gzip
import json
import logging
import math
import time
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from ragsieve.collector.derive.settle import settle

TRACE = "5b8efff798038103d269b633813fc60c"
SPAN = "00000000000000a1"
JSON = "application/json"
PROTO = "application/x-protobuf"


def span(**extra: Any) -> dict[str, Any]:
    body = {
        "traceId": TRACE,
        "spanId": SPAN,
        "name": "rag",
        "startTimeUnixNano": "1700000000000000000",
        "endTimeUnixNano": "1700000001000000000",
        "attributes": [{"key": "input.value", "value": {"stringValue": "q?"}}],
    }
    body.update(extra)
    return body


def traces(*spans: dict[str, Any]) -> dict[str, Any]:
    return {"resourceSpans": [{"scopeSpans": [{"spans": list(spans)}]}]}


def logs(**record: Any) -> dict[str, Any]:
    rec = {"traceId": TRACE, "eventName": "gen_ai.user.message", "body": {"stringValue": "hi"}}
    rec.update(record)
    return {"resourceLogs": [{"scopeLogs": [{"logRecords": [rec]}]}]}


def dumps(obj: Any) -> bytes:
    return json.dumps(obj).encode()


def proto_traces() -> bytes:
    from google.protobuf import json_format

    req = ExportTraceServiceRequest()
    body = traces(span())
    body["resourceSpans"][0]["scopeSpans"][0]["spans"][0].update(
        traceId="W47/95gDgQPSabYzgT/GDA==", spanId="AAAAAAAAAKE="
    )
    json_format.ParseDict(body, req)
    return bytes(req.SerializeToString())


def proto_with_bad_utf8_name() -> bytes:
    good = proto_traces()
    # The span name "rag" is a length-delimited field: swap its bytes for invalid UTF-8.
    return good.replace(b"\x2a\x03rag", b"\x2a\x03\xff\xfe\xfd", 1)


def gzip_bomb(decompressed: int) -> bytes:
    comp = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    zero = bytes(1 << 20)
    return b"".join([*(comp.compress(zero) for _ in range(decompressed >> 20)), comp.flush()])


@dataclass
class Case:
    """One request and everything it should leave behind."""

    name: str
    path: str
    body: bytes = b""
    content_type: str | None = JSON
    status: int = 400
    says: str = ""
    method: str = "POST"
    headers: dict[str, str] = field(default_factory=dict)
    spans: int = 0
    log_events: int = 0
    feedback: int = 0
    settings: dict[str, Any] = field(default_factory=dict)


def fb(text: str) -> bytes:
    return text.replace("$T", TRACE).encode("utf-8", "surrogatepass")


CASES = [
    # -- OTLP traces -------------------------------------------------------------------------
    Case("good json", "/v1/traces", dumps(traces(span())), status=200, spans=1),
    Case("good protobuf", "/v1/traces", proto_traces(), PROTO, status=200, spans=1),
    Case("truncated protobuf", "/v1/traces", proto_traces()[:-7], PROTO, says="protobuf"),
    Case("protobuf garbage", "/v1/traces", b"\xff" * 64, PROTO, says="protobuf"),
    Case("bad utf-8 in a protobuf string", "/v1/traces", proto_with_bad_utf8_name(), PROTO),
    Case("bad utf-8 in json", "/v1/traces", b'{"resourceSpans": "\xff\xfe"}', says="OTLP/JSON"),
    Case("deep json", "/v1/traces", b"[" * 100_000 + b"]" * 100_000, says="OTLP/JSON"),
    Case(
        "lone surrogate as a json key",
        "/v1/traces",
        dumps({"resourceSpans": [{"\ud800": 1}]}),
        says="not valid Unicode",
    ),
    Case(
        "lone surrogate where an object belongs",
        "/v1/traces",
        dumps(traces(span(attributes=[{"key": "k", "value": "\ud800"}]))),
        says="not valid Unicode",
    ),
    Case("json array at top", "/v1/traces", b"[]", says="must be an object"),
    Case("json of the wrong shape", "/v1/traces", dumps({"resourceSpans": 7}), says="OTLP/JSON"),
    Case(
        "short trace id",
        "/v1/traces",
        dumps(traces(span(traceId="abcd"))),
        status=200,
        says="invalid trace_id",
    ),
    Case(
        "trace id neither hex nor base64",
        "/v1/traces",
        dumps(traces(span(traceId="zz!"))),
        says="OTLP/JSON",
    ),
    Case(
        "zero trace id",
        "/v1/traces",
        dumps(traces(span(traceId="0" * 32))),
        status=200,
        says="invalid trace_id",
    ),
    Case(
        "zero span id beside a good span",
        "/v1/traces",
        dumps(traces(span(spanId="0" * 16), span(spanId="00000000000000a2"))),
        status=200,
        says="invalid span_id",
        spans=1,
    ),
    Case(
        "timestamp beyond int64",
        "/v1/traces",
        dumps(traces(span(endTimeUnixNano=str(2**64 - 1)))),
        status=200,
        says="timestamp out of range",
    ),
    Case(
        "NaN and infinite attribute values",
        "/v1/traces",
        dumps(
            traces(
                span(
                    attributes=[
                        {"key": "a", "value": {"doubleValue": "NaN"}},
                        {"key": "b", "value": {"doubleValue": "-Infinity"}},
                    ]
                )
            )
        ),
        status=200,
        spans=1,
    ),
    # JSON that Python's json reads but OTLP/JSON cannot hold: refused with the number named.
    Case(
        "an infinite status code",
        "/v1/traces",
        dumps(traces(span())).replace(b'"name"', b'"status": {"code": Infinity}, "name"'),
        says="Infinity is not a JSON number",
    ),
    Case(
        "a span kind beyond float range",
        "/v1/traces",
        dumps(traces(span())).replace(b'"name"', b'"kind": 1e400, "name"'),
        says="1e400 is out of range",
    ),
    Case(
        "a span kind beyond int32",
        "/v1/traces",
        dumps(traces(span(kind=2**40))),
        says="OTLP/JSON",
    ),
    Case(
        "a 4 MB attribute",
        "/v1/traces",
        dumps(traces(span(attributes=[{"key": "k", "value": {"stringValue": "x" * 4_000_000}}]))),
        status=200,
        spans=1,
    ),
    Case(
        "20,000 attributes",
        "/v1/traces",
        dumps(
            traces(
                span(attributes=[{"key": f"k{i}", "value": {"intValue": i}} for i in range(20_000)])
            )
        ),
        status=200,
        spans=1,
    ),
    Case(
        "attribute over the body limit",
        "/v1/traces",
        dumps(traces(span(attributes=[{"key": "k", "value": {"stringValue": "x" * 70_000}}]))),
        status=413,
        says="limit",
        settings={"max_body_bytes": 65_536},
    ),
    Case(
        "gzip bomb",
        "/v1/traces",
        gzip_bomb(128 << 20),
        PROTO,
        status=413,
        says="decompressed body is over",
        headers={"content-encoding": "gzip"},
    ),
    Case(
        "truncated gzip",
        "/v1/traces",
        gzip.compress(dumps(traces(span())))[:-12],
        says="gzip",
        headers={"content-encoding": "gzip"},
    ),
    Case(
        "gzip then garbage",
        "/v1/traces",
        gzip.compress(dumps(traces(span()))) + b"junk",
        says="trailing data",
        headers={"content-encoding": "gzip"},
    ),
    Case(
        "deflate claimed, gzip sent",
        "/v1/traces",
        gzip.compress(dumps(traces(span()))),
        says="deflate",
        headers={"content-encoding": "deflate"},
    ),
    Case(
        "unknown content encoding",
        "/v1/traces",
        dumps(traces(span())),
        status=415,
        says="Content-Encoding",
        headers={"content-encoding": "br"},
    ),
    Case("text/plain traces", "/v1/traces", b"hello", "text/plain", 415, "Content-Type"),
    Case("no content type", "/v1/traces", dumps(traces(span())), None, 415, "Content-Type"),
    Case("GET traces", "/v1/traces", method="GET", status=405, says="Method Not Allowed"),
    Case("PUT traces", "/v1/traces", b"{}", method="PUT", status=405, says="Method Not Allowed"),
    Case("DELETE feedback", "/v1/feedback", method="DELETE", status=405),
    Case("POST healthz", "/healthz", b"{}", status=405),
    Case("unknown path", "/v1/metrics", b"{}", status=404),
    # -- OTLP logs ---------------------------------------------------------------------------
    Case("good logs", "/v1/logs", dumps(logs()), status=200, log_events=1),
    Case("truncated logs protobuf", "/v1/logs", b"\x0a\x10\x0a", PROTO, says="protobuf"),
    Case("logs with a zero trace id", "/v1/logs", dumps(logs(traceId="0" * 32)), status=200),
    Case("deep logs json", "/v1/logs", b"{" * 5000, says="OTLP/JSON"),
    # -- feedback ----------------------------------------------------------------------------
    Case("good feedback", "/v1/feedback", fb('{"trace_id": "$T", "label": "up"}'), status=200),
    Case("feedback NaN", "/v1/feedback", fb('{"trace_id": "$T", "score": NaN}'), says="score:"),
    Case("feedback Infinity", "/v1/feedback", fb('{"trace_id": "$T", "score": Infinity}')),
    Case("feedback 1e400", "/v1/feedback", fb('{"trace_id": "$T", "score": 1e400}'), says="score:"),
    Case("feedback -5", "/v1/feedback", fb('{"trace_id": "$T", "score": -5}'), says="score:"),
    Case("feedback '0.5'", "/v1/feedback", fb('{"trace_id": "$T", "score": "0.5"}'), says="score:"),
    Case(
        "feedback lone surrogate",
        "/v1/feedback",
        fb('{"trace_id": "$T", "label": "up", "comment": "\\ud800"}'),
        says="comment:",
    ),
    Case(
        "feedback year 9999",
        "/v1/feedback",
        fb('{"trace_id": "$T", "label": "up", "created_at": "9999-01-01T00:00:00Z"}'),
        says="created_at:",
    ),
    Case(
        "feedback as text/plain",
        "/v1/feedback",
        fb('{"trace_id": "$T", "label": "up"}'),
        "text/plain",
        415,
        "application/json",
    ),
    Case("feedback array", "/v1/feedback", b"[1]", says="body: must be a JSON object"),
    Case("feedback bad utf-8", "/v1/feedback", b'{"label": "\xff"}', says="body: invalid JSON"),
    Case("feedback deep", "/v1/feedback", b"[" * 100_000, says="body: invalid JSON"),
    Case("feedback wrong id", "/v1/feedback", fb('{"trace_id": "xyz", "label": "up"}'), says="hex"),
    Case("feedback no target", "/v1/feedback", b'{"label": "up"}', says="trace_id or span_id"),
    Case("feedback unknown key", "/v1/feedback", fb('{"trace_id": "$T", "x": 1}'), says="x:"),
]
for _case in CASES:
    if _case.path == "/v1/feedback" and _case.status == 200:
        _case.feedback = 1


def counts(store: Any) -> tuple[int, int, int]:
    return (
        store.count_spans(),
        int(store.query("SELECT COUNT(*) FROM log_events")[0][0]),
        int(store.query("SELECT COUNT(*) FROM feedback")[0][0]),
    )


def settle_all(store: Any, caplog: pytest.LogCaptureFixture) -> None:
    """Settle everything now; nothing stored may make derivation raise or skip a row."""
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="ragsieve"):
        settle(store, quiet_s=0, max_wait_s=1, now=time.time() + 3600)
    bad = [r.getMessage() for r in caplog.records if r.name.startswith("ragsieve.collector")]
    assert not bad, bad


def send(url: str, case: Case) -> httpx.Response:
    headers = dict(case.headers)
    if case.content_type:
        headers["content-type"] = case.content_type
    return httpx.request(case.method, url + case.path, content=case.body, headers=headers)


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_hostile_input(
    start_collector: Callable[..., Any], case: Case, caplog: pytest.LogCaptureFixture
) -> None:
    live = start_collector(run_settler=False, **case.settings)
    r = send(live.url, case)
    assert r.status_code == case.status, r.text[:300]
    assert case.says in r.text, r.text[:300]
    if case.status >= 400 and case.path.startswith("/v1/") and r.status_code not in (404, 405):
        assert r.headers["content-type"].startswith(("application/json", PROTO))
    assert counts(live.store) == (case.spans, case.log_events, case.feedback)
    settle_all(live.store, caplog)
    # Still healthy, and still taking good data.
    assert httpx.get(f"{live.url}/healthz").json() == {"status": "ok"}
    good = traces(span(spanId="00000000000000ff"))
    assert httpx.post(f"{live.url}/v1/traces", json=good).status_code == 200
    ready = httpx.get(f"{live.url}/readyz").json()
    assert ready["inflight_requests"] == 0 and ready["inflight_bytes"] == 0


# -- properties ----------------------------------------------------------------------------
SPECIAL_TEXT = st.sampled_from(
    ["", "\ud800", "a\udfffb", "\x00", "\u202e", "é" * 300, "x" * 20_000]
)
TEXT = st.one_of(st.text(max_size=40), SPECIAL_TEXT)
NUMBER = st.one_of(
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([1e400, -1e400, 0.5, 5, -1, 2**63]),
)
SCALAR = st.one_of(st.none(), st.booleans(), NUMBER, TEXT)
JSONISH = st.recursive(
    SCALAR,
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(TEXT, inner, max_size=4)),
    max_leaves=12,
)
HEX_ID = st.one_of(
    st.sampled_from([TRACE, TRACE.upper(), "0" * 32, "", "zz"]),
    st.text(alphabet="0123456789abcdefABCDEF", min_size=0, max_size=34),
)
WHEN = st.one_of(
    st.datetimes().map(lambda d: d.isoformat()),
    st.sampled_from(["9999-12-31T23:59:59Z", "0001-01-01", "2024-02-30", "yesterday"]),
    NUMBER,
)
FEEDBACK = st.fixed_dictionaries(
    {},
    optional={
        "trace_id": st.one_of(HEX_ID, SCALAR),
        "span_id": st.one_of(HEX_ID.map(lambda s: s[:16]), SCALAR),
        "score": st.one_of(NUMBER, SCALAR),
        "label": SCALAR,
        "comment": st.one_of(TEXT, JSONISH),
        "source": SCALAR,
        "created_at": st.one_of(WHEN, SCALAR),
        "extra": JSONISH,
    },
)
ANY_VALUE = st.one_of(
    st.builds(lambda v: {"stringValue": v}, TEXT),
    st.builds(lambda v: {"intValue": v}, st.one_of(st.integers(-(2**64), 2**64), TEXT)),
    st.builds(lambda v: {"doubleValue": v}, st.one_of(NUMBER, st.sampled_from(["NaN", "x"]))),
    st.builds(lambda v: {"boolValue": v}, SCALAR),
    st.builds(lambda v: {"arrayValue": {"values": [{"stringValue": v}]}}, TEXT),
    st.builds(lambda v: {"bytesValue": v}, TEXT),
    JSONISH,
)
ATTRS = st.lists(st.fixed_dictionaries({"key": TEXT, "value": ANY_VALUE}), max_size=4)
NANOS = st.one_of(st.integers(min_value=-1, max_value=2**64), TEXT, NUMBER)
SPAN_JSON = st.fixed_dictionaries(
    {"traceId": HEX_ID, "spanId": HEX_ID.map(lambda s: s[:16])},
    optional={
        "parentSpanId": HEX_ID.map(lambda s: s[:16]),
        "name": TEXT,
        "kind": st.one_of(st.integers(-3, 9), TEXT),
        "startTimeUnixNano": NANOS,
        "endTimeUnixNano": NANOS,
        "attributes": ATTRS,
        "events": st.lists(st.fixed_dictionaries({"name": TEXT, "attributes": ATTRS}), max_size=2),
        "status": st.fixed_dictionaries({}, optional={"code": SCALAR, "message": TEXT}),
    },
)
TRACES_JSON = st.builds(
    lambda spans, res: {
        "resourceSpans": [{"resource": {"attributes": res}, "scopeSpans": [{"spans": spans}]}]
    },
    st.lists(SPAN_JSON, max_size=3),
    ATTRS,
)
LOG_JSON = st.builds(
    lambda recs: {"resourceLogs": [{"scopeLogs": [{"logRecords": recs}]}]},
    st.lists(
        st.fixed_dictionaries(
            {"traceId": HEX_ID},
            optional={
                "spanId": HEX_ID.map(lambda s: s[:16]),
                "eventName": st.one_of(st.just("gen_ai.user.message"), TEXT),
                "timeUnixNano": NANOS,
                "attributes": ATTRS,
                "body": ANY_VALUE,
            },
        ),
        max_size=3,
    ),
)


def encode(obj: Any) -> bytes:
    """JSON as a careless client writes it: NaN/Infinity literals, lone surrogates escaped."""
    return json.dumps(obj, allow_nan=True).encode()


PROPERTY = settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


def check_no_5xx_and_settles(
    live: Any, path: str, body: bytes, caplog: pytest.LogCaptureFixture, **headers: str
) -> httpx.Response:
    r = httpx.post(f"{live.url}{path}", content=body, headers={"content-type": JSON, **headers})
    assert r.status_code < 500, r.text[:300]
    settle_all(live.store, caplog)
    return r


@PROPERTY
@given(body=FEEDBACK)
def test_no_feedback_body_gives_5xx_or_an_unsettleable_row(
    start_collector: Callable[..., Any], caplog: pytest.LogCaptureFixture, body: dict[str, Any]
) -> None:
    live = _shared(start_collector)
    before = counts(live.store)[2]
    r = check_no_5xx_and_settles(live, "/v1/feedback", encode(body), caplog)
    stored = counts(live.store)[2] - before
    assert stored == (1 if r.status_code == 200 else 0)
    if r.status_code == 200:
        score = body.get("score")
        assert score is None or (isinstance(score, int | float) and math.isfinite(score))


@PROPERTY
@given(body=LOG_JSON, gz=st.booleans())
def test_no_log_body_gives_5xx_or_an_unsettleable_row(
    start_collector: Callable[..., Any],
    caplog: pytest.LogCaptureFixture,
    body: dict[str, Any],
    gz: bool,
) -> None:
    live = _shared(start_collector)
    raw = encode(body)
    headers = {"content-encoding": "gzip"} if gz else {}
    check_no_5xx_and_settles(live, "/v1/logs", gzip.compress(raw) if gz else raw, caplog, **headers)


@PROPERTY
@given(body=TRACES_JSON)
def test_no_otlp_json_body_gives_5xx_or_an_unsettleable_row(
    start_collector: Callable[..., Any], caplog: pytest.LogCaptureFixture, body: dict[str, Any]
) -> None:
    live = _shared(start_collector)
    check_no_5xx_and_settles(live, "/v1/traces", encode(body), caplog)


@PROPERTY
@given(data=st.binary(max_size=300), cut=st.integers(0, 400), flip=st.integers(0, 399))
def test_no_protobuf_body_gives_5xx(
    start_collector: Callable[..., Any],
    caplog: pytest.LogCaptureFixture,
    data: bytes,
    cut: int,
    flip: int,
) -> None:
    """Random bytes, and a real request cut short or with one byte changed."""
    live = _shared(start_collector)
    real = bytearray(proto_traces())
    real[flip % len(real)] ^= 0x5A
    for body, kind in (
        (data, ExportTraceServiceRequest),
        (bytes(real), ExportTraceServiceRequest),
        (proto_traces()[:cut], ExportTraceServiceRequest),
        (data, ExportLogsServiceRequest),
    ):
        path = "/v1/traces" if kind is ExportTraceServiceRequest else "/v1/logs"
        r = httpx.post(f"{live.url}{path}", content=body, headers={"content-type": PROTO})
        assert r.status_code < 500, r.content[:300]
    settle_all(live.store, caplog)


_LIVE: dict[str, Any] = {}


def _shared(start_collector: Callable[..., Any]) -> Any:
    """One collector per test function across its examples (a server per example is slow)."""
    if _LIVE.get("fixture") is not start_collector:
        _LIVE.update(fixture=start_collector, live=start_collector(run_settler=False))
    return _LIVE["live"]
