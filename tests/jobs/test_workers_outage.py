"""A queue worker during a PostgreSQL outage (issue 47, row 5): it rides it out or exits non-zero.

A real server of its own (stopped and started again with ``pg_ctl``, which would break every other
test sharing the session's), a real ``workers worker`` process, a real procrastinate batch.
Before, the worker logged "stopping worker" and exited 0 at the first failed heartbeat.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from fixtures_postgres import PostgresServer, find_pg_bin

from ragsieve.collector.store import open_store

pytestmark = [pytest.mark.postgres, pytest.mark.slow]


@pytest.fixture
def own_server() -> Iterator[PostgresServer]:
    """A PostgreSQL this test may stop and start (skips when the binaries are missing)."""
    bindir = find_pg_bin()
    if bindir is None:
        pytest.skip("no PostgreSQL binaries (initdb, pg_ctl) found")
    pytest.importorskip("psycopg")
    server = PostgresServer(bindir).start()
    try:
        yield server
    finally:
        server.stop()


def _pg_ctl(server: PostgresServer, action: str) -> None:
    """``pg_ctl stop`` (fast) or ``start`` on the server's data folder, with its options."""
    ctl = str(server.bindir / "pg_ctl")
    if action == "stop":
        args = [ctl, "-D", str(server.data), "-m", "fast", "-w", "stop"]
    else:
        opts = (
            f"-p {server.port} -c listen_addresses=127.0.0.1 -k {server.root}"
            " -c fsync=off -c synchronous_commit=off -c max_connections=200"
        )
        log = str(server.root / "log")
        args = [ctl, "-D", str(server.data), "-l", log, "-o", opts, "-w", "-t", "60", "start"]
    done = server._run(*args)
    assert done.returncode == 0, done.stderr


def _wait(cond: Callable[[], Any], timeout: float, what: str) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if value := cond():
            return value
        time.sleep(0.2)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}")


def _worker(url: str, log: Path, *extra: str) -> subprocess.Popen[bytes]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("RAGSIEVE_", "OTEL_"))}
    return subprocess.Popen(
        [sys.executable, "-m", "ragsieve.jobs.workers.cli", "worker", "--store", url,
         "--heartbeat-s", "0.5", "--stalled-after-s", "2", *extra],
        env=env, stdout=subprocess.DEVNULL, stderr=log.open("wb"),
    )  # fmt: skip


def _prepared(url: str) -> None:
    from ragsieve.jobs.workers.queue import ensure_queue_schema

    store = open_store(url)
    try:
        ensure_queue_schema(store)
    finally:
        store.close()


def _registered(url: str) -> int:
    import psycopg

    try:
        with psycopg.connect(url, connect_timeout=2) as conn:
            row = conn.execute("SELECT count(*) FROM procrastinate_workers").fetchone()
    except psycopg.OperationalError:
        return 0
    return int(row[0]) if row else 0


def _defer_empty_batch(url: str) -> int:
    """One judge batch (no traces: it succeeds without a judge call) through procrastinate."""
    from ragsieve.jobs.workers.queue import JUDGE_TASK, create_app

    app = create_app(url)
    with app.open():
        return int(
            app.configure_task(JUDGE_TASK).defer(
                trace_ids=[], judges=["faithfulness"], backend="offline", budget={}, thresholds={}
            )
        )


def _status(url: str, job_id: int) -> str | None:
    import psycopg

    with psycopg.connect(url) as conn:
        row = conn.execute(
            "SELECT status FROM procrastinate_jobs WHERE id = %s", (job_id,)
        ).fetchone()
    return None if row is None else str(row[0])


class Started:
    """A registered worker process on a fresh database of the test's own server."""

    def __init__(self, server: PostgresServer, log: Path, *extra: str) -> None:
        self.url = server.create_database()
        _prepared(self.url)
        self.log = log
        self.proc = _worker(self.url, log, *extra)
        _wait(lambda: _registered(self.url), 30, "the worker to register")

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


@pytest.fixture
def start_worker(own_server: PostgresServer, tmp_path: Path) -> Iterator[Callable[..., Started]]:
    """``start_worker(*flags)``: a worker on the own server, killed at teardown if still alive."""
    started: list[Started] = []

    def _start(*extra: str) -> Started:
        started.append(Started(own_server, tmp_path / f"worker{len(started)}.log", *extra))
        return started[-1]

    yield _start
    for w in started:
        w.stop()


def test_a_worker_rides_out_a_database_stop_and_works_after_it(
    own_server: PostgresServer, start_worker: Callable[..., Started]
) -> None:
    w = start_worker()
    _pg_ctl(own_server, "stop")
    time.sleep(8)  # heartbeats fail meanwhile: procrastinate's worker stops itself
    assert w.proc.poll() is None, f"worker exited {w.proc.returncode}: {w.log.read_text()}"
    _pg_ctl(own_server, "start")
    job = _defer_empty_batch(w.url)
    _wait(lambda: _status(w.url, job) == "succeeded", 60, f"batch {job} to run after the outage")
    assert w.proc.poll() is None
    w.proc.send_signal(signal.SIGTERM)  # a stop signal still ends it cleanly
    assert w.proc.wait(30) == 0, w.log.read_text()
    text = w.log.read_text()
    assert "reconnecting" in text and "restarting the worker" in text


def test_a_worker_exits_non_zero_when_the_outage_outlasts_its_patience(
    own_server: PostgresServer, start_worker: Callable[..., Started]
) -> None:
    w = start_worker("--outage-give-up-s", "3")
    _pg_ctl(own_server, "stop")
    try:
        code = w.proc.wait(180)  # a guard, not a speed goal: loaded CI cores start slowly
    finally:
        _pg_ctl(own_server, "start")
    assert code == 1, w.log.read_text()
    assert "giving up" in w.log.read_text()
