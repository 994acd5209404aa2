"""A real Phoenix server on loopback, started once per test session from its own virtualenv.

Usage in any test (``tests/conftest.py`` star-imports this module)::

    @pytest.mark.phoenix
    def test_x(phoenix_server: PhoenixServer) -> None:
        exporter = OTLPSpanExporter(endpoint=phoenix_server.traces_url)
        ...
        spans = phoenix_server.wait_for_spans(trace_ids, count=5)   # REST: /v1/projects/.../spans

``phoenix_server`` has ``base_url`` (``http://127.0.0.1:PORT``, the REST API and UI),
``traces_url`` (``base_url + "/v1/traces"``, OTLP/HTTP protobuf), ``working_dir`` (its SQLite
database lives there as ``phoenix.db``), ``spans(project, trace_ids)`` and ``wait_for_spans(...)``.
The server is shared by the whole session: filter by your own trace ids or use your own project
name (resource attribute ``openinference.project.name``).

The ``phoenix`` executable comes from ``RAGSIEVE_TEST_PHOENIX`` (set by ``tests/run``), else
``<repo>/.phoenix-venv/bin/phoenix``; without either the fixture skips with the reason.
:func:`find_phoenix` and :func:`start_phoenix` are plain functions that ``bench/`` reuses.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

REPO = Path(__file__).resolve().parents[1]
READY_TIMEOUT_S = 90.0  # ~10-15 s on a quiet 2-core machine; CI shares its cores


def find_phoenix() -> str | None:
    """Path of the ``phoenix`` executable, or None when Phoenix is not installed."""
    candidates = [os.environ.get("RAGSIEVE_TEST_PHOENIX"), str(REPO / ".phoenix-venv/bin/phoenix")]
    for candidate in candidates:
        if candidate and os.access(candidate, os.X_OK):
            return candidate
    return None


def free_port() -> int:
    """A TCP port that was free on 127.0.0.1 a moment ago."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class PhoenixServer:
    """A running Phoenix process."""

    base_url: str
    traces_url: str
    working_dir: Path
    process: subprocess.Popen[bytes]
    log_path: Path

    def spans(
        self, project: str = "default", trace_ids: Iterable[str] | None = None
    ) -> list[dict[str, Any]]:
        """Every span Phoenix has stored in ``project`` (optionally only these traces)."""
        params: list[tuple[str, str | int]] = [("limit", 1000)]
        params += [("trace_id", t) for t in trace_ids or ()]
        out: list[dict[str, Any]] = []
        cursor: str | None = None
        with httpx.Client(base_url=self.base_url, timeout=30) as client:
            while True:
                page = params + ([("cursor", cursor)] if cursor else [])
                resp = client.get(f"/v1/projects/{project}/spans", params=page)
                if resp.status_code == 404:  # the project does not exist yet
                    return []
                resp.raise_for_status()
                data = resp.json()
                out.extend(data["data"])
                cursor = data.get("next_cursor")
                if not cursor:
                    return out

    def wait_for_spans(
        self,
        trace_ids: Iterable[str],
        count: int,
        *,
        project: str = "default",
        timeout_s: float = 30.0,
    ) -> list[dict[str, Any]]:
        """Poll until at least ``count`` spans of these traces are stored; return what is there."""
        ids = list(trace_ids)
        deadline = time.monotonic() + timeout_s
        found: list[dict[str, Any]] = []
        while time.monotonic() < deadline:
            found = self.spans(project, ids)
            if len(found) >= count:
                break
            time.sleep(0.25)
        return found

    def log_tail(self, n: int = 40) -> str:
        """The end of Phoenix's output, for failure messages."""
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-n:])
        except OSError:
            return ""


@contextlib.contextmanager
def start_phoenix(
    executable: str, working_dir: Path, *, timeout_s: float = READY_TIMEOUT_S
) -> Iterator[PhoenixServer]:
    """Run ``phoenix serve`` bound to loopback until the block exits."""
    port, grpc_port = free_port(), free_port()
    env = {
        **os.environ,
        "PHOENIX_HOST": "127.0.0.1",
        "PHOENIX_PORT": str(port),
        "PHOENIX_GRPC_PORT": str(grpc_port),
        "PHOENIX_WORKING_DIR": str(working_dir),
        "PHOENIX_TELEMETRY_ENABLED": "false",
        "PHOENIX_ALLOW_EXTERNAL_RESOURCES": "false",
        "PHOENIX_DISABLE_AGENT_ASSISTANT": "true",
        "PHOENIX_LOG_MIGRATIONS": "false",
    }
    log_path = working_dir / "phoenix.log"
    with open(log_path, "wb") as log_file:
        proc = subprocess.Popen(
            [executable, "serve"],
            env=env,
            stdout=log_file,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,  # its own process group, stopped by id below
        )
    base = f"http://127.0.0.1:{port}"
    server = PhoenixServer(base, f"{base}/v1/traces", working_dir, proc, log_path)
    try:
        deadline = time.monotonic() + timeout_s
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"phoenix exited with {proc.returncode}:\n{server.log_tail()}")
            try:
                if httpx.get(f"{base}/healthz", timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(
                    f"phoenix not ready after {timeout_s:.0f}s:\n{server.log_tail()}"
                )
            time.sleep(0.2)
        yield server
    finally:
        _stop(proc)


def _stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is not None:
        return
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=15)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=15)


@pytest.fixture(scope="session")
def phoenix_server() -> Iterator[PhoenixServer]:
    """A Phoenix server on 127.0.0.1 for the whole session (skips when not installed)."""
    executable = find_phoenix()
    if executable is None:
        pytest.skip(
            "Phoenix not installed: set RAGSIEVE_TEST_PHOENIX to a `phoenix` executable in its own"
            f" virtualenv, or create {REPO / '.phoenix-venv'} (tests/run does both)"
        )
    with tempfile.TemporaryDirectory(prefix="ragsieve-phoenix-") as tmp:
        with start_phoenix(executable, Path(tmp)) as server:
            yield server


__all__ = ["PhoenixServer", "find_phoenix", "free_port", "phoenix_server", "start_phoenix"]
