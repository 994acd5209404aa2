"""An unreachable PostgreSQL store is one line and exit 2, at once (issue 29).

Before, the pool printed ten seconds of driver warnings and the command exited 1.
"""

from __future__ import annotations

import os
import socket
import subprocess

import pytest
from console_script import ragsieve_script

from ragsieve.collector.store import open_store
from ragsieve.evaluators.errors import ConfigError


def _closed_port() -> int:
    """A loopback port nothing listens on (a free one, released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_open_store_names_the_unreachable_server_in_one_line() -> None:
    url = f"postgresql://app:s3cret@127.0.0.1:{_closed_port()}/ragsieve"
    with pytest.raises(ConfigError, match="cannot connect") as exc:
        open_store(url)
    assert "s3cret" not in str(exc.value) and "\n" not in str(exc.value)


@pytest.mark.parametrize("command", [["interactions", "list"], ["golden", "status"]])
def test_a_command_on_an_unreachable_store_exits_2_with_one_line(command: list[str]) -> None:
    url = f"postgresql://app:s3cret@127.0.0.1:{_closed_port()}/ragsieve"
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAGSIEVE_")}
    out = subprocess.run(
        [str(ragsieve_script()), *command, "--store", url],
        env=env, capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert out.returncode == 2, out.stderr
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1, out.stderr  # no driver or pool warnings
    assert "cannot connect" in lines[0] and "Connection refused" in lines[0]
    assert "s3cret" not in out.stderr
