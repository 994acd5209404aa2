"""Peak memory of ``ragsieve eval`` and ``ragsieve gate`` against the golden set's size (issue 47).

A golden file of N cases (20 categories, one to three graded relevant chunks each) and two run
files of ten ranked chunks per query (a baseline, and a candidate that swaps the first two on
every third query) are written once per size. Then, each as its own process, ``ragsieve eval
--golden --run --out`` for both runs and ``ragsieve gate --format json`` on the two outputs;
peak RSS, CPU and wall time come from ``os.wait4``. ``--baseline REV`` runs the same commands
on the code of a git revision (``git archive``, on ``PYTHONPATH``) in the same run, each side on
its own eval outputs, and records whether both gates gave the same verdict, statuses and
intervals (to 12 digits).

    nice -n 10 python bench/gate_memory.py --baseline ae2a498
    python bench/gate_memory.py --table   # the docs page's table, from the results file

Results go to ``bench/results/gate_memory.json`` and a table on stdout.
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
sys.path.insert(0, str(ROOT / "bench"))

from settle_scale import extract  # noqa: E402  (the baseline tree, as the settle bench takes it)

OUT = ROOT / "bench" / "results" / "gate_memory.json"
SIZES = (20_000, 50_000, 200_000)
WORDS = ("invoice", "seat", "refund", "SSO", "export", "webhook", "quota", "region", "audit")


def write_inputs(folder: Path, n: int) -> dict[str, Path]:
    """The golden file and the two run files of ``n`` queries."""
    paths = {k: folder / f"{k}.jsonl" for k in ("golden_v1", "base_run", "cand_run")}
    with (
        paths["golden_v1"].open("w", encoding="utf-8") as golden,
        paths["base_run"].open("w", encoding="utf-8") as base,
        paths["cand_run"].open("w", encoding="utf-8") as cand,
    ):
        for i in range(n):
            rel = {f"c{(i * 7 + j) % 50_000}": 2 - (j > 0) for j in range(1 + i % 3)}
            w = WORDS[i % len(WORDS)]
            row = {"id": f"q{i}", "query": f"How do I change the {w} setting for team {i}?"}
            row |= {"relevant_chunks": rel, "category": f"cat{i % 20}"}
            golden.write(json.dumps(row) + "\n")
            ids = [f"c{(i * 7 + j) % 50_000}" for j in (0, 3, 1, 5, 2, 7, 11, 13, 17, 19)]
            base.write(json.dumps({"id": f"q{i}", "retrieved_ids": ids}) + "\n")
            if i % 3 == 0:
                ids[0], ids[1] = ids[1], ids[0]
            cand.write(json.dumps({"id": f"q{i}", "retrieved_ids": ids}) + "\n")
    return paths


def run(args: list[str], src: Path | None) -> dict[str, Any]:
    """One ``ragsieve`` process: peak RSS, CPU and wall time, exit code, stdout."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAGSIEVE_")}
    if src is not None:
        paths = [str(src / part) for part in ("collector", "evaluators", "jobs")]
        env["PYTHONPATH"] = os.pathsep.join(paths + [env.get("PYTHONPATH", "")])
    cmd = [sys.executable, "-m", "ragsieve.jobs", *args]
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        t0 = time.monotonic()
        proc = subprocess.Popen(cmd, env=env, stdout=out, stderr=err)
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)  # reaped here, not by Popen
        wall = time.monotonic() - t0
        out.seek(0)
        err.seek(0)
        stdout, stderr = out.read().decode(errors="replace"), err.read().decode(errors="replace")
    code = proc.returncode
    row: dict[str, Any] = {
        "exit": code,
        "peak_rss_mib": round(usage.ru_maxrss / 1024, 1),
        "cpu_s": round(usage.ru_utime + usage.ru_stime, 2),
        "wall_s": round(wall, 2),
        "load_1m": round(os.getloadavg()[0], 2),
    }
    if code not in (0, 1):
        row["stderr_tail"] = stderr[-400:]
    row["_stdout"] = stdout
    return row


def one_side(files: dict[str, Path], folder: Path, src: Path | None) -> dict[str, Any]:
    """``eval`` on both runs, then ``gate``, on one side's code; outputs kept in ``folder``."""
    folder.mkdir(exist_ok=True)
    side: dict[str, Any] = {}
    for name in ("base", "cand"):
        out = folder / f"{name}.json"
        args = ["eval", "--golden", str(files["golden_v1"]), "--run", str(files[f"{name}_run"])]
        side[f"eval_{name}"] = run([*args, "--out", str(out)], src)
        side[f"eval_{name}"].pop("_stdout")
    gate = run(
        ["gate", "--baseline", str(folder / "base.json"), "--candidate", str(folder / "cand.json")]
        + ["--format", "json"],
        src,
    )
    try:
        verdict = json.loads(gate.pop("_stdout"))
        side["gate_checks"] = [  # to 12 digits: BLAS may sum a block in another order
            [c["metric"], c["status"], round(c["ci_low"], 12), round(c["ci_high"], 12)]
            for c in verdict["checks"]
        ]
        side["gate_passed"] = verdict["passed"]
    except (ValueError, KeyError, TypeError):
        side["gate_checks"] = None
    side["gate"] = gate
    side["results_mib"] = round((folder / "base.json").stat().st_size / 2**20, 1)
    return side


def main() -> None:
    """Run the sizes (and the baseline), print a table, write the JSON."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("--sizes", default=",".join(map(str, SIZES)))
    ap.add_argument("--baseline", default=None, help="git revision to compare with")
    ap.add_argument("--out", type=Path, default=OUT)
    ap.add_argument("--table", action="store_true", help="Print the table of --out; run nothing.")
    args = ap.parse_args()
    if args.table:
        print(tables(json.loads(args.out.read_text(encoding="utf-8"))))
        return
    rows = []
    with tempfile.TemporaryDirectory(prefix="gate-memory-") as tmp:
        base_src = extract(args.baseline, Path(tmp)) if args.baseline else None
        for n in map(int, args.sizes.split(",")):
            folder = Path(tmp) / f"n{n}"
            folder.mkdir()
            files = write_inputs(folder, n)
            row: dict[str, Any] = {"cases": n}
            row["golden_mib"] = round(files["golden_v1"].stat().st_size / 2**20, 1)
            row["now"] = one_side(files, folder / "now", None)
            if base_src is not None:
                row["baseline"] = one_side(files, folder / "baseline", base_src)
                row["same_verdict"] = row["now"]["gate_checks"] == row["baseline"]["gate_checks"]
            rows.append(row)
            print(json.dumps({"cases": n, "done": True}), flush=True)
    result = {
        "baseline": args.baseline,
        "rows": rows,
        "python": sys.version.split()[0],
        "cpus": os.cpu_count(),
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print(tables(result))


def _cell(side: dict[str, Any] | None, key: str) -> str:
    if not side:
        return "-"
    r = side[key]
    if r["exit"] not in (0, 1):
        return f"exit {r['exit']}"
    return f"{r['peak_rss_mib']:,.0f} ({r['cpu_s']:.1f})"


def _ratio(row: dict[str, Any], key: str) -> str:
    base = row.get("baseline")
    if not base or base[key]["exit"] not in (0, 1) or row["now"][key]["exit"] not in (0, 1):
        return "-"
    return f"{base[key]['peak_rss_mib'] / row['now'][key]['peak_rss_mib']:.1f}"


def tables(result: dict[str, Any]) -> str:
    """The docs page's table (``docs/benchmarks/gate-memory.md``) from a results file."""
    lines = [
        "| golden cases | eval MiB (CPU s) | baseline eval MiB (CPU s) | less |"
        " gate MiB (CPU s) | baseline gate MiB (CPU s) | less | same verdict |",
        "|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for row in result["rows"]:
        now, base = row["now"], row.get("baseline")
        same = {True: "yes", False: "no"}.get(row.get("same_verdict"), "-")  # type: ignore[arg-type]
        lines.append(
            f"| {row['cases']:,} | {_cell(now, 'eval_base')} | {_cell(base, 'eval_base')}"
            f" | {_ratio(row, 'eval_base')} | {_cell(now, 'gate')} | {_cell(base, 'gate')}"
            f" | {_ratio(row, 'gate')} | {same} |"
        )
    return "\n".join(lines)


if __name__ == "__main__":
    main()
