"""Capacity simulation: from a traffic profile to collectors, workers, storage and judge spend.

Run: ``.venv/bin/python bench/capacity.py`` (three example profiles) or give one profile:
``.venv/bin/python bench/capacity.py --rps 300 --spans-per-trace 8 --span-kb 3 --sample 0.02``.

The per-core figures come from this repository's own measurements when their result files exist
(``bench/results/ingest.json``: durable spans/s of one pinned collector core and its CPU per span;
``bench/results/growth.json``: settle cost per trace and bytes on disk per span;
``bench/results/scale.json``: one collector on a durable PostgreSQL), else from the defaults
below, and every output says which. The model is deliberately plain arithmetic:

* spans/s reaching ragsieve = requests/s x spans per trace x the OTel Collector tier's
  tail-sampling keep rate; peak = average x peak factor;
* collector cores = peak spans/s / (measured spans/s per core x target utilisation), the SQLite
  figure for step 1 and the one-collector PostgreSQL figure beyond;
* settle cores = peak traces/s x settle CPU per trace / target utilisation;
* storage = spans/day x bytes on disk per span (measured, indexes included) x retention days;
* judge calls/day = traces/day x job sample rate x judges per trace (capped by the daily
  budget); workers = peak calls/s x judge latency / concurrent calls per worker;
* the store step is chosen by the thresholds of deploy/SCALING.md; the column store's size
  assumes 6x compression of span text (an assumption, not a measurement).
"""

from __future__ import annotations

import argparse
import json
import math
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "bench" / "results"

# Defaults used only when a result file is missing (stated in the output).
DEFAULTS = {
    "spans_per_s_per_core": 4_000.0,  # durable, SQLite, one pinned core, 8 clients
    "settle_ms_per_trace": 5.0,  # derive one 5-span RAG trace
    "disk_bytes_per_span": 4_500.0,  # ~3 KB span body + keys + indexes
    "postgres_spans_per_s_1": 4_500.0,  # one collector on a durable PostgreSQL
}

# Store steps (deploy/SCALING.md): the limits each step is sized to stay under.
SQLITE_MAX_SPANS_PER_S = 3_000.0  # sustained peak, half of one core: headroom for bursts
SQLITE_MAX_GB = 200.0  # one file on one disk: backup and VACUUM stay tractable
POSTGRES_MAX_SPANS_PER_S = 25_000.0  # one primary: WAL volume, index upkeep, autovacuum
POSTGRES_MAX_GB = 2_000.0  # beyond this, day partitions of row-store spans cost more than columns
COLUMN_STORE_COMPRESSION = 6.0  # assumed (not measured here): ZSTD on repetitive chunk text


@dataclass
class Profile:
    """A traffic profile (per day averages, with a peak factor)."""

    name: str
    rps: float  # RAG requests (= traces) per second, daily average
    spans_per_trace: float = 5.0
    span_kb: float = 3.0
    peak_factor: float = 3.0
    tail_keep: float = 1.0  # share of traces the OTel Collector tier keeps (tail sampling)
    sample: float = 0.05  # share of kept traces the job judges
    judges_per_trace: int = 3
    judge_latency_s: float = 2.0
    judge_usd_per_call: float = 0.0004
    calls_per_worker: int = 16  # concurrent judge calls one worker process keeps in flight
    daily_budget_calls: int | None = None
    retention_days: float = 30.0
    target_utilisation: float = 0.6


@dataclass
class Figures:
    """Measured per-core figures and where each came from."""

    spans_per_s_per_core: float
    settle_ms_per_trace: float
    disk_bytes_per_span: float
    postgres_spans_per_s_1: float
    sources: dict[str, str] = field(default_factory=dict)


def load_figures(results: Path = RESULTS) -> Figures:
    """Per-core figures from the bench result files, defaults where a file is missing."""
    got: dict[str, float] = {}
    src: dict[str, str] = {}
    ingest = _read(results / "ingest.json")
    if ingest and ingest.get("raw"):
        got["spans_per_s_per_core"] = float(ingest["raw"]["spans_per_s"])
        src["spans_per_s_per_core"] = "bench/results/ingest.json raw (durable, pinned core)"
    growth = _read(results / "growth.json")
    if growth and growth.get("levels"):
        last = growth["levels"][-1]
        got["settle_ms_per_trace"] = float(last["settle"]["settle_ms_per_trace"])
        src["settle_ms_per_trace"] = f"bench/results/growth.json at {last['level']:,} spans"
        if last["stored_spans"]:
            got["disk_bytes_per_span"] = last["db_mb"] * 2**20 / last["stored_spans"]
            src["disk_bytes_per_span"] = "bench/results/growth.json (file size / spans)"
    scale = _read(results / "scale.json")
    if scale and scale.get("ingest") and scale.get("postgres_durability") == "durable":
        got["postgres_spans_per_s_1"] = float(scale["ingest"][0]["spans_per_s"])
        src["postgres_spans_per_s_1"] = "bench/results/scale.json (1 collector, durable)"
    for key, value in DEFAULTS.items():
        if key not in got:
            got[key] = value
            src[key] = "default (no result file)"
    return Figures(**got, sources=src)


def _read(path: Path) -> dict[str, Any] | None:
    try:
        data: dict[str, Any] = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return data


def store_step(peak_spans_per_s: float, stored_gb: float) -> str:
    """The first store step whose limits hold this load (deploy/SCALING.md)."""
    if peak_spans_per_s <= SQLITE_MAX_SPANS_PER_S and stored_gb <= SQLITE_MAX_GB:
        return "1: one collector, SQLite"
    if peak_spans_per_s <= POSTGRES_MAX_SPANS_PER_S and stored_gb <= POSTGRES_MAX_GB:
        return "2: N collectors + workers, PostgreSQL"
    return "3: spans in ClickHouse, the rest in PostgreSQL"


def simulate(p: Profile, f: Figures) -> dict[str, Any]:
    """Everything the profile needs, from the figures."""
    traces_per_s = p.rps * p.tail_keep
    spans_per_s = traces_per_s * p.spans_per_trace
    peak_spans = spans_per_s * p.peak_factor
    per_core = f.spans_per_s_per_core * p.target_utilisation
    settle_cores = (
        traces_per_s * p.peak_factor * f.settle_ms_per_trace / 1000 / p.target_utilisation
    )
    spans_day = spans_per_s * 86_400
    disk_gb_day = spans_day * f.disk_bytes_per_span * (p.span_kb / 3.0) / 1e9
    stored_gb = disk_gb_day * p.retention_days
    calls_day = traces_per_s * 86_400 * p.sample * p.judges_per_trace
    if p.daily_budget_calls is not None:
        calls_day = min(calls_day, p.daily_budget_calls)
    peak_calls_s = calls_day / 86_400 * p.peak_factor
    workers = peak_calls_s * p.judge_latency_s / p.calls_per_worker
    step = store_step(peak_spans, stored_gb)
    if not step.startswith("1"):  # collectors share a database: its measured per-collector rate
        per_core = f.postgres_spans_per_s_1 * p.target_utilisation
    collector_cores = peak_spans / per_core
    return {
        "profile": asdict(p),
        "spans_per_s_avg": round(spans_per_s, 1),
        "spans_per_s_peak": round(peak_spans, 1),
        "collector_cores": round(collector_cores, 2),
        "collectors": max(1, math.ceil(collector_cores)),
        "settle_cores": round(settle_cores, 2),
        "disk_gb_per_day": round(disk_gb_day, 2),
        "stored_gb_at_retention": round(stored_gb, 1),
        "stored_gb_in_column_store": round(stored_gb / COLUMN_STORE_COMPRESSION, 1),
        "judge_calls_per_day": round(calls_day),
        "judge_usd_per_day": round(calls_day * p.judge_usd_per_call, 2),
        "judge_workers": max(1, math.ceil(workers)),
        "store_step": step,
    }


EXAMPLES = [
    Profile("small team", rps=2.0),
    Profile("product", rps=50.0, spans_per_trace=8, sample=0.02),
    Profile("product, 7 days kept", rps=50.0, spans_per_trace=8, sample=0.02, retention_days=7),
    Profile("large, tail-sampled", rps=2_000.0, spans_per_trace=8, tail_keep=0.1, sample=0.01),
    Profile("large, everything kept", rps=2_000.0, spans_per_trace=8, sample=0.002),
]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rps", type=float, help="requests (traces) per second, daily average")
    ap.add_argument("--spans-per-trace", type=float, default=5.0)
    ap.add_argument("--span-kb", type=float, default=3.0)
    ap.add_argument("--peak-factor", type=float, default=3.0)
    ap.add_argument("--tail-keep", type=float, default=1.0)
    ap.add_argument("--sample", type=float, default=0.05)
    ap.add_argument("--judges", type=int, default=3)
    ap.add_argument("--judge-latency", type=float, default=2.0)
    ap.add_argument("--judge-usd", type=float, default=0.0004)
    ap.add_argument("--retention-days", type=float, default=30.0)
    args = ap.parse_args()
    figures = load_figures()
    profiles = EXAMPLES
    if args.rps is not None:
        profiles = [
            Profile(
                "given",
                rps=args.rps,
                spans_per_trace=args.spans_per_trace,
                span_kb=args.span_kb,
                peak_factor=args.peak_factor,
                tail_keep=args.tail_keep,
                sample=args.sample,
                judges_per_trace=args.judges,
                judge_latency_s=args.judge_latency,
                judge_usd_per_call=args.judge_usd,
                retention_days=args.retention_days,
            )
        ]
    rows = [simulate(p, figures) for p in profiles]
    print("per-core figures:")
    for key, source in figures.sources.items():
        print(f"  {key} = {getattr(figures, key):,.1f}  ({source})")
    head = (
        f"{'profile':<24}{'spans/s pk':>11}{'coll.':>6}{'settle c':>9}{'GB/day':>8}"
        f"{'GB kept':>9}{'calls/day':>11}{'USD/day':>9}{'workers':>8}  store step"
    )
    print(head)
    for r in rows:
        print(
            f"{r['profile']['name']:<24}{r['spans_per_s_peak']:>11,.0f}{r['collectors']:>6}"
            f"{r['settle_cores']:>9.2f}{r['disk_gb_per_day']:>8.1f}"
            f"{r['stored_gb_at_retention']:>9.0f}{r['judge_calls_per_day']:>11,}"
            f"{r['judge_usd_per_day']:>9.2f}{r['judge_workers']:>8}  {r['store_step']}"
        )
    dest = RESULTS / "capacity.json"
    dest.parent.mkdir(exist_ok=True)
    dest.write_text(json.dumps({"figures": asdict(figures), "profiles": rows}, indent=2) + "\n")
    print(f"wrote {dest.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
