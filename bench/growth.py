"""How the costs grow as the store fills: ingest, window selection, a job pass, settling.

Run: ``.venv/bin/python bench/growth.py [--levels 0,1000000] [--duration 15]``.

One SQLite store (the default; WAL, ``synchronous=FULL``) is filled step by step to each level of
stored spans (bench/ingest.py's RAG spans, ~3 KB each, 5 per trace, written through
``write_spans`` as the collector writes them, traces marked settled and 30 days old) plus one
interaction row per 5 spans, also older than the window. At every level:

* ingest: a fresh ``collector serve`` on that store, pinned to core 1, 8 keep-alive clients for
  ``--duration`` s: durable spans/s, p99 latency, RSS first/last quarter; then the traces it
  left open are derived (timed) so that the job figures are the job's alone;
* window: ``--window-traces`` interactions inside the last 24 h (real derived records);
  ``store.list_interactions`` over the 24 h window, and ``ragsieve jobs run --since 24h``
  (dry run: settle + select + sample; and a real pass judging with ``--budget-calls 50``);
* settle: ``--pending`` traces left open and due; the time of one ``due_traces`` query and of
  settling ``--settle-sample`` of them (per-trace cost; the whole backlog is extrapolated
  linearly, said as such).

Should grow with the window, not the store: everything but the raw size on disk. Writes
``bench/results/growth.json``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))
import ingest  # noqa: E402

from ragsieve.collector.derive.normalize import derive  # noqa: E402
from ragsieve.collector.derive.settle import settle  # noqa: E402
from ragsieve.collector.receive.signals import TRACES  # noqa: E402
from ragsieve.collector.settings import CollectorSettings  # noqa: E402
from ragsieve.collector.store.sqlite import SQLiteStore  # noqa: E402
from ragsieve.collector.wire import traces  # noqa: E402
from ragsieve.collector.wire.spans import SpanRow  # noqa: E402

DAY = 86_400.0
RAGSIEVE = str(Path(sys.executable).with_name("ragsieve"))


def _fresh_rows(factory: ingest.PayloadFactory) -> list[SpanRow]:
    return list(TRACES.decode(factory.make_raw(), "protobuf", CollectorSettings()).job.spans)


def fill_spans(store: SQLiteStore, factory: ingest.PayloadFactory, n: int, at: float) -> float:
    """Write ``n`` more spans (fresh ids, 50 per request, 2,000 per transaction); seconds taken."""
    t0 = time.perf_counter()
    written = 0
    batch: list[SpanRow] = []
    while written < n:
        batch.extend(_fresh_rows(factory))
        if len(batch) >= 2_000 or written + len(batch) >= n:
            store.write_spans(batch, now=at)
            written += len(batch)
            batch = []
    store.execute(
        "UPDATE traces SET state = 'finalized', finalized_at = ? WHERE state = 'open'", (at,)
    )
    return time.perf_counter() - t0


def fill_interactions(store: SQLiteStore, n: int, start: float, body: str) -> None:
    """``n`` interaction rows started in the 30 days before ``start`` (outside the window)."""
    have = int(store.query("SELECT COUNT(*) FROM interactions")[0][0])
    rows = [
        (f"f{i:031x}", 1, i, start - DAY * 30 * (i % 1000) / 1000 - 1, start, "ok", body)
        for i in range(have, have + n)
    ]
    with store.transaction() as cur:
        cur.executemany(
            "INSERT INTO interactions (trace_id, revision, seq, started_at, settled_at, status,"
            " body) VALUES (?,?,?,?,?,?,?)",
            rows,
        )


def window_interactions(store: SQLiteStore, factory: ingest.PayloadFactory, n: int) -> None:
    """``n`` real derived records started within the last 24 h (their spans stored too)."""
    now = time.time()
    for k in range(0, n, 10):
        dec = traces.decode_traces(factory.make_raw(), "protobuf")
        store.write_spans(dec.spans, now=now)
        by_trace: dict[str, list[Any]] = {}
        for s in dec.spans:
            by_trace.setdefault(s.trace_id, []).append(s)
        for j, spans in enumerate(by_trace.values()):
            record = derive(spans)
            assert record is not None  # noqa: S101 - five spans per trace
            started = datetime.fromtimestamp(now - DAY * ((k + j) % n) / n, UTC)
            store.save_interaction(record.model_copy(update={"started_at": started}), seen_at=now)


def timed_cli(args: list[str], store_url: str) -> dict[str, Any]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("RAGSIEVE_", "OTEL_"))}
    t0 = time.perf_counter()
    res = subprocess.run(
        [RAGSIEVE, "jobs", "run", "--store", store_url, "--json", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=1800,
    )
    took = time.perf_counter() - t0
    return {"seconds": round(took, 2), "exit": res.returncode, "stderr": res.stderr[-300:]}


def measure_ingest(db: Path, tmp: Path, duration: float, clients: int) -> dict[str, Any]:
    proc, base, _ = ingest.start_collector(db, tmp / f"collector-{time.time_ns()}.log")
    rss = ingest.RssSampler(proc.pid)
    rss.start()
    try:
        before = ingest.count_rows(db)
        factory = ingest.PayloadFactory(10, seed=int(time.time()))
        load = asyncio.run(ingest.raw_posts(f"{base}/v1/traces", factory, clients, duration))
        stored = ingest.count_rows(db) - before
    finally:
        rss.stop.set()
        proc.terminate()
        proc.wait(30)
    summary = rss.summary()
    return {
        "spans_per_s": round(stored / load["elapsed_s"], 1),
        "p50_ms": load["p50_ms"],
        "p99_ms": load["p99_ms"],
        "rss_first_quarter_mb": summary["rss_first_quarter_mb"],
        "rss_last_quarter_mb": summary["rss_last_quarter_mb"],
        "cpu_us_per_span": round(rss.cpu_s / stored * 1e6, 1) if stored else None,
    }


def measure_settle(store: SQLiteStore, factory: ingest.PayloadFactory, args: Any) -> dict[str, Any]:
    """Leave ``args.pending`` traces open and due, time the due query and a sample of settling."""
    at = time.time() - 3600
    fill_spans(store, factory, args.pending * 5, at)  # finalized by fill_spans...
    store.execute(
        "UPDATE traces SET state = 'open' WHERE state = 'finalized' AND last_seen_at = ?", (at,)
    )
    t0 = time.perf_counter()
    due = store.due_traces(now=time.time(), quiet_s=15, max_wait_s=300, limit=500)
    due_s = time.perf_counter() - t0
    # Time a sample: push every pending trace into the future but ``settle_sample`` of them.
    future = time.time() + 3600
    store.execute(
        "UPDATE traces SET last_seen_at = ?, first_seen_at = ? WHERE state = 'open'",
        (future, future),
    )
    store.execute(
        "UPDATE traces SET last_seen_at = ?, first_seen_at = ? WHERE trace_id IN"
        " (SELECT trace_id FROM traces WHERE state = 'open' LIMIT ?)",
        (at, at, args.settle_sample),
    )
    t0 = time.perf_counter()
    done = settle(store, quiet_s=15, max_wait_s=300)
    per_trace = (time.perf_counter() - t0) / max(done, 1)
    store.execute("UPDATE traces SET state = 'finalized' WHERE state = 'open'")
    return {
        "pending": args.pending,
        "due_query_ms": round(due_s * 1000, 1),
        "due_found": len(due),
        "settled_sample": done,
        "settle_ms_per_trace": round(per_trace * 1000, 2),
        "settle_all_pending_s_extrapolated": round(per_trace * args.pending, 0),
    }


def measure_level(
    store: SQLiteStore, db: Path, tmp: Path, factory: ingest.PayloadFactory, args: Any
) -> dict[str, Any]:
    store.query("PRAGMA wal_checkpoint(TRUNCATE)")
    row: dict[str, Any] = {
        "stored_spans": store.count_spans(),
        "stored_interactions": int(store.query("SELECT COUNT(*) FROM interactions")[0][0]),
        "db_mb": round(db.stat().st_size / 2**20, 1),  # the main file (WAL checkpointed)
    }
    row["ingest"] = measure_ingest(db, tmp, args.duration, args.clients)
    # Derive what the ingest phase left open, so the job figures below time the job alone.
    t0 = time.perf_counter()
    caught_up = settle(store, quiet_s=0, max_wait_s=0)
    row["settle_after_ingest"] = {
        "traces": caught_up,
        "seconds": round(time.perf_counter() - t0, 1),
    }
    since = datetime.now(UTC) - timedelta(hours=24)
    t0 = time.perf_counter()
    got = store.list_interactions(since=since)
    row["list_window_ms"] = round((time.perf_counter() - t0) * 1000, 1)
    row["window_interactions"] = len(got)
    url = f"sqlite:///{db}"
    row["job_dry_run"] = timed_cli(["--since", "24h", "--dry-run"], url)
    row["job_pass"] = timed_cli(["--since", "24h", "--budget-calls", "50"], url)
    row["settle"] = measure_settle(store, factory, args)
    return row


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--levels", default="0,1000000", help="stored spans at each measurement")
    ap.add_argument("--duration", type=float, default=15.0, help="seconds of ingest per level")
    ap.add_argument("--clients", type=int, default=8)
    ap.add_argument("--window-traces", type=int, default=5_000)
    ap.add_argument("--pending", type=int, default=100_000, help="open traces for the settle pass")
    ap.add_argument("--settle-sample", type=int, default=1_000)
    ap.add_argument(
        "--interactions-per-level",
        type=float,
        default=1.0,
        help="interaction rows stored per stored span / 5 (1.0 = one per trace)",
    )
    ap.add_argument("--db", help="keep the store here (default: a temporary folder)")
    args = ap.parse_args()
    levels = [int(x) for x in args.levels.split(",")]
    ingest.SERVER_CORE = 1 if (os.cpu_count() or 1) >= 2 else None
    if ingest.SERVER_CORE is not None:
        os.sched_setaffinity(0, {0})
    factory = ingest.PayloadFactory(10, seed=7)
    out: dict[str, Any] = {"machine": {"cpus": os.cpu_count(), "load_avg": os.getloadavg()}}
    with tempfile.TemporaryDirectory(prefix="ragsieve-growth-") as tmp_s:
        tmp = Path(tmp_s)
        db = Path(args.db) if args.db else tmp / "growth.db"
        store = SQLiteStore(str(db))
        window_interactions(store, factory, args.window_traces)
        sample = store.list_interactions(limit=1)[0].model_dump_json()
        out["levels"] = []
        for level in levels:
            extra = max(level - store.count_spans(), 0)
            old = time.time() - 31 * DAY
            fill_s = fill_spans(store, factory, extra, old) if extra else 0.0
            have = int(store.query("SELECT COUNT(*) FROM interactions")[0][0])
            want = int(level / 5 * args.interactions_per_level)
            fill_interactions(store, max(want - have, 0), old, sample)
            print(f"level {level}: filled {extra} spans in {fill_s:.0f} s", flush=True)
            row = measure_level(store, db, tmp, factory, args)
            row["level"] = level
            row["fill_spans_per_s"] = round(extra / fill_s, 1) if fill_s else None
            out["levels"].append(row)
            print(json.dumps(row), flush=True)
        store.close()
    dest = ROOT / "bench" / "results" / "growth.json"
    dest.write_text(json.dumps(out, indent=2) + "\n")
    print(f"wrote {dest.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
