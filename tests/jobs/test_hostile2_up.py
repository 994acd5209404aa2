"""Hostile inputs, second round (issue 28 row 9): ``ragsieve up --host 0.0.0.0`` without a token
warns exactly as ``ragsieve collector serve`` does; with a token it does not."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

from test_up import read_until

WARNING = r"warning: listening on 0\.0\.0\.0 without a bearer token: anyone who can reach"


def _up(tmp_path: Path, env_extra: dict[str, str], *flags: str) -> subprocess.Popen[str]:
    cfg = tmp_path / "ragsieve.toml"
    cfg.write_text("[collector]\nport = 0\ngrpc_port = 0\n[jobs]\nevery_minutes = 60\n", "utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAGSIEVE_")} | env_extra
    args = [sys.executable, "-m", "ragsieve.jobs", "up", "--config", str(cfg)]
    args += ["--store", f"sqlite:///{tmp_path / 'up.db'}", "--host", "0.0.0.0", *flags]
    return subprocess.Popen(
        args, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True, env=env
    )


def _stop(proc: subprocess.Popen[str]) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def test_up_on_all_interfaces_without_a_token_warns(tmp_path: Path) -> None:
    proc = _up(tmp_path, {})
    try:
        read_until(proc, WARNING, 30)
        read_until(proc, r"listening on http://0\.0\.0\.0:\d+/v1/traces", 30)
    finally:
        _stop(proc)


def test_up_with_a_token_does_not_warn(tmp_path: Path) -> None:
    env = {"UP_TOKEN": "s3cret", "RAGSIEVE_COLLECTOR__TOKEN_ENV": "UP_TOKEN"}
    proc = _up(tmp_path, env)
    try:
        m = read_until(proc, r"(warning: listening)|(listening on http://0\.0\.0\.0:\d+)", 30)
        assert m.group(1) is None, "warned although a token is required"
    finally:
        _stop(proc)
