"""The demo's closing commands run as printed in a shell where the venv is not active.

Issue 29: the demo ended with ``ragsieve golden review --store ...``, which a new user pasted
into a fresh shell (venv not activated) and got "command not found".
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from console_script import ragsieve_script


def _plain_env() -> dict[str, str]:
    """A shell without the venv: no VIRTUAL_ENV, the venv's bin not on PATH."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("RAGSIEVE_", "OTEL_"))}
    env.pop("VIRTUAL_ENV", None)
    env["PATH"] = "/usr/bin:/bin"
    return env


def test_the_demo_prints_next_commands_that_run_without_the_venv(tmp_path: Path) -> None:
    exe = ragsieve_script()
    env = _plain_env()
    out = subprocess.run(
        [str(exe), "demo", "--queries", "30", "--seed", "2"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert out.returncode in (0, 1), out.stderr  # 1: below the scorecard floors on 30 queries
    tail = out.stdout.split("== next", 1)[1].splitlines()[1:]
    commands = [line.strip() for line in tail if line.strip()]
    assert any("golden review" in c for c in commands), out.stdout
    as_json = subprocess.run(
        [str(exe), "demo", "--queries", "30", "--seed", "2", "--json", "--store", "sqlite:///j.db"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    listed = json.loads(as_json.stdout)["next_commands"]
    assert [c.replace("j.db", "ragsieve-demo.db") for c in listed] == commands
    for command in commands:
        if "golden review" in command:
            command = command.replace("golden review", "golden review --limit 0")
        ran = subprocess.run(
            ["/bin/sh", "-c", command],
            cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120, check=False,
        )  # fmt: skip
        assert ran.returncode == 0, f"{command}: {ran.returncode} {ran.stderr[-300:]}"
