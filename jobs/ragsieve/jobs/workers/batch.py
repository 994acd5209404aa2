"""Judging one queued batch: per trace a session lock, a budget reservation, one short write.

The judge calls run with no transaction open; a trace's results are written at most once per
judge version, because a judge's checkpoint is inserted first and only a new checkpoint gets
its results stored.
"""

from __future__ import annotations

import asyncio
import hashlib
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ragsieve.collector.store import Store
from ragsieve.evaluators.errors import ConfigError
from ragsieve.evaluators.judges import safe_evaluate
from ragsieve.evaluators.records import EvalResult, RagInteraction
from ragsieve.jobs.workers.budget import GlobalBudget

if TYPE_CHECKING:
    from ragsieve.collector.store.postgres import SessionLock
    from ragsieve.evaluators.judges import Judge


@dataclass
class BatchReport:
    """What happened to each trace of a batch."""

    judged: list[str] = field(default_factory=list)
    already_done: list[str] = field(default_factory=list)
    busy: list[str] = field(default_factory=list)
    over_budget: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    calls: int = 0
    errors: int = 0
    cost_usd: float = 0.0

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready summary."""
        return {
            "judged": len(self.judged),
            "already_done": len(self.already_done),
            "busy": len(self.busy),
            "over_budget": len(self.over_budget),
            "missing": len(self.missing),
            "calls": self.calls,
            "errors": self.errors,
            "cost_usd": round(self.cost_usd, 6),
        }


def _trace_lock(trace_id: str) -> int:
    digest = hashlib.blake2b(f"judge\0{trace_id}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big", signed=True)


async def judge_batch(
    store: Store,
    trace_ids: Iterable[str],
    judges: Sequence[Judge],
    *,
    run_id: str,
    budget: GlobalBudget | None = None,
    thresholds: dict[str, float] | None = None,
    clock: Callable[[], float] = time.time,
) -> BatchReport:
    """Judge each trace with every judge it has no checkpoint for, at most once per version.

    Per trace: a non-blocking session-level advisory lock (a trace another worker holds is
    ``busy``), a re-read of its checkpoints, a budget reservation in its own short transaction,
    the judge calls with no transaction open, then results and checkpoints in one short
    transaction, then unlock. All of it runs on the lock's connection, so a batch never waits for
    a second pooled connection while holding one, and every store call runs in a thread, so the
    event loop (and the worker's heartbeat) never blocks on the database. Stops at the first
    trace the budget cannot cover.

    A worker that dies between judging and writing loses only the work: its lock goes with its
    connection, the retry judges the trace again (its budget is reserved twice) and the write
    stays at most once: a judge's checkpoint is inserted first (``ON CONFLICT DO NOTHING``) and
    only a checkpoint this write created gets its results stored.
    """
    if store.dialect != "postgres":
        raise ConfigError(f"store {store.url}: queue workers need a postgresql:// store")
    report, thresholds = BatchReport(), thresholds or {}
    pending_ids = list(dict.fromkeys(trace_ids))
    for i, trace_id in enumerate(pending_ids):
        lock = await asyncio.to_thread(store.try_session_lock, _trace_lock(trace_id))  # type: ignore[attr-defined]
        if lock is None:
            report.busy.append(trace_id)
            continue
        try:
            fits = await _judge_locked(
                lock, trace_id, judges, run_id, budget, thresholds, clock, report
            )
        finally:  # shielded: a second cancellation must not leak the lock and its connection
            await asyncio.shield(asyncio.to_thread(lock.release))
        if not fits:
            report.over_budget.extend(pending_ids[i:])
            break
    return report


async def _judge_locked(
    lock: SessionLock,
    trace_id: str,
    judges: Sequence[Judge],
    run_id: str,
    budget: GlobalBudget | None,
    thresholds: dict[str, float],
    clock: Callable[[], float],
    report: BatchReport,
) -> bool:
    """Judge one locked trace; False when the budget cannot cover it."""
    todo, body = await asyncio.to_thread(_pending_judges, lock, trace_id, judges)
    if not todo:
        report.already_done.append(trace_id)
        return True
    if body is None:
        report.missing.append(trace_id)
        return True
    reserved = 0.0
    if budget is not None:
        granted = await asyncio.to_thread(budget.reserve, len(todo), via=lock)
        if granted is None:
            return False
        reserved = granted
    record = RagInteraction.model_validate_json(body)
    verdicts = [(j, list(await safe_evaluate(j, record))) for j in todo]
    cost = sum(res.cost_usd for _, results in verdicts for res in results)
    report.calls += len(todo)
    report.cost_usd += cost
    report.errors += sum(res.is_error for _, results in verdicts for res in results)
    written = await asyncio.to_thread(
        _write_verdicts, lock, trace_id, verdicts, run_id, thresholds, clock()
    )
    if budget is not None:
        await asyncio.to_thread(budget.settle, reserved, cost, via=lock)
    (report.judged if written else report.already_done).append(trace_id)
    return True


def _pending_judges(
    lock: SessionLock, trace_id: str, judges: Sequence[Judge]
) -> tuple[list[Any], str | None]:
    """Judges with no checkpoint for the trace, and the interaction body (None: not stored)."""
    with lock.transaction(write=False) as cur:
        cur.execute("SELECT judge, judge_version FROM checkpoints WHERE trace_id = %s", (trace_id,))
        done = {(r[0], r[1]) for r in cur.fetchall()}
        todo = [j for j in judges if (j.name, str(j.version)) not in done]
        if not todo:
            return [], None
        cur.execute("SELECT body FROM interactions WHERE trace_id = %s", (trace_id,))
        row = cur.fetchone()
    return todo, (row[0] if row is not None else None)


def _write_verdicts(
    lock: SessionLock,
    trace_id: str,
    verdicts: Sequence[tuple[Any, Sequence[EvalResult]]],
    run_id: str,
    thresholds: dict[str, float],
    now: float,
) -> int:
    """Checkpoints, then results of the judges whose checkpoint is new; returns how many."""
    written = 0
    with lock.transaction() as cur:
        for judge, results in verdicts:
            cur.execute(
                "INSERT INTO checkpoints (trace_id, judge, judge_version, run_id, done_at)"
                " VALUES (%s,%s,%s,%s,%s) ON CONFLICT DO NOTHING RETURNING judge",
                (trace_id, judge.name, str(judge.version), run_id, now),
            )
            if cur.fetchone() is None:  # judged and written by another run already
                continue
            written += 1
            for res in results:
                limit = thresholds.get(res.evaluator)
                flagged = int(res.score is not None and limit is not None and res.score < limit)
                cur.execute(
                    "INSERT INTO results (trace_id, evaluator, judge_version, run_id, label,"
                    " score, flagged, root_cause, created_at, body) VALUES"
                    " (%s,%s,%s,%s,%s,%s,%s,NULL,%s,%s) ON CONFLICT DO NOTHING",
                    (
                        trace_id,
                        res.evaluator,
                        res.judge_version,
                        run_id,
                        res.label,
                        res.score,
                        flagged,
                        now,
                        res.model_dump_json(),
                    ),
                )
    return written


__all__ = ["BatchReport", "judge_batch"]
