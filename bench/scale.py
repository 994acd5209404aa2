"""Scale-out benchmark: ingest with 1/2/4 collectors and judging with 1/2 workers on Postgres.

Starts a throwaway PostgreSQL (initdb/pg_ctl, as the tests do), then
* ingest: N collector processes (`ragsieve collector serve --store postgresql://...`), OTLP/HTTP
  protobuf requests (50 spans, 10 traces each) posted round-robin from a client thread pool;
* jobs: W worker processes (`ragsieve workers worker`) judging settled traces with the offline
  judges plus a fixed per-call latency standing in for a remote LLM (--judge-latency-ms).
Prints a table with scaling factors and writes bench/results/scale.json.

Usage: .venv/bin/python bench/scale.py [--seconds 5] [--traces 120] [--latency-ms 50]
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from pathlib import Path

import httpx
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
from fixtures_postgres import PostgresServer, find_pg_bin  # noqa: E402

from ragsieve.collector.spans import SpanRecord  # noqa: E402
from ragsieve.collector.store import open_store  # noqa: E402
from ragsieve.evaluators.records import RagInteraction, RetrievedDocument  # noqa: E402

RAGSIEVE = str(Path(sys.executable).with_name("ragsieve"))
ENV = {k: v for k, v in os.environ.items() if not k.startswith(("RAGSIEVE_", "OTEL_"))}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def payload(seq: int, traces: int = 10, spans_per_trace: int = 5) -> bytes:
    """One OTLP request: ``traces`` RAG-shaped traces of ``spans_per_trace`` spans."""
    req = ExportTraceServiceRequest()
    scope = req.resource_spans.add().scope_spans.add()
    now = time.time_ns()
    for t in range(traces):
        trace_id = (seq * traces + t + 1).to_bytes(16, "big")
        for n in range(spans_per_trace):
            sp = scope.spans.add()
            sp.trace_id, sp.span_id = trace_id, (n + 1).to_bytes(8, "big")
            if n:
                sp.parent_span_id = (1).to_bytes(8, "big")
            sp.name = "rag" if n == 0 else f"step{n}"
            sp.start_time_unix_nano, sp.end_time_unix_nano = now, now + 1_000_000
            sp.attributes.append(
                KeyValue(
                    key="input.value",
                    value=AnyValue(string_value=f"question {seq}-{t}: " + "lorem ipsum " * 40),
                )
            )
    return req.SerializeToString()


def bench_ingest(server: PostgresServer, n_collectors: int, seconds: float) -> dict[str, float]:
    url = server.create_database("ingest")
    open_store(url).close()  # migrate once
    ports = [free_port() for _ in range(n_collectors)]
    procs = [
        subprocess.Popen(
            [RAGSIEVE, "collector", "serve", "--store", url, "--port", str(p)],
            env=ENV,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        for p in ports
    ]
    try:
        for p in ports:
            wait_ready(f"http://127.0.0.1:{p}")
        bodies = [payload(i) for i in range(64)]
        sent = 0
        deadline = time.monotonic() + seconds

        def client(k: int) -> int:
            n = 0
            with httpx.Client(timeout=30) as http:
                while time.monotonic() < deadline:
                    port = ports[(k + n) % len(ports)]
                    r = http.post(
                        f"http://127.0.0.1:{port}/v1/traces",
                        content=bodies[n % 64],
                        headers={"content-type": "application/x-protobuf"},
                    )
                    n += r.status_code == 200
            return n

        start = time.monotonic()
        with ThreadPoolExecutor(8) as pool:
            sent = sum(pool.map(client, range(8)))
        elapsed = time.monotonic() - start
    finally:
        for proc in procs:
            proc.terminate()
            proc.wait(timeout=20)
    return {
        "collectors": n_collectors,
        "requests": sent,
        "spans": sent * 50,
        "spans_per_s": round(sent * 50 / elapsed, 1),
    }


def seed_interactions(url: str, n: int) -> None:
    store = open_store(url)
    for i in range(n):
        tid = f"{i + 1:032x}"
        store.write_spans(
            [SpanRecord(trace_id=tid, span_id="1" * 16, parent_span_id=None, name="rag")], now=1.0
        )
        store.save_interaction(
            RagInteraction(
                trace_id=tid,
                span_id="1" * 16,
                started_at=datetime.now(UTC),
                query=f"How tall is the Eiffel Tower? ({i})",
                answer="The Eiffel Tower is 330 metres tall.",
                documents=[
                    RetrievedDocument(
                        id="kb-1",
                        rank=0,
                        content=("The Eiffel Tower is 330 metres tall and stands in Paris."),
                    )
                ],
            ),
            seen_at=1.0,
        )
    store.close()


def bench_jobs(
    server: PostgresServer, n_workers: int, traces: int, latency_ms: float
) -> dict[str, float]:
    from ragsieve.jobs.workers.queue import ensure_queue_schema

    url = server.create_database("jobs")
    seed_interactions(url, traces)
    store = open_store(url)
    ensure_queue_schema(store)
    cli = [sys.executable, "-m", "ragsieve.jobs.workers.cli"]
    procs = [
        subprocess.Popen(
            [*cli, "worker", "--store", url, "--judge-latency-ms", str(latency_ms)],
            env=ENV,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        for _ in range(n_workers)
    ]
    try:
        while int(store.query("SELECT COUNT(*) FROM procrastinate_workers")[0][0]) < n_workers:
            time.sleep(0.1)
        start = time.monotonic()
        subprocess.run(
            [
                *cli,
                "schedule",
                "--store",
                url,
                "--once",
                "--settle-s",
                "0",
                "--judge",
                "faithfulness",
                "--judge",
                "answer_relevance",
                "--batch-size",
                "5",
            ],
            env=ENV,
            check=True,
            capture_output=True,
        )
        while int(store.query("SELECT COUNT(*) FROM checkpoints")[0][0]) < 2 * traces:
            time.sleep(0.05)
        elapsed = time.monotonic() - start
    finally:
        for proc in procs:
            proc.terminate()
            proc.wait(timeout=30)
        store.close()
    return {
        "workers": n_workers,
        "traces": traces,
        "judge_calls": 2 * traces,
        "traces_per_s": round(traces / elapsed, 2),
    }


def wait_ready(base: str, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"{base}/readyz", timeout=1).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.1)
    raise RuntimeError(f"{base} did not become ready")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=5.0, help="Ingest duration per setting.")
    ap.add_argument("--traces", type=int, default=120, help="Traces judged per job setting.")
    ap.add_argument("--latency-ms", type=float, default=50.0, help="Added judge latency.")
    args = ap.parse_args()
    bindir = find_pg_bin()
    if bindir is None:
        sys.exit("no PostgreSQL binaries (initdb/pg_ctl) found")
    server = PostgresServer(bindir).start()
    try:
        ingest = [bench_ingest(server, n, args.seconds) for n in (1, 2, 4)]
        jobs = [bench_jobs(server, w, args.traces, args.latency_ms) for w in (1, 2)]
    finally:
        server.stop()
    base_i, base_j = ingest[0]["spans_per_s"], jobs[0]["traces_per_s"]
    for row in ingest:
        row["scaling"] = round(row["spans_per_s"] / base_i, 2)
    for row in jobs:
        row["scaling"] = round(row["traces_per_s"] / base_j, 2)
    print(f"{'ingest':<10}{'collectors':>11}{'spans/s':>12}{'scaling':>9}")
    for row in ingest:
        print(f"{'':<10}{row['collectors']:>11}{row['spans_per_s']:>12}{row['scaling']:>9}")
    print(f"{'jobs':<10}{'workers':>11}{'traces/s':>12}{'scaling':>9}")
    for row in jobs:
        print(f"{'':<10}{row['workers']:>11}{row['traces_per_s']:>12}{row['scaling']:>9}")
    out = ROOT / "bench" / "results" / "scale.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(
        json.dumps(
            {
                "cpu_count": os.cpu_count(),
                "ingest": ingest,
                "jobs": jobs,
                "judge_latency_ms": args.latency_ms,
                "ingest_seconds": args.seconds,
            },
            indent=2,
        )
        + "\n"
    )
    print(f"wrote {out.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
