"""Judging a run's work with bounded concurrency, group-committed writes and a spend counter.

A judgement's results and its checkpoint commit together in one write; a judge ``error`` is
stored but not checkpointed, so the next run retries it. Once the store fails, the spend budget
runs out or the caller asks to stop, the remaining calls are deferred, not made.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

from ragsieve.collector.store import Store
from ragsieve.evaluators.judges import Judge, safe_evaluate
from ragsieve.evaluators.records import RagInteraction
from ragsieve.jobs.judging.spend import Spend
from ragsieve.jobs.results import resultstore

JUDGE_TIMEOUT_S = 600.0  # last-resort guard; judges enforce their own request timeouts


async def judge_all(
    store: Store,
    run_id: str,
    work: list[tuple[RagInteraction, Judge]],
    *,
    concurrency: int,
    spend: Spend,
    should_stop: Callable[[], bool],
) -> None:
    """Run every (interaction, judge) call with bounded concurrency and group-committed writes."""
    queue: asyncio.Queue[resultstore.Judgement | None] = asyncio.Queue()
    sem = asyncio.Semaphore(concurrency)
    failure: list[BaseException] = []

    async def writer() -> None:
        done = False
        while not done:
            batch = [await queue.get()]
            while not queue.empty():
                batch.append(queue.get_nowait())
            done = batch[-1] is None
            items = [b for b in batch if b is not None]
            if items and not failure:
                try:
                    await asyncio.to_thread(
                        resultstore.save_judgements, store, run_id, items, time.time()
                    )
                except Exception as exc:  # a store failure stops the run; nothing half-written
                    failure.append(exc)

    async def one(it: RagInteraction, judge: Judge) -> None:
        async with sem:
            if failure or should_stop() or spend.over():
                spend.deferred.add(it.trace_id)
                return
            results = await safe_evaluate(judge, it, timeout_s=JUDGE_TIMEOUT_S)
            spend.add(results)
            spend.judged.add(it.trace_id)
            ok = all(r.label != "error" for r in results)
            await queue.put(
                resultstore.Judgement(
                    it.trace_id, judge.name, str(judge.version), results, checkpoint=ok
                )
            )

    write_task = asyncio.create_task(writer())
    try:
        await asyncio.gather(*(one(it, j) for it, j in work))
    finally:
        await queue.put(None)
        await write_task
    if failure:
        raise failure[0]


__all__ = ["JUDGE_TIMEOUT_S", "judge_all"]
