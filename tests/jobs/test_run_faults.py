"""Fault cases: LLM judge 429/500/timeouts/malformed output, a locked store, Phoenix down."""

from __future__ import annotations

import sqlite3
import threading
import time
from typing import Any

import pytest
from test_run_support import KINDS, Turn, send, settings, wait_stored

from ragsieve.collector.store.sqlite import SQLiteStore
from ragsieve.evaluators.errors import StoreError
from ragsieve.evaluators.testing import FakeOpenAIServer, Fault, prompt_of
from ragsieve.jobs.run.run import run_once

SPAIN = Turn(
    "What is the capital of Spain?",
    ["Madrid is the capital of Spain."],
    "The capital of Spain is Madrid.",
)


def faulty(body: dict[str, Any]) -> Any:
    prompt = prompt_of(body)
    if "Uruguay" in prompt:
        return Fault(status=500)
    if "Refunds" in prompt:
        return Fault(status=429)
    if "Madrid" in prompt:
        return Fault(delay_s=1.5)  # longer than the client timeout
    if "Paris" in prompt and "Marseille" not in prompt:
        return Fault(malformed=True)
    return healthy(body)


def healthy(body: dict[str, Any]) -> Any:
    bad = "Marseille" in prompt_of(body)
    return {
        "reasoning": "checked each claim",
        "abstained": False,
        "claims": [{"claim": "the answer", "supported": not bad}],
    }


def llm_settings(store: Any, base_url: str, **extra: Any) -> Any:
    return settings(
        **{
            "store": store.url,
            "jobs.backend": "llm",
            "jobs.judges": ["faithfulness"],
            "llm.base_url": base_url,
            "llm.model": "judge-1",
            "llm.max_retries": 0,
            "llm.timeout_s": 0.5,
            **extra,
        }
    )


def test_llm_judge_faults_become_error_results_then_are_retried(collector: Any) -> None:
    turns = [KINDS[k][0] for k in ("good", "good_refund", "unfaithful", "missing_abstention")]
    send(collector.traces_url, [*turns, SPAIN])
    wait_stored(collector.store, 5)
    with FakeOpenAIServer(default=faulty) as server:
        s = llm_settings(collector.store, server.base_url, **{"jobs.max_judge_error_rate": 0.5})
        out = run_once(collector.store, s, take_all=True)
    rep = out.report
    assert rep["judged"] == 5 and rep["judge_calls"] == 5
    assert rep["judge_errors"] == 4  # 500, 429, timeout, malformed
    assert rep["error_budget_exceeded"] is True and out.exit_code == 1
    assert rep["flagged"] == 1 and rep["flagged_by_root_cause"] == {"generation": 1}
    assert rep["unjudged"] == 4
    labels = dict(collector.store.query("SELECT label, COUNT(*) FROM results GROUP BY label"))
    assert labels == {"error": 4, "unfaithful": 1}
    assert collector.store.query("SELECT COUNT(*) FROM checkpoints")[0][0] == 1

    with FakeOpenAIServer(default=healthy) as server:
        again = run_once(
            collector.store, llm_settings(collector.store, server.base_url), take_all=True
        )
    rep = again.report
    assert rep["already_judged"] == 1 and rep["judge_calls"] == 4  # only the errors again
    assert rep["judge_errors"] == 0 and again.exit_code == 0
    assert rep["cost"]["prompt_tokens"] == 400 and rep["cost"]["completion_tokens"] == 80
    assert collector.store.query("SELECT COUNT(*) FROM checkpoints")[0][0] == 5


def hold_write_lock(path: str, seconds: float, started: threading.Event) -> None:
    conn = sqlite3.connect(path, isolation_level=None, timeout=30)
    conn.execute("BEGIN IMMEDIATE")
    started.set()
    time.sleep(seconds)
    conn.execute("ROLLBACK")
    conn.close()


def test_locked_store_waits_or_fails_cleanly(collector: Any, tmp_path: Any) -> None:
    send(collector.traces_url, [KINDS["good"][0], KINDS["unfaithful"][0]])
    wait_stored(collector.store, 2)
    path = collector.store.path
    impatient = SQLiteStore(path, busy_timeout_s=0.2)
    started = threading.Event()
    locker = threading.Thread(target=hold_write_lock, args=(path, 3.0, started))
    locker.start()
    started.wait(5)
    try:
        with pytest.raises(StoreError, match="locked"):
            run_once(impatient, settings(store=impatient.url), take_all=True)
    finally:
        impatient.close()
    locker.join()
    # Nothing half-written: every checkpoint has its results, and a patient run judges all.
    assert collector.store.query("SELECT COUNT(*) FROM checkpoints")[0][0] == 0
    started.clear()
    locker = threading.Thread(target=hold_write_lock, args=(path, 0.8, started))
    locker.start()
    started.wait(5)
    out = run_once(collector.store, settings(store=collector.store.url), take_all=True)
    locker.join()
    assert out.report["judged"] == 2 and out.report["flagged"] == 1


def test_phoenix_down_delays_annotations_without_failing(collector: Any) -> None:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # closed again below: nothing listens there
    send(collector.traces_url, [KINDS["good"][0]])
    wait_stored(collector.store, 1)
    t0 = time.monotonic()
    out = run_once(
        collector.store,
        settings(**{"store": collector.store.url, "phoenix.base_url": f"http://127.0.0.1:{port}"}),
        take_all=True,
    )
    assert time.monotonic() - t0 < 15
    ann = out.report["annotations"]
    assert ann["queued"] == 4 and ann["delivered"] == 0 and ann["pending"] == 4
    assert "unreachable" in ann["last_error"]
    assert out.exit_code == 0
