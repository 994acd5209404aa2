"""Phoenix for ``ragsieve demo``: a throwaway local one (loopback, temp dir) or a running one."""

from __future__ import annotations

import logging
import os
import socket
import subprocess
import tempfile
import time
import urllib.parse
import urllib.request
from pathlib import Path

log = logging.getLogger(__name__)


def find_executable(configured: str | None, checkout: Path | None = None) -> Path | None:
    """The configured ``phoenix`` executable, else ``.phoenix-venv/bin/phoenix`` by the checkout."""
    if configured:
        path = Path(configured).expanduser()
        return path if path.is_file() and os.access(path, os.X_OK) else None
    roots = [checkout] if checkout else []
    roots += [Path.cwd(), *Path(__file__).resolve().parents]
    for root in roots:
        candidate = root / ".phoenix-venv" / "bin" / "phoenix"
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return candidate
    return None


def check_running(url: str, *, timeout_s: float = 5.0) -> str:
    """``url`` without a trailing slash once its ``/healthz`` answers 200 (ValueError otherwise)."""
    base = url.strip().rstrip("/")
    parts = urllib.parse.urlsplit(base)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ValueError(f"{url!r} is not an http(s) URL such as http://127.0.0.1:6006")
    try:
        with urllib.request.urlopen(f"{base}/healthz", timeout=timeout_s) as resp:  # noqa: S310
            status = resp.status
    except OSError as exc:  # refused, timed out, or an HTTP error status
        raise ValueError(f"no Phoenix answering at {base} ({exc})") from exc
    if status != 200:
        raise ValueError(f"{base}/healthz answered {status}, expected 200")
    return base


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class LocalPhoenix:
    """``phoenix serve`` on 127.0.0.1 with free ports, no telemetry and a temporary working dir."""

    def __init__(self, executable: Path, *, start_timeout_s: float = 90.0) -> None:
        self.executable = executable
        self.start_timeout_s = start_timeout_s
        self.port = _free_port()
        self.grpc_port = _free_port()
        self._workdir = tempfile.TemporaryDirectory(prefix="ragsieve-demo-phoenix-")
        self._proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        """Base URL of the UI and REST API."""
        return f"http://127.0.0.1:{self.port}"

    @property
    def traces_endpoint(self) -> str:
        """Where the collector forwards OTLP/HTTP spans."""
        return f"{self.url}/v1/traces"

    def env(self) -> dict[str, str]:
        """The process environment: loopback binding, temp storage, nothing phoned home."""
        return {
            **os.environ,
            "PHOENIX_HOST": "127.0.0.1",
            "PHOENIX_PORT": str(self.port),
            "PHOENIX_GRPC_PORT": str(self.grpc_port),
            "PHOENIX_WORKING_DIR": self._workdir.name,
            "PHOENIX_TELEMETRY_ENABLED": "false",
            "PHOENIX_ALLOW_EXTERNAL_RESOURCES": "false",
            "PHOENIX_DISABLE_AGENT_ASSISTANT": "true",
            "PHOENIX_LOG_MIGRATIONS": "false",
        }

    def start(self) -> LocalPhoenix:
        """Launch and wait until ``/healthz`` answers (RuntimeError on exit or timeout)."""
        logfile = Path(self._workdir.name) / "phoenix.log"
        with logfile.open("wb") as out:
            self._proc = subprocess.Popen(
                [str(self.executable), "serve"], env=self.env(), stdout=out, stderr=out
            )
        deadline = time.monotonic() + self.start_timeout_s
        while time.monotonic() < deadline:
            if self._proc.poll() is not None:
                tail = logfile.read_text(errors="replace")[-400:]
                raise RuntimeError(f"phoenix exited with {self._proc.returncode}: {tail}")
            try:
                with urllib.request.urlopen(f"{self.url}/healthz", timeout=1) as resp:
                    if resp.status == 200:
                        return self
            except OSError:
                time.sleep(0.3)
        self.stop()
        raise RuntimeError(f"phoenix did not answer on {self.url} within {self.start_timeout_s}s")

    def stop(self) -> None:
        """Terminate the process (kill after 10 s) and remove the working dir."""
        if self._proc is not None and self._proc.poll() is None:
            self._proc.terminate()
            try:
                self._proc.wait(10)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait(5)
        self._workdir.cleanup()
