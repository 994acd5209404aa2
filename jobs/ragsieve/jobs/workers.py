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
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import math
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from ragsieve.collector.store import Store
from ragsieve.evaluators.errors import ConfigError
from ragsieve.evaluators.judges import safe_evaluate
from ragsieve.evaluators.records import EvalResult, RagInteraction

log = logging.getLogger(__name__)

JUDGE_TASK = "ragsieve.judge_batch"
RECOVER_TASK = "ragsieve.recover_stalled"
BUDGET_NAME = "judge"
USD_EPSILON = 1e-9  # float sums of USD amounts: 3 x 0.10 must fit a 0.30 limit


class WorkerSettings(BaseModel):
    """Queue workers (section ``[workers]``)."""

    model_config = ConfigDict(extra="forbid")

    queue: str = Field("ragsieve-judge", description="procrastinate queue the judge batches use.")
    concurrency: int = Field(1, ge=1, description="Batches one worker process runs at once.")
    batch_size: int = Field(20, ge=1, description="Traces per enqueued judge batch.")
    schedule_every_s: float = Field(30.0, gt=0, description="Pause between scheduler passes.")
    heartbeat_s: float = Field(10.0, gt=0, description="Worker heartbeat interval.")
    stalled_after_s: float = Field(
        30.0, gt=0, description="A running batch whose worker is silent this long is retried."
    )
    max_attempts: int = Field(5, ge=1, description="Attempts per batch before it fails.")
    budget_window_s: float = Field(
        3600.0, gt=0, description="Window the global judge budget (jobs.budget_*) applies to."
    )
    usd_per_call_estimate: float = Field(
        0.0, ge=0, description="USD reserved per judge call before the real cost is known."
    )


# -- budget -----------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class BudgetLimits:
    """Most judge calls and USD per window, shared by every worker (None: unlimited).

    A USD limit needs ``usd_per_call_estimate`` > 0: concurrent batches reserve it per call before
    judging, and only that reservation keeps them under the limit (the real cost is known after
    the calls). The limit holds exactly when no call costs more than the estimate; otherwise the
    window can overrun by at most the excess of the calls in flight, and no reservation is granted
    once the spend reaches the limit.
    """

    calls: int | None = None
    usd: float | None = None
    window_s: float = 3600.0
    usd_per_call_estimate: float = 0.0

    def __post_init__(self) -> None:
        if self.usd_per_call_estimate < 0:
            raise ConfigError(
                f"workers.usd_per_call_estimate: must be >= 0 (got {self.usd_per_call_estimate})"
            )
        if self.usd is not None and self.usd_per_call_estimate <= 0:
            raise ConfigError(
                "workers.usd_per_call_estimate: must be > 0 when jobs.budget_usd is set"
                f" (got {self.usd_per_call_estimate}); set it to the most one judge call can cost"
            )

    def as_args(self) -> dict[str, Any]:
        """JSON form carried in job arguments, so every worker applies the scheduler's limits."""
        return {
            "calls": self.calls,
            "usd": self.usd,
            "window_s": self.window_s,
            "usd_per_call_estimate": self.usd_per_call_estimate,
        }


class GlobalBudget:
    """Atomic budget reservations in the ``budgets`` table (works on SQLite and Postgres)."""

    def __init__(
        self,
        store: Store,
        limits: BudgetLimits,
        *,
        name: str = BUDGET_NAME,
        clock: Callable[[], float] = time.time,
    ) -> None:
        if limits.window_s <= 0:
            raise ConfigError(f"budget window must be > 0 s, got {limits.window_s}")
        self.store, self.limits, self.name, self.clock = store, limits, name, clock

    def window_start(self) -> float:
        """Start of the current window (windows are aligned to the epoch)."""
        return math.floor(self.clock() / self.limits.window_s) * self.limits.window_s

    def reserve(self, calls: int, *, via: Any = None) -> float | None:
        """Reserve ``calls`` judge calls; returns the USD reserved, or None when over budget.

        ``via`` is anything with the store's ``transaction()`` (e.g. a held ``SessionLock``), so
        a caller holding a pooled connection never waits for a second one.
        """
        est = calls * self.limits.usd_per_call_estimate
        start, lim = self.window_start(), self.limits
        with (via or self.store).transaction() as cur:
            cur.execute(
                self.store.sql(
                    "INSERT INTO budgets (name, window_start, calls_limit, usd_limit, updated_at)"
                    " VALUES (?,?,?,?,?) ON CONFLICT (name, window_start) DO NOTHING"
                ),
                (self.name, start, lim.calls, lim.usd, self.clock()),
            )
            fits, params = "", [calls, est, lim.calls, lim.usd, self.clock(), self.name, start]
            if lim.calls is not None:
                fits += " AND calls_spent + ? <= ?"
                params += [calls, lim.calls]
            if lim.usd is not None:  # spent can pass the limit when calls cost over the estimate
                fits += " AND usd_spent < ? AND usd_spent + ? <= ?"
                params += [lim.usd - USD_EPSILON, est, lim.usd + USD_EPSILON]
            cur.execute(
                self.store.sql(
                    "UPDATE budgets SET calls_spent = calls_spent + ?, usd_spent = usd_spent + ?,"
                    " calls_limit = ?, usd_limit = ?, updated_at = ?"
                    " WHERE name = ? AND window_start = ?" + fits + " RETURNING calls_spent"
                ),
                params,
            )
            ok = cur.fetchone() is not None
        return est if ok else None

    def settle(self, reserved_usd: float, actual_usd: float, *, via: Any = None) -> None:
        """Replace the USD estimate of a reservation with the real cost."""
        if actual_usd == reserved_usd:
            return
        with (via or self.store).transaction() as cur:
            cur.execute(
                self.store.sql(
                    "UPDATE budgets SET usd_spent = usd_spent + ? WHERE name = ?"
                    " AND window_start = ?"
                ),
                (actual_usd - reserved_usd, self.name, self.window_start()),
            )

    def spent(self) -> tuple[int, float]:
        """Calls and USD spent in the current window."""
        rows = self.store.query(
            "SELECT calls_spent, usd_spent FROM budgets WHERE name = ? AND window_start = ?",
            (self.name, self.window_start()),
        )
        return (int(rows[0][0]), float(rows[0][1])) if rows else (0, 0.0)


# -- judges -----------------------------------------------------------------------------------
class PacedJudge:
    """Public testing/drill judge: wraps a real judge and adds a fixed latency per call.

    Models a remote LLM judge's latency around the deterministic offline judges, for crash drills
    and throughput benchmarks (``--judge-latency-ms``). Verdicts, name and version are the wrapped
    judge's, so checkpoints are shared with unpaced runs.
    """

    def __init__(self, inner: Any, latency_s: float) -> None:
        self.inner, self.latency_s = inner, latency_s
        self.name: str = inner.name
        self.version: str = inner.version

    async def evaluate(self, interaction: RagInteraction) -> Sequence[EvalResult]:
        """Sleep ``latency_s``, then delegate."""
        await asyncio.sleep(self.latency_s)
        return list(await self.inner.evaluate(interaction))


def build_judge_set(
    names: Sequence[str], backend: str = "offline", *, latency_ms: float = 0.0, **options: Any
) -> list[Any]:
    """Judges by registry name via ``ragsieve.evaluators.judges.build_judges`` when available."""
    from ragsieve.evaluators import judges as registry

    build = getattr(registry, "build_judges", None)
    if build is not None:
        judges = list(build(list(names), backend=backend, **options))
    else:  # the registry is still being built: the offline judges are importable directly
        if backend != "offline":
            raise ConfigError(f"jobs.backend: {backend!r} needs the judge registry; use 'offline'")
        from ragsieve.evaluators.judges.faithfulness import FaithfulnessJudge
        from ragsieve.evaluators.judges.relevance import AnswerRelevanceJudge, ContextRelevanceJudge

        classes = (FaithfulnessJudge, AnswerRelevanceJudge, ContextRelevanceJudge)
        known = {c.name: c for c in classes}
        unknown = [n for n in names if n not in known]
        if unknown:
            raise ConfigError(f"jobs.judges: unknown judge {unknown[0]!r}; known: {sorted(known)}")
        judges = [known[n]() for n in names]
    if latency_ms > 0:
        judges = [PacedJudge(j, latency_ms / 1000.0) for j in judges]
    return judges


# -- judging one batch ------------------------------------------------------------------------
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
    judges: Sequence[Any],
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
    lock: Any,
    trace_id: str,
    judges: Sequence[Any],
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
    lock: Any, trace_id: str, judges: Sequence[Any]
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
    lock: Any,
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


# -- the queue (procrastinate) ----------------------------------------------------------------
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


@dataclass
class WorkerRuntime:
    """What a worker process needs to run batches: the store and judges (built once per spec)."""

    store: Store
    latency_ms: float = 0.0
    judge_options: dict[str, Any] = field(default_factory=dict)
    _judges: dict[tuple[tuple[str, ...], str], list[Any]] = field(default_factory=dict)

    def judges(self, names: Sequence[str], backend: str) -> list[Any]:
        """The judge objects for a batch's judge names and backend."""
        key = (tuple(names), backend)
        if key not in self._judges:
            self._judges[key] = build_judge_set(
                names, backend, latency_ms=self.latency_ms, **self.judge_options
            )
        return self._judges[key]


def create_app(
    url: str, settings: WorkerSettings | None = None, runtime: WorkerRuntime | None = None
) -> Any:
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
        context: Any,
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


async def recover_stalled(app: Any, stalled_after_s: float) -> int:
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
