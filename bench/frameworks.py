"""Frameworks benchmark (issue 45): conversations run through real framework pipelines, traced by
their OpenInference instrumentors, sent with the OTLP exporter to ``ragsieve collector serve``,
then judged by ``ragsieve jobs run --all`` with the default settings (offline judges).

Usage: ``.venv/bin/python bench/frameworks.py`` -> prints a table, writes
``bench/results/frameworks.json`` and the table of ``docs/benchmarks/frameworks.md``;
``--keep DIR`` keeps the store (``DIR/e2e.db``) to read the interactions and verdicts after.

Pipelines: LlamaIndex ``CondenseQuestionChatEngine`` and ``CondensePlusContextChatEngine`` over
a completion-only model (as llama.cpp-style servers are), ``CondensePlusContextChatEngine`` and
``ContextChatEngine`` over a chat model, a Haystack rephrase pipeline that returns the rewritten
question and the retriever's documents among its outputs, a LangGraph condense/retrieve/answer
graph, and a DSPy ``Retrieve`` + ``Predict`` program with ``dspy.History``. Every pipeline gets
the same eight three-turn conversations (``bench/frameworks_traffic.py``) with four planted
failures; the model and the retriever are each framework's own extension class answering from
the script. The figures are the job's own verdicts (``samples``) and the stored interactions.
"""

from __future__ import annotations

import json
import sys
import tempfile
import warnings
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT))

from e2e import run_pipeline, verdicts  # noqa: E402
from frameworks_pipelines import CONDENSES, PIPELINES, Script  # noqa: E402
from frameworks_traffic import CHUNKS, Turn, conversations, retrieved  # noqa: E402
from openinference.instrumentation import using_session  # noqa: E402
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter  # noqa: E402
from opentelemetry.sdk.resources import Resource  # noqa: E402
from opentelemetry.sdk.trace import TracerProvider  # noqa: E402
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor  # noqa: E402
from opentelemetry.sdk.trace.export.in_memory_span_exporter import (  # noqa: E402
    InMemorySpanExporter,
)

from ragsieve.collector.store import open_store  # noqa: E402
from ragsieve.evaluators.judges.offline.conversation import judged_question  # noqa: E402
from ragsieve.evaluators.records import RagInteraction, normalize_text  # noqa: E402

OUT = ROOT / "results" / "frameworks.json"
PAGE = ROOT.parent / "docs" / "benchmarks" / "frameworks.md"
BEGIN, END = "<!-- frameworks -->", "<!-- /frameworks -->"


def send(_: list[Any], endpoint: str) -> dict[str, tuple[str, Turn]]:
    """Run every pipeline over every conversation; trace id -> (pipeline, turn)."""
    from openinference.instrumentation.dspy import DSPyInstrumentor
    from openinference.instrumentation.haystack import HaystackInstrumentor
    from openinference.instrumentation.langchain import LangChainInstrumentor
    from openinference.instrumentation.llama_index import LlamaIndexInstrumentor

    provider = TracerProvider(resource=Resource.create({"service.name": "bicivia-assistant"}))
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(endpoint=endpoint)))
    seen = InMemorySpanExporter()
    provider.add_span_processor(SimpleSpanProcessor(seen))
    instrumentors = [
        LlamaIndexInstrumentor(),
        HaystackInstrumentor(),
        LangChainInstrumentor(),
        DSPyInstrumentor(),
    ]
    for instrumentor in instrumentors:
        instrumentor.instrument(tracer_provider=provider)
    sent: dict[str, tuple[str, Turn]] = {}
    try:
        for name, build in PIPELINES.items():
            for conv in conversations():
                script = Script()
                ask = build(script)
                with using_session(f"{name}:{conv[0].conversation}"):
                    for turn in conv:
                        seen.clear()
                        script.turn = turn
                        ask(turn.typed)
                        for span in seen.get_finished_spans():
                            sent[format(span.context.trace_id, "032x")] = (name, turn)
        provider.force_flush()
    finally:
        for instrumentor in instrumentors:
            instrumentor.uninstrument()
        provider.shutdown()
    return sent


def _exact(rec: RagInteraction, turn: Turn) -> bool:
    """The record's answer is the script's, and the chunks the retriever returned reached it."""
    want = {CHUNKS[k] for k in retrieved(turn)}
    got = {d.content for d in rec.documents}
    return normalize_text(rec.answer or "") == normalize_text(turn.answer) and want <= got


def score(sent: dict[str, tuple[str, Turn]], db: Path) -> dict[str, Any]:
    decided = verdicts(db)
    store = open_store(f"sqlite:///{db}", create=False)
    per: dict[str, dict[str, Any]] = {}
    for tid, (name, turn) in sent.items():
        row = per.setdefault(
            name,
            {
                k: [0, 0]
                for k in ("condensed", "exact", "clean_first", "clean_followups", "planted")
            },
        )
        rec = store.get_interaction(tid)
        verdict = decided.get(tid, {}).get("verdict")
        flagged = verdict == "fail" if verdict else None
        if rec is None or flagged is None:
            continue
        if turn.rewrite and name in CONDENSES:
            asked = judged_question(rec)
            row["condensed"][0] += asked.source == "rewrite" and asked.text == turn.rewrite
            row["condensed"][1] += 1
        row["exact"][0] += _exact(rec, turn)
        row["exact"][1] += 1
        kind = (
            "planted" if turn.planted else ("clean_first" if turn.index == 1 else "clean_followups")
        )
        row[kind][0] += flagged
        row[kind][1] += 1
        if turn.planted and flagged:
            causes = row.setdefault("root_causes", {})
            cause = decided[tid].get("root_cause") or "none"
            causes[f"{turn.planted}: {cause}"] = causes.get(f"{turn.planted}: {cause}", 0) + 1
    store.close()
    return {
        name: {
            k: v if k == "root_causes" else {"n": v[0], "of": v[1], "rate": _rate(*v)}
            for k, v in row.items()
        }
        for name, row in per.items()
    }


def _rate(n: int, of: int) -> float | None:
    return round(n / of, 3) if of else None


def table(per: dict[str, Any]) -> str:
    lines = [
        "| pipeline | condensed question judged | chunks / answer exact | clean first turns"
        " flagged | clean follow-ups flagged | planted failures flagged |",
        "|---|---|---|---|---|---|",
    ]
    for name, row in per.items():
        cells = [
            f"{row[k]['n']}/{row[k]['of']}" if row[k]["of"] else "—"
            for k in ("condensed", "exact", "clean_first", "clean_followups", "planted")
        ]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    causes: dict[str, int] = {}
    for row in per.values():
        for key, n in row.get("root_causes", {}).items():
            causes[key] = causes.get(key, 0) + n
    lines.append("")
    lines.append(
        "flagged planted failures, kind: root cause (all pipelines): "
        + ", ".join(f"{k} {n}" for k, n in sorted(causes.items()))
    )
    return "\n".join(lines)


def main(argv: list[str]) -> None:
    warnings.simplefilter("ignore")
    keep = Path(argv[argv.index("--keep") + 1]) if "--keep" in argv else None
    with tempfile.TemporaryDirectory() as tmp:
        workdir = keep or Path(tmp)
        workdir.mkdir(parents=True, exist_ok=True)
        (workdir / "e2e.db").unlink(missing_ok=True)
        sent, _, db = run_pipeline([], workdir, sender=send)
        per = score(sent, db)
        if keep:
            (keep / "sent.json").write_text(
                json.dumps({t: [n, turn.conversation, turn.index] for t, (n, turn) in sent.items()})
            )
    result = {"traces": len(sent), "pipelines": per}
    OUT.write_text(json.dumps(result, indent=2, ensure_ascii=False) + "\n")
    page = PAGE.read_text("utf-8")
    head, rest = page.split(BEGIN, 1)
    PAGE.write_text(f"{head}{BEGIN}\n{table(per)}\n{END}{rest.split(END, 1)[1]}", "utf-8")
    print(table(per))
    print(f"{len(sent)} traces; wrote {OUT}")


if __name__ == "__main__":
    main(sys.argv[1:])
