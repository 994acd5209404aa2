"""A job process killed mid-run, then rerun: nothing is judged twice and nothing is skipped."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from typing import Any

from test_run_support import Turn, send, settings, wait_stored

from ragsieve.evaluators.testing import FakeOpenAIServer
from ragsieve.jobs.run.run import run_once

N = 30
VERDICT = {"reasoning": "ok", "abstained": False, "claims": [{"claim": "a", "supported": True}]}


def test_killed_mid_run_then_rerun(collector: Any) -> None:
    turns = [
        Turn(
            f"What is the opening time of shop number {i}?",
            [f"Shop number {i} opens at {i % 12 + 1} o'clock every weekday."],
            f"Shop number {i} opens at {i % 12 + 1} o'clock.",
        )
        for i in range(N)
    ]
    send(collector.traces_url, turns)
    wait_stored(collector.store, N)
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAGSIEVE_")}
    with FakeOpenAIServer() as slow:
        # every reply takes 0.25 s and only two are in flight: about 8 judgements per second
        slow.default = lambda body: (time.sleep(0.25), VERDICT)[1]
        env.update(
            {
                "RAGSIEVE_JOBS__BACKEND": "llm",
                "RAGSIEVE_LLM__BASE_URL": slow.base_url,
                "RAGSIEVE_LLM__CONCURRENCY": "2",
                "RAGSIEVE_LLM__MAX_RETRIES": "0",
            }
        )
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "ragsieve.jobs",
                "jobs",
                "run",
                "--store",
                collector.store.url,
                "--since",
                "1h",
                "--settle",
                "0",
                "--all",
                "--judge",
                "faithfulness",
            ],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            done = collector.store.query("SELECT COUNT(*) FROM checkpoints")[0][0]
            if done >= 5:
                break
            time.sleep(0.05)
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)
    before = collector.store.query("SELECT COUNT(*) FROM checkpoints")[0][0]
    assert 5 <= before < N
    assert collector.store.query("SELECT COUNT(*) FROM results")[0][0] == before
    with FakeOpenAIServer(default=lambda body: VERDICT) as fast:
        s = settings(
            **{
                "store": collector.store.url,
                "jobs.backend": "llm",
                "jobs.judges": ["faithfulness"],
                "llm.base_url": fast.base_url,
                "llm.max_retries": 0,
            }
        )
        out = run_once(collector.store, s, take_all=True)
        assert len(fast.requests) == N - before  # exactly the missing ones
    assert out.report["already_judged"] == before
    assert out.report["judge_calls"] == N - before and out.report["judge_errors"] == 0
    rows = collector.store.query("SELECT trace_id, COUNT(*) FROM results GROUP BY trace_id")
    assert len(rows) == N and all(n == 1 for _, n in rows)
    assert collector.store.query("SELECT COUNT(*) FROM checkpoints")[0][0] == N
