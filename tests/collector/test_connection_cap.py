"""collector.max_connections: past the cap a request is refused at once, and the cap frees itself.

Connections waiting for a request's headers (idle or slow) cannot hold the cap: past it, a new
connection closes the one waiting longest (tricklers of partial headers before those that sent
nothing), so well-behaved clients are answered even while a
crowd keeps reconnecting and trickling headers. Only a cap full of requests being served
answers 503.
"""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import ExitStack
from typing import Any

import httpx
import pytest

from ragsieve.collector.serve.app import create_app
from ragsieve.collector.serve.server import MAX_CONNECTIONS, ServerThread
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


def test_past_the_cap_idlers_make_room_and_a_full_cap_of_requests_is_503(
    capped: ServerThread, store: Any
) -> None:
    with ExitStack() as stack:
        idlers = [stack.enter_context(_idle(capped)) for _ in range(CAP)]  # never send a byte
        time.sleep(0.2)  # all accepted
        # a new connection closes the longest-idle one; the request is served at once
        r = httpx.post(f"{capped.url}/v1/traces", json=_spans("00000000000000aa"), timeout=10)
        assert r.status_code == 200, r.text
        assert _closed(idlers[0], within_s=2) and not _closed(idlers[-1], within_s=0.3)
        # connections whose requests are being served are never closed to make room: with the
        # cap full of them, a request gets 503 and its connection is closed, at once
        busy = []
        for _ in range(CAP):  # each one's headers in before the next connects
            busy.append(stack.enter_context(_half_sent_body(capped)))
            time.sleep(0.05)
        r = httpx.post(f"{capped.url}/v1/traces", json=_spans("00000000000000bb"), timeout=10)
        assert r.status_code == 503 and r.headers["connection"] == "close"
        assert not any(_closed(sock, within_s=0.05) for sock in busy)
    assert store.count_spans() == 1


def test_past_the_cap_a_trickler_is_closed_before_an_older_connection_that_sent_nothing(
    capped: ServerThread,
) -> None:
    # a client whose request is on its way has sent nothing yet; one that sent part of its
    # headers and stalled is the slow-loris pattern, and goes first even when it is younger
    with ExitStack() as stack:
        quiet = [stack.enter_context(_idle(capped)) for _ in range(CAP - 2)]  # with the trickler:
        # the cap less one, so the request needs one place made
        time.sleep(0.1)
        trickler = stack.enter_context(_idle(capped))
        trickler.sendall(b"POST /v1/traces HTTP/1.1\r\nHost: x\r\n")
        time.sleep(0.2)
        r = httpx.post(f"{capped.url}/v1/traces", json=_spans("00000000000000cc"), timeout=10)
        assert r.status_code == 200, r.text
        assert _closed(trickler, within_s=0.5)  # before its 1 s header deadline
        assert not any(_closed(sock, within_s=0.05) for sock in quiet)


def test_reconnecting_slow_clients_past_the_cap_leave_good_requests_served(
    capped: ServerThread, store: Any
) -> None:
    stop = threading.Event()

    def slow() -> None:  # trickles a request line, reconnects when dropped, until told to stop
        line = b"POST /v1/traces HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        while not stop.is_set():
            try:
                with socket.create_connection((capped.host, capped.port), timeout=5) as sock:
                    for byte in line:  # the first byte at once, then one every 50 ms
                        sock.sendall(bytes([byte]))
                        if stop.wait(0.05):
                            return
            except OSError:
                stop.wait(0.02)

    crowd = [threading.Thread(target=slow) for _ in range(2 * CAP)]
    for t in crowd:
        t.start()
    try:
        time.sleep(1.5)  # the crowd holds every place and keeps coming back
        statuses = []
        for i in range(20):  # each on a new connection, as the crowd keeps reconnecting
            r = httpx.post(f"{capped.url}/v1/traces", json=_spans(f"{0x100 + i:016x}"), timeout=10)
            statuses.append(r.status_code)
    finally:
        stop.set()
        for t in crowd:
            t.join(10)
    assert statuses == [200] * 20, statuses
    assert store.count_spans() == 20


def _closed(sock: socket.socket, within_s: float) -> bool:
    """Has the server closed ``sock`` (EOF or reset) within ``within_s``?"""
    sock.settimeout(within_s)
    try:
        return sock.recv(1) == b""
    except ConnectionResetError:
        return True
    except TimeoutError:
        return False


@contextlib.contextmanager
def _half_sent_body(server: ServerThread) -> Iterator[socket.socket]:
    """A connection whose request is being served: headers sent, its body not yet."""
    with socket.create_connection((server.host, server.port), timeout=10) as sock:
        sock.sendall(
            b"POST /v1/traces HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            b"Content-Length: 100\r\n\r\n{"
        )
        yield sock
