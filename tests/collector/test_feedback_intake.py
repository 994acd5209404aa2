"""POST /v1/feedback refuses what it cannot keep, and no stored row can stop a trace settling."""

from __future__ import annotations

import json
import logging
import time
from typing import Any

import httpx
import pytest

from ragsieve.collector.derive.settle import settle
from ragsieve.collector.wire.spans import SpanRecord

TRACE = "5b8efff798038103d269b633813fc60c"
ROOT = "00000000000000a1"
JSON = {"content-type": "application/json"}


def post_raw(collector: Any, raw: bytes | str, headers: dict[str, str] | None = None) -> Any:
    data = raw.encode("utf-8", "surrogatepass") if isinstance(raw, str) else raw
    return httpx.post(f"{collector.url}/v1/feedback", content=data, headers=headers or JSON)


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ('{"trace_id": "%s", "score": NaN}', "score"),
        ('{"trace_id": "%s", "score": Infinity}', "score"),
        ('{"trace_id": "%s", "score": -Infinity}', "score"),
        ('{"trace_id": "%s", "score": 1e400}', "score"),
        ('{"trace_id": "%s", "score": -5}', "score"),
        ('{"trace_id": "%s", "score": 5.5}', "score"),
        ('{"trace_id": "%s", "score": "0.5"}', "score"),
        ('{"trace_id": "%s", "score": true}', "score"),
        ('{"trace_id": "%s", "label": 1}', "label"),
        ('{"trace_id": "%s", "label": "up", "comment": "\\ud800"}', "comment"),
        ('{"trace_id": "%s", "label": "\\udfff"}', "label"),
        ('{"trace_id": "%s", "label": "up", "created_at": "9999-12-31T00:00:00Z"}', "created_at"),
        ('{"trace_id": "%s", "label": "up", "created_at": "0001-01-01T00:00:00"}', "created_at"),
        ('{"trace_id": "%s", "label": "up", "created_at": 1e20}', "created_at"),
        ('{"trace_id": "%s", "label": "up", "source": ["x"]}', "source"),
        ('{"trace_id": "%s", "label": "up", "comment": "%s"}', "comment"),
    ],
)
def test_bad_feedback_is_400_naming_the_field(collector: Any, body: str, field: str) -> None:
    text = body % ((TRACE, "x" * 10_001) if body.count("%s") == 2 else TRACE)
    r = post_raw(collector, text)
    assert r.status_code == 400, r.text
    assert r.json()["error"].startswith(f"{field}:"), r.json()
    assert collector.store.feedback_for_trace(TRACE) == []


@pytest.mark.parametrize("content_type", ["text/plain", "application/x-www-form-urlencoded", None])
def test_feedback_that_is_not_json_is_415(collector: Any, content_type: str | None) -> None:
    headers = {"content-type": content_type} if content_type else {}
    r = httpx.post(
        f"{collector.url}/v1/feedback",
        content=json.dumps({"trace_id": TRACE, "label": "up"}).encode(),
        headers=headers,
    )
    assert r.status_code == 415 and "application/json" in r.json()["error"]
    assert collector.store.feedback_for_trace(TRACE) == []


def test_feedback_in_the_documented_range_is_stored(collector: Any) -> None:
    for score in (-1, 0, 0.5, 1, 4, 5):
        r = httpx.post(f"{collector.url}/v1/feedback", json={"trace_id": TRACE, "score": score})
        assert r.status_code == 200, r.text
    when = {"trace_id": TRACE, "label": "up", "created_at": "2024-05-01T12:00:00"}
    r = post_raw(collector, json.dumps(when), {"content-type": "application/json; charset=utf-8"})
    assert r.status_code == 200
    stored = collector.store.feedback_for_trace(TRACE)
    assert [f.score for f in stored] == [-1, 0, 0.5, 1, 4, 5, None]
    assert stored[-1].created_at.isoformat() == "2024-05-01T12:00:00+00:00"


def _root(trace_id: str = TRACE) -> SpanRecord:
    now_ns = time.time_ns()
    return SpanRecord(
        trace_id=trace_id,
        span_id=ROOT,
        parent_span_id=None,
        name="rag",
        start_ns=now_ns - 1_000_000,
        end_ns=now_ns,
        attributes={"openinference.span.kind": "CHAIN", "input.value": "q?", "output.value": "a"},
    )


def insert_feedback_rows(store: Any, bodies: list[str]) -> None:
    """Rows as an older version or another writer may have left them: no validation at all."""
    insert = "INSERT INTO feedback (trace_id, span_id, body, created_at) VALUES (?,?,?,?)"
    with store.transaction() as cur:
        for body in bodies:
            cur.execute(store.sql(insert), (TRACE, None, body, time.time()))


@pytest.mark.parametrize(
    "body",
    [
        # What the old endpoint stored for {"score": NaN}: neither score nor label.
        {"trace_id": TRACE, "score": None, "label": None, "source": "api"},
        {"trace_id": TRACE, "label": "up", "unknown": 1},
        "not json at all",
    ],
)
def test_a_bad_stored_feedback_row_is_skipped_when_settling(
    store: Any, body: Any, caplog: pytest.LogCaptureFixture
) -> None:
    store.write_spans([_root()])
    insert_feedback_rows(store, [body if isinstance(body, str) else json.dumps(body)])
    with caplog.at_level(logging.WARNING):
        assert settle(store, quiet_s=0, max_wait_s=60, now=time.time() + 1) == 1
    rec = store.get_interaction(TRACE)
    assert rec is not None and rec.query == "q?" and rec.feedback == ()
    assert "skipping unreadable feedback row" in caplog.text


def test_naive_and_aware_feedback_times_still_derive(store: Any) -> None:
    """A naive created_at (stored before intake normalised it) beside an aware one."""
    store.write_spans([_root()])
    rows = [
        {"trace_id": TRACE, "label": "thumbs_down", "created_at": "2024-01-01T00:00:00"},
        {"trace_id": TRACE, "label": "thumbs_up", "created_at": "2024-01-02T00:00:00Z"},
    ]
    insert_feedback_rows(store, [json.dumps(row) for row in rows])
    assert settle(store, quiet_s=0, max_wait_s=60, now=time.time() + 1) == 1
    rec = store.get_interaction(TRACE)
    assert rec is not None and rec.feedback_polarity == 1
