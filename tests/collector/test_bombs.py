"""Concurrent decompression bombs against a collector in its own process: peak RSS stays bounded.

Over HTTP and over gRPC alike, an inflated byte is charged to the shared in-flight byte budget
before it is kept (gRPC used to let grpc inflate each message whole: 2.4 GB for 40 of them).
"""

from __future__ import annotations

import socket
import subprocess
import sys
import threading
import time
import zlib
from collections.abc import Iterator
from pathlib import Path

import grpc
import httpx
import pytest

pytestmark = pytest.mark.skipif(
    not Path("/proc/self/status").exists(), reason="reads peak RSS from /proc (Linux)"
)

SERVE = """
import sys
import uvicorn
from ragsieve.collector.serve.app import create_app
from ragsieve.collector.serve.server import uvicorn_config
from ragsieve.collector.settings import CollectorSettings
from ragsieve.collector.store import open_store

app = create_app(
    open_store(sys.argv[1]), CollectorSettings(), run_settler=False, grpc_port=int(sys.argv[3])
)
uvicorn.Server(uvicorn_config(app, "127.0.0.1", int(sys.argv[2]))).run()
"""
PEAK_LIMIT_KB = 500 * 1024  # defaults: 64 MiB body limit, 256 MiB in-flight byte budget


def gzip_bomb(decompressed: int) -> bytes:
    """Zeros, gzip'd: about 1 KB of body per MB decompressed."""
    comp = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    zero = bytes(1 << 20)
    parts = [comp.compress(zero) for _ in range(decompressed >> 20)]
    return b"".join([*parts, comp.flush()])


def status_kb(pid: int, key: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(key + ":"):
            return int(line.split()[1])
    raise AssertionError(f"{key} not in /proc/{pid}/status")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture
def server(tmp_path: Path) -> Iterator[tuple[subprocess.Popen[bytes], str, int]]:
    port, grpc_port = free_port(), free_port()
    store = f"sqlite:///{tmp_path / 'bombs.db'}"
    proc = subprocess.Popen([sys.executable, "-c", SERVE, store, str(port), str(grpc_port)])
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 30
    while True:
        try:
            if httpx.get(f"{url}/healthz").status_code == 200:
                break
        except httpx.TransportError:
            pass
        assert proc.poll() is None and time.monotonic() < deadline, "the server did not start"
        time.sleep(0.1)
    time.sleep(0.5)  # the gRPC server starts with the app's lifespan
    try:
        yield proc, url, grpc_port
    finally:
        proc.terminate()
        proc.wait(30)


def test_concurrent_gzip_bombs_keep_peak_rss_bounded(
    server: tuple[subprocess.Popen[bytes], str, int],
) -> None:
    proc, url, _ = server
    bomb = gzip_bomb(256 << 20)  # 4x the body limit once inflated
    before = status_kb(proc.pid, "VmRSS")
    statuses: list[int] = []
    headers = {"content-type": "application/x-protobuf", "content-encoding": "gzip"}

    def fire() -> None:
        r = httpx.post(f"{url}/v1/traces", content=bomb, headers=headers, timeout=120)
        statuses.append(r.status_code)

    threads = [threading.Thread(target=fire) for _ in range(24)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    peak = status_kb(proc.pid, "VmHWM")
    assert len(statuses) == 24 and set(statuses) <= {413, 429}, statuses
    assert 413 in statuses
    assert peak < PEAK_LIMIT_KB, f"peak RSS {peak >> 10} MiB under 24 concurrent bombs"
    # Memory is given back, and the server still takes good data.
    assert status_kb(proc.pid, "VmRSS") < before + 64 * 1024
    ok = httpx.post(f"{url}/v1/traces", json={"resourceSpans": []})
    assert ok.status_code == 200
    ready = httpx.get(f"{url}/readyz").json()
    assert ready["inflight_bytes"] == 0 and ready["accepted_spans"] == 0


def test_concurrent_grpc_gzip_bombs_keep_peak_rss_bounded(
    server: tuple[subprocess.Popen[bytes], str, int],
) -> None:
    proc, url, grpc_port = server
    message = bytes(70 << 20)  # over max_body_bytes once inflated; about 70 KB gzip'd
    before = status_kb(proc.pid, "VmRSS")
    codes: list[grpc.StatusCode] = []
    channel = grpc.insecure_channel(
        f"127.0.0.1:{grpc_port}", options=[("grpc.max_send_message_length", -1)]
    )
    export = channel.unary_unary("/opentelemetry.proto.collector.trace.v1.TraceService/Export")

    def fire() -> None:
        try:
            export(message, timeout=120, compression=grpc.Compression.Gzip)
        except grpc.RpcError as exc:
            codes.append(exc.code())

    try:
        threads = [threading.Thread(target=fire) for _ in range(16)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        channel.close()
    peak = status_kb(proc.pid, "VmHWM")
    ok = {grpc.StatusCode.INVALID_ARGUMENT, grpc.StatusCode.RESOURCE_EXHAUSTED}
    assert len(codes) == 16 and set(codes) <= ok, codes
    assert grpc.StatusCode.INVALID_ARGUMENT in codes
    assert peak < PEAK_LIMIT_KB, f"peak RSS {peak >> 10} MiB under 16 concurrent gRPC bombs"
    assert status_kb(proc.pid, "VmRSS") < before + 64 * 1024
    assert httpx.post(f"{url}/v1/traces", json={"resourceSpans": []}).status_code == 200
