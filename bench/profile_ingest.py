"""Where the collector's CPU goes on the ingest hot path: py-spy on a loaded `collector serve`.

Run: ``.venv/bin/python bench/profile_ingest.py [--seconds 15] [--clients 8]``.

Starts the collector pinned to core 1 (clients on core 0, as in bench/ingest.py), samples every
thread of it with py-spy (CPU only, not idle waits) while 8 keep-alive clients post the bench's
RAG payloads, and folds the samples into the steps of the hot path: HTTP (uvicorn/h11/starlette),
event-loop plumbing, gunzip, protobuf parse, span decode (attributes), JSON encoding, store write
(Python side), SQLite (insert, commit/fsync), settling. Writes ``bench/results/ingest_profile.json``
(the table, top functions) and prints the table. Needs ``py-spy`` (``pip install py-spy``).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))
import ingest  # noqa: E402

# First match wins, checked from the innermost frame outwards.
STEPS: list[tuple[str, tuple[str, ...]]] = [
    ("gunzip", ("decompress (collector/wire/codec.py",)),
    ("protobuf parse", ("parse (collector/wire/codec.py", "_request (collector/wire/traces.py")),
    (
        "span rows (validate, columns, bytes)",
        ("collector/wire/codec.py", "collector/wire/traces.py", "collector/wire/logs.py"),
    ),
    ("SQLite commit (fsync)", ("SQLiteStore.transaction",)),
    ("store write: plan + bind + insert", ("store/base.py", "store/sql.py")),
    ("settle (derive interactions)", ("derive/settle.py", "derive/normalize.py")),
    ("writer queue/thread", ("receive/writer.py",)),
    ("receiver (ours)", ("receive/receiver.py", "receive/intake.py", "receive/signals.py")),
    ("HTTP (uvicorn, httptools, h11, starlette)", ("uvicorn/", "h11/", "starlette/")),
    ("event loop, threads, anyio", ("asyncio/", "anyio/", "threading.py", "concurrent/")),
]
# py-spy names frames "function (package/module.py:line)", paths shortened to the package.


def step_of(frames: list[str]) -> str:
    for frame in reversed(frames):
        for step, needles in STEPS:
            if any(n in frame for n in needles):
                return step
    return "other"


def fold(raw: Path) -> tuple[Counter[str], Counter[str], int]:
    """(samples per step, samples per innermost function, total samples)."""
    steps: Counter[str] = Counter()
    leaves: Counter[str] = Counter()
    total = 0
    for line in raw.read_text().splitlines():
        stack, _, n = line.rpartition(" ")
        frames = stack.split(";")[1:]  # the first entry names the thread
        if not frames:
            continue
        count = int(n)
        total += count
        steps[step_of(frames)] += count
        leaves[frames[-1]] += count
    return steps, leaves, total


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--seconds", type=float, default=15.0)
    ap.add_argument("--clients", type=int, default=8)
    args = ap.parse_args()
    spy_exe = Path(sys.executable).with_name("py-spy")
    if not spy_exe.exists():
        raise SystemExit("needs py-spy: .venv/bin/pip install py-spy")
    ingest.SERVER_CORE = 1 if (os.cpu_count() or 1) >= 2 else None
    if ingest.SERVER_CORE is not None:
        os.sched_setaffinity(0, {0})
    with tempfile.TemporaryDirectory(prefix="ragsieve-profile-") as tmp_s:
        tmp = Path(tmp_s)
        proc, base, _ = ingest.start_collector(tmp / "p.db", tmp / "p.log")
        raw = tmp / "spy.txt"
        spy = subprocess.Popen(
            [str(spy_exe), "record", "--pid", str(proc.pid), "--duration", str(int(args.seconds))]
            + [
                "--format",
                "raw",
                "--threads",
                "--gil",
                "--rate",
                "250",
                "--nonblocking",
                "-o",
                str(raw),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        factory = ingest.PayloadFactory(10)
        load = asyncio.run(
            ingest.raw_posts(f"{base}/v1/traces", factory, args.clients, args.seconds + 1)
        )
        spy.wait(60)
        proc.terminate()
        proc.wait(30)
        steps, leaves, total = fold(raw)
    spans = load["acked_spans"]
    table = [
        {"step": step, "share": round(n / total, 3), "samples": n}
        for step, n in steps.most_common()
    ]
    out: dict[str, Any] = {
        "tool": "py-spy record --gil --threads --rate 250 (samples of the thread holding the GIL:"
        " Python CPU; SQLite and zlib work done with the GIL released is not in it)",
        "load": {k: load[k] for k in ("acked_spans", "requests", "p50_ms", "p99_ms")},
        "spans_per_s": round(spans / load["elapsed_s"], 1),
        "samples": total,
        "steps": table,
        "top_functions": [
            {"function": f, "share": round(n / total, 3)} for f, n in leaves.most_common(25)
        ],
    }
    print(f"{'step':<44}{'share of CPU':>14}")
    for row in table:
        print(f"{row['step']:<44}{row['share']:>14.1%}")
    print(f"{out['spans_per_s']:.0f} spans/s during the profile ({total} samples)")
    dest = ROOT / "bench" / "results" / "ingest_profile.json"
    dest.write_text(json.dumps(out, indent=2) + "\n")
    print(f"wrote {dest.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
