"""Fit benchmark: does ``ragsieve judges fit`` on one batch's labels make the job better on another?

Usage: ``.venv/bin/python bench/fit.py [--data DIR] [--sizes 20,40,60,100,200]``
-> prints a table, writes ``bench/results/fit.json``.

Traffic is ``bench/e2e_traffic.py``'s, held-out articles only (the judges were tuned on the other
half). The held-out articles are split in two batches by their order: batch A (labelled) and
batch B (fresh). All of it goes through the real collector and ``ragsieve jobs run --all`` (as in
``bench/e2e.py``); then, for each label count N, a copy of that store gets N labels on batch A
traces (a labels file: half real failures, half real passes, drawn at random; the truth is the
trace's planted kind and root cause), ``ragsieve judges fit --labels`` runs as a user would run
it (stored when it changes something and gains in cross-validation), and ``ragsieve jobs run
--all`` judges again under the stored calibration. Batch B's false-positive rate, recall and
root-cause accuracy are read from the job's own verdicts, before and after.

Each label count also runs with ``--force`` (stored whatever the cross-validation says), to show
what a fit that `judges fit` does not store would have done.

Goals (issue 12): with 60 labels, FPR at least halved when it starts above 0.10, recall not lower
by more than 0.03, root-cause accuracy not lower; the fit of 200 labels under 10 s on one core.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT))

from e2e import RAGSIEVE, run_pipeline, score, verdicts  # noqa: E402
from e2e_traffic import DATA, Trace, build  # noqa: E402

ONE_CORE = {"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}


def batches(traces: list[Trace]) -> tuple[list[Trace], set[str], set[str]]:
    """Held-out traces, and the articles of batch A (labelled) and batch B (fresh)."""
    held = [t for t in traces if t.split == "heldout"]
    articles = list(dict.fromkeys(t.article for t in held))
    half = len(articles) // 2
    return held, set(articles[:half]), set(articles[half:])


def label_pool(sent: dict[str, Trace], articles: set[str]) -> list[tuple[str, Trace]]:
    """The traces of ``articles``, by the planned trace, not its (random) trace id: the same
    labels on every run."""
    return sorted(
        ((tid, t) for tid, t in sent.items() if t.article in articles), key=lambda p: p[1].trace_key
    )


def write_labels(pick: list[tuple[str, Trace]], path: Path) -> dict[str, int]:
    """A ``--labels`` file with the planted truth of each picked trace; how many, how many fail."""
    with path.open("w") as f:
        for tid, t in pick:
            line: dict[str, Any] = {
                "trace_id": tid,
                "verdict": "pass" if t.expect == "pass" else "fail",
            }
            if t.expect != "pass":
                line["root_cause"] = t.expect
            f.write(json.dumps(line) + "\n")
    return {"labels": len(pick), "fail": sum(t.expect != "pass" for _, t in pick)}


def labels_file(
    sent: dict[str, Trace], articles: set[str], n: int, seed: int, path: Path
) -> dict[str, int]:
    """``n`` labels on batch-A traces, half real failures and half real passes."""
    rng = random.Random(seed)
    pool = label_pool(sent, articles)
    fails = [p for p in pool if p[1].expect != "pass"]
    passes = [p for p in pool if p[1].expect == "pass"]
    pick = rng.sample(fails, min(n // 2, len(fails))) + rng.sample(passes, n - n // 2)
    return write_labels(pick, path)


def ragsieve(args: list[str], store: str, one_core: bool = False) -> tuple[int, Any]:
    env = {**os.environ, "RAGSIEVE_STORE": store, **(ONE_CORE if one_core else {})}
    cmd = [RAGSIEVE, *args, "--store", store, "--json"]
    if one_core and shutil.which("taskset"):
        cmd = ["taskset", "-c", "0", *cmd]
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
    try:
        return out.returncode, json.loads(out.stdout)
    except ValueError:  # a refusal or an error: its one line is on stderr
        return out.returncode, {"error": " ".join(out.stderr.strip().splitlines()[-1:])}


def fresh(sent: dict[str, Trace], articles: set[str]) -> dict[str, Trace]:
    return {tid: t for tid, t in sent.items() if t.article in articles}


def store_copy(work: Path, n: int, force: bool, tag: str = "") -> Path:
    """Where :func:`one_size` keeps the store it fits and judges again."""
    return work / f"fit{tag}{n}{'f' if force else ''}.db"


def one_size(
    n: int,
    sent: dict[str, Trace],
    a: set[str],
    b: set[str],
    db: Path,
    work: Path,
    seed: int,
    force: bool = False,
    draw: Callable[..., dict[str, int]] | None = None,
    tag: str = "",
) -> dict[str, Any]:
    """Label N batch-A traces on a copy of the store, fit, re-run the job, score batch B.

    ``draw`` picks and writes the labels (default :func:`labels_file`: half real failures, half
    real passes, at random); ``tag`` keeps the copies of several draws apart."""
    copy = store_copy(work, n, force, tag)
    shutil.copy(db, copy)
    store = f"sqlite:///{copy}"
    drawn = (draw or labels_file)(sent, a, n, seed, work / f"labels{n}.jsonl")
    t0 = time.perf_counter()
    flags = ["--force"] if force else []
    code, fit = ragsieve(
        ["judges", "fit", "--labels", str(work / f"labels{n}.jsonl"), *flags], store, True
    )
    wall = round(time.perf_counter() - t0, 2)
    row: dict[str, Any] = {
        "labels": n,
        "forced": force,
        "drawn": drawn,
        "fit_exit": code,
        "fit_wall_s": wall,
    }
    if "agreement" not in fit:
        row["refused"] = fit.get("error")
        return row
    row["cv"] = {k: fit["agreement"][k] for k in ("before", "after", "delta")}
    row.update(
        better=fit["better"],
        worth_storing=fit.get("worth_storing"),
        written=fit["written"],
        seconds=fit["seconds"],
        metrics=fit["metrics"],
        root_cause_cv=fit["root_cause_accuracy"],
    )
    if fit["written"]:
        ragsieve(["jobs", "run", "--since", "24h", "--settle", "0", "--all"], store)
    row["batch_b"] = _pick(score(fresh(sent, b), verdicts(copy), "all"))
    return row


def _pick(s: dict[str, Any]) -> dict[str, Any]:
    return {
        k: s[k] for k in ("traces", "fpr", "recall", "root_cause_accuracy", "fpr_cross_lingual")
    }


def readme_table(result: dict[str, Any]) -> str:
    """The README's table: batch-B figures per label count, stored by the rule and forced."""
    base = result["baseline_batch_b"]
    lines = [
        "| labels (batch A) | stored? | CV balanced accuracy before → after | batch B FPR |"
        " batch B recall | batch B root cause | forced: FPR / recall / root cause | fit s |",
        "|---|---|---|---|---|---|---|---|",
        f"| 0 (unfitted) | – | – | {base['fpr']} | {base['recall']} |"
        f" {base['root_cause_accuracy']} | – | – |",
    ]
    for r, f in zip(result["curve"], result["curve_forced"], strict=True):
        if "refused" in r:
            lines.append(f"| {r['labels']} | refused (< 20 per class) | – | – | – | – | – | – |")
            continue
        cv = r["cv"]
        ba = " → ".join(f"{cv[k]['balanced_accuracy']['value']:.3f}" for k in ("before", "after"))
        b, fb = r["batch_b"], f["batch_b"]
        forced = f"{fb['fpr']} / {fb['recall']} / {fb['root_cause_accuracy']}"
        lines.append(
            f"| {r['labels']} | {'yes' if r['written'] else 'no'} | {ba} | {b['fpr']} |"
            f" {b['recall']} | {b['root_cause_accuracy']} | {forced} | {r['seconds']['fit']} |"
        )
    return "\n".join(lines)


def table(result: dict[str, Any]) -> str:
    base = result["baseline_batch_b"]
    lines = [
        f"batch B (fresh, held-out articles): {base['traces']} traces; unfitted judge:"
        f" FPR {base['fpr']}, recall {base['recall']}, root cause {base['root_cause_accuracy']}",
        f"{'labels':>6} {'written':>14} {'CV BA before -> after':>28} {'FPR':>7} {'recall':>7}"
        f" {'rc acc':>7} {'fit s':>6}",
    ]
    for r in [*result["curve"], *result["curve_forced"]]:
        if "refused" in r:
            lines.append(f"{r['labels']:>6} refused: {r['refused']}")
            continue
        if r["forced"] and r is result["curve_forced"][0]:
            lines.append("  stored anyway (--force):")
        cv = r["cv"]
        before, after = (cv[k]["balanced_accuracy"]["value"] for k in ("before", "after"))
        ba = f"{before:.3f} -> {after:.3f}"
        bb = r["batch_b"]
        lines.append(
            f"{r['labels']:>6} {str(r['written'] or 'no'):>14} {ba:>28} {bb['fpr']!s:>7}"
            f" {bb['recall']!s:>7} {bb['root_cause_accuracy']!s:>7} {r['seconds']['fit']:>6}"
        )
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", type=Path, default=DATA)
    ap.add_argument("--sizes", default="20,40,60,100,200")
    ap.add_argument("--seed", type=int, default=11)
    args = ap.parse_args()
    held, a, b = batches(build(args.data))
    work = Path(tempfile.mkdtemp(prefix="ragsieve-fit-"))
    try:
        sent, report, db = run_pipeline(held, work)
        base = _pick(score(fresh(sent, b), verdicts(db), "all"))
        sizes = [int(n) for n in args.sizes.split(",")]
        curve = [one_size(n, sent, a, b, db, work, args.seed) for n in sizes]
        # what each fit would do if stored anyway (--force): is not storing it the right call?
        forced = [one_size(n, sent, a, b, db, work, args.seed, force=True) for n in sizes]
    finally:
        shutil.rmtree(work, ignore_errors=True)
    result = {
        "benchmark": "fit",
        "data": "XQuAD es/en held-out articles; batch A (labelled) and batch B (fresh) by article",
        "judge": "offline heuristic, jobs.thresholds; fitted by `ragsieve judges fit --labels`",
        "baseline_job_seconds": report.get("_job_seconds"),
        "baseline_batch_b": base,
        "curve": curve,
        "curve_forced": forced,
    }
    out = ROOT / "results" / "fit.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n")
    print(table(result))
    print(readme_table(result))
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
