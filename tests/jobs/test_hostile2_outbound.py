"""Hostile inputs, second round (issue 28 rows 6 and 7): endpoints we call that answer badly.

A raw socket server on loopback plays a webhook or Phoenix that declares a 256 MiB body and sends
it as fast as it can, or answers 200 and drips its body a byte at a time. Every outbound call
reads at most a small part of a body and ends within its total timeout.
"""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from ragsieve.collector.forward.outbound import MAX_RESPONSE_BYTES
from ragsieve.collector.store.outbox_sql import OutboxItem
from ragsieve.jobs.alerts.sinks import WebhookSender, send_direct
from ragsieve.jobs.cli import cli
from ragsieve.jobs.sinks.annotations import PhoenixAnnotationSender

HUGE = 256 * 1024 * 1024


class BadEndpoint:
    """Answers every request with ``mode``: "huge" (a 256 MiB body) or "drip" (1 byte / 0.2 s)."""

    def __init__(self, mode: str, status: int = 200) -> None:
        self.mode, self.status = mode, status
        self.sent: list[int] = []  # body bytes written per connection before it broke or ended
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}/hook"
        self._stop = threading.Event()
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        self.sock.settimeout(0.2)
        while not self._stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except OSError:
                continue
            threading.Thread(target=self._answer, args=(conn,), daemon=True).start()

    def _answer(self, conn: socket.socket) -> None:
        sent = 0
        try:
            conn.recv(65536)  # the request (small); its body may follow, unread
            size = HUGE if self.mode == "huge" else 100
            head = f"HTTP/1.1 {self.status} X\r\nContent-Length: {size}\r\n\r\n".encode()
            conn.sendall(head)
            block = b"x" * 65536 if self.mode == "huge" else b"x"
            while sent < size and not self._stop.is_set():
                conn.sendall(block)
                sent += len(block)
                if self.mode == "drip":
                    time.sleep(0.2)
        except OSError:
            pass
        finally:
            self.sent.append(sent)
            conn.close()

    def close(self) -> None:
        self._stop.set()
        self.sock.close()


@pytest.fixture
def endpoint() -> Iterator[type[BadEndpoint]]:
    made: list[BadEndpoint] = []

    def make(mode: str, status: int = 200) -> BadEndpoint:
        made.append(BadEndpoint(mode, status))
        return made[-1]

    yield make  # type: ignore[misc]
    for e in made:
        e.close()


def _item() -> OutboxItem:
    return OutboxItem(1, "alerts_webhook", None, b'{"a": 1}', "application/json", 1, 0)


def _wait_sent(ep: BadEndpoint, n: int = 1) -> list[int]:
    deadline = time.monotonic() + 10
    while len(ep.sent) < n and time.monotonic() < deadline:
        time.sleep(0.05)
    return ep.sent


@pytest.mark.parametrize("status", [200, 500])
def test_a_huge_body_is_read_only_up_to_the_cap(endpoint, status: int) -> None:
    ep = endpoint("huge", status)

    async def go() -> None:
        hook = WebhookSender(ep.url, timeout_s=20)
        phoenix = PhoenixAnnotationSender(ep.url.removesuffix("/hook"), timeout_s=20)
        try:
            out = await hook(_item())
            assert out.delivered == (status == 200)
            out = await phoenix(_item())
            assert out.delivered == (status == 200)
            err = await send_direct(ep.url, b"{}", 20)
            assert (err is None) == (status == 200)
        finally:
            await hook.aclose()
            await phoenix.aclose()

    asyncio.run(go())
    sent = _wait_sent(ep, 3)
    assert len(sent) == 3
    # the client stopped reading past the cap; what the kernel buffers is all that got out
    assert max(sent) < 32 * 1024 * 1024 + MAX_RESPONSE_BYTES, sent


def test_a_dripping_webhook_is_bounded_by_the_total_timeout(endpoint, tmp_path: Path) -> None:
    ep = endpoint("drip")

    async def go() -> None:
        hook = WebhookSender(ep.url, timeout_s=1.0)
        try:
            started = time.monotonic()
            out = await hook(_item())
            assert not out.delivered and "ReadTimeout" in (out.error or "")
            assert time.monotonic() - started < 3.0
        finally:
            await hook.aclose()

    asyncio.run(go())
    cfg = tmp_path / "ragsieve.toml"
    cfg.write_text(f'[alerts]\nwebhook_url = "{ep.url}"\ntimeout_s = 1.0\n', encoding="utf-8")
    started = time.monotonic()
    res = CliRunner().invoke(cli, ["--config", str(cfg), "alerts", "test"])
    assert time.monotonic() - started < 5.0
    assert res.exit_code == 1 and "alerts_webhook: failed: unreachable" in res.output
