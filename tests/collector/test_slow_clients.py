"""Slow, idle, lying and vanishing clients: answered or dropped at once; none holds the receiver."""

from __future__ import annotations

import logging
import socket
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest

from ragsieve.collector.serve.app import create_app
from ragsieve.collector.serve.server import ServerThread
from ragsieve.collector.settings import CollectorSettings

TRACE = "5b8efff798038103d269b633813fc60c"


def spans_body(*span_ids: str) -> dict[str, Any]:
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


class Tight:
    """A collector with short read deadlines, and the log records of its server."""

    def __init__(self, server: ServerThread, app: Any, store: Any) -> None:
        self.server, self.app, self.store = server, app, store
        self.records: list[logging.LogRecord] = []

    @property
    def url(self) -> str:
        return self.server.url

    def readyz(self) -> dict[str, Any]:
        r = httpx.get(f"{self.url}/readyz")
        assert r.status_code == 200
        data: dict[str, Any] = r.json()
        return data

    def connect(self) -> socket.socket:
        sock = socket.create_connection((self.server.host, self.server.port), timeout=10)
        return sock


class _Keep(logging.Handler):
    def __init__(self, into: list[logging.LogRecord]) -> None:
        super().__init__(logging.DEBUG)
        self.into = into

    def emit(self, record: logging.LogRecord) -> None:
        self.into.append(record)


@pytest.fixture
def tight(store: Any) -> Iterator[Callable[..., Tight]]:
    running: list[tuple[ServerThread, list[tuple[logging.Logger, logging.Handler, int]]]] = []

    def _start(header_timeout_s: float = 0.5, body_idle_s: float = 0.5, **cfg: Any) -> Tight:
        app = create_app(
            store,
            CollectorSettings(port=0, **cfg),
            run_settler=False,
            body_idle_s=body_idle_s,
            body_deadline_s=max(3.0, body_idle_s),
        )
        server = ServerThread(app, port=0, header_timeout_s=header_timeout_s).start()
        live = Tight(server, app, store)
        hooks = []
        for name in ("uvicorn.error", "ragsieve"):
            logger = logging.getLogger(name)
            handler = _Keep(live.records)
            hooks.append((logger, handler, logger.level))
            logger.addHandler(handler)
            logger.setLevel(logging.DEBUG)
        running.append((server, hooks))
        return live

    yield _start
    for server, hooks in running:
        server.stop()
        for logger, handler, level in hooks:
            logger.removeHandler(handler)
            logger.setLevel(level)


def closed_by_server(sock: socket.socket, within_s: float) -> bytes:
    """Read until the server closes the socket; fails if it is still open after ``within_s``."""
    sock.settimeout(within_s)
    got = b""
    try:
        while chunk := sock.recv(65536):
            got += chunk
    except TimeoutError:
        pytest.fail(f"the server kept the connection open for {within_s} s (got {got[:80]!r})")
    except ConnectionResetError:
        pass
    return got


def test_content_length_over_the_limit_is_413_at_once(tight: Callable[..., Tight]) -> None:
    live = tight(header_timeout_s=10, body_idle_s=10)
    for path in ("/v1/traces", "/v1/logs", "/v1/feedback"):
        with live.connect() as sock:
            start = time.monotonic()
            sock.sendall(
                f"POST {path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                f"Content-Length: {10**12}\r\n\r\n0123456789".encode()
            )
            answer = closed_by_server(sock, within_s=3)
            assert time.monotonic() - start < 2
        assert answer.startswith(b"HTTP/1.1 413"), answer[:200]
        assert b"Content-Length 1000000000000 is over" in answer
    assert live.store.count_spans() == 0


def test_a_client_that_stops_sending_its_body_gets_408(tight: Callable[..., Tight]) -> None:
    live = tight(header_timeout_s=10, body_idle_s=0.5)
    with live.connect() as sock:
        sock.sendall(
            b"POST /v1/traces HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            b'Content-Length: 1000\r\n\r\n{"resourceSpans"'
        )
        answer = closed_by_server(sock, within_s=5)
    assert answer.startswith(b"HTTP/1.1 408"), answer[:200]
    assert b"not received in time" in answer
    assert live.readyz()["body_timeouts"] == 1


def test_half_sent_headers_are_dropped(tight: Callable[..., Tight]) -> None:
    live = tight(header_timeout_s=0.5)
    socks = [live.connect() for _ in range(20)]
    try:
        for sock in socks:
            sock.sendall(b"POST /v1/traces HTTP/1.1\r\nHost: x\r\nContent-")
        for sock in socks:
            closed_by_server(sock, within_s=5)
        # A connection idle after its response is dropped too (the keep-alive path).
        with live.connect() as sock:
            sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
            sock.settimeout(5)
            assert sock.recv(65536).startswith(b"HTTP/1.1 200")
            sock.sendall(b"GET /hea")
            closed_by_server(sock, within_s=5)
    finally:
        for sock in socks:
            sock.close()


def test_ingestion_continues_while_slow_clients_are_connected(
    tight: Callable[..., Tight],
) -> None:
    """More slow senders than request slots: none of them holds a slot, good clients get 200."""
    live = tight(header_timeout_s=2, body_idle_s=2, max_inflight_requests=4)
    slow = [live.connect() for _ in range(40)]
    stop = threading.Event()

    def trickle() -> None:  # one byte per socket every 0.2 s, never finishing a body
        for sock in slow:
            sock.sendall(
                b"POST /v1/traces HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                b"Content-Length: 100000\r\n\r\n{"
            )
        while not stop.wait(0.2):
            for sock in slow:
                try:
                    sock.sendall(b" ")
                except OSError:
                    pass

    feeder = threading.Thread(target=trickle, daemon=True)
    feeder.start()
    try:
        time.sleep(0.5)  # every slow client is inside the receiver, reading
        statuses = []
        for i in range(20):
            r = httpx.post(f"{live.url}/v1/traces", json=spans_body(f"{i + 1:016x}"), timeout=10)
            statuses.append(r.status_code)
        assert statuses == [200] * 20
        assert live.store.count_spans() == 20
        ready = live.readyz()
        assert ready["inflight_requests"] == 0 and ready["inflight_bytes"] > 0
    finally:
        stop.set()
        feeder.join()
        for sock in slow:
            sock.close()


def test_client_disconnect_mid_body_is_one_debug_line(tight: Callable[..., Tight]) -> None:
    live = tight(header_timeout_s=10, body_idle_s=10)
    for path in ("/v1/traces", "/v1/feedback"):
        with live.connect() as sock:
            sock.sendall(
                f"POST {path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                'Content-Length: 5000\r\n\r\n{"resourceSpans": ['.encode()
            )
            time.sleep(0.2)
    deadline = time.monotonic() + 5
    while live.readyz()["client_disconnects"] < 2:
        assert time.monotonic() < deadline, "the disconnects were not counted"
        time.sleep(0.05)
    lines = [r for r in live.records if "disconnected" in r.getMessage()]
    assert [r.levelno for r in lines] == [logging.DEBUG, logging.DEBUG]
    assert not [r for r in live.records if r.exc_info or r.levelno >= logging.ERROR]
    assert httpx.get(f"{live.url}/healthz").status_code == 200
    assert live.store.count_spans() == 0
