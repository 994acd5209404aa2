"""Job benchmark: sample selection over a 1,000,000-interaction store, and judge throughput.

Usage: ``python bench/job.py [--rows 1000000]``. Prints a table and writes bench/results/job.json.

1. Selection: interactions are bulk-inserted straight into the ``interactions`` table of a temp
   SQLite file (started_at spread over 30 days). A run's selection (window range scan with the
   sampling features read by SQLite's JSON functions, checkpoint lookup, stratified sample) is
   timed for windows of growing size, and the same 2 h window is timed on a 100k-row history to
   show that the cost follows the window, not the history. Goal: < 2 s for a run's window.
2. Throughput: ``run_once`` over 1,000 traces with a judge that answers in 200 ms.
   Goal: >= 50 judgements/s.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import sqlite3
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from ragsieve.collector.store import open_store
from ragsieve.evaluators.records import EvalResult, RagInteraction
from ragsieve.jobs.results import resultstore
from ragsieve.jobs.run.run import run_once_async
from ragsieve.jobs.sampling.sampling import StratifiedSampler
from ragsieve.jobs.settings import load_settings

NOW = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)
HISTORY_S = 30 * 86400


def body(i: int, started: float, rng: random.Random) -> str:
    docs = [
        {
            "id": f"kb-{rng.randrange(5000)}",
            "content": f"Chunk {j} of answer {i}: the refund"
            f" window is {rng.randrange(60)} days for readers bought online.",
            "rank": j,
            "score": round(rng.random(), 4),
            "in_prompt": True,
        }
        for j in range(3)
    ]
    return json.dumps(
        {
            "trace_id": f"{i:032x}",
            "span_id": f"{i:016x}",
            "started_at": datetime.fromtimestamp(started, UTC).isoformat(),
            "latency_ms": round(rng.lognormvariate(6.5, 0.5), 1),
            "query": f"How long is the refund window for order {i}?",
            "answer": "The refund window is 30 days.",
            "documents": docs,
            "status": "error" if rng.random() < 0.01 else "ok",
            "feedback_polarity": -1 if rng.random() < 0.02 else None,
            "attributes": {"route": rng.choice(["/chat", "/search", "/help"])},
        }
    )


def build(path: Path, rows: int, seed: int = 0) -> None:
    open_store(f"sqlite:///{path}").close()  # schema through the real migrations
    rng = random.Random(seed)
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA synchronous=OFF")
    end = NOW.timestamp()
    batch: list[tuple[Any, ...]] = []
    for i in range(rows):
        started = end - HISTORY_S * (i / rows) - rng.random()
        batch.append((f"{i:032x}", 1, i + 1, started, started + 20, "ok", body(i, started, rng)))
        if len(batch) == 50_000:
            conn.executemany("INSERT INTO interactions VALUES (?,?,?,?,?,?,?)", batch)
            conn.commit()
            batch.clear()
    if batch:
        conn.executemany("INSERT INTO interactions VALUES (?,?,?,?,?,?,?)", batch)
        conn.commit()
    conn.close()


def time_selection(path: Path, window_s: float) -> dict[str, Any]:
    store = open_store(f"sqlite:///{path}")
    try:
        lo, hi = NOW - timedelta(seconds=window_s), NOW
        versions = {"faithfulness": "v1", "answer_relevance": "v1", "context_relevance": "v1"}
        best = float("inf")
        for _ in range(3):
            t0 = time.perf_counter()
            cands = resultstore.window_candidates(store, lo, hi)
            done = resultstore.done_in_window(store, lo, hi, versions)
            need = {c.trace_id: 3 - len(done.get(c.trace_id, ())) for c in cands}
            sel = StratifiedSampler().sample(
                cands, sample_size=200, budget_calls=1000, calls_needed=need.__getitem__
            )
            best = min(best, time.perf_counter() - t0)
        return {
            "window_h": window_s / 3600,
            "in_window": len(cands),
            "sampled": len(sel.picks),
            "select_s": round(best, 3),
        }
    finally:
        store.close()


class SleepJudge:
    """Answers every interaction after 200 ms, like a remote LLM judge."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.version = "sleep-200ms"

    async def evaluate(self, interaction: RagInteraction) -> list[EvalResult]:
        await asyncio.sleep(0.2)
        return [
            EvalResult(
                trace_id=interaction.trace_id,
                span_id=interaction.span_id,
                evaluator=self.name,
                label="faithful",
                score=0.9,
            )
        ]


def time_judging(tmp: Path, n: int = 1000) -> dict[str, Any]:
    path = tmp / "judge.db"
    build(path, n)
    store = open_store(f"sqlite:///{path}")
    settings = load_settings(None, {"jobs.settle_s": 0.0})
    try:
        t0 = time.perf_counter()
        out = asyncio.run(
            run_once_async(
                store,
                settings,
                now=NOW,
                judges=[SleepJudge("faithfulness")],
                take_all=True,
                window=(NOW - timedelta(days=31), NOW),
                deliver=False,
                concurrency=32,
            )
        )
        elapsed = time.perf_counter() - t0
    finally:
        store.close()
    calls = out.report["judge_calls"]
    return {
        "judgements": calls,
        "seconds": round(elapsed, 2),
        "per_s": round(calls / elapsed, 1),
        "concurrency": 32,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    args = parser.parse_args()
    out_dir = Path(__file__).resolve().parent / "results"
    out_dir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        t0 = time.perf_counter()
        big = tmp / "big.db"
        build(big, args.rows)
        build_s = time.perf_counter() - t0
        small = tmp / "small.db"
        build(small, args.rows // 10)
        selection = [dict(history=args.rows, **time_selection(big, h * 3600)) for h in (2, 6, 24)]
        selection.append(dict(history=args.rows // 10, **time_selection(small, 2 * 3600)))
        judging = time_judging(tmp)
    print(f"built {args.rows:,} interactions in {build_s:.1f} s")
    print(f"{'history':>10} {'window':>7} {'in window':>10} {'sampled':>8} {'select s':>9}")
    for r in selection:
        print(
            f"{r['history']:>10,} {r['window_h']:>6g}h {r['in_window']:>10,} {r['sampled']:>8}"
            f" {r['select_s']:>9.3f}"
        )
    print(
        f"judging: {judging['judgements']} judgements in {judging['seconds']} s ="
        f" {judging['per_s']}/s (judge sleeps 200 ms, concurrency {judging['concurrency']})"
    )
    goals = {
        "select_2h_window_under_2s": selection[0]["select_s"] < 2.0,
        "judgements_per_s_at_least_50": judging["per_s"] >= 50,
    }
    print("goals:", ", ".join(f"{k}={'PASS' if v else 'FAIL'}" for k, v in goals.items()))
    (out_dir / "job.json").write_text(
        json.dumps(
            {
                "rows": args.rows,
                "build_s": round(build_s, 1),
                "selection": selection,
                "judging": judging,
                "goals": goals,
            },
            indent=2,
        )
        + "\n",
        encoding="utf-8",
    )


if __name__ == "__main__":
    main()
