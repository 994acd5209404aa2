"""The scheduler's pass: find settled traces a judge has not checkpointed, enqueue them in batches.

One batch per ``batch_size`` traces, each with a queueing lock over its traces and judges, so the
same batch is never queued twice; traces already in a queued or running batch are left out, and
batches of workers that stopped heartbeating are put back in the queue first.
"""

from __future__ import annotations

import asyncio
import hashlib
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from ragsieve.collector.store import Store
from ragsieve.jobs.workers.budget import BudgetLimits
from ragsieve.jobs.workers.queue import JUDGE_TASK, in_flight_traces, recover_stalled

if TYPE_CHECKING:
    import procrastinate
    from procrastinate.types import JSONValue

    from ragsieve.evaluators.judges import Judge


def pending_traces(
    store: Store, judges: Sequence[Judge], *, settled_before: float, limit: int = 10_000
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
    app: procrastinate.App,
    store: Store,
    judges: Sequence[Judge],
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
            ids: list[JSONValue] = list(batch)
            judge_names: list[JSONValue] = list(names)
            await deferrer.defer_async(
                trace_ids=ids,
                judges=judge_names,
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


__all__ = ["batch_lock", "pending_traces", "schedule_once"]
