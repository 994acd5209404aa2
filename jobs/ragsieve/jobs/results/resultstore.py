"""The job's SQL: window candidates, checkpoints, results, samples, runs and reviewed labels.

Tables (migration ``005_jobs``): ``checkpoints`` (trace, judge, judge version) marks a judgement
as done; ``results`` holds one row per (trace, evaluator, judge version), body = the EvalResult
JSON; ``samples`` holds one row per (run, trace) with the stratum, inclusion probability and the
verdict, body = ``{"key", "complete", "missing", "audit", "evidence", "failed_metrics",
"category", "upstream_p", "recovered"}``; ``complete`` says every judge of the set ``key`` had a
usable result (a checkpoint) when the verdict was taken;
``runs`` holds each run's report. A judgement's result rows and its checkpoint commit in one
transaction. Reviewed labels are read from the golden package's ``candidates`` rows.

The parts: ``judgements`` (checkpoints and results), ``samples`` (verdicts, samples and runs)
and ``reviews`` (listing and reviewed labels); this module reads window candidates and
re-exports the public names.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from ragsieve.collector.store import Store
from ragsieve.jobs.results.judgements import (
    Judgement,
    done_in_window,
    done_judges,
    load_interactions,
    save_judgements,
    stored_results,
)
from ragsieve.jobs.results.reviews import AUDIT_PREFIX as AUDIT_PREFIX
from ragsieve.jobs.results.reviews import FALSE_ALARM as FALSE_ALARM
from ragsieve.jobs.results.reviews import list_results, open_audits, review_labels
from ragsieve.jobs.results.samples import (
    SampleRow,
    begin_run,
    decided_in_window,
    decided_traces,
    finish_run,
    save_samples,
)
from ragsieve.jobs.sampling.sampling import Candidate

_PATHS = (
    "$.completeness",
    "$.query",
    "$.answer",
    "$.feedback_polarity",
    "$.latency_ms",
    "$.attributes",
    "$.errors[0].span_id",
)
_SQLITE_WINDOW = (
    "SELECT trace_id, started_at, status, json_extract(body, "
    + ", ".join(f"'{p}'" for p in _PATHS)
    + "), (SELECT json_group_array(json_array(json_extract(value, '$.score'),"
    " length(json_extract(value, '$.content')), json_extract(value, '$.in_prompt')))"
    " FROM json_each(body, '$.documents')) FROM interactions"
    " WHERE started_at >= ? AND started_at < ?"
)


def _candidate(
    trace_id: str,
    started: float,
    status: str,
    head: list[Any],
    docs: list[list[Any]],
    keep_query: bool,
) -> Candidate:
    completeness, query, answer, polarity, latency, attrs, err = head
    known = [d for d in docs if d[2] is not None]
    ctx = [d for d in known if d[2]] if known else docs
    scores = [float(d[0]) for d in ctx if d[0] is not None]
    return Candidate(
        trace_id=trace_id,
        started_at=float(started),
        status=status,
        completeness=completeness or "complete",
        has_query=bool(query and str(query).strip()),
        has_answer=bool(answer and str(answer).strip()),
        n_errors=int(err is not None),
        feedback_polarity=polarity,
        latency_ms=latency,
        n_context=len(ctx),
        context_chars=sum(int(d[1] or 0) for d in ctx),
        best_score=max(scores) if scores else None,
        query=query if keep_query else None,
        attributes=attrs if isinstance(attrs, dict) else {},
    )


def window_candidates(store: Store, start: datetime, end: datetime) -> list[Candidate]:
    """Sampling features of every interaction started in ``[start, end)`` (index range scan)."""
    lo, hi = start.timestamp(), end.timestamp()
    out: list[Candidate] = []
    if store.dialect == "sqlite":
        for tid, started, status, head, docs in store.query(_SQLITE_WINDOW, (lo, hi)):
            out.append(
                _candidate(tid, started, status, json.loads(head), json.loads(docs or "[]"), True)
            )
        return out
    rows = store.query(
        "SELECT trace_id, started_at, status, body FROM interactions"
        " WHERE started_at >= ? AND started_at < ?",
        (lo, hi),
    )
    for tid, started, status, body in rows:
        data = json.loads(body)
        head = [
            data.get("completeness"),
            data.get("query"),
            data.get("answer"),
            data.get("feedback_polarity"),
            data.get("latency_ms"),
            data.get("attributes"),
            (data.get("errors") or [{}])[0].get("span_id") if data.get("errors") else None,
        ]
        docs = [
            [d.get("score"), len(d.get("content") or ""), d.get("in_prompt")]
            for d in data.get("documents") or ()
        ]
        out.append(_candidate(tid, started, status, head, docs, True))
    return out


__all__ = [
    "Judgement",
    "SampleRow",
    "begin_run",
    "decided_in_window",
    "decided_traces",
    "done_in_window",
    "done_judges",
    "finish_run",
    "list_results",
    "load_interactions",
    "open_audits",
    "review_labels",
    "save_judgements",
    "save_samples",
    "stored_results",
    "window_candidates",
]
