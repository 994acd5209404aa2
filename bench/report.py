"""Benchmark: the HTML run-history report over 90 days of hourly runs (issue 16).

Run: ``.venv/bin/python bench/report.py [--days 90] [--every-minutes 60]``. Fills a fresh SQLite
store with a simulated history (``ragsieve.jobs.run.simulate``: the job's own estimators on a
known true rate with a step, new categories, reviews), then times ``ragsieve report --since
{days}d --html ...`` as a process (Python start, matplotlib import, read, render, write) and
``write_report`` in-process (warm), and measures the file. Goals: < 5 s and < 5 MB.

With ``--screenshot`` it also writes the README's picture: the default 14-day report of the
same store, opened in headless Chromium, to ``bench/results/report.png``. Prints a table and
writes ``bench/results/report.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from datetime import timedelta
from pathlib import Path

from ragsieve.collector.store import open_store
from ragsieve.evaluators.records import utcnow
from ragsieve.jobs.report.cli import write_report
from ragsieve.jobs.run.simulate import HistorySpec, simulate, store_run
from ragsieve.jobs.settings import load_settings

RESULTS = Path(__file__).resolve().parent / "results"
GOAL_S, GOAL_MB = 5.0, 5.0


def fill(url: str, days: int, every_min: float) -> int:
    """Store ``days`` of simulated runs ending now; returns how many."""
    runs = int(days * 24 * 60 / every_min)
    every = timedelta(minutes=every_min)
    step = runs - int(runs * 0.12)  # the true rate doubles for the last ~12% of the history

    def rate(i: int) -> float:
        return 0.035 if i < step else 0.07

    spec = HistorySpec(
        runs=runs,
        rate=rate,
        start=(utcnow() - every * (runs - 0.5)).replace(microsecond=0),
        every=every,
        new_category_at=[int(runs * 0.4), step + 3],
        seed=7,
    )
    store = open_store(url)
    try:
        for started, report in simulate(spec):
            store_run(store, started, report)
    finally:
        store.close()
    return runs


def cli_report(url: str, since: str, out: Path, phoenix: str) -> float:
    env = {**os.environ, "RAGSIEVE_PHOENIX__BASE_URL": phoenix}
    cmd = [sys.executable, "-m", "ragsieve.jobs", "report", "--store", url, "--since", since]
    t0 = time.perf_counter()
    subprocess.run([*cmd, "--html", str(out)], check=True, env=env, capture_output=True)
    return time.perf_counter() - t0


def screenshot(html: Path, png: Path) -> str | None:
    exe = next((p for b in ("chromium", "chromium-headless-shell") if (p := shutil.which(b))), None)
    if exe is None:
        return "no Chromium on PATH"
    args = [exe, "--no-sandbox", "--hide-scrollbars", "--window-size=1100,2400",
            f"--screenshot={png}", html.as_uri()]  # fmt: skip
    if not exe.endswith("headless-shell"):
        args.insert(1, "--headless=new")
    subprocess.run(args, check=True, capture_output=True, timeout=120)
    return None


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--days", type=int, default=90)
    ap.add_argument("--every-minutes", type=float, default=60.0)
    ap.add_argument("--screenshot", action="store_true")
    args = ap.parse_args()
    phoenix = "http://127.0.0.1:6006"
    with tempfile.TemporaryDirectory() as tmp:
        url = f"sqlite:///{Path(tmp) / 'history.db'}"
        t0 = time.perf_counter()
        runs = fill(url, args.days, args.every_minutes)
        fill_s = time.perf_counter() - t0
        out = Path(tmp) / "report.html"
        cli_s = cli_report(url, f"{args.days}d", out, phoenix)
        size = out.stat().st_size
        settings = load_settings(None, {"store": url, "phoenix.base_url": phoenix})
        store = open_store(url)
        try:
            t0 = time.perf_counter()
            write_report(store, settings, out, since=f"{args.days}d")
            warm_s = time.perf_counter() - t0
        finally:
            store.close()
        shot = None
        if args.screenshot:
            RESULTS.mkdir(parents=True, exist_ok=True)
            recent = Path(tmp) / "report-14d.html"
            cli_report(url, "14d", recent, phoenix)
            shot = screenshot(recent, RESULTS / "report.png")
    result = {
        "runs": runs,
        "days": args.days,
        "every_minutes": args.every_minutes,
        "fill_store_s": round(fill_s, 2),
        "cli_report_s": round(cli_s, 3),
        "write_report_warm_s": round(warm_s, 3),
        "html_mb": round(size / 1e6, 3),
        "goal_s": GOAL_S,
        "goal_mb": GOAL_MB,
        "ok": cli_s < GOAL_S and size / 1e6 < GOAL_MB,
        "screenshot": "bench/results/report.png" if args.screenshot and shot is None else shot,
        "machine": f"{platform.machine()} {os.cpu_count()} cpu, Python {platform.python_version()}",
    }
    print(f"{'runs':<28}{runs}")
    for k in ("cli_report_s", "write_report_warm_s", "html_mb", "ok"):
        print(f"{k:<28}{result[k]}")
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "report.json").write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
