"""Judging a run's work with bounded concurrency, group-committed writes and a spend counter.

A judgement's results and its checkpoint commit together in one write; a judge ``error`` is
stored but not checkpointed, so the next run retries it. Once the store fails, the spend budget
runs out or the caller asks to stop, the remaining calls are deferred, not made.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Sequence
from typing import Any

from ragsieve.collector.store import Store
from ragsieve.evaluators.judges import safe_evaluate
from ragsieve.evaluators.records import EvalResult, RagInteraction
from ragsieve.jobs import resultstore

JUDGE_TIMEOUT_S = 600.0  # last-resort guard; judges enforce their own request timeouts


class Spend:
    """Calls, tokens, cost and outcomes of one run's judging, against an optional USD budget."""

    def __init__(self, budget_usd: float | None) -> None:
        self.budget_usd = budget_usd
        self.calls = 0
        self.usd = 0.0
        self.prompt_tokens = 0
        self.completion_tokens = 0
        self.errors = 0
        self.skipped = 0
        self.cached = 0
        self.cascade_saved = 0
        self.results = 0
        self.deferred: set[str] = set()
        self.judged: set[str] = set()

    def over(self) -> bool:
        """True once the USD budget is spent."""
        return self.budget_usd is not None and self.usd >= self.budget_usd

    def add(self, results: Sequence[EvalResult]) -> None:
        """Count one judge call and its results."""
        self.calls += 1
        for r in results:
            self.results += 1
            self.usd += r.cost_usd
            self.prompt_tokens += r.prompt_tokens
            self.completion_tokens += r.completion_tokens
            self.errors += r.label == "error"
            self.skipped += r.label == "skipped"
            self.cached += bool(r.cached)
            # an LLM call was saved only when one would have been made: not for skipped items
            self.cascade_saved += r.metadata.get("escalated") is False and r.label != "skipped"


async def judge_all(
    store: Store,
    run_id: str,
    work: list[tuple[RagInteraction, Any]],
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

    async def one(it: RagInteraction, judge: Any) -> None:
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


__all__ = ["JUDGE_TIMEOUT_S", "Spend", "judge_all"]
