"""Benchmark: sustained OTLP ingest of RAG traces into the collector, with Phoenix as the baseline.

Run: ``.venv/bin/python bench/ingest.py [--duration 20] [--clients 8] [--no-phoenix]``.

Traces look like a real RAG request (5 spans: chain, embedding, retriever with 5 chunks of ~1 KB,
reranker, LLM with the chunks stuffed into the prompt). Phases, each against a fresh process:

1. raw: several concurrent httpx clients post gzip protobuf to ``ragsieve collector serve``;
2. raw_grpc: the same payloads as gzip gRPC ``TraceService/Export`` calls (one channel per client)
   to the collector's OTLP/gRPC port;
3. exporter: processes using the real opentelemetry-sdk ``BatchSpanProcessor`` + OTLP/HTTP exporter;
4. exporter_grpc: the same with the OTLP/gRPC exporter (``opentelemetry-exporter-otlp-proto-grpc``);
5. phoenix: the same raw posts to ``phoenix serve`` (own virtualenv; see tests/fixtures_phoenix).

Spans/s counts spans that are durable and queryable: for ragsieve a 2xx (gRPC: OK) is sent only
after the commit, and the bench checks the store's row count; for Phoenix it counts rows in its
database, which lag its 2xx. Peak RSS comes from ``/proc/PID/status`` sampled every 0.5 s. Writes
``bench/results/ingest.json``. Goal (issue 2): ≥ 20× Phoenix's spans/s with flat memory.
"""

from __future__ import annotations

import argparse
import asyncio
import gzip
import json
import multiprocessing as mp
import os
import platform
import random
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import grpc
import httpx
from grpc import aio
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.proto.trace.v1.trace_pb2 import Span

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
from fixtures_phoenix import find_phoenix, free_port, start_phoenix  # noqa: E402
from probe import limit_probe  # noqa: E402

GOAL_RATIO = 20.0
PROBE_GOAL = 0.6  # issue 19: the collector stores >= 0.6 of the limit probe
WORDS = (
    "refund invoice plan annual monthly billing support contract renewal cancel account "
    "payment policy customer period prorated access license seat upgrade downgrade tax "
    "receipt currency discount trial enterprise team admin export data retention"
).split()


# ---------------------------------------------------------------- realistic RAG trace payloads
def _chunks(rng: random.Random, n: int = 300) -> list[str]:
    out = []
    for i in range(n):
        words: list[str] = []
        while sum(len(w) + 1 for w in words) < 1000:
            words.append(rng.choice(WORDS))
        out.append(f"[doc {i}] " + " ".join(words))
    return out


def _kv(key: str, value: Any) -> KeyValue:
    if isinstance(value, bool):
        return KeyValue(key=key, value=AnyValue(bool_value=value))
    if isinstance(value, int):
        return KeyValue(key=key, value=AnyValue(int_value=value))
    if isinstance(value, float):
        return KeyValue(key=key, value=AnyValue(double_value=value))
    return KeyValue(key=key, value=AnyValue(string_value=str(value)))


def _span(tid: bytes, sid: bytes, parent: bytes, name: str, t0: int, attrs: dict[str, Any]) -> Span:
    return Span(
        trace_id=tid,
        span_id=sid,
        parent_span_id=parent,
        name=name,
        kind=1,
        start_time_unix_nano=t0,
        end_time_unix_nano=t0 + 900_000_000,
        attributes=[_kv(k, v) for k, v in attrs.items()],
        status={"code": 1},
    )


def rag_trace_attrs(rng: random.Random, chunks: list[str]) -> list[tuple[str, dict[str, Any]]]:
    """(span name, attributes) of one OpenInference RAG trace, root first."""
    question = " ".join(rng.choice(WORDS) for _ in range(12)) + "?"
    docs = rng.sample(range(len(chunks)), 5)
    answer = " ".join(rng.choice(WORDS) for _ in range(60)) + "."
    retr: dict[str, Any] = {"openinference.span.kind": "RETRIEVER", "input.value": question}
    rerank: dict[str, Any] = {
        "openinference.span.kind": "RERANKER",
        "reranker.top_k": 3,
        "reranker.query": question,
    }
    for i, d in enumerate(docs):
        p = f"retrieval.documents.{i}.document."
        retr |= {p + "id": f"doc-{d}", p + "content": chunks[d], p + "score": 0.9 - i * 0.05}
    for i, d in enumerate(docs[:3]):
        p = f"reranker.output_documents.{i}.document."
        rerank |= {p + "id": f"doc-{d}", p + "content": chunks[d], p + "score": 0.95 - i * 0.1}
    prompt = "Answer from the context.\n\n" + "\n\n".join(chunks[d] for d in docs[:3])
    llm = {
        "openinference.span.kind": "LLM",
        "llm.model_name": "gpt-4o-mini",
        "llm.input_messages.0.message.role": "system",
        "llm.input_messages.0.message.content": prompt,
        "llm.input_messages.1.message.role": "user",
        "llm.input_messages.1.message.content": question,
        "llm.output_messages.0.message.role": "assistant",
        "llm.output_messages.0.message.content": answer,
        "llm.token_count.prompt": 812,
        "llm.token_count.completion": 64,
        "llm.token_count.total": 876,
    }
    return [
        (
            "RetrievalQA",
            {
                "openinference.span.kind": "CHAIN",
                "input.value": question,
                "output.value": answer,
                "session.id": f"s-{rng.randrange(1000)}",
            },
        ),
        (
            "embed",
            {
                "openinference.span.kind": "EMBEDDING",
                "embedding.model_name": "text-embedding-3-small",
                "embedding.embeddings.0.embedding.text": question,
            },
        ),
        ("retrieve", retr),
        ("rerank", rerank),
        ("ChatOpenAI", llm),
    ]


class PayloadFactory:
    """Protobuf requests of ``traces`` RAG traces with fresh ids each time, built by patching ids
    into a serialized template (so the client spends its CPU on sending, not on protobuf)."""

    def __init__(self, traces: int, seed: int = 0) -> None:
        rng = random.Random(seed)
        chunks = _chunks(rng)
        req = ExportTraceServiceRequest()
        rs = req.resource_spans.add()
        rs.resource.attributes.append(_kv("service.name", "rag-bench"))
        ss = rs.scope_spans.add()
        ss.scope.name = "openinference.instrumentation.langchain"
        self.markers: list[bytes] = []
        t0 = time.time_ns()
        for _ in range(traces):
            tid = os.urandom(16)
            sids = [os.urandom(8) for _ in range(5)]
            self.markers += [tid, *sids]
            for j, (name, attrs) in enumerate(rag_trace_attrs(rng, chunks)):
                parent = b"" if j == 0 else sids[0]
                ss.spans.append(_span(tid, sids[j], parent, name, t0, attrs))
        self.template = req.SerializeToString()
        self.spans = traces * 5
        self.positions: list[tuple[int, int]] = []  # (byte offset, marker index)
        for i, marker in enumerate(self.markers):
            start = 0
            while (pos := self.template.find(marker, start)) >= 0:
                self.positions.append((pos, i))
                start = pos + 1

    def make_raw(self) -> bytes:
        """A fresh serialized request: every id replaced, the rest unchanged."""
        fresh = [os.urandom(len(m)) for m in self.markers]
        buf = bytearray(self.template)
        for pos, i in self.positions:
            buf[pos : pos + len(fresh[i])] = fresh[i]
        return bytes(buf)

    def make(self) -> bytes:
        """A fresh request, gzip level 1 (the HTTP body)."""
        return gzip.compress(self.make_raw(), 1)


# ---------------------------------------------------------------- processes and samplers
class RssSampler(threading.Thread):
    """Samples VmRSS / VmHWM (kB) of a process every ``interval_s``."""

    def __init__(self, pid: int, interval_s: float = 0.5) -> None:
        super().__init__(daemon=True)
        self.pid, self.interval_s = pid, interval_s
        self.samples: list[tuple[float, int]] = []
        self.hwm_kb = 0
        self.stop = threading.Event()
        self.cpu_s = 0.0
        self.wall_s = 0.0

    def _cpu(self) -> float:
        fields = Path(f"/proc/{self.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime + stime

    def run(self) -> None:
        t0 = time.monotonic()
        cpu0 = self._cpu()
        while not self.stop.is_set():
            try:
                status = Path(f"/proc/{self.pid}/status").read_text()
                self.cpu_s, self.wall_s = self._cpu() - cpu0, time.monotonic() - t0
            except OSError:
                return
            fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
            self.samples.append((time.monotonic() - t0, int(fields["VmRSS"].split()[0])))
            self.hwm_kb = max(self.hwm_kb, int(fields["VmHWM"].split()[0]))
            self.stop.wait(self.interval_s)

    def summary(self) -> dict[str, Any]:
        rss = [kb for _, kb in self.samples]
        q = max(len(rss) // 4, 1)
        return {
            "cpu_percent": round(100 * self.cpu_s / self.wall_s, 1) if self.wall_s else None,
            "peak_rss_mb": round(self.hwm_kb / 1024, 1),
            "rss_first_quarter_mb": round(statistics.mean(rss[:q]) / 1024, 1) if rss else None,
            "rss_last_quarter_mb": round(statistics.mean(rss[-q:]) / 1024, 1) if rss else None,
            "rss_timeline_mb": [
                (round(t, 1), round(kb / 1024, 1)) for t, kb in rss_every(self.samples, 2.0)
            ],
        }


def rss_every(samples: list[tuple[float, int]], step: float) -> list[tuple[float, int]]:
    out: list[tuple[float, int]] = []
    for t, kb in samples:
        if not out or t - out[-1][0] >= step:
            out.append((t, kb))
    return out


SERVER_CORE: int | None = None  # set by --pin: the collector (and the probe) run on this core


def pinned(cmd: list[str]) -> list[str]:
    """``cmd`` run on :data:`SERVER_CORE` only (taskset), when pinning is on."""
    return cmd if SERVER_CORE is None else ["taskset", "-c", str(SERVER_CORE), *cmd]


def start_collector(db: Path, log: Path) -> tuple[subprocess.Popen[bytes], str, str]:
    """A fresh ``collector serve``: the process, its HTTP base URL and its gRPC target."""
    port, grpc_port = free_port(), free_port()
    exe = Path(sys.executable).with_name("ragsieve")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("RAGSIEVE_", "OTEL_"))}
    proc = subprocess.Popen(
        pinned([str(exe), "collector", "serve", "--port", str(port), "--grpc-port", str(grpc_port)])
        + ["--store", f"sqlite:///{db}"],
        env=env,
        stdout=open(log, "wb"),
        stderr=subprocess.STDOUT,
    )
    base = f"http://127.0.0.1:{port}"
    for _ in range(400):
        try:
            if httpx.get(f"{base}/healthz", timeout=1).status_code == 200:
                return proc, base, f"127.0.0.1:{grpc_port}"
        except httpx.TransportError:
            time.sleep(0.05)
    raise RuntimeError(f"collector did not start: {log.read_text()}")


def count_rows(db: Path, table: str = "spans") -> int:
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=30)
    try:
        return int(conn.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0])
    finally:
        conn.close()


def best_rate(timeline: list[tuple[float, int]], window_s: float) -> float:
    """Highest (count delta / time) over any window of at least ``window_s`` seconds."""
    best = 0.0
    for i, (t0, c0) in enumerate(timeline):
        for t1, c1 in timeline[i + 1 :]:
            if t1 - t0 >= window_s:
                best = max(best, (c1 - c0) / (t1 - t0))
                break
    return best


def pct(values: list[float], p: float) -> float:
    if not values:
        return float("nan")
    s = sorted(values)
    return s[min(int(p / 100 * len(s)), len(s) - 1)]


def _acks(
    acked: int, latencies: list[float], throttled: int, errors: int, elapsed_s: float
) -> dict[str, Any]:
    """What a load run got acknowledged, and how fast."""
    return {
        "acked_spans": acked,
        "requests": len(latencies),
        "throttled": throttled,
        "errors": errors,
        "elapsed_s": elapsed_s,
        "p50_ms": round(pct(latencies, 50) * 1000, 1),
        "p99_ms": round(pct(latencies, 99) * 1000, 1),
    }


# ---------------------------------------------------------------- load generators
async def raw_posts(
    url: str,
    factory: PayloadFactory,
    clients: int,
    duration_s: float,
    rate: float | None = None,
) -> dict[str, Any]:
    """``clients`` concurrent posters for ``duration_s``; 429/503 back off 1 s like exporters.

    With ``rate`` (spans/s) the clients together send on a fixed schedule (an open loop that
    catches up when late) instead of as fast as answers come back.
    """
    latencies: list[float] = []
    interval = factory.spans * clients / rate if rate else 0.0
    acked = throttled = errors = 0
    headers = {"Content-Type": "application/x-protobuf", "Content-Encoding": "gzip"}
    deadline = time.monotonic() + duration_s
    last_ack = time.monotonic()

    async def client(http: httpx.AsyncClient, offset: float) -> None:
        nonlocal acked, throttled, errors, last_ack
        due = time.monotonic() + offset
        while time.monotonic() < deadline:
            body = factory.make()
            if interval:
                await asyncio.sleep(max(due - time.monotonic(), 0.0))
                due += interval
            t0 = time.perf_counter()
            try:
                resp = await http.post(url, content=body, headers=headers)
            except httpx.HTTPError:
                errors += 1
                await asyncio.sleep(0.5)
                continue
            latencies.append(time.perf_counter() - t0)
            if resp.status_code == 200:
                acked += factory.spans
                last_ack = time.monotonic()
            elif resp.status_code in (429, 503):
                throttled += 1
                await asyncio.sleep(1.0)
            else:
                errors += 1

    start = time.monotonic()
    limits = httpx.Limits(max_connections=clients)
    async with httpx.AsyncClient(timeout=60, limits=limits) as http:
        await asyncio.gather(*(client(http, i * interval / clients) for i in range(clients)))
    out = _acks(acked, latencies, throttled, errors, last_ack - start)
    return {"offered_spans_per_s": rate, **out}


TRACE_EXPORT = "/opentelemetry.proto.collector.trace.v1.TraceService/Export"
RETRY_CODES = (grpc.StatusCode.RESOURCE_EXHAUSTED, grpc.StatusCode.UNAVAILABLE)


async def raw_grpc_calls(
    target: str, factory: PayloadFactory, clients: int, duration_s: float
) -> dict[str, Any]:
    """``raw_posts`` over OTLP/gRPC: the same payloads as gzip ``Export`` calls, one channel
    (connection) per client; RESOURCE_EXHAUSTED/UNAVAILABLE back off 1 s like exporters."""
    latencies: list[float] = []
    acked = throttled = errors = 0
    deadline = time.monotonic() + duration_s
    last_ack = time.monotonic()

    async def client() -> None:
        nonlocal acked, throttled, errors, last_ack
        options = [("grpc.use_local_subchannel_pool", 1), ("grpc.max_send_message_length", -1)]
        async with aio.insecure_channel(target, options=options) as channel:
            export = channel.unary_unary(TRACE_EXPORT)
            while time.monotonic() < deadline:
                body = factory.make_raw()
                t0 = time.perf_counter()
                try:
                    await export(body, timeout=60, compression=grpc.Compression.Gzip)
                except aio.AioRpcError as exc:
                    latencies.append(time.perf_counter() - t0)
                    if exc.code() in RETRY_CODES:
                        throttled += 1
                        await asyncio.sleep(1.0)
                    else:
                        errors += 1
                        await asyncio.sleep(0.5)
                    continue
                latencies.append(time.perf_counter() - t0)
                acked += factory.spans
                last_ack = time.monotonic()

    start = time.monotonic()
    await asyncio.gather(*(client() for _ in range(clients)))
    return _acks(acked, latencies, throttled, errors, last_ack - start)


def _exporter_worker(
    url: str, duration_s: float, rate: float, seed: int, out: Any, transport: str = "http"
) -> None:
    import logging

    logging.getLogger("opentelemetry.sdk").setLevel(logging.ERROR)  # drops are counted instead
    logging.getLogger("opentelemetry.exporter").setLevel(logging.ERROR)
    from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import (
        OTLPSpanExporter as GrpcSpanExporter,
    )
    from opentelemetry.exporter.otlp.proto.http import Compression
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExportResult

    stats = {"acked": 0, "failed": 0, "latencies": []}

    base: Any = GrpcSpanExporter if transport == "grpc" else OTLPSpanExporter

    class Timed(base):  # type: ignore[misc,valid-type]
        def export(self, spans: Any) -> SpanExportResult:
            t0 = time.perf_counter()
            result = super().export(spans)
            stats["latencies"].append(time.perf_counter() - t0)
            stats["acked" if result is SpanExportResult.SUCCESS else "failed"] += len(spans)
            return result

    exporter = (
        Timed(endpoint=url, insecure=True, compression=grpc.Compression.Gzip)
        if transport == "grpc"
        else Timed(endpoint=url, compression=Compression.Gzip)
    )
    provider = TracerProvider(resource=Resource.create({"service.name": "rag-bench"}))
    provider.add_span_processor(
        BatchSpanProcessor(
            exporter,
            max_queue_size=8192,
            max_export_batch_size=512,
            schedule_delay_millis=200,
        )
    )
    tracer = provider.get_tracer("bench")
    rng = random.Random(seed)
    chunks = _chunks(rng)
    created = 0
    t_start = time.time()
    began = time.monotonic()
    deadline = began + duration_s
    while (now := time.monotonic()) < deadline:
        ahead = began + created / rate - now  # an app producing ``rate`` spans/s
        if ahead > 0:
            time.sleep(ahead)
        spans = rag_trace_attrs(rng, chunks)
        with tracer.start_as_current_span(spans[0][0], attributes=spans[0][1]):
            for name, attrs in spans[1:]:
                with tracer.start_as_current_span(name, attributes=attrs):
                    pass
        created += 5
    t_end = time.monotonic()
    provider.force_flush(60_000)
    flushed = time.monotonic() - t_end
    provider.shutdown()
    out.put(
        {
            "created": created,
            "acked": stats["acked"],
            "failed": stats["failed"],
            "latencies": stats["latencies"],
            "flush_s": flushed,
            "t_start": t_start,
            "t_end": time.time(),
        }
    )


def exporter_load(
    url: str, procs: int, duration_s: float, rate: float, transport: str = "http"
) -> dict[str, Any]:
    ctx = mp.get_context("spawn")
    q = ctx.Queue()
    workers = [
        ctx.Process(target=_exporter_worker, args=(url, duration_s, rate / procs, i, q, transport))
        for i in range(procs)
    ]
    for w in workers:
        w.start()
    results = [q.get(timeout=duration_s + 300) for _ in workers]
    elapsed = max(r["t_end"] for r in results) - min(r["t_start"] for r in results)
    for w in workers:
        w.join()
    lat = [x for r in results for x in r["latencies"]]
    return {
        "offered_spans_per_s": rate,
        "created_spans": sum(r["created"] for r in results),
        "acked_spans": sum(r["acked"] for r in results),
        "failed_spans": sum(r["failed"] for r in results),
        "elapsed_s": elapsed,
        "requests": len(lat),
        "p50_ms": round(pct(lat, 50) * 1000, 1),
        "p99_ms": round(pct(lat, 99) * 1000, 1),
    }


# ---------------------------------------------------------------- phases
def ragsieve_phase(name: str, tmp: Path, run: Any, transport: str = "http") -> dict[str, Any]:
    """Run ``run(traces_url)`` (``run(grpc_target)`` for gRPC) against a fresh collector; add
    durability check and memory."""
    db = tmp / f"{name}.db"
    proc, base, grpc_target = start_collector(db, tmp / f"{name}.log")
    rss = RssSampler(proc.pid)
    rss.start()
    try:
        before = count_rows(db)
        result = run(grpc_target if transport == "grpc" else f"{base}/v1/traces")
        stored = count_rows(db) - before  # after the last 2xx: durable and queryable
        ready = httpx.get(f"{base}/readyz", timeout=30).json()
    finally:
        rss.stop.set()
        proc.terminate()
        proc.wait(30)
    result["transport"] = transport
    result["stored_spans"] = stored
    result["durable_matches_acked"] = stored >= result["acked_spans"]
    result["spans_per_s"] = round(stored / result["elapsed_s"], 1)
    result["collector_ready"] = ready
    result.update(rss.summary())
    # CPU time of the whole collector process per stored span: what the rate would be if it
    # had its core to itself (the machine is shared, so spans/s alone also measures neighbours).
    result["cpu_us_per_span"] = round(rss.cpu_s / stored * 1e6, 1) if stored else None
    return result


def phoenix_phase(
    tmp: Path, factory: PayloadFactory, clients: int, duration_s: float, drain_s: float
) -> dict[str, Any] | None:
    exe = find_phoenix()
    if exe is None:
        return None
    workdir = tmp / "phoenix"
    workdir.mkdir()
    with start_phoenix(exe, workdir) as server:
        if SERVER_CORE is not None:  # every thread of Phoenix on the collector's core
            subprocess.run(
                ["taskset", "-a", "-p", "-c", str(SERVER_CORE), str(server.process.pid)],
                check=True,
                capture_output=True,
            )
        db = workdir / "phoenix.db"
        rss = RssSampler(server.process.pid)
        rss.start()
        timeline: list[tuple[float, int]] = []
        stop = threading.Event()

        def sample() -> None:
            t0 = time.monotonic()
            while not stop.is_set():
                timeline.append((time.monotonic() - t0, count_rows(db)))
                stop.wait(1.0)

        sampler = threading.Thread(target=sample, daemon=True)
        base = count_rows(db)
        sampler.start()
        result = asyncio.run(raw_posts(server.traces_url, factory, clients, duration_s))
        at_end = count_rows(db) - base
        deadline = time.monotonic() + drain_s
        while count_rows(db) - base < result["acked_spans"] and time.monotonic() < deadline:
            time.sleep(1.0)
        drained = count_rows(db) - base
        stop.set()
        sampler.join()
        rss.stop.set()
        probe = server.spans()[:1]
    result.update(
        stored_at_end_of_send=at_end,
        stored_after_drain=drained,
        # Generous to Phoenix: its best stored rate over any 10 s window (send or drain).
        spans_per_s=round(best_rate(timeline, 10.0), 1),
        stored_per_s_during_send=round(at_end / duration_s, 1),
        accepted_per_s=round(result["acked_spans"] / duration_s, 1),
        queryable_via_rest=bool(probe),
        count_timeline=[(round(t, 1), c - base) for t, c in timeline],
    )
    result.update(rss.summary())
    return result


def _args() -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--duration", type=float, default=20.0, help="seconds of raw posting")
    ap.add_argument("--exporter-duration", type=float, default=15.0)
    ap.add_argument("--clients", type=int, default=8, help="concurrent raw posters")
    ap.add_argument("--traces-per-request", type=int, default=10)
    ap.add_argument("--exporter-procs", type=int, default=2)
    ap.add_argument(
        "--exporter-rate",
        type=float,
        default=3000.0,
        help="spans/s the exporting app processes produce in total",
    )
    ap.add_argument("--paced-rate", type=float, default=5000.0, help="spans/s of the paced phase")
    ap.add_argument("--probe-requests", type=int, default=1600, help="requests the probe stores")
    ap.add_argument("--phoenix-duration", type=float, default=30.0)
    ap.add_argument("--phoenix-drain", type=float, default=30.0)
    ap.add_argument("--no-phoenix", action="store_true")
    ap.add_argument(
        "--no-pin",
        action="store_true",
        help="do not pin the server (collector, probe, Phoenix) to core 1 and clients to core 0",
    )
    ap.add_argument("--phases", default=",".join(PHASES), help="comma-separated subset to run")
    return ap.parse_args()


PHASES = ("probe", "raw", "paced", "raw_grpc", "exporter", "exporter_grpc", "phoenix")


def _pin(args: argparse.Namespace) -> None:
    """Server work on core 1, this process (clients, exporter apps) on core 0."""
    global SERVER_CORE
    if args.no_pin or (os.cpu_count() or 1) < 2 or not shutil.which("taskset"):
        return
    SERVER_CORE = 1
    os.sched_setaffinity(0, {0})


def _run_phases(args: argparse.Namespace, factory: PayloadFactory, out: dict[str, Any]) -> None:
    phases = set(args.phases.split(","))
    with tempfile.TemporaryDirectory(prefix="ragsieve-bench-") as tmp_s:
        tmp = Path(tmp_s)
        if "probe" in phases:
            bodies = [factory.make() for _ in range(args.probe_requests)]
            out["probe"] = {m: limit_probe(bodies, m, SERVER_CORE) for m in ("bytes", "json")}
            del bodies
        if "raw" in phases:
            out["raw"] = ragsieve_phase(
                "raw",
                tmp,
                lambda url: asyncio.run(raw_posts(url, factory, args.clients, args.duration)),
            )
        if "paced" in phases:
            out["paced"] = ragsieve_phase(
                "paced",
                tmp,
                lambda url: asyncio.run(
                    raw_posts(url, factory, args.clients, args.duration, rate=args.paced_rate)
                ),
            )
        if "raw_grpc" in phases:
            out["raw_grpc"] = ragsieve_phase(
                "raw_grpc",
                tmp,
                lambda target: asyncio.run(
                    raw_grpc_calls(target, factory, args.clients, args.duration)
                ),
                transport="grpc",
            )
        for name, transport in (("exporter", "http"), ("exporter_grpc", "grpc")):
            if name in phases:
                out[name] = ragsieve_phase(
                    name,
                    tmp,
                    lambda url, t=transport: exporter_load(
                        url, args.exporter_procs, args.exporter_duration, args.exporter_rate, t
                    ),
                    transport=transport,
                )
        if "phoenix" in phases and not args.no_phoenix:
            out["phoenix"] = phoenix_phase(
                tmp, factory, args.clients, args.phoenix_duration, args.phoenix_drain
            )


def _ratios(out: dict[str, Any]) -> None:
    probe, raw = out.get("probe"), out.get("raw")
    if probe and raw:
        out["ratio_raw_vs_probe"] = round(raw["spans_per_s"] / probe["bytes"]["spans_per_s"], 2)
        out["ratio_raw_vs_json_probe"] = round(raw["spans_per_s"] / probe["json"]["spans_per_s"], 2)
        out["probe_goal_met"] = out["ratio_raw_vs_probe"] >= PROBE_GOAL
        if raw.get("cpu_us_per_span"):
            out["cpu_ratio_raw_vs_probe"] = round(
                probe["bytes"]["cpu_us_per_span"] / raw["cpu_us_per_span"], 2
            )
    phx = out.get("phoenix")
    if phx and phx["spans_per_s"] and raw:
        out["ratio_raw_vs_phoenix"] = round(raw["spans_per_s"] / phx["spans_per_s"], 1)
        for key in ("raw_grpc", "exporter", "exporter_grpc"):
            if key in out:
                out[f"ratio_{key}_vs_phoenix"] = round(
                    out[key]["spans_per_s"] / phx["spans_per_s"], 1
                )
        out["goal_met"] = out["ratio_raw_vs_phoenix"] >= GOAL_RATIO


def _print(out: dict[str, Any], args: argparse.Namespace) -> None:
    print(f"server core: {out['server_core']} (clients on the other core); durable = fsync'd")
    for mode, r in (out.get("probe") or {}).items():
        print(
            f"limit probe ({mode}): {r['spans_per_s']:.0f} spans/s ({r['spans']} spans),"
            f" {r['cpu_us_per_span']} CPU us/span"
        )
    labels = {
        "raw": "ragsieve raw posts",
        "paced": f"ragsieve paced {args.paced_rate:.0f}/s",
        "raw_grpc": "ragsieve raw gRPC",
        "exporter": "ragsieve OTel exporter",
        "exporter_grpc": "ragsieve OTel exp. gRPC",
        "phoenix": "phoenix raw posts",
    }
    print(
        f"{'phase':<26}{'spans/s':>10}{'acked':>9}{'stored':>9}{'p50 ms':>9}{'p99 ms':>9}"
        f"{'peak RSS MB':>13}{'RSS 1st/last q':>16}{'CPU %':>7}{'CPU us/span':>12}"
    )
    for key, label in labels.items():
        r = out.get(key)
        if not r:
            continue
        stored = r.get("stored_spans", r.get("stored_at_end_of_send"))
        print(
            f"{label:<26}{r['spans_per_s']:>10.0f}{r['acked_spans']:>9}{stored:>9}"
            f"{r['p50_ms']:>9.1f}{r['p99_ms']:>9.1f}{r['peak_rss_mb']:>13.1f}"
            f"{r['rss_first_quarter_mb']:>8.0f}/{r['rss_last_quarter_mb']:<7.0f}"
            f"{r['cpu_percent']:>7.0f}{r.get('cpu_us_per_span') or float('nan'):>12.1f}"
        )
    if "ratio_raw_vs_probe" in out:
        print(
            f"collector / limit probe: {out['ratio_raw_vs_probe']} of the bytes probe,"
            f" {out['ratio_raw_vs_json_probe']} of the JSON probe (goal {PROBE_GOAL}:"
            f" {'met' if out['probe_goal_met'] else 'NOT met'}); per CPU second"
            f" {out.get('cpu_ratio_raw_vs_probe')} of the bytes probe"
        )
    phx = out.get("phoenix")
    if phx and "ratio_raw_vs_phoenix" in out:
        print(
            f"phoenix accepted {phx['accepted_per_s']:.0f} spans/s (2xx) but stored "
            f"{phx['spans_per_s']:.0f}/s (best 10 s window); "
            f"{phx['stored_after_drain']} of {phx['acked_spans']} "
            f"stored after a {args.phoenix_drain:.0f} s drain"
        )
        print(
            f"ratio vs phoenix: raw {out['ratio_raw_vs_phoenix']}x"
            f" (goal {GOAL_RATIO:.0f}x: {'met' if out['goal_met'] else 'NOT met'})"
        )


def main() -> None:
    args = _args()
    _pin(args)
    factory = PayloadFactory(args.traces_per_request)
    out: dict[str, Any] = {
        "machine": {
            "cpus": os.cpu_count(),
            "python": platform.python_version(),
            "load_avg_at_start": os.getloadavg(),
        },
        "server_core": SERVER_CORE,
        "trace": {
            "spans": 5,
            "chunks": 5,
            "chunk_bytes": 1000,
            "request_spans": factory.spans,
            "request_bytes": len(factory.template),
            "request_gzip_bytes": len(factory.make()),
        },
        "args": vars(args),
    }
    _run_phases(args, factory, out)
    out["machine"]["load_avg_at_end"] = os.getloadavg()
    _ratios(out)
    _print(out, args)
    dest = ROOT / "bench" / "results" / "ingest.json"
    dest.parent.mkdir(exist_ok=True)
    dest.write_text(json.dumps(out, indent=2) + "\n")
    print(f"wrote {dest.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
