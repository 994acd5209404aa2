"""A large golden set's cost per ``jobs run``, before and after its vectors are kept (issue 47).

A golden file of N distinct questions (default 20,000; the issue measured 200,000) is configured
as ``golden.path`` of a fresh SQLite store, and ``ragsieve jobs run`` runs three times as its
own process: *cold* (no cache: what every run cost before the cache, plus writing it once),
then *warm* twice (the vectors memory-mapped from ``<store folder>/.ragsieve-cache``). Each
process's wall time, CPU time and peak RSS (``os.wait4``) are recorded, with the machine's load
average (the 2 cores are shared), and the encoder's own rate is measured on 500 of the questions
in this process so the cold figure can be read against it. ``--prefill`` skips the cold run
(200,000 questions cost the encoder about 21 CPU minutes): the cache file is written through the
product's own ``golden_vectors`` with random unit vectors, and only the warm runs are timed.

    nice -n 10 python bench/golden_cache.py                  # 20,000 cases
    nice -n 10 python bench/golden_cache.py --cases 200000 --prefill \
        --out bench/results/golden_cache_200k.json   # warm runs at the issue's size

Results go to ``bench/results/golden_cache.json`` and a table on stdout.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "bench" / "results" / "golden_cache.json"
ACTIONS = ("change", "export", "cancel", "renew", "reset", "share", "archive", "restore")
THINGS = ("billing address", "API key", "invoice", "workspace", "seat count", "SSO setup")
WHERE = ("on the Pro plan", "for a sub-account", "from the mobile app", "after a trial")


def questions(n: int) -> list[str]:
    """``n`` distinct questions (templated, numbered so none repeats)."""
    out = []
    for i in range(n):
        a, t = ACTIONS[i % len(ACTIONS)], THINGS[(i // len(ACTIONS)) % len(THINGS)]
        w = WHERE[(i // (len(ACTIONS) * len(THINGS))) % len(WHERE)]
        out.append(f"How do I {a} the {t} {w} for team {i}?")
    return out


def write_golden(path: Path, n: int) -> None:
    with path.open("w", encoding="utf-8") as out:
        for i, q in enumerate(questions(n)):
            row = {"id": f"g{i}", "query": q, "relevant_chunks": [f"kb-{i % 500}"]}
            out.write(json.dumps(row) + "\n")


def run_job(store_url: str, golden: Path) -> dict[str, Any]:
    """One ``jobs run`` process: wall and CPU seconds, peak RSS, exit code."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAGSIEVE_")}
    env["RAGSIEVE_GOLDEN__PATH"] = str(golden)
    cmd = [sys.executable, "-m", "ragsieve.jobs", "jobs", "run", "--store", store_url, "--json"]
    t0 = time.monotonic()
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.monotonic() - t0
    err = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
    return {
        "exit": os.waitstatus_to_exitcode(status),
        "wall_s": round(wall, 2),
        "cpu_s": round(usage.ru_utime + usage.ru_stime, 2),
        "peak_rss_mb": round(usage.ru_maxrss / 1024, 1),
        "load_1m": round(os.getloadavg()[0], 2),
        "stderr_tail": err[-300:] if proc.returncode else "",
    }


def _prefill(golden: Path, folder: Path) -> None:
    """Write the cache file through the product's ``golden_vectors`` with random unit vectors:
    a warm run only reads it, so its cost does not depend on what the vectors are."""
    import numpy as np

    from ragsieve.evaluators.golden.sets import load_golden
    from ragsieve.jobs.sampling.golden_cache import golden_vectors

    rng = np.random.default_rng(0)

    def stand_in(texts: list[str]) -> Any:
        v = rng.standard_normal((len(texts), 512)).astype(np.float32)
        return v / np.linalg.norm(v, axis=1, keepdims=True)

    golden_vectors(golden, [c.query for c in load_golden(golden).cases], stand_in, folder)


def encoder_rate(qs: list[str]) -> float:
    """Questions per second the encoder embeds (CPU-bound, this process)."""
    from ragsieve.evaluators.tools.embeddings import embed

    embed(["warm up"])
    t0 = time.process_time()
    embed(qs, cache=False)
    return len(qs) / max(time.process_time() - t0, 1e-9)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("--cases", type=int, default=20_000)
    ap.add_argument("--out", type=Path, default=OUT)
    ap.add_argument("--table", action="store_true", help="Print the table of --out; run nothing.")
    ap.add_argument(
        "--prefill",
        action="store_true",
        help="Skip the cold run: write the cache with stand-in vectors, time the warm runs.",
    )
    args = ap.parse_args()
    if args.table:
        print(tables(json.loads(args.out.read_text(encoding="utf-8"))))
        return
    from ragsieve.collector.store import open_store

    with tempfile.TemporaryDirectory(prefix="ragsieve-golden-cache-") as tmp:
        folder = Path(tmp)
        golden = folder / "golden_v1.jsonl"
        write_golden(golden, args.cases)
        url = f"sqlite:///{folder / 'ragsieve.db'}"
        store = open_store(url, create=True)
        store.migrate()
        store.close()
        if args.prefill:  # the cache as the cold run writes it, with stand-in vectors
            _prefill(golden, folder / ".ragsieve-cache")
            runs = {"cold": {"skipped": "prefilled", "exit": 0}}
        else:
            runs = {"cold": run_job(url, golden)}
        saved = sorted((folder / ".ragsieve-cache").glob("golden-*.npy"))
        runs["warm"] = run_job(url, golden)
        runs["warm_again"] = run_job(url, golden)
        cache_mb = round(sum(p.stat().st_size for p in saved) / 2**20, 1)
        rate = encoder_rate(questions(500))
        size_mb = round(golden.stat().st_size / 2**20, 1)
    result = {
        "cases": args.cases,
        "golden_file_mb": size_mb,
        "cache_files": len(saved),
        "cache_mb": cache_mb,
        "encoder_questions_per_cpu_s": round(rate, 1),
        "runs": runs,
        "cold_cpu_s_estimate": round(args.cases / rate, 1),  # the encoder alone, linear in N
        "python": sys.version.split()[0],
        "cpus": os.cpu_count(),
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print(tables(result))


def tables(result: dict[str, Any]) -> str:
    """The docs page's table (``docs/benchmarks/golden-cache.md``) from a results file."""
    lines = [
        f"{result['cases']:,} golden cases ({result['golden_file_mb']} MB of JSONL); cache"
        f" {result['cache_mb']} MB in {result['cache_files']} file; encoder"
        f" {result['encoder_questions_per_cpu_s']:.0f} questions per CPU second",
        "",
        "| `jobs run` | wall s | CPU s | peak RSS MB | load (1 min) |",
        "|---|---:|---:|---:|---:|",
    ]
    names = {"cold": "cold (embeds, writes the cache)", "warm": "second", "warm_again": "third"}
    for key, label in names.items():
        r = result["runs"][key]
        if r.get("skipped"):
            est = result["cold_cpu_s_estimate"]
            lines.append(
                f"| {label}: not run, cache prefilled | - | ~{est:,.0f} (encoder) | - | - |"
            )
            continue
        lines.append(
            f"| {label} | {r['wall_s']} | {r['cpu_s']} | {r['peak_rss_mb']} | {r['load_1m']} |"
        )
    return "\n".join(lines)


if __name__ == "__main__":
    main()
