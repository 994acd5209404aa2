"""Job workers on procrastinate: judge settled traces once per judge version, on one budget.

Scale-out mode only (a ``postgresql://`` store); the embedded single-process mode keeps
``ragsieve up`` and needs no queue. The scheduler (``ragsieve workers schedule``) finds settled
interactions that lack a checkpoint for some judge and enqueues them in batches (one queueing lock
per batch); any worker (``ragsieve workers worker``) runs a batch. Per trace, a worker takes a
non-blocking session-level advisory lock, re-reads the checkpoints, reserves budget, judges with
no transaction open, then commits results and checkpoints in one short transaction and unlocks.
A worker killed mid-trace drops its lock with its connection and its job is retried elsewhere
once its heartbeat is stale: the trace may be judged (and its budget reserved) twice, but its
results are written at most once per judge version.
The budget (calls and USD per window) is one row per window in ``budgets``, reserved with an
atomic ``UPDATE ... WHERE spent + n <= limit RETURNING``, so it is global, not per process.

The parts: ``workers_budget`` (the global budget), ``workers_judges`` (judge sets),
``workers_batch`` (judging one batch) and ``workers_queue`` (the procrastinate app and tasks);
this module schedules batches and re-exports the public names.
"""

from __future__ import annotations

import asyncio
import hashlib
import time
from collections.abc import Callable, Sequence
from typing import Any

from ragsieve.collector.store import Store
from ragsieve.jobs.workers_batch import BatchReport, judge_batch
from ragsieve.jobs.workers_budget import BUDGET_NAME as BUDGET_NAME
from ragsieve.jobs.workers_budget import USD_EPSILON as USD_EPSILON
from ragsieve.jobs.workers_budget import BudgetLimits, GlobalBudget
from ragsieve.jobs.workers_judges import PacedJudge, WorkerRuntime, build_judge_set
from ragsieve.jobs.workers_queue import (
    JUDGE_TASK,
    RECOVER_TASK,
    WorkerSettings,
    create_app,
    ensure_queue_schema,
    in_flight_traces,
    open_worker_store,
    recover_stalled,
)
from ragsieve.jobs.workers_queue import QUEUE_SCHEMA_LOCK as QUEUE_SCHEMA_LOCK


# -- scheduling -------------------------------------------------------------------------------
def pending_traces(
    store: Store, judges: Sequence[Any], *, settled_before: float, limit: int = 10_000
) -> list[str]:
    """Settled interactions missing a checkpoint for at least one judge, oldest first."""
    if not judges:
        return []
    pairs = " OR ".join("(c.judge = ? AND c.judge_version = ?)" for _ in judges)
    params: list[Any] = [settled_before]
    for j in judges:
        params += [j.name, str(j.version)]
    params += [len(judges), limit]
    rows = store.query(
        "SELECT i.trace_id FROM interactions i WHERE i.settled_at <= ? AND (SELECT COUNT(*)"
        f" FROM checkpoints c WHERE c.trace_id = i.trace_id AND ({pairs})) < ?"
        " ORDER BY i.seq LIMIT ?",
        params,
    )
    return [r[0] for r in rows]


def batch_lock(trace_ids: Sequence[str], judges: Sequence[str]) -> str:
    """Queueing lock of one batch: the same traces and judges are never queued twice."""
    text = "\n".join([*sorted(trace_ids), "--", *sorted(judges)])
    return "ragsieve-judge:" + hashlib.sha256(text.encode()).hexdigest()[:32]


async def schedule_once(
    app: Any,
    store: Store,
    judges: Sequence[Any],
    *,
    backend: str,
    batch_size: int,
    settle_s: float,
    budget: BudgetLimits,
    thresholds: dict[str, float],
    stalled_after_s: float,
    dry_run: bool = False,
    clock: Callable[[], float] = time.time,
) -> dict[str, int]:
    """One scheduler pass: recover stalled batches, then enqueue settled, unjudged traces."""
    from procrastinate.exceptions import AlreadyEnqueued

    recovered = 0 if dry_run else await recover_stalled(app, stalled_after_s)
    pending = await asyncio.to_thread(
        pending_traces, store, judges, settled_before=clock() - settle_s
    )
    busy = await asyncio.to_thread(in_flight_traces, store)
    todo = [t for t in pending if t not in busy]
    names = [j.name for j in judges]
    batches = already = 0
    for start in range(0, len(todo), batch_size):
        batch = todo[start : start + batch_size]
        if dry_run:
            batches += 1
            continue
        try:
            deferrer = app.configure_task(JUDGE_TASK, queueing_lock=batch_lock(batch, names))
            await deferrer.defer_async(
                trace_ids=batch,
                judges=names,
                backend=backend,
                budget=budget.as_args(),
                thresholds=dict(thresholds),
            )
            batches += 1
        except AlreadyEnqueued:
            already += 1
    return {
        "pending": len(pending),
        "in_flight": len(busy & set(pending)),
        "batches": batches,
        "traces": len(todo),
        "already_queued": already,
        "recovered": recovered,
    }


__all__ = [
    "BatchReport",
    "BudgetLimits",
    "GlobalBudget",
    "JUDGE_TASK",
    "PacedJudge",
    "RECOVER_TASK",
    "WorkerRuntime",
    "WorkerSettings",
    "batch_lock",
    "build_judge_set",
    "create_app",
    "ensure_queue_schema",
    "in_flight_traces",
    "judge_batch",
    "open_worker_store",
    "pending_traces",
    "recover_stalled",
    "schedule_once",
]
