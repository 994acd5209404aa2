"""Scale-out benchmark: ingest with 1/2/4 collectors and judging with 1/2 workers on Postgres.

Starts a throwaway PostgreSQL (initdb/pg_ctl) with its default durability (fsync, synchronous
commit, full-page writes: a commit survives power loss), or with all three off under ``--unsafe``
(the test fixture's settings, for comparison only); every figure is labelled with which. Then
* ingest: N collector processes (`ragsieve collector serve --store postgresql://...`), OTLP/HTTP
  gzip protobuf requests of bench/ingest.py's RAG traces (50 spans of ~3 KB, 10 traces, fresh
  ids in every request) posted round-robin by 8 keep-alive clients;
* jobs: W worker processes (`ragsieve workers worker`) judging settled traces with the offline
  judges plus a fixed per-call latency standing in for a remote LLM (--judge-latency-ms).
Prints a table with scaling factors and writes bench/results/scale.json.

Usage: .venv/bin/python bench/scale.py [--seconds 5] [--traces 120] [--latency-ms 50] [--unsafe]
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

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
from fixtures_postgres import PG_USER, PostgresServer, find_pg_bin  # noqa: E402
from ingest import PayloadFactory  # noqa: E402

from ragsieve.collector.store import open_store  # noqa: E402
from ragsieve.collector.wire.spans import SpanRecord  # noqa: E402
from ragsieve.evaluators.records import RagInteraction, RetrievedDocument  # noqa: E402

RAGSIEVE = str(Path(sys.executable).with_name("ragsieve"))
ENV = {k: v for k, v in os.environ.items() if not k.startswith(("RAGSIEVE_", "OTEL_"))}


UNSAFE = "-c fsync=off -c synchronous_commit=off -c full_page_writes=off"


class BenchPostgres(PostgresServer):
    """The fixture's throwaway server, durable unless ``unsafe`` (the fixture is always unsafe)."""

    def __init__(self, bindir: Path, *, unsafe: bool) -> None:
        super().__init__(bindir)
        self.unsafe = unsafe

    def start(self) -> BenchPostgres:
        res = self._run(
            str(self.bindir / "initdb"),
            *("-D", str(self.data), "-U", PG_USER, "--auth=trust", "-E", "UTF8", "--locale=C"),
        )
        if res.returncode != 0:
            raise RuntimeError(f"initdb failed: {res.stderr.strip()}")
        opts = f"-p {self.port} -c listen_addresses=127.0.0.1 -k {self.root} -c max_connections=200"
        if self.unsafe:
            opts += " " + UNSAFE
        res = self._run(
            str(self.bindir / "pg_ctl"),
            *("-D", str(self.data), "-l", str(self.root / "log"), "-o", opts),
            *("-w", "-t", "60", "start"),
        )
        if res.returncode != 0:
            raise RuntimeError(f"pg_ctl start failed: {res.stderr.strip()}")
        return self


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def bench_ingest(server: BenchPostgres, n_collectors: int, seconds: float) -> dict[str, float]:
    url = server.create_database("ingest")
    open_store(url).close()  # migrate once
    ports = [free_port() for _ in range(n_collectors)]
    procs = [
        subprocess.Popen(
            [RAGSIEVE, "collector", "serve", "--store", url, "--port", str(p), "--grpc-port", "0"],
            env=ENV,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        for p in ports
    ]
    try:
        for p in ports:
            wait_ready(f"http://127.0.0.1:{p}")
        factory = PayloadFactory(10)
        sent = 0
        latencies: list[float] = []
        deadline = time.monotonic() + seconds
        headers = {"content-type": "application/x-protobuf", "content-encoding": "gzip"}

        def client(k: int) -> int:
            n = 0
            with httpx.Client(timeout=30) as http:
                while time.monotonic() < deadline:
                    port = ports[(k + n) % len(ports)]
                    body = factory.make()
                    t0 = time.perf_counter()
                    r = http.post(
                        f"http://127.0.0.1:{port}/v1/traces", content=body, headers=headers
                    )
                    latencies.append(time.perf_counter() - t0)
                    n += r.status_code == 200
            return n

        start = time.monotonic()
        with ThreadPoolExecutor(8) as pool:
            sent = sum(pool.map(client, range(8)))
        elapsed = time.monotonic() - start
        stored = open_store(url)
        try:
            durable_rows = stored.count_spans()
        finally:
            stored.close()
    finally:
        for proc in procs:
            proc.terminate()
            proc.wait(timeout=20)
    latencies.sort()
    p99 = latencies[int(0.99 * (len(latencies) - 1))] if latencies else float("nan")
    return {
        "collectors": n_collectors,
        "durability": "unsafe" if server.unsafe else "durable",
        "requests": sent,
        "spans": sent * 50,
        "stored_spans": durable_rows,
        "spans_per_s": round(sent * 50 / elapsed, 1),
        "p99_ms": round(p99 * 1000, 1),
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
    server: BenchPostgres, n_workers: int, traces: int, latency_ms: float
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
        "durability": "unsafe" if server.unsafe else "durable",
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
    ap.add_argument(
        "--unsafe",
        action="store_true",
        help="fsync, synchronous_commit and full_page_writes off (not durable; comparison only)",
    )
    args = ap.parse_args()
    bindir = find_pg_bin()
    if bindir is None:
        sys.exit("no PostgreSQL binaries (initdb/pg_ctl) found")
    server = BenchPostgres(bindir, unsafe=args.unsafe).start()
    durability = "unsafe" if args.unsafe else "durable"
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
    print(f"PostgreSQL: {durability}" + ("" if args.unsafe else " (fsync, synchronous commit)"))
    print(f"{'ingest':<10}{'collectors':>11}{'spans/s':>12}{'p99 ms':>9}{'scaling':>9}{'':>10}")
    for row in ingest:
        print(
            f"{'':<10}{row['collectors']:>11}{row['spans_per_s']:>12}{row['p99_ms']:>9}"
            f"{row['scaling']:>9}{durability:>10}"
        )
    print(f"{'jobs':<10}{'workers':>11}{'traces/s':>12}{'scaling':>9}")
    for row in jobs:
        print(f"{'':<10}{row['workers']:>11}{row['traces_per_s']:>12}{row['scaling']:>9}")
    out = ROOT / "bench" / "results" / f"scale{'_unsafe' if args.unsafe else ''}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(
        json.dumps(
            {
                "cpu_count": os.cpu_count(),
                "postgres_durability": durability,
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
