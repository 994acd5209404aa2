"""Scale-out: two collectors and two queue workers as OS processes on one real Postgres.

Traffic comes from the real OTel SDK exporter, split and duplicated across both collectors; one
worker is SIGKILLed while it holds a batch. No span may be lost, every settled trace is judged
exactly once per judge, and the global budget holds across processes.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest
from console_script import ragsieve_script
from opentelemetry import trace
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor

from ragsieve.collector.store import open_store

pytestmark = [pytest.mark.postgres, pytest.mark.slow]

N_TRACES = 28
JUDGES = ("faithfulness", "answer_relevance")
SLOW_MS = 1500  # worker a's paced latency per judge call
PHASE1_CALLS = 20  # budget of the first pass: 10 traces x 2 judges, then no more
DOCS = [
    ("kb-1", "The Eiffel Tower is 330 metres tall and stands in Paris."),
    ("kb-2", "The Louvre is the most visited museum in the world."),
]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _ragsieve() -> list[str]:
    return [str(ragsieve_script())]


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("RAGSIEVE_", "OTEL_"))}
    env.update(extra)
    return env


def _wait(cond: Callable[[], Any], timeout: float, what: str) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = cond()
        if value:
            return value
        time.sleep(0.1)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}")


@pytest.fixture
def procs() -> Iterator[dict[str, subprocess.Popen[bytes]]]:
    """Child processes by name; all stopped at teardown."""
    running: dict[str, subprocess.Popen[bytes]] = {}
    yield running
    for p in running.values():
        if p.poll() is None:
            p.terminate()
    for p in running.values():
        try:
            p.wait(timeout=10)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()


def _worker(url: str, name: str, latency_ms: int = 120) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "ragsieve.jobs.workers.cli",
            "worker",
            "--store",
            url,
            "--name",
            name,
            "--heartbeat-s",
            "0.5",
            "--stalled-after-s",
            "2",
            "--judge-latency-ms",
            str(latency_ms),
        ],
        env=_env(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


def _schedule(url: str, *extra: str) -> list[str]:
    return [
        sys.executable,
        "-m",
        "ragsieve.jobs.workers.cli",
        "schedule",
        "--store",
        url,
        *(a for j in JUDGES for a in ("--judge", j)),
        "--backend",
        "offline",
        "--settle-s",
        "0",
        "--batch-size",
        "4",
        "--stalled-after-s",
        "2",
        "--budget-window-s",
        "86400",
        *extra,
    ]


def _send_traffic(c1: str, c2: str) -> set[tuple[str, str]]:
    """RAG traces whose spans go to both collectors; provider A also duplicates to collector 2."""
    res = Resource.create({"service.name": "rag-app"})
    prov_a, prov_b = TracerProvider(resource=res), TracerProvider(resource=res)
    prov_a.add_span_processor(SimpleSpanProcessor(OTLPSpanExporter(endpoint=f"{c1}/v1/traces")))
    prov_a.add_span_processor(SimpleSpanProcessor(OTLPSpanExporter(endpoint=f"{c2}/v1/traces")))
    prov_b.add_span_processor(SimpleSpanProcessor(OTLPSpanExporter(endpoint=f"{c2}/v1/traces")))
    ta, tb = prov_a.get_tracer("app"), prov_b.get_tracer("app")
    sent: set[tuple[str, str]] = set()
    for i in range(N_TRACES):
        first, other = (ta, tb) if i % 2 == 0 else (tb, ta)
        question = f"How tall is the Eiffel Tower? (#{i})"
        answer = "The Eiffel Tower is 330 metres tall." if i % 3 else "It is in Paris."
        root = first.start_span(
            "rag",
            attributes={
                "openinference.span.kind": "CHAIN",
                "input.value": question,
                "output.value": answer,
            },
        )
        ctx = trace.set_span_in_context(root)
        retr = other.start_span(
            "retrieve",
            context=ctx,
            attributes={
                "openinference.span.kind": "RETRIEVER",
                "input.value": question,
                **{
                    f"retrieval.documents.{k}.document.{f}": v
                    for k, (d, t) in enumerate(DOCS)
                    for f, v in (("id", d), ("content", t), ("score", 0.9 - k / 10))
                },
            },
        )
        retr.end()
        llm = first.start_span(
            "llm",
            context=ctx,
            attributes={
                "openinference.span.kind": "LLM",
                "llm.model_name": "m",
                "input.value": question,
                "output.value": answer,
            },
        )
        llm.end()
        root.end()
        for s in (root, retr, llm):
            sent.add(
                (f"{s.get_span_context().trace_id:032x}", f"{s.get_span_context().span_id:016x}")
            )
    prov_a.shutdown()
    prov_b.shutdown()
    return sent


def test_two_collectors_two_workers_one_killed(
    pg_database: str, procs: dict[str, subprocess.Popen[bytes]]
) -> None:
    url = pg_database
    store = open_store(url)  # migrated here once; the processes find it ready
    try:
        _run(url, store, procs)
    finally:
        store.close()


def _run(url: str, store: Any, procs: dict[str, subprocess.Popen[bytes]]) -> None:
    from ragsieve.jobs.workers.queue import ensure_queue_schema

    ensure_queue_schema(store)
    cenv = _env(
        RAGSIEVE_COLLECTOR__QUIET_PERIOD_S="0.5", RAGSIEVE_COLLECTOR__SETTLE_INTERVAL_S="0.2"
    )
    urls = []
    for name in ("c1", "c2"):
        port = _free_port()
        procs[name] = subprocess.Popen(
            [
                *_ragsieve(),
                "collector",
                "serve",
                "--store",
                url,
                "--port",
                str(port),
                "--grpc-port",
                "0",
            ],
            env=cenv,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        urls.append(f"http://127.0.0.1:{port}")
    for u in urls:
        _wait(lambda u=u: _ready(u), 30, f"collector {u}")

    sent = _send_traffic(*urls)
    assert len(sent) == 3 * N_TRACES
    _wait(lambda: _count(store, "interactions") == N_TRACES, 30, "every trace to settle")
    stored = {tuple(r) for r in store.query("SELECT trace_id, span_id FROM spans")}
    assert stored == sent  # no span lost, duplicates stored once

    # worker a is slow (>= 1.5 s a batch) so the SIGKILL below lands while it holds one
    procs["wa"] = _worker(url, "a", latency_ms=SLOW_MS)
    worker_a = _wait(
        lambda: store.query("SELECT min(id) FROM procrastinate_workers")[0][0],
        30,
        "worker a to register",
    )
    procs["wb"] = _worker(url, "b")
    _wait(lambda: _count(store, "procrastinate_workers") >= 2, 30, "worker b to register")

    # Phase 1: one scheduler pass under a budget of 20 calls, shared by both workers.
    out = subprocess.run(
        _schedule(url, "--once", "--json", "--budget-calls", str(PHASE1_CALLS)),
        env=_env(),
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert '"batches": 7' in out.stdout, out.stdout + out.stderr
    _wait(lambda: _queue_idle(store), 40, "phase-1 batches to finish")
    spent = store.query("SELECT SUM(calls_spent), MAX(calls_limit) FROM budgets")[0]
    assert (spent[0], spent[1]) == (PHASE1_CALLS, PHASE1_CALLS)
    assert _count(store, "checkpoints") == PHASE1_CALLS  # the rest waits for budget

    # Phase 2: a scheduler loop with room to finish; kill worker a while it holds a batch.
    procs["sched"] = subprocess.Popen(
        _schedule(url, "--every-s", "0.5", "--budget-calls", "1000"),
        env=_env(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    held = _wait(
        lambda: store.query(
            "SELECT id FROM procrastinate_jobs WHERE status = 'doing' AND worker_id = ?"
            " AND task_name = 'ragsieve.judge_batch'",
            (worker_a,),
        ),
        40,
        "worker a to take a batch",
    )
    procs["wa"].send_signal(signal.SIGKILL)
    procs["wa"].wait()
    killed_job = held[0][0]
    # the kill landed mid-batch: the dead worker never finished the job it held
    assert store.query("SELECT status FROM procrastinate_jobs WHERE id = ?", (killed_job,)) == [
        ("doing",)
    ]

    _wait(lambda: _all_judged(store) and _queue_idle(store), 60, "every trace judged")
    status = store.query("SELECT status FROM procrastinate_jobs WHERE id = ?", (killed_job,))
    assert status == [("succeeded",)]  # the killed worker's batch was retried elsewhere
    starts = store.query(
        "SELECT COUNT(*) FROM procrastinate_events WHERE job_id = ? AND type = 'started'",
        (killed_job,),
    )[0][0]
    assert starts == 2, "the batch held by the killed worker should have run twice"
    assert _count(store, "procrastinate_jobs WHERE status = 'failed'") == 0

    per_trace = store.query(
        "SELECT i.trace_id, COUNT(c.judge), COUNT(DISTINCT c.run_id) FROM interactions i"
        " LEFT JOIN checkpoints c ON c.trace_id = i.trace_id GROUP BY i.trace_id"
    )
    assert len(per_trace) == N_TRACES
    assert all(n == len(JUDGES) and runs == 1 for _, n, runs in per_trace), per_trace
    results = store.query("SELECT trace_id, COUNT(*) FROM results GROUP BY trace_id")
    assert sorted(n for _, n in results) == [len(JUDGES)] * N_TRACES
    assert _count(
        store,
        "results r JOIN checkpoints c ON c.trace_id = r.trace_id AND"
        " c.judge = r.evaluator AND c.run_id = r.run_id",
    ) == N_TRACES * len(JUDGES)

    calls = store.query("SELECT SUM(calls_spent) FROM budgets")[0][0]
    judged = N_TRACES * len(JUDGES)
    # Reservations cover every judged trace plus at most the one trace the killed worker held.
    assert judged <= calls <= judged + len(JUDGES)
    assert calls <= 1000
    assert {tuple(r) for r in store.query("SELECT trace_id, span_id FROM spans")} == sent


def _ready(base: str) -> bool:
    try:
        return httpx.get(f"{base}/readyz", timeout=1.0).status_code == 200
    except httpx.HTTPError:
        return False


def _count(store: Any, table: str) -> int:
    return int(store.query(f"SELECT COUNT(*) FROM {table}")[0][0])


def _queue_idle(store: Any) -> bool:
    return (
        _count(
            store,
            "procrastinate_jobs WHERE task_name = 'ragsieve.judge_batch' AND"
            " status IN ('todo', 'doing')",
        )
        == 0
    )


def _all_judged(store: Any) -> bool:
    return _count(store, "checkpoints") == N_TRACES * len(JUDGES)
