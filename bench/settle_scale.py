"""Settling time and peak memory against one trace's size (issue 47, row 3).

One agent-style trace (a root chain; per step a retriever with three chunks, a prompt-template
span and an LLM call whose messages quote a chunk) of 1k / 4k / 16k / 50k spans is written to a
fresh SQLite store, then settled once by the product's own ``settle``. Each size runs in its own
process, so the peak RSS (``ru_maxrss``) is that size's alone; the store's write is not timed.

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
import json, resource, sys, time
sys.path.insert(0, sys.argv[3])
from settle_scale import agent_trace
from ragsieve.collector.derive.settle import settle
from ragsieve.collector.store import open_store
n, db = int(sys.argv[1]), sys.argv[2]
store = open_store("sqlite:///" + db)
spans = agent_trace(n)
store.write_spans(spans, now=1000.0)
del spans
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
t = time.perf_counter()
saved = settle(store, quiet_s=0.0, max_wait_s=3600.0, now=2000.0)
elapsed = time.perf_counter() - t
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
rec = store.get_interaction(f"{1:032x}")
print(json.dumps({"spans": store.count_spans(), "saved": saved, "settle_s": elapsed,
                  "peak_rss_mib": peak / 1024, "rss_before_settle_mib": before / 1024,
                  "truncated": None if rec is None else rec.attributes.get("ragsieve.truncated")}))
"""


def run_one(n: int, src: Path | None, timeout_s: float) -> dict[str, Any]:
    """Settle one ``n``-span trace in a fresh process; ``src`` is a baseline's source tree."""
    env = dict(os.environ)
    if src is not None:
        paths = [str(src / part) for part in ("collector", "evaluators", "jobs")]
        env["PYTHONPATH"] = os.pathsep.join(paths + [env.get("PYTHONPATH", "")])
    with tempfile.TemporaryDirectory(prefix="settle-scale-") as folder:
        try:
            done = subprocess.run(
                [sys.executable, "-c", CHILD, str(n), f"{folder}/s.db", str(ROOT / "bench")],
                env=env,
                capture_output=True,
                text=True,
                timeout=timeout_s,
                check=False,
            )
        except subprocess.TimeoutExpired:
            return {"size": n, "error": f"over {timeout_s:g} s"}
    if done.returncode != 0:
        return {"size": n, "error": done.stderr.strip().splitlines()[-1:]}
    return {"size": n, **json.loads(done.stdout.strip().splitlines()[-1])}


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
    ap.add_argument("--out", type=Path, default=OUT)
    args = ap.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="settle-base-") as tmp:
        base_src = extract(args.baseline, Path(tmp)) if args.baseline else None
        for n in sizes:
            row: dict[str, Any] = {"size": n, "now": run_one(n, None, args.timeout_s)}
            if base_src is not None and n <= args.baseline_max:
                row["baseline"] = run_one(n, base_src, args.timeout_s)
                now_s, base_s = row["now"].get("settle_s"), row["baseline"].get("settle_s")
                if now_s and base_s:
                    row["speedup"] = base_s / now_s
            rows.append(row)
            print(json.dumps(row), file=sys.stderr, flush=True)
    print("| spans | settle s | peak RSS MiB | baseline s | baseline MiB | speedup |")
    print("|---:|---:|---:|---:|---:|---:|")
    for row in rows:
        now, base = row["now"], row.get("baseline", {})
        print(
            f"| {row['size']} | {_f(now.get('settle_s'))} | {_f(now.get('peak_rss_mib'))}"
            f" | {_f(base.get('settle_s'))} | {_f(base.get('peak_rss_mib'))}"
            f" | {_f(row.get('speedup'), 1)} |"
        )
    args.out.write_text(
        json.dumps(
            {
                "bench": "settle_scale",
                "at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                "baseline": args.baseline,
                "spans_per_step": SPANS_PER_STEP,
                "rows": rows,
            },
            indent=2,
        )
        + "\n"
    )


def _f(value: Any, digits: int = 2) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


if __name__ == "__main__":
    main()
