"""The job's SQL: window candidates, checkpoints, results, samples, runs and reviewed labels.

Tables (migration ``005_jobs``): ``checkpoints`` (trace, judge, judge version) marks a judgement
as done; ``results`` holds one row per (trace, evaluator, judge version), body = the EvalResult
JSON; ``samples`` holds one row per (run, trace) with the stratum, inclusion probability and the
verdict, body = ``{"key", "complete", "missing", "audit", "evidence", "failed_metrics",
"category", "upstream_p", "recovered"}``; ``complete`` says every judge of the set ``key`` had a
usable result (a checkpoint) when the verdict was taken;
``runs`` holds each run's report. A judgement's result rows and its checkpoint commit in one
transaction. Reviewed labels are read from the golden package's ``candidates`` rows.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from ragsieve.collector.store import Store
from ragsieve.evaluators.records import EvalResult, RagInteraction
from ragsieve.jobs.report import ReviewLabel
from ragsieve.jobs.sampling import Candidate

CHUNK = 500
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


def _chunks(items: Sequence[str]) -> Iterator[Sequence[str]]:
    for i in range(0, len(items), CHUNK):
        yield items[i : i + CHUNK]


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


def done_judges(
    store: Store, trace_ids: Sequence[str], versions: Mapping[str, str]
) -> dict[str, set[str]]:
    """For each trace, the judges whose current version has a checkpoint."""
    done: dict[str, set[str]] = {}
    for part in _chunks(list(trace_ids)):
        marks = ",".join("?" * len(part))
        for tid, judge, version in store.query(
            f"SELECT trace_id, judge, judge_version FROM checkpoints WHERE trace_id IN ({marks})",
            tuple(part),
        ):
            if versions.get(judge) == version:
                done.setdefault(tid, set()).add(judge)
    return done


def done_in_window(
    store: Store, start: datetime, end: datetime, versions: Mapping[str, str]
) -> dict[str, set[str]]:
    """Like :func:`done_judges` for every trace started in ``[start, end)``, in one query."""
    done: dict[str, set[str]] = {}
    for tid, judge, version in store.query(
        "SELECT c.trace_id, c.judge, c.judge_version FROM interactions i JOIN checkpoints c"
        " ON c.trace_id = i.trace_id WHERE i.started_at >= ? AND i.started_at < ?",
        (start.timestamp(), end.timestamp()),
    ):
        if versions.get(judge) == version:
            done.setdefault(tid, set()).add(judge)
    return done


def load_interactions(store: Store, trace_ids: Sequence[str]) -> dict[str, RagInteraction]:
    """Full records of the given traces."""
    out: dict[str, RagInteraction] = {}
    for part in _chunks(list(trace_ids)):
        marks = ",".join("?" * len(part))
        for tid, body in store.query(
            f"SELECT trace_id, body FROM interactions WHERE trace_id IN ({marks})", tuple(part)
        ):
            out[tid] = RagInteraction.model_validate_json(body)
    return out


def stored_results(
    store: Store, trace_ids: Sequence[str], versions: Mapping[str, str]
) -> dict[str, list[EvalResult]]:
    """Stored results of the current judge versions, per trace."""
    wanted = set(versions.values())
    out: dict[str, list[EvalResult]] = {}
    for part in _chunks(list(trace_ids)):
        marks = ",".join("?" * len(part))
        for tid, version, body in store.query(
            f"SELECT trace_id, judge_version, body FROM results WHERE trace_id IN ({marks})",
            tuple(part),
        ):
            if version in wanted:
                out.setdefault(tid, []).append(EvalResult.model_validate_json(body))
    return out


def _final(verdict: str, body: str, key: str) -> bool:
    """A recorded verdict that no later run revisits: a fail, or a pass from the whole judge set.

    A pass recorded while some judge of the set had no usable result (``complete`` false, or
    missing: rows written before the flag existed) is re-decided by the next run.
    """
    data = json.loads(body)
    if data.get("key") != key:
        return False
    return verdict == "fail" or data.get("complete") is True


def decided_traces(store: Store, trace_ids: Sequence[str], key: str) -> set[str]:
    """Traces whose final verdict for this judge set (``key``) was already recorded by some run."""
    found: set[str] = set()
    for part in _chunks(list(trace_ids)):
        marks = ",".join("?" * len(part))
        for tid, verdict, body in store.query(
            f"SELECT trace_id, verdict, body FROM samples WHERE verdict IN ('pass', 'fail')"
            f" AND trace_id IN ({marks})",
            tuple(part),
        ):
            if _final(verdict, body, key):
                found.add(tid)
    return found


def decided_in_window(store: Store, start: datetime, end: datetime, key: str) -> set[str]:
    """Like :func:`decided_traces` for every trace started in ``[start, end)``, in one query."""
    found: set[str] = set()
    for tid, verdict, body in store.query(
        "SELECT s.trace_id, s.verdict, s.body FROM interactions i JOIN samples s"
        " ON s.trace_id = i.trace_id WHERE i.started_at >= ? AND i.started_at < ?"
        " AND s.verdict IN ('pass', 'fail')",
        (start.timestamp(), end.timestamp()),
    ):
        if _final(verdict, body, key):
            found.add(tid)
    return found


@dataclass(frozen=True, slots=True)
class Judgement:
    """The results of one (trace, judge) call, ready to store."""

    trace_id: str
    judge: str
    version: str
    results: Sequence[EvalResult]
    checkpoint: bool


def save_judgements(store: Store, run_id: str, items: Iterable[Judgement], now: float) -> None:
    """Results and checkpoints of many judgements in one transaction (group commit)."""
    with store.transaction() as cur:
        for j in items:
            for r in j.results:
                cur.execute(
                    store.sql(
                        "INSERT INTO results (trace_id, evaluator, judge_version, run_id, label,"
                        " score,"
                        " flagged, root_cause, created_at, body) VALUES (?,?,?,?,?,?,0,NULL,?,?)"
                        " ON CONFLICT (trace_id, evaluator, judge_version) DO UPDATE SET"
                        " run_id = excluded.run_id, label = excluded.label, score = excluded.score,"
                        " created_at = excluded.created_at, body = excluded.body"
                    ),
                    (
                        j.trace_id,
                        r.evaluator,
                        j.version,
                        run_id,
                        r.label,
                        r.score,
                        now,
                        r.model_dump_json(),
                    ),
                )
            if j.checkpoint:
                cur.execute(
                    store.sql(
                        "INSERT INTO checkpoints (trace_id, judge, judge_version, run_id, done_at)"
                        " VALUES (?,?,?,?,?)"
                        " ON CONFLICT (trace_id, judge, judge_version) DO NOTHING"
                    ),
                    (j.trace_id, j.judge, j.version, run_id, now),
                )


@dataclass(frozen=True, slots=True)
class SampleRow:
    """One sampled trace's row, with its verdict."""

    trace_id: str
    stratum: str
    inclusion_p: float
    verdict: str
    root_cause: str | None
    body: Mapping[str, Any]
    versions: Mapping[str, str]


def save_samples(store: Store, run_id: str, rows: Sequence[SampleRow]) -> None:
    """Sample rows plus the flag and root cause on the traces' current result rows."""
    with store.transaction() as cur:
        for s in rows:
            cur.execute(
                store.sql(
                    "INSERT INTO samples (run_id, trace_id, stratum, inclusion_p, verdict,"
                    " root_cause,"
                    " body) VALUES (?,?,?,?,?,?,?) ON CONFLICT (run_id, trace_id) DO UPDATE SET"
                    " verdict = excluded.verdict, root_cause = excluded.root_cause,"
                    " body = excluded.body"
                ),
                (
                    run_id,
                    s.trace_id,
                    s.stratum,
                    s.inclusion_p,
                    s.verdict,
                    s.root_cause,
                    json.dumps(dict(s.body), ensure_ascii=False),
                ),
            )
            for version in set(s.versions.values()):
                cur.execute(
                    store.sql(
                        "UPDATE results SET flagged = ?, root_cause = ? WHERE trace_id = ?"
                        " AND judge_version = ?"
                    ),
                    (int(s.verdict == "fail"), s.root_cause, s.trace_id, version),
                )


def begin_run(store: Store, run_id: str, started_at: float) -> None:
    """Record that a run started."""
    store.execute("INSERT INTO runs (run_id, started_at) VALUES (?, ?)", (run_id, started_at))


def finish_run(store: Store, run_id: str, finished_at: float, report: Mapping[str, Any]) -> None:
    """Store a run's report."""
    store.execute(
        "UPDATE runs SET finished_at = ?, report = ? WHERE run_id = ?",
        (finished_at, json.dumps(report, ensure_ascii=False, default=str), run_id),
    )


def list_results(
    store: Store, *, since: float | None = None, flagged: bool = False, limit: int | None = None
) -> list[dict[str, Any]]:
    """Stored results, newest first, as the flat dicts ``results list`` prints."""
    sql = (
        "SELECT trace_id, evaluator, judge_version, run_id, label, score, flagged, root_cause,"
        " created_at, body FROM results WHERE created_at >= ?"
    )
    params: list[Any] = [since if since is not None else -1e18]
    if flagged:
        sql += " AND flagged = 1"
    sql += " ORDER BY created_at DESC, trace_id, evaluator"
    if limit is not None:
        sql += " LIMIT ?"
        params.append(int(limit))
    out = []
    for tid, ev, ver, run, label, score, flag, cause, created, body in store.query(sql, params):
        data = json.loads(body)
        out.append(
            {
                "trace_id": tid,
                "span_id": data.get("span_id"),
                "evaluator": ev,
                "label": label,
                "score": score,
                "explanation": data.get("explanation"),
                "flagged": bool(flag),
                "root_cause": cause,
                "judge_version": ver,
                "judge_model": data.get("judge_model"),
                "annotator_kind": data.get("annotator_kind"),
                "run_id": run,
                "created_at": created,
            }
        )
    return out


AUDIT_PREFIX = "audit:"
FALSE_ALARM = ("false_alarm", "false alarm")


def _outcome(cid: str, status: str, body: Mapping[str, Any]) -> str | None:
    """A reviewed row's label: tp / fp / excluded for flagged candidates, tn / fn for audits."""
    if cid.startswith(AUDIT_PREFIX) or body.get("audit") is True:
        return {"audit_pass": "tn", "audit_fail": "fn", "accepted": "fn"}.get(status)
    if status == "accepted":
        return "tp"
    if status == "rejected":
        reason = str((body.get("review") or {}).get("reason") or "").strip().lower()
        return "fp" if reason.startswith(FALSE_ALARM) else "excluded"
    return None


def review_labels(store: Store, key: str) -> list[ReviewLabel]:
    """People's verdicts on the current judge set's decisions (``key``), weighted for the report.

    A reviewed candidate labels the trace its screen showed (its first source trace); it counts
    only while that trace's latest verdict under ``key`` is the one reviewed (``fail`` for a
    flagged candidate, ``pass`` for an audit), and weighs ``1 / inclusion probability``.
    """
    wanted: dict[str, tuple[str, str]] = {}
    for cid, status, body in store.query(
        "SELECT id, status, body FROM candidates"
        " WHERE status IN ('accepted', 'rejected', 'audit_pass', 'audit_fail')"
    ):
        try:
            data = json.loads(body)
        except ValueError:
            continue
        outcome = _outcome(str(cid), str(status), data)
        traces = data.get("source_trace_ids") or []
        if outcome is not None and traces and isinstance(traces[0], str):
            kind = "pass" if outcome in ("tn", "fn") else "fail"
            wanted[traces[0]] = (outcome, kind)
    latest: dict[str, tuple[str, float]] = {}
    for part in _chunks(sorted(wanted)):
        marks = ",".join("?" * len(part))
        for tid, verdict, p, body in store.query(
            f"SELECT s.trace_id, s.verdict, s.inclusion_p, s.body FROM samples s"
            f" JOIN runs r ON r.run_id = s.run_id WHERE s.trace_id IN ({marks})"
            f" AND s.verdict IN ('pass', 'fail') ORDER BY r.started_at",
            tuple(part),
        ):
            if json.loads(body).get("key") == key:
                latest[tid] = (verdict, float(p or 0.0))
    out: list[ReviewLabel] = []
    for tid, (outcome, kind) in sorted(wanted.items()):
        verdict, p = latest.get(tid, ("", 0.0))
        if verdict == kind:
            out.append(ReviewLabel(tid, outcome, 1.0 / p if p > 0 else 1.0))
    return out


def open_audits(store: Store) -> int:
    """Audited passes still waiting for a person."""
    return int(store.query("SELECT COUNT(*) FROM candidates WHERE status = 'audit'")[0][0])


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
