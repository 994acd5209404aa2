"""Soak: mixed good and hostile traffic against one collector, with the job running on schedule.

Run: ``.venv/bin/python bench/soak.py [--duration 600] [--spans-per-s 2000] [--job-every 60]``.

One ``ragsieve collector serve`` process on loopback with a SQLite store. For ``--duration``
seconds:

- good traffic: RAG-shaped traces (5 spans) as gzip protobuf, paced to ``--spans-per-s``;
- hostile traffic, all the time: gzip bombs, truncated protobuf, feedback with NaN scores and lone
  surrogates, Content-Length lies, clients that vanish mid-body, and slow clients that trickle a
  body and never finish;
- ``ragsieve jobs run --json`` every ``--job-every`` seconds against the same store.

Reported (stdout, and ``--out`` as JSON): RSS over time (it should stay flat), p50/p99 latency of
the good requests, spans acknowledged vs stored (they must be equal), and each job run's exit code,
duration and report size (the judge backlog must not grow without bound).
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import random
import socket
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import zlib
from pathlib import Path
from typing import Any

import httpx
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue

RAGSIEVE = [sys.executable, "-c", "from ragsieve.jobs.cli import main; main()"]
PROTO = {"content-type": "application/x-protobuf", "content-encoding": "gzip"}


def kv(key: str, value: str | float) -> KeyValue:
    if isinstance(value, str):
        return KeyValue(key=key, value=AnyValue(string_value=value))
    return KeyValue(key=key, value=AnyValue(double_value=float(value)))


def rag_batch(traces: int, rng: random.Random) -> tuple[bytes, int]:
    """``traces`` RAG traces of 5 spans each, gzip'd protobuf; returns (body, span count)."""
    req = ExportTraceServiceRequest()
    rs = req.resource_spans.add()
    rs.resource.attributes.append(kv("service.name", "soak-rag"))
    spans = rs.scope_spans.add().spans
    now = time.time_ns()
    for _ in range(traces):
        trace_id = rng.randbytes(16)
        root = rng.randbytes(8)
        question = f"What is the refund window for order {rng.randrange(10**6)}?"
        kinds = [("rag", "CHAIN"), ("embed", "EMBEDDING"), ("retrieve", "RETRIEVER")]
        kinds += [("rerank", "RERANKER"), ("generate", "LLM")]
        for i, (name, kind) in enumerate(kinds):
            s = spans.add()
            s.trace_id, s.name = trace_id, name
            s.span_id = root if i == 0 else rng.randbytes(8)
            if i:
                s.parent_span_id = root
            s.start_time_unix_nano, s.end_time_unix_nano = now - 2_000_000_000, now
            s.attributes.append(kv("openinference.span.kind", kind))
            s.attributes.append(kv("input.value", question))
            if kind == "RETRIEVER":
                for d in range(3):
                    s.attributes.append(kv(f"retrieval.documents.{d}.document.id", f"kb_{d}"))
                    s.attributes.append(
                        kv(f"retrieval.documents.{d}.document.content", "Refunds: 14 days. " * 20)
                    )
                    s.attributes.append(kv(f"retrieval.documents.{d}.document.score", 0.9 - d / 5))
            if kind in ("CHAIN", "LLM"):
                s.attributes.append(kv("output.value", "Refunds are issued within 14 days."))
    return gzip.compress(req.SerializeToString(), 1), traces * 5


class Good:
    """Paced good traffic: acknowledged spans and request latencies."""

    def __init__(self, url: str, spans_per_s: float, clients: int, traces_per_request: int) -> None:
        self.url, self.clients, self.per = url, clients, traces_per_request
        self.interval = clients * traces_per_request * 5 / spans_per_s
        self.acked = 0
        self.refused: dict[int, int] = {}
        self.latencies: list[float] = []
        self.lock = threading.Lock()

    def run(self, stop: threading.Event, seed: int) -> None:
        rng = random.Random(seed)
        with httpx.Client(timeout=30) as client:
            nxt = time.monotonic()
            while not stop.is_set():
                body, n = rag_batch(self.per, rng)
                start = time.monotonic()
                try:
                    status = client.post(f"{self.url}/v1/traces", content=body, headers=PROTO)
                    code = status.status_code
                except httpx.HTTPError:
                    code = 0
                took = time.monotonic() - start
                with self.lock:
                    self.latencies.append(took)
                    if code == 200:
                        self.acked += n
                    else:
                        self.refused[code] = self.refused.get(code, 0) + 1
                nxt += self.interval
                stop.wait(max(0.0, nxt - time.monotonic()))


def bomb(decompressed: int) -> bytes:
    comp = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    zero = bytes(1 << 20)
    return b"".join([*(comp.compress(zero) for _ in range(decompressed >> 20)), comp.flush()])


def hostile(url: str, host: str, port: int, stop: threading.Event, seen: dict[str, int]) -> None:
    """Cycle through hostile requests; count the answers by kind and status."""
    big = bomb(256 << 20)
    good, _ = rag_batch(2, random.Random(7))
    truncated = gzip.compress(gzip.decompress(good)[:-9])
    fb = f"{url}/v1/feedback"
    json_type = {"content-type": "application/json"}
    slow: list[socket.socket] = []

    def note(kind: str, code: int) -> None:
        seen[f"{kind} {code}"] = seen.get(f"{kind} {code}", 0) + 1

    def raw(data: bytes, then: str) -> int:
        """Send ``data``; then read the answer, hang up at once, or keep trickling."""
        sock = socket.create_connection((host, port), timeout=10)
        sock.sendall(data)
        if then == "keep":
            slow.append(sock)
            return 0
        with sock:
            if then == "answer":
                line = sock.recv(64).split(b" ")
                return int(line[1]) if len(line) > 1 and line[1].isdigit() else 0
        return 0

    head = "POST /v1/traces HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
    actions = [
        ("bomb", lambda c: c.post(f"{url}/v1/traces", content=big, headers=PROTO).status_code),
        ("truncated", lambda c: c.post(f"{url}/v1/traces", content=truncated, headers=PROTO)),
        (
            "nan",
            lambda c: c.post(
                fb, content=b'{"trace_id": "%s", "score": NaN}' % (b"a" * 32), headers=json_type
            ),
        ),
        (
            "surrogate",
            lambda c: c.post(
                fb,
                content=b'{"span_id": "%s", "label": "\\ud800"}' % (b"b" * 16),
                headers=json_type,
            ),
        ),
        (
            "length-lie",
            lambda c: raw(f"{head}Content-Length: {10**12}\r\n\r\n0123".encode(), "answer"),
        ),
        ("vanish", lambda c: raw(f"{head}Content-Length: 9000\r\n\r\n{{".encode(), "close")),
        ("slow", lambda c: raw(f"{head}Content-Length: 9000\r\n\r\n{{".encode(), "keep")),
    ]
    with httpx.Client(timeout=30) as client:
        i = 0
        while not stop.is_set():
            kind, act = actions[i % len(actions)]
            i += 1
            try:
                out = act(client)
                note(kind, out if isinstance(out, int) else getattr(out, "status_code", 0))
            except (httpx.HTTPError, OSError):
                note(kind, 0)
            for sock in slow[:]:  # trickle a byte now and then; never finish
                try:
                    sock.sendall(b" ")
                except OSError:
                    slow.remove(sock)
                    sock.close()
            stop.wait(0.2)
    for sock in slow:
        sock.close()


def rss_kb(pid: int, key: str = "VmRSS") -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(key + ":"):
            return int(line.split()[1])
    return 0


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--duration", type=float, default=600.0, help="Seconds of traffic.")
    ap.add_argument("--spans-per-s", type=float, default=2000.0)
    ap.add_argument("--clients", type=int, default=4, help="Good clients.")
    ap.add_argument("--traces-per-request", type=int, default=20)
    ap.add_argument("--job-every", type=float, default=60.0, help="Seconds between job runs.")
    ap.add_argument("--out", type=Path, default=None, help="Also write the report as JSON here.")
    args = ap.parse_args()

    tmp = Path(tempfile.mkdtemp(prefix="ragsieve-soak-"))
    db = tmp / "soak.db"
    store = f"sqlite:///{db}"
    port = free_port()
    env = {**os.environ, "RAGSIEVE_COLLECTOR__QUIET_PERIOD_S": "5"}
    server = subprocess.Popen(
        [*RAGSIEVE, "collector", "serve", "--port", str(port), "--store", store], env=env
    )
    url = f"http://127.0.0.1:{port}"
    for _ in range(300):
        try:
            if httpx.get(f"{url}/healthz").status_code == 200:
                break
        except httpx.TransportError:
            time.sleep(0.1)
    else:
        server.kill()
        sys.exit("the collector did not start")

    stop = threading.Event()
    good = Good(url, args.spans_per_s, args.clients, args.traces_per_request)
    seen: dict[str, int] = {}
    threads = [threading.Thread(target=good.run, args=(stop, i)) for i in range(args.clients)]
    threads.append(threading.Thread(target=hostile, args=(url, "127.0.0.1", port, stop, seen)))
    for t in threads:
        t.start()
    rss: list[tuple[float, int]] = []
    jobs: list[dict[str, Any]] = []
    job: threading.Thread | None = None

    def run_job(at: float) -> None:
        t0 = time.monotonic()
        cmd = [*RAGSIEVE, "jobs", "run", "--store", store, "--since", "1h", "--json"]
        proc = subprocess.run(cmd, capture_output=True, text=True)
        jobs.append(
            {
                "at_s": round(at),
                "exit": proc.returncode,
                "seconds": round(time.monotonic() - t0, 1),
                "report_bytes": len(proc.stdout),
            }
        )

    start = time.monotonic()
    next_job = start + args.job_every
    try:
        while (now := time.monotonic()) - start < args.duration:
            rss.append((round(now - start, 1), rss_kb(server.pid) >> 10))
            if now >= next_job:
                if job is not None and job.is_alive():  # the backlog outgrew the schedule
                    jobs.append({"at_s": round(now - start), "skipped": "previous run still going"})
                else:
                    job = threading.Thread(target=run_job, args=(now - start,))
                    job.start()
                next_job += args.job_every
            time.sleep(2.0)
    finally:
        stop.set()
        for t in threads:
            t.join()
    if job is not None:
        job.join()
    ready = httpx.get(f"{url}/readyz").json()
    peak = rss_kb(server.pid, "VmHWM") >> 10
    server.terminate()
    server.wait(60)
    with sqlite3.connect(db) as conn:
        stored = conn.execute("SELECT COUNT(*) FROM spans").fetchone()[0]
    lat = sorted(good.latencies)
    report = {
        "duration_s": args.duration,
        "spans_per_s_target": args.spans_per_s,
        "spans_acknowledged": good.acked,
        "spans_stored": stored,
        "acknowledged_equals_stored": good.acked == stored,
        "good_refused": good.refused,
        "latency_ms": {
            "p50": round(1000 * statistics.median(lat), 1) if lat else None,
            "p99": round(1000 * lat[int(0.99 * (len(lat) - 1))], 1) if lat else None,
        },
        "rss_mb": {
            "first": rss[0][1] if rss else None,
            "last": rss[-1][1] if rss else None,
            "peak": peak,
            "samples": rss,
        },
        "hostile_answers": dict(sorted(seen.items())),
        "readyz": {
            k: ready.get(k)
            for k in ("client_disconnects", "body_timeouts", "rejected_spans", "accepted_spans")
        },
        "jobs": sorted(jobs, key=lambda j: j["at_s"]),
    }
    summary = {k: v for k, v in report.items() if k != "rss_mb"}
    summary["rss_mb"] = {k: v for k, v in report["rss_mb"].items() if k != "samples"}
    print(json.dumps(summary, indent=2))
    if args.out:
        args.out.write_text(json.dumps(report, indent=2))
    if good.acked != stored:
        sys.exit(1)


if __name__ == "__main__":
    main()
