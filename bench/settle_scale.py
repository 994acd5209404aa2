"""Settling time and peak memory against one trace's size (issue 47, row 3).

One agent-style trace (a root chain; per step a retriever with three chunks, a prompt-template
span and an LLM call whose messages quote a chunk) of 1k / 4k / 16k / 50k spans is written to a
fresh SQLite store, then settled once by the product's own ``settle``. Each size runs in its own
process, so the peak RSS (``ru_maxrss``) is that size's alone; the store's write is not timed.
The process's CPU time is the figure compared (the 2-core machine is shared; its 1-minute load
average is recorded with each run), wall time is shown beside it.

``--baseline REV`` runs the same sizes on the collector as of a git revision (extracted with
``git archive``) in the same run, so both share the machine's state, and reports the ratio.
Sizes above ``--baseline-max`` are not run on the baseline (the issue measured 255 s at 50k).

    nice -n 10 python bench/settle_scale.py --baseline a9bbf1d
    python bench/settle_scale.py --sizes 1000,4000 --out /tmp/s.json   # a quick look

Results go to ``bench/results/settle_scale.json`` and a table on stdout.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "bench" / "results" / "settle_scale.json"
SIZES = (1000, 4000, 16000, 50000)
SPANS_PER_STEP = 4  # retriever, prompt template, LLM, and the step's chain
T0 = 1_700_000_000_000_000_000
MS = 1_000_000


def agent_trace(n_spans: int, trace_no: int = 1) -> list[Any]:
    """One trace of about ``n_spans`` spans: a root chain and ``n_spans // 4`` agent steps."""
    from ragsieve.collector.wire.spans import SpanRecord

    trace_id = f"{trace_no:032x}"
    spans: list[SpanRecord] = []

    def add(name: str, parent: str | None, start: int, end: int, attrs: dict[str, Any]) -> str:
        span_id = f"{trace_no:08x}{len(spans) + 1:08x}"
        spans.append(
            SpanRecord(
                trace_id=trace_id,
                span_id=span_id,
                parent_span_id=parent,
                name=name,
                start_ns=T0 + start * MS,
                end_ns=T0 + end * MS,
                attributes=attrs,
                resource={"service.name": "settle-scale"},
                scope_name="openinference.instrumentation.langchain",
            )
        )
        return span_id

    steps = max(1, (n_spans - 1) // SPANS_PER_STEP)
    root = add(
        "agent",
        None,
        0,
        steps * 10 + 5,
        {
            "openinference.span.kind": "AGENT",
            "input.value": "How tall is the Eiffel Tower?",
            "output.value": f"Answer of step {steps - 1}: 330 metres.",
        },
    )
    for i in range(steps):
        t = i * 10
        step = add(f"step {i}", root, t, t + 9, {"openinference.span.kind": "CHAIN"})
        docs: dict[str, Any] = {"openinference.span.kind": "RETRIEVER", "input.value": f"q{i}"}
        for j in range(3):
            docs[f"retrieval.documents.{j}.document.id"] = f"doc-{i}-{j}"
            docs[f"retrieval.documents.{j}.document.content"] = (
                f"Chunk {i}-{j}: the tower was measured at {300 + j} metres in survey {i}."
            )
            docs[f"retrieval.documents.{j}.document.score"] = 1.0 - j / 10
        add("retrieve", step, t + 1, t + 3, docs)
        add(
            "prompt",
            step,
            t + 3,
            t + 4,
            {
                "openinference.span.kind": "PROMPT",
                "llm.prompt_template.template": "Context: {context}\nQuestion: {question}",
                "llm.prompt_template.variables": json.dumps(
                    {"question": f"q{i}", "context": f"Chunk {i}-0"}
                ),
            },
        )
        add(
            "llm",
            step,
            t + 4,
            t + 8,
            {
                "openinference.span.kind": "LLM",
                "llm.model_name": "gpt-4o-mini",
                "llm.input_messages.0.message.role": "user",
                "llm.input_messages.0.message.content": (
                    f"Chunk {i}-0: the tower was measured at 300 metres in survey {i}.\nq{i}"
                ),
                "llm.output_messages.0.message.role": "assistant",
                "llm.output_messages.0.message.content": f"Answer of step {i}: 330 metres.",
            },
        )
    return spans


CHILD = """
import inspect, json, os, resource, sys, time
sys.path.insert(0, sys.argv[3])
from settle_scale import agent_trace
from ragsieve.collector.derive.settle import settle
from ragsieve.collector.store import open_store
TRUNCATED = "ragsieve.settle_truncated"
n, db, bound = int(sys.argv[1]), sys.argv[2], sys.argv[4]
store = open_store("sqlite:///" + db)
spans = agent_trace(n)
store.write_spans(spans, now=1000.0)
del spans
opts = {}
if bound == "lifted" and "max_spans" in inspect.signature(settle).parameters:
    opts["max_spans"] = 10**9  # the baseline has no bound: compare like with like
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
t, cpu = time.perf_counter(), time.process_time()
saved = settle(store, quiet_s=0.0, max_wait_s=3600.0, now=2000.0, **opts)
elapsed, cpu = time.perf_counter() - t, time.process_time() - cpu
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
rec = store.get_interaction(f"{1:032x}")
print(json.dumps({"spans": store.count_spans(), "saved": saved, "settle_s": elapsed,
                  "settle_cpu_s": cpu,
                  "loadavg_1m": os.getloadavg()[0],
                  "peak_rss_mib": peak / 1024, "rss_before_settle_mib": before / 1024,
                  "span_count": None if rec is None else rec.span_count,
                  "truncated": None if rec is None else rec.attributes.get(TRUNCATED)}))
"""


FAIR_CHILD = """
import json, os, sys, time
sys.path.insert(0, sys.argv[3])
from settle_scale import agent_trace
from ragsieve.collector.serve.app import create_app
from ragsieve.collector.serve.server import ServerThread
from ragsieve.collector.settings import CollectorSettings
from ragsieve.collector.store import open_store
n, db, small = int(sys.argv[1]), sys.argv[2], int(sys.argv[4])
store = open_store("sqlite:///" + db)
cfg = CollectorSettings(port=0, quiet_period_s=0.5, settle_interval_s=0.1)
server = ServerThread(create_app(store, cfg), port=0).start()
big = agent_trace(n, trace_no=1)
t0 = time.time()
store.write_spans(big)
sent = {}
for k in range(small):  # small traces arrive while the large one settles
    spans = agent_trace(9, trace_no=100 + k)
    store.write_spans(spans)
    sent[spans[0].trace_id] = time.time()
    time.sleep(0.25)
deadline = time.time() + 600
done = {}  # trace -> when its record was first seen stored (polled every 50 ms)
while time.time() < deadline:
    seen = time.time()
    for (t,) in store.query("SELECT trace_id FROM interactions"):
        done.setdefault(t, seen)
    if all(t in done for t in sent) and big[0].trace_id in done:
        break
    time.sleep(0.05)
waits = sorted(done[t] - at - cfg.quiet_period_s for t, at in sent.items() if t in done)
server.stop()
print(json.dumps({"large_spans": n, "small_traces": len(sent), "small_settled": len(waits),
                  "small_wait_p50_s": waits[len(waits) // 2] if waits else None,
                  "small_wait_max_s": waits[-1] if waits else None,
                  "large_settled_after_s": done.get(big[0].trace_id, t0) - t0,
                  "loadavg_1m": os.getloadavg()[0]}))
"""


def run_fair(n: int, src: Path | None, timeout_s: float, small: int = 20) -> dict[str, Any]:
    """How long small traces wait to settle (past their quiet period) beside an ``n``-span one."""
    return _child(FAIR_CHILD, [str(n), "{db}", str(ROOT / "bench"), str(small)], src, timeout_s)


def _child(code: str, argv: list[str], src: Path | None, timeout_s: float) -> dict[str, Any]:
    env = dict(os.environ)
    if src is not None:
        paths = [str(src / part) for part in ("collector", "evaluators", "jobs")]
        env["PYTHONPATH"] = os.pathsep.join(paths + [env.get("PYTHONPATH", "")])
    with tempfile.TemporaryDirectory(prefix="settle-scale-") as folder:
        args = [a.replace("{db}", f"{folder}/s.db") for a in argv]
        try:
            done = subprocess.run(
                [sys.executable, "-c", code, *args],
                env=env,
                capture_output=True,
                text=True,
                timeout=timeout_s,
                check=False,
            )
        except subprocess.TimeoutExpired:
            return {"error": f"over {timeout_s:g} s"}
    if done.returncode != 0:
        return {"error": done.stderr.strip().splitlines()[-1:]}
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def run_one(n: int, src: Path | None, timeout_s: float, bound: str = "lifted") -> dict[str, Any]:
    """Settle one ``n``-span trace in a fresh process; ``src`` is a baseline's source tree;
    ``bound`` is ``lifted`` (no span bound, like the baseline) or ``default``."""
    argv = [str(n), "{db}", str(ROOT / "bench"), bound]
    return {"size": n, **_child(CHILD, argv, src, timeout_s)}


def extract(rev: str, into: Path) -> Path:
    """The source tree at ``rev`` (``git archive``), for the baseline."""
    archive = into / "src.tar"
    subprocess.run(["git", "-C", str(ROOT), "archive", "-o", str(archive), rev], check=True)
    with tarfile.open(archive) as tar:
        tar.extractall(into / "src", filter="data")
    return into / "src"


def main() -> None:
    """Run the sizes (and the baseline), print a table, write the JSON."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("--sizes", default=",".join(map(str, SIZES)))
    ap.add_argument("--baseline", default=None, help="git revision to compare with")
    ap.add_argument("--baseline-max", type=int, default=16000)
    ap.add_argument("--timeout-s", type=float, default=900.0)
    ap.add_argument("--fair-size", type=int, default=8000, help="large trace of the fairness run")
    ap.add_argument("--out", type=Path, default=OUT)
    ap.add_argument("--table", action="store_true", help="print the tables of --out; run nothing")
    args = ap.parse_args()
    if args.table:
        print(tables(json.loads(args.out.read_text())))
        return
    from ragsieve.collector.derive.settle import MAX_TRACE_SPANS

    sizes = [int(s) for s in args.sizes.split(",")]
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="settle-base-") as tmp:
        base_src = extract(args.baseline, Path(tmp)) if args.baseline else None
        for n in sizes:
            row: dict[str, Any] = {"size": n, "now": run_one(n, None, args.timeout_s)}
            if n > MAX_TRACE_SPANS:  # what the collector does at its default bound
                row["now_default_bound"] = run_one(n, None, args.timeout_s, "default")
            if base_src is not None and n <= args.baseline_max:
                row["baseline"] = run_one(n, base_src, args.timeout_s)
                now_s, base_s = row["now"].get("settle_cpu_s"), row["baseline"].get("settle_cpu_s")
                if now_s and base_s:
                    row["speedup"] = base_s / now_s
            rows.append(row)
            print(json.dumps(row), file=sys.stderr, flush=True)
        fair = {"now": run_fair(args.fair_size, None, args.timeout_s)}
        if base_src is not None:
            fair["baseline"] = run_fair(args.fair_size, base_src, args.timeout_s)
        print(json.dumps({"fairness": fair}), file=sys.stderr, flush=True)
    results = {
        "bench": "settle_scale",
        "at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "baseline": args.baseline,
        "spans_per_step": SPANS_PER_STEP,
        "rows": rows,
        "fairness": {"large_spans": args.fair_size, **fair},
    }
    args.out.write_text(json.dumps(results, indent=2) + "\n")
    print(tables(results))


def tables(results: dict[str, Any]) -> str:
    """The two markdown tables of a results file (``docs/benchmarks/settle.md`` shows them)."""
    lines = [
        "| spans | CPU s (wall s) | peak RSS MiB | baseline CPU s (wall s) | baseline MiB"
        " | speedup (CPU) | at the default bound: CPU s, MiB |",
        "|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for row in results["rows"]:
        now, base = row["now"], row.get("baseline", {})
        bounded = row.get("now_default_bound")
        at_bound = (
            f"{_f(bounded.get('settle_cpu_s'))}, {_f(bounded.get('peak_rss_mib'), 0)}"
            if bounded
            else "-"
        )
        lines.append(
            f"| {row['size']:,} | {_times(now)} | {_f(now.get('peak_rss_mib'), 0)}"
            f" | {_times(base)} | {_f(base.get('peak_rss_mib'), 0)}"
            f" | {_f(row.get('speedup'), 1)} | {at_bound} |"
        )
    fair = results["fairness"]
    lines += [
        "",
        f"| beside one {fair['large_spans']:,}-span trace | small traces' wait p50 s | max s |",
        "|---|---:|---:|",
    ]
    for side in ("now", "baseline"):
        if side in fair:
            p50, most = fair[side].get("small_wait_p50_s"), fair[side].get("small_wait_max_s")
            lines.append(f"| {side} | {_f(p50)} | {_f(most)} |")
    return "\n".join(lines)


def _times(res: dict[str, Any]) -> str:
    if "settle_cpu_s" not in res:
        return "-"
    return f"{_f(res['settle_cpu_s'])} ({_f(res.get('settle_s'))})"


def _f(value: Any, digits: int = 2) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


if __name__ == "__main__":
    main()
