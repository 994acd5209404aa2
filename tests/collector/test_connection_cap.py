"""collector.max_connections: past the cap a request is refused at once, and the cap frees itself.

Idle connections hold the cap only until their header deadline; well-behaved clients, each
on a fresh connection or keeping one alive, are answered throughout.
"""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator
from contextlib import ExitStack
from typing import Any

import httpx
import pytest

from ragsieve.collector.app import create_app
from ragsieve.collector.server import MAX_CONNECTIONS, ServerThread
from ragsieve.collector.settings import CollectorSettings

TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"
CAP = 6


def _spans(*span_ids: str) -> dict[str, Any]:
    spans = [
        {
            "traceId": TRACE,
            "spanId": sid,
            "name": "s",
            "startTimeUnixNano": "1700000000000000000",
            "endTimeUnixNano": "1700000001000000000",
        }
        for sid in span_ids
    ]
    return {"resourceSpans": [{"scopeSpans": [{"spans": spans}]}]}


@pytest.fixture
def capped(store: Any) -> Iterator[ServerThread]:
    cfg = CollectorSettings(port=0, max_connections=CAP)
    app = create_app(store, cfg, run_settler=False)
    # the cap as `collector serve` passes it; idle sockets are dropped after 1 s without headers
    with ServerThread(app, port=0, max_connections=cfg.max_connections, header_timeout_s=1.0) as s:
        yield s


def _idle(server: ServerThread) -> socket.socket:
    return socket.create_connection((server.host, server.port), timeout=10)


def test_default_cap_is_the_documented_setting() -> None:
    assert CollectorSettings().max_connections == MAX_CONNECTIONS == 1024


def test_well_behaved_clients_are_answered_below_the_cap(capped: ServerThread, store: Any) -> None:
    with httpx.Client(base_url=capped.url, timeout=10) as kept:  # one kept-alive connection
        for i in range(3 * CAP):
            r = kept.post("/v1/traces", json=_spans(f"{i + 1:016x}"))
            assert r.status_code == 200, r.text
    for i in range(3 * CAP):  # a new connection each time: closed ones free their place
        r = httpx.post(f"{capped.url}/v1/traces", json=_spans(f"{100 + i:016x}"), timeout=10)
        assert r.status_code == 200, r.text
    assert store.count_spans() == 6 * CAP


def test_over_the_cap_a_request_is_refused_at_once_and_idlers_cannot_hold_it(
    capped: ServerThread, store: Any
) -> None:
    with ExitStack() as stack:
        for _ in range(CAP):  # connections that never send a byte, left open by the client
            stack.enter_context(_idle(capped))
        # answered, not left waiting: 503 and the connection closed (the client's timeout
        # would fail this test if the server hung)
        r = httpx.post(f"{capped.url}/v1/traces", json=_spans("00000000000000aa"), timeout=10)
        assert r.status_code == 503 and r.headers["connection"] == "close"
        assert store.count_spans() == 0
        # still open on our side: the header deadline closes them, and the cap frees itself
        answered = _post_until_served(capped, _spans("00000000000000bb"))
        assert answered.status_code == 200, answered.text
        assert store.count_spans() == 1


def _post_until_served(server: ServerThread, body: dict[str, Any]) -> httpx.Response:
    for _ in range(100):  # the deadline is 1 s; 10 s of tries is ample on a loaded machine
        r = httpx.post(f"{server.url}/v1/traces", json=body, timeout=10)
        if r.status_code != 503:
            return r
        time.sleep(0.1)
    return r
