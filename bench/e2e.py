"""End-to-end verdict benchmark: XQuAD traffic through the real collector and the real job.

Usage: ``.venv/bin/python bench/e2e.py [--data DIR] [--split heldout|tune|all]``
-> prints a table, writes ``bench/results/e2e.json``.

Traffic (see ``bench/e2e_traffic.py``) is sent with the OpenTelemetry SDK exporter to
``ragsieve collector serve`` on loopback (SQLite store); then ``ragsieve jobs run --all`` judges
every trace with the default settings (offline judge, ``jobs.thresholds``). The figures are read
from the job's own ``samples`` table: the verdict and root cause the job decided. Nothing here
re-implements a decision.

Goals on held-out articles (issue 11): false-positive rate <= 0.10, recall >= 0.85, root cause
right among flagged planted failures >= 0.80, cross-lingual FPR <= 0.15, each root cause >= 0.70.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT))

from e2e_traffic import CLEAN_KINDS, DATA, EXPECT, Trace, build  # noqa: E402
from rootcause_figures import leave_one_domain_out, rule_alone, stated  # noqa: E402

from ragsieve.collector.instrument import (  # noqa: E402
    instrument,
    llm_span,
    rag_span,
    retriever_span,
)

RAGSIEVE = str(Path(sys.executable).with_name("ragsieve"))
SYSTEM = "Answer the question using only the documents below.\n\n{docs}"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def send(traces: list[Trace], endpoint: str) -> dict[str, Trace]:
    """Send every trace as one RAG turn (chain → retriever → LLM); trace id → planned trace."""
    provider = instrument("xquad-assistant", endpoint, set_global=False, flush_on_exit=False)
    sent: dict[str, Trace] = {}
    for t in traces:
        with rag_span(t.question, tracer_provider=provider) as rag:
            with retriever_span(t.question, tracer_provider=provider) as r:
                r.record([{**c, "score": round(0.9 - 0.1 * i, 2)} for i, c in enumerate(t.chunks)])
            docs = "\n\n".join(f"[{c['id']}] {c['content']}" for c in t.chunks)
            messages = [
                {"role": "system", "content": SYSTEM.format(docs=docs)},
                {"role": "user", "content": t.question},
            ]
            with llm_span("gpt-4o-mini", messages, tracer_provider=provider) as llm:
                llm.record(t.answer, prompt_tokens=len(docs) // 4, completion_tokens=40)
            rag.record(t.answer)
            sent[rag.trace_id] = t
    provider.force_flush()
    provider.shutdown()
    return sent


def collect(traces: list[Any], store: str, sender: Any = None) -> dict[str, Any]:
    """Start ``ragsieve collector serve`` on ``store``, send ``traces`` to it (with ``sender``,
    :func:`send` by default), stop it."""
    port = _free_port()
    server = subprocess.Popen(
        [RAGSIEVE, "collector", "serve", "--store", store, "--port", str(port), "--grpc-port", "0"],
        env={**os.environ, "RAGSIEVE_STORE": store},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        for _ in range(200):
            try:
                if httpx.get(f"http://127.0.0.1:{port}/readyz", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.1)
        sent = (sender or send)(traces, f"http://127.0.0.1:{port}/v1/traces")
        time.sleep(1.0)
    finally:
        server.terminate()
        server.wait(30)
    return sent


def run_pipeline(
    traces: list[Any], workdir: Path, sender: Any = None
) -> tuple[dict[str, Any], dict, Path]:
    """Collector on loopback ← traffic (sent by ``sender``, :func:`send` by default); then
    ``ragsieve jobs run --all``; returns what was sent, the job report and the store's file."""
    db = workdir / "e2e.db"
    store = f"sqlite:///{db}"
    env = {**os.environ, "RAGSIEVE_STORE": store}
    sent = collect(traces, store, sender)
    t0 = time.perf_counter()
    out = subprocess.run(
        [
            RAGSIEVE,
            "jobs",
            "run",
            "--store",
            store,
            "--since",
            "24h",
            "--settle",
            "0",
            "--all",
            "--json",
        ],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    if out.returncode not in (0, 1):
        raise SystemExit(f"jobs run failed ({out.returncode}): {out.stderr[-2000:]}")
    report = json.loads(out.stdout)
    report["_job_seconds"] = round(time.perf_counter() - t0, 1)
    return sent, report, db


def verdicts(db: Path) -> dict[str, dict[str, Any]]:
    """The job's own decision per trace: verdict, root cause, evidence (latest sample row)."""
    conn = sqlite3.connect(db)
    rows = conn.execute(
        "SELECT trace_id, verdict, root_cause, body FROM samples ORDER BY rowid"
    ).fetchall()
    conn.close()
    out: dict[str, dict[str, Any]] = {}
    for tid, verdict, cause, body in rows:
        meta = json.loads(body) if body else {}
        out[tid] = {
            "verdict": verdict,
            "root_cause": cause,
            "evidence": meta.get("evidence", ""),
            "failed_metrics": meta.get("failed_metrics", []),
            "competing": meta.get("competing", []),
            "pieces": meta.get("pieces", []),
        }
    return out


CI_SLICE_ARTICLES = 2  # per split: about 90 traces, the first articles of each half


def slice_traces(traces: list[Trace]) -> list[Trace]:
    """The CI slice's traffic: every trace of the first ``CI_SLICE_ARTICLES`` articles of each
    split, in the order ``build`` plans them."""
    keep: set[str] = set()
    for split in ("tune", "heldout"):
        articles = list(dict.fromkeys(t.article for t in traces if t.split == split))
        keep.update(articles[:CI_SLICE_ARTICLES])
    return [t for t in traces if t.article in keep]


def ci_slice(data: Path) -> dict[str, Any]:
    """The CI-sized rerun (``--ci-slice``, under a minute): the slice's traffic alone through
    the same collector, ``jobs run --all`` and scoring as the full benchmark. Its verdicts are
    not the full run's (the observed corpus holds only the slice's chunks), so a full run
    stores this slice run beside its results; ``tests/test_bench_slices.py`` reruns it and must
    find every verdict and figure unchanged."""
    traces = slice_traces(build(data))
    with tempfile.TemporaryDirectory() as tmp:
        sent, _, db = run_pipeline(traces, Path(tmp))
        decided = verdicts(db)
    missing: dict[str, Any] = {"verdict": "missing", "root_cause": None}
    by_key = {t.trace_key: decided.get(tid, missing) for tid, t in sent.items()}
    return {
        "articles": sorted({t.article for t in traces}),
        "results": score(sent, decided, "all"),
        "verdicts": {k: [d["verdict"], d["root_cause"]] for k, d in sorted(by_key.items())},
    }


def run_demo(workdir: Path, queries: int) -> dict[str, Any]:
    """``ragsieve demo --json`` on its own store: the demo's scorecard, for comparison."""
    out = subprocess.run(
        [
            RAGSIEVE,
            "demo",
            "--queries",
            str(queries),
            "--json",
            "--no-wait",
            "--store",
            f"sqlite:///{workdir / 'demo.db'}",
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    if out.returncode not in (0, 1):
        raise SystemExit(f"demo failed ({out.returncode}): {out.stderr[-2000:]}")
    card = json.loads(out.stdout)
    keep = ("n_queries", "planted_recall", "root_cause_accuracy", "false_positive_rate")
    return {k: card[k] for k in keep}


def _rate(num: int, den: int) -> float | None:
    return round(num / den, 3) if den else None


def score(sent: dict[str, Trace], decided: dict[str, dict[str, Any]], split: str) -> dict:
    """The issue's measures over the traces of ``split`` ('all' for every article)."""
    rows = [
        (t, decided.get(tid, {"verdict": "missing", "root_cause": None, "evidence": ""}))
        for tid, t in sent.items()
        if split == "all" or t.split == split
    ]
    clean = [(t, d) for t, d in rows if t.kind in CLEAN_KINDS]
    planted = [(t, d) for t, d in rows if t.kind not in CLEAN_KINDS]
    flagged = [(t, d) for t, d in planted if d["verdict"] == "fail"]
    by_kind: dict[str, dict[str, Any]] = {}
    for kind in EXPECT:
        sub = [(t, d) for t, d in rows if t.kind == kind]
        if not sub:
            continue
        fails = [d for _, d in sub if d["verdict"] == "fail"]
        right = (
            sum(d["verdict"] == "pass" for _, d in sub)
            if EXPECT[kind] == "pass"
            else sum(d["verdict"] == "fail" and d["root_cause"] == EXPECT[kind] for _, d in sub)
        )
        by_kind[kind] = {
            "n": len(sub),
            "expect": EXPECT[kind],
            "flagged": _rate(len(fails), len(sub)),
            "right": _rate(right, len(sub)),
            "causes": dict(Counter(str(d["root_cause"]) for d in fails)),
            "unjudged": sum(d["verdict"] not in ("pass", "fail") for _, d in sub),
        }
    by_cause: dict[str, dict[str, Any]] = defaultdict(lambda: {"n": 0, "right": 0})
    for t, d in planted:
        by_cause[t.expect]["n"] += 1
        by_cause[t.expect]["right"] += d["verdict"] == "fail" and d["root_cause"] == t.expect
    return {
        "split": split,
        "traces": len(rows),
        "fpr": _rate(sum(d["verdict"] == "fail" for _, d in clean), len(clean)),
        "recall": _rate(len(flagged), len(planted)),
        "root_cause_accuracy": _rate(
            sum(d["root_cause"] == t.expect for t, d in flagged), len(flagged)
        ),
        "fpr_cross_lingual": by_kind.get("clean_xling", {}).get("flagged"),
        "fpr_typo": by_kind.get("clean_typo", {}).get("flagged"),
        "wrong_abstentions_flagged": by_kind.get("wrong_abstention", {}).get("flagged"),
        "per_root_cause": {
            c: {"n": v["n"], "right": _rate(v["right"], v["n"])} for c, v in by_cause.items()
        },
        "root_cause_stated": stated(flagged),
        "root_cause_rule_alone": stated(flagged, rule_alone),
        "root_cause_by_domain": {
            dom: stated([(t, d) for t, d in flagged if domain(t) == dom])
            for dom in sorted({domain(t) for t, _ in flagged})
        },
        "per_kind": by_kind,
    }


def domain(t: Trace) -> str:
    """A trace's domain for leave-one-domain-out figures: its question and chunk languages."""
    return t.q_lang if t.q_lang == t.c_lang else f"{t.q_lang}->{t.c_lang}"


def lodo(sent: dict[str, Trace], decided: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """Root-cause weights refitted on the tune articles of the other domains, read on the
    held-out articles of each (``rootcause_figures.leave_one_domain_out``)."""
    caught = [
        (t, d)
        for tid, t in sent.items()
        if t.kind not in CLEAN_KINDS and (d := decided.get(tid, {})).get("verdict") == "fail"
    ]
    return leave_one_domain_out(caught, domain)


def table(s: dict) -> str:
    lines = [
        f"split={s['split']}  traces={s['traces']}",
        f"  false-positive rate (clean flagged)      {s['fpr']}",
        f"  recall (planted failures flagged)        {s['recall']}",
        f"  root cause right, among flagged planted  {s['root_cause_accuracy']}",
        f"  cross-lingual clean flagged              {s['fpr_cross_lingual']}",
        f"  typo'd clean flagged                     {s['fpr_typo']}",
        f"  wrong abstentions flagged                {s['wrong_abstentions_flagged']}",
        f"  root cause stated                        {s['root_cause_stated']}",
        "  per root cause (planted, right cause):",
    ]
    for c, v in sorted(s["per_root_cause"].items()):
        lines.append(f"    {c:<20} n={v['n']:<4} right={v['right']}")
    lines.append("  per kind: n, flagged, right, causes")
    for k, v in s["per_kind"].items():
        lines.append(
            f"    {k:<20} n={v['n']:<4} flagged={v['flagged']} right={v['right']} {v['causes']}"
        )
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", type=Path, default=DATA)
    ap.add_argument("--split", default="heldout", choices=("heldout", "tune", "all"))
    ap.add_argument("--out", type=Path, default=ROOT / "results" / "e2e.json")
    ap.add_argument(
        "--dump", type=Path, default=None, help="Write the verdict of every trace of --split here."
    )
    ap.add_argument("--demo-queries", type=int, default=300, help="Demo size (0: no demo run).")
    ap.add_argument("--keep-db", type=Path, default=None, help="Copy the job's store here.")
    ap.add_argument(
        "--ci-slice", action="store_true", help="Print the CI slice as JSON; write nothing."
    )
    args = ap.parse_args()
    if not (args.data / "xquad_en").exists():
        raise SystemExit(f"{args.data}/xquad_en: not found (XQuAD dev splits are needed)")
    if args.ci_slice:
        print(json.dumps(ci_slice(args.data), indent=2, ensure_ascii=False))
        return
    traces = build(args.data, miss_abstentions=True, miss_recalls=True)
    with tempfile.TemporaryDirectory() as tmp:
        sent, report, db = run_pipeline(traces, Path(tmp))
        decided = verdicts(db)
        if args.keep_db:
            shutil.copyfile(db, args.keep_db)
        demo = run_demo(Path(tmp), args.demo_queries) if args.demo_queries else None
    results = {s: score(sent, decided, s) for s in ("heldout", "tune")}
    print(table(results[args.split] if args.split != "all" else score(sent, decided, "all")))
    by_domain = lodo(sent, decided)
    print("leave one domain out:", json.dumps(by_domain, indent=1))
    print(f"job: {report.get('_job_seconds')} s for {len(sent)} traces")
    if demo:
        print(f"demo ({demo['n_queries']} queries): {demo}")
    if args.dump:
        with args.dump.open("w") as fh:
            for tid, t in sent.items():
                if args.split != "all" and t.split != args.split:
                    continue  # a tuning dump must not show the other half trace by trace
                d = decided.get(tid, {})
                fh.write(json.dumps({"trace_id": tid, **t.__dict__, **d}, ensure_ascii=False))
                fh.write("\n")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    kept_demo = None
    if demo is None and args.out.exists():  # --demo-queries 0: the demo did not change
        kept_demo = json.loads(args.out.read_text(encoding="utf-8")).get("demo")
    payload = {
        "benchmark": "e2e",
        "judge": "offline heuristic (deterministic, no LLM), default settings",
        "data": "XQuAD es/en dev (../shared/data); articles split 24 tune / 24 held out",
        "job_seconds": report.get("_job_seconds"),
        "demo": demo or kept_demo,
        **({"demo_from_last_run": True} if kept_demo else {}),
        "results": results,
        "root_cause_leave_one_domain_out": by_domain,
        "ci_slice": ci_slice(args.data),
    }
    args.out.write_text(json.dumps(payload, indent=2, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main()
