"""`ragsieve up` in a real subprocess: collector + scheduled job; SIGTERM drains cleanly."""

from __future__ import annotations

import os
import re
import selectors
import signal
import subprocess
import sys
import time
from pathlib import Path

from test_run_support import KINDS, send

from ragsieve.collector.store import open_store


def read_until(proc: subprocess.Popen[str], pattern: str, timeout: float) -> re.Match[str]:
    assert proc.stderr is not None
    sel = selectors.DefaultSelector()
    sel.register(proc.stderr, selectors.EVENT_READ)
    deadline = time.monotonic() + timeout
    seen = []
    while time.monotonic() < deadline:
        if sel.select(timeout=0.2):
            line = proc.stderr.readline()
            seen.append(line)
            m = re.search(pattern, line)
            if m:
                return m
    raise AssertionError(f"{pattern!r} not seen in:\n{''.join(seen)}")


def test_up_collects_judges_on_schedule_and_drains_on_sigterm(tmp_path: Path) -> None:
    db = tmp_path / "up.db"
    cfg = tmp_path / "ragsieve.toml"
    cfg.write_text(
        # port 0 (a free one) and gRPC off: the test depends on no fixed port being free
        "[collector]\nport = 0\ngrpc_port = 0\nquiet_period_s = 0.2\nsettle_interval_s = 0.1\n"
        '[jobs]\nevery_minutes = 0.01\nsettle_s = 0.0\nsince = "1h"\n',
        encoding="utf-8",
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAGSIEVE_")}
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "ragsieve.jobs",
            "up",
            "--config",
            str(cfg),
            "--store",
            f"sqlite:///{db}",
        ],
        stderr=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        text=True,
        env=env,
    )
    try:
        m = read_until(proc, r"listening on (http://127\.0\.0\.1:\d+)/v1/traces", 30)
        send(m.group(1) + "/v1/traces", [KINDS["good"][0], KINDS["unfaithful"][0]])
        read_until(proc, r'ragsieve up: run .*"judged": 2', 40)
        proc.send_signal(signal.SIGTERM)
        read_until(proc, r"SIGTERM: draining", 10)
        read_until(proc, r"stopped cleanly", 20)
        assert proc.wait(20) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    store = open_store(f"sqlite:///{db}")
    try:
        assert store.query("SELECT COUNT(*) FROM checkpoints")[0][0] == 6
        assert store.query("SELECT COUNT(*) FROM results WHERE flagged = 1")[0][0] == 3
    finally:
        store.close()
