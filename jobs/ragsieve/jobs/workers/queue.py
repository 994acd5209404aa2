"""The procrastinate side of the workers: queue schema, the app and its tasks."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from ragsieve.collector.store import Store
from ragsieve.jobs.settings.workers import WorkerSettings
from ragsieve.jobs.workers.batch import judge_batch
from ragsieve.jobs.workers.budget import BudgetLimits, GlobalBudget
from ragsieve.jobs.workers.judges import WorkerRuntime

if TYPE_CHECKING:
    import procrastinate

log = logging.getLogger("ragsieve.jobs.workers")  # the name operators filter worker logs by

JUDGE_TASK = "ragsieve.judge_batch"
RECOVER_TASK = "ragsieve.recover_stalled"


QUEUE_SCHEMA_LOCK = 0x72616773_71756575  # "ragsqueu"


def ensure_queue_schema(store: Store) -> bool:
    """Install procrastinate's schema once, serialized across processes; True if installed now."""
    from procrastinate.schema import SchemaManager

    with store.transaction() as cur:
        cur.execute("SELECT pg_advisory_xact_lock(%s)", (QUEUE_SCHEMA_LOCK,))
        cur.execute("SELECT to_regclass('procrastinate_jobs')")
        if cur.fetchone()[0] is not None:
            return False
        cur.execute(SchemaManager.get_schema())  # no parameters: sent as one script
    return True


def open_worker_store(url: str, concurrency: int) -> Store:
    """The worker's store, its pool sized so ``concurrency`` batches never wait for a connection.

    A batch holds one connection per trace (its lock) and briefly needs another for bookkeeping
    outside ``judge_batch``; ``2 * concurrency + 1`` leaves one spare for the process itself.
    """
    from ragsieve.collector.store.postgres import PostgresStore

    return PostgresStore(url, max_connections=max(8, 2 * concurrency + 1))


def create_app(
    url: str, settings: WorkerSettings | None = None, runtime: WorkerRuntime | None = None
) -> procrastinate.App:
    """The procrastinate app with ragsieve's tasks; ``runtime`` is None in scheduler processes."""
    import procrastinate

    from ragsieve.collector.store.postgres import _conninfo

    cfg = settings or WorkerSettings()
    app = procrastinate.App(
        connector=procrastinate.PsycopgConnector(
            conninfo=_conninfo(url), min_size=1, max_size=max(2, cfg.concurrency + 1)
        )
    )
    retry = procrastinate.RetryStrategy(max_attempts=cfg.max_attempts, wait=2)

    @app.task(name=JUDGE_TASK, queue=cfg.queue, pass_context=True, retry=retry)
    async def judge_task(
        context: procrastinate.JobContext,
        trace_ids: list[str],
        judges: list[str],
        backend: str,
        budget: dict[str, Any],
        thresholds: dict[str, float],
    ) -> dict[str, Any]:
        if runtime is None:
            raise RuntimeError("this process only schedules; start `ragsieve workers worker`")
        limits = BudgetLimits(**budget)
        gb = (
            GlobalBudget(runtime.store, limits)
            if limits.calls is not None or limits.usd is not None
            else None
        )
        report = await judge_batch(
            runtime.store,
            trace_ids,
            runtime.judges(judges, backend),
            run_id=f"job-{context.job.id}",
            budget=gb,
            thresholds=thresholds,
        )
        log.info("batch %s: %s", context.job.id, report.as_dict())
        return report.as_dict()

    @app.periodic(cron="* * * * *", periodic_id="ragsieve-recover")
    @app.task(name=RECOVER_TASK, queue=cfg.queue, queueing_lock=RECOVER_TASK)
    async def recover_task(timestamp: int) -> int:
        return await recover_stalled(app, cfg.stalled_after_s)

    return app


async def recover_stalled(app: procrastinate.App, stalled_after_s: float) -> int:
    """Put batches of workers that stopped heartbeating back in the queue; returns how many."""
    stalled = list(
        await app.job_manager.get_stalled_jobs(
            seconds_since_heartbeat=stalled_after_s, task_name=JUDGE_TASK
        )
    )
    for job in stalled:
        log.warning("retrying batch %s of stalled worker %s", job.id, job.worker_id)
        await app.job_manager.retry_job(job)
    return len(stalled)


def in_flight_traces(store: Store) -> set[str]:
    """Traces in judge batches that are queued or running."""
    rows = store.query(
        "SELECT args FROM procrastinate_jobs WHERE task_name = ? AND status IN ('todo', 'doing')",
        (JUDGE_TASK,),
    )
    return {t for (args,) in rows for t in (args or {}).get("trace_ids", [])}


__all__ = [
    "JUDGE_TASK",
    "QUEUE_SCHEMA_LOCK",
    "RECOVER_TASK",
    "create_app",
    "ensure_queue_schema",
    "in_flight_traces",
    "open_worker_store",
    "recover_stalled",
]
