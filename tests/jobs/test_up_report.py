"""`ragsieve up` rewrites report.html_path and evaluates alert rules after each run."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

from test_alerts import Receiver
from test_run_support import KINDS, send
from test_up import read_until


def test_up_rewrites_the_report_and_alerts_after_each_run(tmp_path: Path) -> None:
    receiver = Receiver()
    html = tmp_path / "site" / "report.html"
    cfg = tmp_path / "ragsieve.toml"
    cfg.write_text(
        "[collector]\nport = 0\ngrpc_port = 0\nquiet_period_s = 0.2\nsettle_interval_s = 0.1\n"
        '[jobs]\nevery_minutes = 0.01\nsettle_s = 0.0\nsince = "1h"\n'
        f'[report]\nhtml_path = "{html}"\n'
        f'[alerts]\nwebhook_url = "{receiver.url}/hook"\n'
        '[[alerts.rules]]\nkind = "failure_rate_above"\nvalue = 0.01\n',
        encoding="utf-8",
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAGSIEVE_")}
    cmd = [sys.executable, "-m", "ragsieve.jobs", "up", "--config", str(cfg),
           "--store", f"sqlite:///{tmp_path / 'up.db'}"]  # fmt: skip
    proc = subprocess.Popen(
        cmd, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True, env=env
    )
    try:
        m = read_until(proc, r"listening on (http://127\.0\.0\.1:\d+)/v1/traces", 30)
        first = read_until(proc, r"ragsieve up: run (\{.*\})", 40)
        assert json.loads(first.group(1))["report"] == str(html)
        assert "failure rate per run" in html.read_text(encoding="utf-8").lower()
        bad = [KINDS["unfaithful"][0]] * 3
        send(m.group(1) + "/v1/traces", bad)
        line = read_until(proc, r'ragsieve up: run (\{.*"judged": 3.*\})', 60)
        summary = json.loads(line.group(1))
        assert summary["alerts_firing"] == ["failure_rate_above"]
        page = html.read_text(encoding="utf-8")
        assert "failure_rate_above" in page and 'class="firing"' in page
        assert [b["status"] for b in receiver.bodies] == ["firing"]
        proc.send_signal(signal.SIGTERM)
        read_until(proc, r"stopped cleanly", 20)
        assert proc.wait(20) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        receiver.close()
