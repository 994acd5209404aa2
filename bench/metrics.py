"""Benchmark: vectorised retrieval metrics (100k queries × 100 chunks) and the gate's bootstrap.

Run: ``.venv/bin/python bench/metrics.py [--queries 100000] [--depth 100]``. Pinned to one BLAS
thread. Prints a table and writes ``bench/results/metrics.json``. Goals (issue 4): all metrics at
k ∈ {1, 5, 10, 100} in < 5 s on one core; 1,000 bootstrap resamples × 500 queries in < 2 s.
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import json  # noqa: E402
import platform  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

from ragsieve.evaluators.gate import EvalResults, GatePolicy, compare, paired_bootstrap  # noqa: E402
from ragsieve.evaluators.metrics import (  # noqa: E402
    METRICS,
    build_relevance,
    evaluate,
    expand_metrics,
    score_relevance,
)

KS = [1, 5, 10, 100]
GOALS = {"evaluate_total_s": 5.0, "gate_compare_s": 2.0}


def make_data(n_queries: int, depth: int, seed: int = 0) -> tuple[dict, dict]:
    """Synthetic qrels (1-5 graded chunks per query) and runs with hits and a few duplicates."""
    rng = np.random.default_rng(seed)
    pool = [f"doc-{i:07d}" for i in range(1_000_000)]
    picks = rng.integers(0, len(pool), size=(n_queries, depth))
    n_rel = rng.integers(1, 6, size=n_queries)
    grades = rng.integers(1, 4, size=(n_queries, 5))
    hit_pos = rng.integers(0, depth, size=(n_queries, 5))
    qrels: dict[str, dict[str, int]] = {}
    run: dict[str, list[str]] = {}
    for q in range(n_queries):
        ids = [pool[i] for i in picks[q]]
        rel = {f"gold-{q}-{j}": int(grades[q, j]) for j in range(n_rel[q])}
        for j, cid in enumerate(rel):
            if rng.random() < 0.6:  # 60 % of relevant chunks are retrieved somewhere
                ids[hit_pos[q, j]] = cid
        if q % 10 == 0:
            ids[-1] = ids[0]  # a duplicate in 10 % of the runs
        qid = f"q{q}"
        qrels[qid], run[qid] = rel, ids
    return qrels, run


def timed(fn, repeat: int = 3):  # type: ignore[no-untyped-def]
    best, out = float("inf"), None
    for _ in range(repeat):
        t = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t)
    return best, out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--queries", type=int, default=100_000)
    ap.add_argument("--depth", type=int, default=100)
    ap.add_argument("--gate-queries", type=int, default=500)
    ap.add_argument("--resamples", type=int, default=1000)
    args = ap.parse_args()

    qrels, run = make_data(args.queries, args.depth)
    specs = expand_metrics(METRICS, KS)  # 5 metrics × 4 cutoffs + mrr (whole list) = 21
    ids = list(qrels)
    t_build, rel = timed(lambda: build_relevance([qrels[q] for q in ids], [run[q] for q in ids]))
    # a fresh matrix each time, so cached hit counts are not reused across repeats
    fresh = lambda: type(rel)(rel.gains, rel.n_relevant, rel.ideal)  # noqa: E731
    t_score, _ = timed(lambda: score_relevance(fresh(), specs))
    t_total, scores = timed(lambda: evaluate(qrels, run, specs))

    g = args.gate_queries
    rng = np.random.default_rng(1)
    base_v = rng.uniform(size=(g, len(specs)))
    cand_v = np.clip(base_v + rng.normal(-0.01, 0.1, size=base_v.shape), 0, 1)
    names = [str(s) for s in specs]

    def as_results(v: np.ndarray) -> EvalResults:
        return EvalResults(
            metrics=dict(zip(names, v.mean(0).tolist(), strict=True)),
            per_query={
                f"q{i}": dict(zip(names, row, strict=True)) for i, row in enumerate(v.tolist())
            },
        )

    base, cand = as_results(base_v), as_results(cand_v)
    policy = GatePolicy(resamples=args.resamples)
    t_boot, _ = timed(
        lambda: paired_bootstrap(cand_v - base_v, resamples=args.resamples, confidence=0.95, seed=0)
    )
    t_gate, report = timed(lambda: compare(base, cand, policy))

    rows = [
        ("align ids → relevance matrix", t_build, ""),
        (f"score {len(specs)} metrics (k ∈ {KS})", t_score, ""),
        ("evaluate() total", t_total, f"< {GOALS['evaluate_total_s']} s"),
        (f"bootstrap {args.resamples} × {g} q × {len(specs)} metrics", t_boot, ""),
        ("gate compare() total", t_gate, f"< {GOALS['gate_compare_s']} s"),
    ]
    print(f"{args.queries:,} queries × {args.depth} retrieved, best of 3, one BLAS thread")
    print(f"{'step':<48} {'seconds':>8}  goal")
    for name, sec, goal in rows:
        print(f"{name:<48} {sec:>8.3f}  {goal}")
    out = {
        "queries": args.queries,
        "depth": args.depth,
        "ks": KS,
        "metrics": names,
        "seconds": {name: round(sec, 4) for name, sec, _ in rows},
        "evaluate_total_s": round(t_total, 4),
        "gate_compare_s": round(t_gate, 4),
        "goals_s": GOALS,
        "met": {
            "evaluate": t_total < GOALS["evaluate_total_s"],
            "gate": t_gate < GOALS["gate_compare_s"],
        },
        "sanity": {
            "ndcg@10_mean": round(scores.mean()["ndcg@10"], 4),
            "gate_passed": report.passed,
        },
        "python": platform.python_version(),
        "numpy": np.__version__,
        "machine": platform.machine(),
    }
    dest = Path(__file__).resolve().parent / "results" / "metrics.json"
    dest.parent.mkdir(parents=True, exist_ok=True)
    dest.write_text(json.dumps(out, indent=2) + "\n")
    print(f"wrote {dest}")


if __name__ == "__main__":
    main()
