"""Sample rows with their verdicts, which traces are already decided, and the ``runs`` rows.

``samples`` holds one row per (run, trace) with the stratum, inclusion probability and the
verdict, body = ``{"key", "complete", "missing", "audit", "evidence", "failed_metrics",
"category", "upstream_p", "recovered"}``; ``complete`` says every judge of the set ``key`` had a
usable result (a checkpoint) when the verdict was taken. ``runs`` holds each run's report.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from ragsieve.collector.store import Store


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
    for tid, verdict, body in store.query_in(
        "SELECT trace_id, verdict, body FROM samples WHERE verdict IN ('pass', 'fail')"
        " AND trace_id IN ({ids})",
        trace_ids,
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


__all__ = [
    "SampleRow",
    "begin_run",
    "decided_in_window",
    "decided_traces",
    "finish_run",
    "save_samples",
]
