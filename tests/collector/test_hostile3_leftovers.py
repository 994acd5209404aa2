"""Issue 47, what the third round left: a password with an unencoded ``/`` in a store URL, and a
forwarding outbox that grows because spans arrive faster than ``forward_max_spans_per_s``.

Before: ``masked_url("postgresql://u:pa/ss@h/db")`` printed the password as it was (the parser
took ``u:pa`` for a host and port); an outbox growing for hours showed only as ``/readyz``
``pending``, never in a log line.
"""

from __future__ import annotations

import asyncio
import logging
import os
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from ragsieve.collector.forward.forwarder import Forwarder
from ragsieve.collector.forward.outbox import OutboxWorker, Outcome
from ragsieve.collector.serve.app import create_app
from ragsieve.collector.serve.server import ServerThread
from ragsieve.collector.settings import CollectorSettings
from ragsieve.collector.store import OutboxItem, Store, masked_url, open_store
from ragsieve.evaluators.errors import ConfigError

SECRET = "pa/ss?w#rd"


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("postgresql://u:secret@h:5432/db", "postgresql://u:***@h:5432/db"),
        ("postgresql://u:pa/ss@h/db", "postgresql://u:***@h/db"),
        ("postgresql://u:pa?ss@h/db", "postgresql://u:***@h/db"),
        ("postgresql://u:pa#ss@h/db", "postgresql://u:***@h/db"),
        ("postgresql://u:p@ss@h/db", "postgresql://u:***@h/db"),
        ("postgresql://u:p:ss@h/db", "postgresql://u:***@h/db"),
        (f"postgresql://u:{SECRET}@h/db", "postgresql://u:***@h/db"),
        (
            "postgresql://u:pw@h/db?application_name=a@b",
            "postgresql://u:***@h/db?application_name=a@b",
        ),
        ("postgresql://u@h/db", "postgresql://u@h/db"),
        ("sqlite:////srv/a@b:c/ragsieve.db", "sqlite:////srv/a@b:c/ragsieve.db"),
    ],
)
def test_a_password_never_shows_whatever_it_holds(url: str, shown: str) -> None:
    assert masked_url(url) == shown


def test_an_unencoded_slash_in_a_password_is_refused_in_one_line() -> None:
    with pytest.raises(ConfigError) as info:
        open_store(f"postgresql://ragsieve:{SECRET}@127.0.0.1:9/db")
    message = str(info.value)
    assert "percent-encoded" in message and "\n" not in message
    assert "pa" not in message.split("://", 1)[1].split("@")[0]
    assert "w#rd" not in message and "ss?" not in message


def _fill(store: Store, n: int) -> None:
    for i in range(n):
        store.enqueue("t", f"payload-{i}".encode(), "text/plain", items=1)


async def test_an_outbox_growing_past_its_pace_is_said_loudly_and_clears(
    store: Store, caplog: pytest.LogCaptureFixture
) -> None:
    async def deliver(item: OutboxItem) -> Outcome:
        return Outcome(True)

    worker = OutboxWorker(store, "t", deliver, max_items_per_s=20, batch=5)
    worker.watch_every_s = 0.2
    stop = asyncio.Event()
    caplog.set_level(logging.WARNING, logger="ragsieve.collector.forward.outbox")
    task = asyncio.create_task(worker.run(stop))
    deadline = time.monotonic() + 30
    while worker.stats.behind is None and time.monotonic() < deadline:
        await asyncio.to_thread(_fill, store, 20)  # 100 rows/s against a pace of 20
        await asyncio.sleep(0.2)
    assert worker.stats.behind is not None, worker.stats
    assert "falling behind" in worker.stats.behind and "forward_max_spans_per_s" in caplog.text
    worker.max_items_per_s = None  # the endpoint takes more: the backlog drains
    while worker.stats.behind is not None and time.monotonic() < deadline:
        await asyncio.sleep(0.2)
    stop.set()
    await task
    assert worker.stats.behind is None and "catching up" in caplog.text


def test_readyz_shows_a_forwarder_falling_behind(store: Store) -> None:
    def factory(st: Store, cfg: CollectorSettings) -> Forwarder:
        assert cfg.forward_otlp is not None
        fwd = Forwarder(st, cfg.forward_otlp, max_spans_per_s=cfg.forward_max_spans_per_s)
        fwd.worker.watch_every_s = 0.1
        return fwd

    # nothing listens on port 9: every delivery fails, the rows pile up as spans keep coming
    cfg = CollectorSettings(port=0, forward_otlp="http://127.0.0.1:9/v1/traces")
    app = create_app(store, cfg, run_settler=False, forwarder_factory=factory)
    with ServerThread(app, port=0) as server:
        deadline, forwarder = time.monotonic() + 30, None
        while time.monotonic() < deadline:
            _fill_otlp(store)
            ready = httpx.get(f"{server.url}/readyz", timeout=10).json()
            forwarder = ready["forwarder"]
            if forwarder and forwarder.get("behind"):
                break
            time.sleep(0.15)
    assert forwarder is not None and forwarder["pending"] > 0
    assert "falling behind" in str(forwarder["behind"]), forwarder


def _fill_otlp(store: Store) -> None:
    for _ in range(5):
        store.enqueue("otlp", b"\x0a\x00", "application/x-protobuf", items=1)


def test_collector_serve_refuses_a_symlink_loop_and_deep_env_json_in_one_line(
    tmp_path: Path,
) -> None:
    """The issue saw tracebacks from ``collector serve`` for both (``jobs run`` is covered in
    ``tests/jobs/test_hostile3_inputs.py``)."""
    loop = tmp_path / "loop.db"
    loop.symlink_to(loop)
    deep = {"RAGSIEVE_COLLECTOR__FORWARD_HEADERS": "[" * 65_000}
    for args, env, words in [
        (["--store", f"sqlite:///{loop}"], {}, "symbolic links"),
        (["--store", f"sqlite:///{tmp_path / 'x.db'}"], deep, "JSON nested too deeply"),
    ]:
        ran = _serve(args, env)
        assert ran.returncode == 2, ran.stderr[-2000:]
        assert ran.stderr.count("\n") == 1 and "Traceback" not in ran.stderr, ran.stderr
        assert words in ran.stderr, ran.stderr


def _serve(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("RAGSIEVE_")}
    return subprocess.run(
        [sys.executable, "-m", "ragsieve.jobs", "collector", "serve", "--port", "0", *args],
        env={**clean, **env},
        capture_output=True,
        text=True,
        timeout=60,
    )
