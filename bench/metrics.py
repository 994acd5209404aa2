"""Benchmark: vectorised retrieval metrics (100k queries × 100 chunks) and the gate's bootstrap.

Run: ``.venv/bin/python bench/metrics.py [--queries 100000] [--depth 100]``. Pinned to one BLAS
thread. Prints a table and writes ``bench/results/metrics.json``. Goals (issue 4): all metrics at
k ∈ {1, 5, 10, 100} in < 5 s on one core; 1,000 bootstrap resamples × 500 queries in < 2 s.

End to end (issue 15): ``ragsieve eval --golden G --run R --out O`` as a process (read JSONL,
score, write JSON) on the same data, goal < 3 s; beside it pytrec_eval and ranx, each as a
process that reads the same files with msgspec, scores the same metrics and writes per-query
JSON. They are not project dependencies: ``.venv/bin/pip install pytrec-eval-terrier ranx``;
a missing one is reported, not fatal.
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import json  # noqa: E402
import platform  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
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
GOALS = {"evaluate_total_s": 5.0, "gate_compare_s": 2.0, "eval_cli_s": 3.0}
E2E_METRICS = ["recall", "precision", "hit_rate", "mrr", "ndcg"]  # at k 5 and 10; mrr whole list
# The same metrics in each library's names; the script reads the files, scores, writes JSON.
_BASELINE = """
import sys, time, msgspec
lib, golden, run_path, out = sys.argv[1:5]
qrels = {}
for row in msgspec.json.Decoder().decode_lines(open(golden, "rb").read()):
    grades = {c: g for c, g in row["relevant_chunks"].items() if g > 0}
    if grades:
        qrels[row["id"]] = grades
run = {}
for row in msgspec.json.Decoder().decode_lines(open(run_path, "rb").read()):
    ids = row["retrieved_ids"]
    ranked = {}
    for i, c in enumerate(ids):
        ranked.setdefault(c, float(len(ids) - i))  # rank as score; a repeat keeps its first rank
    run[row["id"]] = ranked
run = {q: run.get(q, {}) for q in qrels}
if lib == "pytrec_eval":
    import pytrec_eval
    names = {"recall.5,10", "P.5,10", "success.5,10", "recip_rank", "ndcg_cut.5,10"}
    per_query = pytrec_eval.RelevanceEvaluator(qrels, names).evaluate(run)
    ndcg10 = sum(v["ndcg_cut_10"] for v in per_query.values()) / len(qrels)
else:
    from ranx import Qrels, Run, evaluate
    names = [f"{m}@{k}" for m in ("recall", "precision", "hit_rate", "ndcg") for k in (5, 10)]
    names.append("mrr")
    r = Run(run)
    evaluate(Qrels(qrels), r, names)
    per_query = {m: {q: float(v) for q, v in d.items()} for m, d in r.scores.items()}
    ndcg10 = sum(per_query["ndcg@10"].values()) / len(qrels)
open(out, "wb").write(msgspec.json.encode(per_query))
print(ndcg10)
"""


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


def write_files(qrels: dict, run: dict, folder: Path) -> tuple[Path, Path]:
    """The data as a golden set and a run file, the inputs ``ragsieve eval`` reads."""
    golden, run_path = folder / "golden.jsonl", folder / "run.jsonl"
    with golden.open("w") as g:
        for q, rel in qrels.items():
            g.write(json.dumps({"id": q, "query": f"question {q}", "relevant_chunks": rel}) + "\n")
    with run_path.open("w") as r:
        for q, ids in run.items():
            r.write(json.dumps({"id": q, "retrieved_ids": ids}) + "\n")
    return golden, run_path


def run_process(argv: list[str], env: dict[str, str] | None = None) -> tuple[float, str]:
    """Best wall time of 3 runs of a process, and its last stdout."""
    best, out = float("inf"), ""
    for _ in range(3):
        t = time.perf_counter()
        done = subprocess.run(argv, capture_output=True, text=True, env=env, check=True)
        best, out = min(best, time.perf_counter() - t), done.stdout
    return best, out


def end_to_end(qrels: dict, run: dict) -> list[tuple[str, float | None, str]]:
    """``ragsieve eval`` and the two libraries as processes on the same files."""
    rows: list[tuple[str, float | None, str]] = []
    with tempfile.TemporaryDirectory() as tmp:
        golden, run_path = write_files(qrels, run, Path(tmp))
        out = Path(tmp) / "out.json"
        cli = [sys.executable, "-m", "ragsieve.jobs.cli", "eval", "--golden", str(golden)]
        cli += ["--run", str(run_path), "-k", "5", "-k", "10", "--metrics", ",".join(E2E_METRICS)]
        cli += ["--out", str(out)]
        t, _ = run_process(cli)
        ndcg = json.loads(out.read_text())["metrics"]["ndcg@10"]
        rows.append(("ragsieve eval (this venv)", t, f"nDCG@10 {ndcg:.6f}"))
        # pydantic loads every installed plugin at import: logfire's, from the test extra, costs
        # ~0.3 s that a plain `pip install ragsieve` does not have
        bare = {**os.environ, "PYDANTIC_DISABLE_PLUGINS": "__all__"}
        t, _ = run_process(cli, env=bare)
        rows.append(("ragsieve eval (no pydantic plugins)", t, f"nDCG@10 {ndcg:.6f}"))
        for lib, package in (("pytrec_eval", "pytrec-eval-terrier"), ("ranx", "ranx")):
            try:
                __import__(lib)
            except ImportError:
                rows.append((lib, None, f"not installed here (pip install {package})"))
                continue
            argv = [sys.executable, "-c", _BASELINE, lib, str(golden), str(run_path), str(out)]
            try:
                t, printed = run_process(argv)
            except subprocess.CalledProcessError as exc:  # say so in the table, keep the rest
                rows.append((lib, None, f"failed: {exc.stderr.strip().splitlines()[-1]}"))
                continue
            jit = ", numba compiles in each new process" if lib == "ranx" else ""
            rows.append((lib, t, f"nDCG@10 {float(printed):.6f}{jit}"))
    return rows


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
    e2e = end_to_end(qrels, run)

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
    n_e2e = len(E2E_METRICS) * 2 - 1
    print(f"\nend to end, {n_e2e} metrics (k 5, 10): read JSONL, score, write JSON; a process")
    print(f"each, best of 3; goal for ragsieve eval < {GOALS['eval_cli_s']} s")
    for name, sec, note in e2e:
        print(f"{name:<48} {'—' if sec is None else f'{sec:.3f}':>8}  {note}")
    out = {
        "queries": args.queries,
        "depth": args.depth,
        "ks": KS,
        "metrics": names,
        "seconds": {name: round(sec, 4) for name, sec, _ in rows},
        "evaluate_total_s": round(t_total, 4),
        "gate_compare_s": round(t_gate, 4),
        "end_to_end_s": {n: None if t is None else round(t, 3) for n, t, _ in e2e},
        "end_to_end_notes": {n: note for n, _, note in e2e},
        "goals_s": GOALS,
        "met": {
            "evaluate": t_total < GOALS["evaluate_total_s"],
            "gate": t_gate < GOALS["gate_compare_s"],
            "eval_cli": (e2e[0][1] or float("inf")) < GOALS["eval_cli_s"],
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
