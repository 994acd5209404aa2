"""Issue 47 row 7: two `jobs run` on one store judge each trace once and leave one history point."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from typing import Any

import pytest
from test_run_support import Turn, send, settings, wait_stored

from ragsieve.evaluators.testing import FakeOpenAIServer
from ragsieve.jobs.run.lease import Lease
from ragsieve.jobs.run.run import run_once

N = 16
VERDICT = {"reasoning": "ok", "abstained": False, "claims": [{"claim": "a", "supported": True}]}


def _turns(n: int) -> list[Turn]:
    return [
        Turn(
            f"When does branch number {i} open on Saturdays?",
            [f"Branch number {i} opens at {i % 9 + 1} in the morning on Saturdays."],
            f"Branch number {i} opens at {i % 9 + 1} on Saturdays.",
        )
        for i in range(n)
    ]


# a suite started in the background (`bash tests/run &`) ignores SIGINT and a child inherits that:
# the job gets Python's own Ctrl-C handling back, as when a person runs it at a terminal
_CTRL_C = (
    "import runpy, signal, sys; signal.signal(signal.SIGINT, signal.default_int_handler);"
    " sys.argv[0] = 'ragsieve'; runpy.run_module('ragsieve.jobs', run_name='__main__')"
)


def _job(url: str, env: dict[str, str]) -> subprocess.Popen[str]:
    cmd = [sys.executable, "-c", _CTRL_C, "jobs", "run", "--store", url, "--since", "1h"]
    cmd += ["--settle", "0", "--all", "--judge", "faithfulness", "--json"]
    return subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def test_two_concurrent_runs_judge_each_trace_once(collector: Any) -> None:
    send(collector.traces_url, _turns(N))
    wait_stored(collector.store, N)
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAGSIEVE_")}
    with FakeOpenAIServer() as slow:
        slow.default = lambda body: (time.sleep(0.1), VERDICT)[1]  # 2 in flight: ~1 s a run
        env.update(
            {
                "RAGSIEVE_JOBS__BACKEND": "llm",
                "RAGSIEVE_LLM__BASE_URL": slow.base_url,
                "RAGSIEVE_LLM__CONCURRENCY": "2",
                "RAGSIEVE_LLM__MAX_RETRIES": "0",
            }
        )
        first = _job(collector.store.url, env)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not slow.requests:  # the first run is judging
            assert first.poll() is None, first.communicate()
            time.sleep(0.02)
        second = _job(collector.store.url, env)
        out1, err1 = first.communicate(timeout=120)
        out2, err2 = second.communicate(timeout=120)
        calls = len(slow.requests)
    assert first.returncode == 0 and second.returncode == 0, (err1, err2)
    assert calls == N  # every trace judged once, not twice
    rows = collector.store.query("SELECT trace_id, COUNT(*) FROM results GROUP BY trace_id")
    assert len(rows) == N and all(n == 1 for _, n in rows)
    ran, skipped = json.loads(out1), json.loads(out2)
    assert ran["judge_calls"] == N and ran["lease"]["waited_for"] is None
    assert (
        skipped["run_id"] is None
        and "judged this window while this run waited" in skipped["skipped"]
    )
    assert skipped["lease"]["waited_for"] and skipped["lease"]["waited_s"] > 0
    history = collector.store.query("SELECT run_id FROM runs WHERE report IS NOT NULL")
    assert [r[0] for r in history] == [ran["run_id"]]  # one window, one history point
    assert collector.store.query("SELECT COUNT(*) FROM leases")[0][0] == 0  # released


def test_an_expired_lease_is_taken_over_and_a_held_one_skips(collector: Any) -> None:
    send(collector.traces_url, _turns(3))
    wait_stored(collector.store, 3)
    s = settings(**{"store": collector.store.url, "jobs.judges": ["faithfulness"]})
    live = Lease(collector.store, holder="host:1:live", ttl_s=60)
    assert live.try_acquire()
    held = run_once(collector.store, s, take_all=True, lease_wait_s=0.3)
    assert held.skipped and "host:1:live" in held.skipped and "gave up" in held.skipped
    assert collector.store.query("SELECT COUNT(*) FROM results")[0][0] == 0
    # the holder was killed: its lease stops being renewed and runs out
    dead = Lease(collector.store, holder="host:2:killed", ttl_s=60, clock=lambda: time.time() - 61)
    live.release()
    assert dead.try_acquire()
    out = run_once(collector.store, s, take_all=True, lease_wait_s=5)
    assert out.skipped is None and out.report["judged"] == 3
    assert out.report["lease"]["took_over"] == "host:2:killed"


def _misdated(endpoint: str, starts_ns: list[int]) -> None:
    """One RAG turn per start time through the real OTel SDK, stamped as a broken exporter does."""
    from opentelemetry import trace

    from ragsieve.collector.instrument import instrument

    provider = instrument("clock-app", endpoint, set_global=False, flush_on_exit=False)
    tracer = trace.get_tracer("test", tracer_provider=provider)
    try:
        for i, start in enumerate(starts_ns):
            root = tracer.start_span("rag", start_time=start)
            root.set_attribute("openinference.span.kind", "CHAIN")
            root.set_attribute("input.value", f"Which plan includes SSO, question {i}?")
            ctx = trace.set_span_in_context(root)
            llm = tracer.start_span("generate", context=ctx, start_time=start + 1_000)
            llm.set_attribute("openinference.span.kind", "LLM")
            llm.set_attribute("output.value", "The Business plan includes SSO.")
            llm.end(end_time=start + 2_000)
            root.set_attribute("output.value", "The Business plan includes SSO.")
            root.end(end_time=start + 3_000)
        provider.force_flush()
    finally:
        provider.shutdown()


def test_spans_stamped_1970_or_2100_are_reported_not_silently_missed(collector: Any) -> None:
    from datetime import UTC, datetime

    from ragsieve.jobs.run.report import render_table

    micros_as_nanos = int(time.time() * 1e6)  # January 1970 when read as nanoseconds
    year_2100 = int(datetime(2100, 1, 1, tzinfo=UTC).timestamp() * 1e9)
    _misdated(collector.traces_url, [micros_as_nanos, micros_as_nanos + 5_000, year_2100])
    send(collector.traces_url, _turns(1))  # one ordinary turn
    wait_stored(collector.store, 4)
    s = settings(**{"store": collector.store.url, "jobs.judges": ["faithfulness"]})
    out = run_once(collector.store, s, take_all=True)
    assert out.report["judged"] == 1  # the window holds the ordinary turn only...
    assert out.report["misdated"] == {  # ...and says what it cannot place
        "interactions": 3,
        "before_2000": 2,
        "future": 1,
        "note": out.report["misdated"]["note"],
    }
    assert "no window holds them" in render_table(out.report)


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_a_held_lease_is_renewed_and_one_taken_over_says_it_was_lost(
    backend: str, request: pytest.FixtureRequest
) -> None:
    store = request.getfixturevalue("store" if backend == "sqlite" else "pg_store")
    # a time to live of 2 s (renewed every ~0.67 s) rides out a loaded machine's stalls
    first = Lease(store, holder="a", ttl_s=2.0)
    assert first.try_acquire()
    first.keep_renewed()
    other = Lease(store, holder="b", ttl_s=2.0)
    time.sleep(3.0)  # well past one time to live
    assert not other.try_acquire() and not first.lost.is_set()
    current = first.current()
    assert current is not None and current.holder == "a" and current.expires_at > time.time()
    first._stop.set()  # the holder stalls (no more renewals)...
    time.sleep(2.5)
    assert other.try_acquire()  # ...its lease runs out and another run takes it
    assert not first.renew() and first.lost.is_set()
    other.release()
    assert other.current() is None


def test_a_run_waiting_for_the_lease_says_so_and_stops_on_ctrl_c(collector: Any) -> None:
    send(collector.traces_url, _turns(2))
    wait_stored(collector.store, 2)
    held = Lease(collector.store, holder="host:1:busy", ttl_s=600)
    assert held.try_acquire()
    env = {**os.environ, "RAGSIEVE_STORE": collector.store.url}
    job = _job(collector.store.url, env)
    assert job.stderr is not None
    line = job.stderr.readline()  # the first thing it says
    assert "waiting up to" in line and "host:1:busy" in line, line
    job.send_signal(signal.SIGINT)
    try:
        job.wait(timeout=30)  # was: the 900 s wait ran on, Ctrl-C or not
    finally:
        job.kill()
    assert collector.store.query("SELECT COUNT(*) FROM results")[0][0] == 0
    held.release()
