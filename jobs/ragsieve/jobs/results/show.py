"""One trace's verdict as the job decided it, whole: outcome, root cause, the evidence line (or
the two competing lines of an ``undetermined``), every piece the decision weighed, and each
judge's latest result with its explanation (``ragsieve results show``).

``results list`` prints one row per judge, each saying whether its metric failed
(:func:`failed_metrics`); the root cause's evidence lives with the verdict in the ``samples``
row of the latest run that decided the trace, which this reads. Each judge's result says which
question it judged (a follow-up's rewrite or the typed turn) and what kind of turn it was.
"""

from __future__ import annotations

import json
import textwrap
from collections.abc import Mapping
from typing import Any

from ragsieve.collector.store import Store
from ragsieve.evaluators.judges.protocol import FAILING_LABELS
from ragsieve.jobs.results.reviews import list_results

_WIDTH = 100


def find_trace(store: Store, given: str) -> str:
    """The trace a prefix names among decided verdicts (retention may have purged its
    interaction row while the verdict stays); ``given`` itself when none or several match."""
    if len(given) >= 32:
        return given
    rows = store.query(
        "SELECT DISTINCT trace_id FROM samples WHERE trace_id LIKE ? ORDER BY trace_id LIMIT 2",
        (given.lower() + "%",),
    )
    return str(rows[0][0]) if len(rows) == 1 else given


def failed_metrics(store: Store, trace_ids: list[str]) -> dict[str, tuple[str, ...]]:
    """Trace → the metrics its latest decided verdict failed (``()`` for a pass); a trace no
    run decided is absent."""
    out: dict[str, tuple[str, ...]] = {}
    for tid, body in store.query_in(
        "SELECT s.trace_id, s.body FROM samples s JOIN runs r ON r.run_id = s.run_id"
        " WHERE s.trace_id IN ({ids}) AND s.verdict IN ('pass', 'fail') ORDER BY r.started_at",
        sorted(set(trace_ids)),
    ):  # oldest first: the latest run's verdict is the one kept
        out[str(tid)] = tuple(json.loads(body or "{}").get("failed_metrics") or ())
    return out


#: how the judges read the question (a follow-up's rewrite, the typed turn, ...): per result
JUDGED = ("judged_question", "question_source", "turn_kind")


def trace_verdict(store: Store, trace_id: str) -> dict[str, Any] | None:
    """The latest decided verdict of ``trace_id`` with its evidence and each judge's latest
    result; None when no run decided it."""
    rows = store.query(
        "SELECT s.verdict, s.root_cause, s.run_id, s.body, r.started_at FROM samples s"
        " JOIN runs r ON r.run_id = s.run_id WHERE s.trace_id = ?"
        " AND s.verdict IN ('pass', 'fail') ORDER BY r.started_at DESC LIMIT 1",
        (trace_id,),
    )
    if not rows:
        return None
    verdict, cause, run_id, body, started = rows[0]
    data = json.loads(body or "{}")
    results = list_results(store, trace_ids=[trace_id])  # newest first
    runs = {str(r["run_id"]) for r in results if r["run_id"]}
    began = dict(
        store.query_in("SELECT run_id, started_at FROM runs WHERE run_id IN ({ids})", list(runs))
    )
    latest: dict[str, dict[str, Any]] = {}
    for r in results:  # the results that verdict read: none a later run wrote
        if float(began.get(r["run_id"], started)) <= float(started):
            latest.setdefault(r["evaluator"], r)
    rec = store.get_interaction(trace_id)
    return {
        "trace_id": trace_id,
        "question": rec.query if rec is not None else None,
        "answer": rec.answer if rec is not None else None,
        "verdict": verdict,
        "root_cause": cause,
        "run_id": run_id,
        "evidence": data.get("evidence") or "",
        "competing": data.get("competing") or [],
        "pieces": data.get("pieces") or [],
        "failed_metrics": data.get("failed_metrics") or [],
        "missed_chunk": data.get("missed_chunk"),
        "judges": [
            {k: r[k] for k in ("evaluator", "label", "score", "explanation", "judge_model")}
            | {k: (r.get("metadata") or {}).get(k) for k in JUDGED}
            for r in sorted(latest.values(), key=lambda r: str(r["evaluator"]))
        ],
    }


def metric_mark(label: str, score: float | None, failed: bool | None) -> str:
    """What one judge's result did to its trace's verdict: ``FAILED`` it; ``passed``; ``audit``
    (the judge could not call it, ``uncertain``: a pass that is always audited); ``waived`` (a
    failing label the verdict set aside, such as a correct abstention's answer relevance); ``-``
    (no run decided the trace, or the judge gave no score)."""
    if failed:
        return "FAILED"
    if failed is None or score is None:
        return "-"
    if label == "uncertain":
        return "audit"
    return "waived" if label in FAILING_LABELS else "passed"


def render(doc: Mapping[str, Any]) -> str:
    """The verdict as text: what was decided, why, and what each judge found."""
    wrap = textwrap.TextWrapper(width=_WIDTH, initial_indent="    ", subsequent_indent="    ")
    cause = f"   root cause: {doc['root_cause']}" if doc["root_cause"] else ""
    lines = [f"trace {doc['trace_id']}   verdict: {doc['verdict']}{cause}   (run {doc['run_id']})"]
    for name in ("question", "answer"):
        if doc.get(name):
            lines += [f"  {name}:", wrap.fill(str(doc[name])[:600])]
    read = {tuple(j.get(k) for k in JUDGED) for j in doc["judges"] if j.get("judged_question")}
    for asked, source, kind in sorted(read, key=str):  # one line unless the judges differ
        lines += [f"  judged question ({source}, turn: {kind}):", wrap.fill(str(asked)[:600])]
    if doc["competing"]:  # undetermined: each line argues for the cause it names
        lines.append("  undetermined, the evidence argues both ways:")
        lines += [wrap.fill(str(c)) for c in doc["competing"]]
    elif doc["evidence"]:
        lines += ["  evidence:", wrap.fill(str(doc["evidence"]))]
    if len(doc["pieces"]) > 1:
        lines.append("  weighed:")
        lines += [
            wrap.fill(f"{p.get('name')} -> {p.get('cause')}: {p.get('line')}")
            for p in doc["pieces"]
        ]
    lines.append("  judges:")
    failed = set(doc.get("failed_metrics") or ())
    for j in doc["judges"]:
        score = "-" if j["score"] is None else f"{j['score']:.2f}"
        model = f"  ({j['judge_model']})" if j.get("judge_model") else ""
        mark = metric_mark(j["label"], j["score"], j["evaluator"] in failed)
        lines.append(f"    {j['evaluator']:<18} {j['label']:<12} {score:>5}  {mark}{model}")
        if j.get("explanation"):
            lines.append(wrap.fill(str(j["explanation"])))
    return "\n".join(lines)


__all__ = ["JUDGED", "failed_metrics", "find_trace", "metric_mark", "render", "trace_verdict"]
