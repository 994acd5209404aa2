"""A busy *default* gRPC port does not stop the collector; a busy requested one does.

Issue 29: ``ragsieve collector serve --port 18000`` and ``ragsieve up`` exited 2 whenever
anything else held 4317, although the user asked for nothing on gRPC. These tests hold the
default port themselves (when something else already holds it, that is the same situation),
so they pass whether 4317 is free on the machine or not; every other port is a free one.
"""

from __future__ import annotations

import errno
import os
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from test_run_support import KINDS, send
from test_up import read_until

from ragsieve.collector.settings import CollectorSettings
from ragsieve.collector.store import open_store

DEFAULT_GRPC = int(CollectorSettings.model_fields["grpc_port"].default)


@pytest.fixture
def default_grpc_port_busy() -> Iterator[None]:
    """Hold 127.0.0.1:<default gRPC port> for the test, unless something already holds it."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        sock.bind(("127.0.0.1", DEFAULT_GRPC))
        sock.listen()
    except OSError as exc:
        assert exc.errno == errno.EADDRINUSE, exc  # held elsewhere: the case under test
    try:
        yield
    finally:
        sock.close()


def _env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith(("RAGSIEVE_", "OTEL_"))}


def _start(args: list[str], tmp_path: Path) -> subprocess.Popen[str]:
    cmd = [sys.executable, "-m", "ragsieve.jobs", *args, "--store", f"sqlite:///{tmp_path}/c.db"]
    return subprocess.Popen(
        cmd, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True, env=_env()
    )


def _stop(proc: subprocess.Popen[str]) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@pytest.mark.usefixtures("default_grpc_port_busy")
@pytest.mark.parametrize("command", [["collector", "serve", "--port", "0"], ["up", "--port", "0"]])
def test_a_busy_default_grpc_port_leaves_http_running(command: list[str], tmp_path: Path) -> None:
    if command[0] == "up":
        cfg = tmp_path / "ragsieve.toml"
        cfg.write_text("[jobs]\nevery_minutes = 60\nsettle_s = 0.0\n", encoding="utf-8")
        command = [*command, "--config", str(cfg)]
    proc = _start(command, tmp_path)
    try:
        line = read_until(proc, r"OTLP/gRPC off", 30).string
        assert f"default port 127.0.0.1:{DEFAULT_GRPC} is in use" in line
        assert "OTLP/HTTP goes on" in line
        m = read_until(proc, r"listening on (http://127\.0\.0\.1:\d+)/v1/traces(.*)", 30)
        assert "grpc://" not in m.group(2)
        assert proc.poll() is None
        send(m.group(1) + "/v1/traces", [KINDS["good"][0]])  # the HTTP receiver takes spans
    finally:
        _stop(proc)
    store = open_store(f"sqlite:///{tmp_path}/c.db", create=False)
    try:
        assert store.query("SELECT COUNT(*) FROM spans")[0][0] > 0
    finally:
        store.close()


@pytest.mark.parametrize("how", ["flag", "env", "config"])
def test_a_busy_requested_grpc_port_stops_with_one_line(how: str, tmp_path: Path) -> None:
    held = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    held.bind(("127.0.0.1", 0))
    held.listen()
    port = held.getsockname()[1]
    args = ["collector", "serve", "--port", "0"]
    env = _env()
    if how == "flag":
        args += ["--grpc-port", str(port)]
    elif how == "env":
        env["RAGSIEVE_COLLECTOR__GRPC_PORT"] = str(port)
    else:
        cfg = tmp_path / "ragsieve.toml"
        cfg.write_text(f"[collector]\ngrpc_port = {port}\n", encoding="utf-8")
        args = ["--config", str(cfg), *args]
    try:
        out = subprocess.run(
            [sys.executable, "-m", "ragsieve.jobs", *args, "--store", f"sqlite:///{tmp_path}/c.db"],
            capture_output=True, text=True, env=env, timeout=60, check=False,
        )  # fmt: skip
    finally:
        held.close()
    assert out.returncode == 2, out.stderr
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and f"127.0.0.1:{port} is already in use" in lines[0], out.stderr
