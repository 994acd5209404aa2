"""Queue-worker batches in-process on a real Postgres: pool use, event loop, USD budget."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from ragsieve.evaluators.errors import ConfigError
from ragsieve.evaluators.testing import make_interaction
from ragsieve.jobs.workers.batch import judge_batch
from ragsieve.jobs.workers.budget import BudgetLimits, GlobalBudget
from ragsieve.jobs.workers.judges import build_judge_set

pytestmark = pytest.mark.postgres


@pytest.fixture
def small_pool_store(pg_database: str) -> Iterator[Any]:
    """A store whose pool has two connections and gives up waiting for one after 2 s."""
    from ragsieve.collector.store.postgres import PostgresStore

    store = PostgresStore(pg_database, max_connections=2, connect_timeout_s=2.0)
    try:
        yield store
    finally:
        store.close()


def _settled(store: Any, n: int) -> list[str]:
    ids = []
    for i in range(n):
        rec = make_interaction(trace_id=f"{0xB000 + i:032x}")
        store.execute(
            "INSERT INTO traces (trace_id, first_seen_at, last_seen_at, has_root)"
            " VALUES (?, 1, 1, 1)",
            (rec.trace_id,),
        )
        assert store.save_interaction(rec, seen_at=2.0, now=3.0)
        ids.append(rec.trace_id)
    return ids


async def test_more_batches_than_pooled_connections_all_finish_and_never_block_the_loop(
    small_pool_store: Any,
) -> None:
    # A batch used to hold a pooled connection in a transaction across the judge call while its
    # budget reservation waited (synchronously, on the event loop) for a second one.
    store = small_pool_store
    ids = _settled(store, 10)
    judges = build_judge_set(["faithfulness"], latency_ms=200)
    budget = GlobalBudget(store, BudgetLimits(calls=1000, window_s=3600))
    gaps: list[float] = []

    async def ticker(stop: asyncio.Event) -> None:  # stands in for the worker's heartbeat
        last = time.monotonic()
        while not stop.is_set():
            await asyncio.sleep(0.02)
            now = time.monotonic()
            gaps.append(now - last)
            last = now

    stop = asyncio.Event()
    tick = asyncio.create_task(ticker(stop))
    reports = await asyncio.gather(
        *[judge_batch(store, ids[i::5], judges, run_id=f"r{i}", budget=budget) for i in range(5)],
        return_exceptions=True,
    )
    stop.set()
    await tick
    assert [r for r in reports if isinstance(r, BaseException)] == []
    assert sum(len(r.judged) for r in reports) == 10  # type: ignore[union-attr]
    assert store.query("SELECT COUNT(*) FROM checkpoints") == [(10,)]
    assert store.query("SELECT COUNT(*) FROM results") == [(10,)]
    assert budget.spent()[0] == 10
    assert max(gaps) < 1.0, f"event loop stalled for {max(gaps):.2f} s"


def test_a_usd_budget_needs_a_per_call_estimate() -> None:
    with pytest.raises(ConfigError, match=r"workers\.usd_per_call_estimate: must be > 0"):
        BudgetLimits(usd=0.30)
    assert BudgetLimits(usd=0.30, usd_per_call_estimate=0.10).usd == 0.30
    assert BudgetLimits(calls=5).usd_per_call_estimate == 0.0  # no USD limit: no estimate needed


def test_concurrent_usd_reservations_stop_at_the_limit(pg_store: Any) -> None:
    budget = GlobalBudget(pg_store, BudgetLimits(usd=0.30, usd_per_call_estimate=0.10))
    granted: list[float | None] = []
    barrier = threading.Barrier(8)

    def reserve() -> None:
        barrier.wait()
        granted.append(budget.reserve(1))

    threads = [threading.Thread(target=reserve) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(g for g in granted if g is not None) == [0.10] * 3
    assert granted.count(None) == 5
    budget.settle(0.10, 0.25)  # one call cost more than the estimate: spend is now over
    assert budget.spent()[1] == pytest.approx(0.45)
    assert budget.reserve(1) is None


def test_schedule_refuses_a_usd_budget_without_an_estimate(pg_database: str) -> None:
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "ragsieve.jobs.workers.cli",
            "schedule",
            "--store",
            pg_database,
            "--budget-usd",
            "0.30",
            "--once",
            "--dry-run",
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 2, out.stderr
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and "workers.usd_per_call_estimate" in lines[0], out.stderr
