"""Judgements in the store: which (trace, judge version) pairs are done, their results, and writes.

``checkpoints`` (trace, judge, judge version) marks a judgement as done; ``results`` holds one row
per (trace, evaluator, judge version), body = the EvalResult JSON. A judgement's result rows and
its checkpoint commit in one transaction.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

from ragsieve.collector.store import Store
from ragsieve.evaluators.records import EvalResult, RagInteraction


def done_judges(
    store: Store, trace_ids: Sequence[str], versions: Mapping[str, str]
) -> dict[str, set[str]]:
    """For each trace, the judges whose current version has a checkpoint."""
    done: dict[str, set[str]] = {}
    for tid, judge, version in store.query_in(
        "SELECT trace_id, judge, judge_version FROM checkpoints WHERE trace_id IN ({ids})",
        trace_ids,
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
    for tid, body in store.query_in(
        "SELECT trace_id, body FROM interactions WHERE trace_id IN ({ids})", trace_ids
    ):
        out[tid] = RagInteraction.model_validate_json(body)
    return out


def stored_results(
    store: Store, trace_ids: Sequence[str], versions: Mapping[str, str]
) -> dict[str, list[EvalResult]]:
    """Stored results of the current judge versions, per trace."""
    wanted = set(versions.values())
    out: dict[str, list[EvalResult]] = {}
    for tid, version, body in store.query_in(
        "SELECT trace_id, judge_version, body FROM results WHERE trace_id IN ({ids})", trace_ids
    ):
        if version in wanted:
            out.setdefault(tid, []).append(EvalResult.model_validate_json(body))
    return out


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


__all__ = [
    "Judgement",
    "done_in_window",
    "done_judges",
    "load_interactions",
    "save_judgements",
    "stored_results",
]
