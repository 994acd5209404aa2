"""``ragsieve workers worker|schedule``: queue workers and their scheduler on a Postgres store."""

from __future__ import annotations

import asyncio
import functools
import json
import logging
import sys
import time
from typing import TYPE_CHECKING, Any

import click

from ragsieve.collector.cliopts import run_cli, store_option
from ragsieve.collector.store import masked_url
from ragsieve.evaluators.errors import ConfigError
from ragsieve.evaluators.tools.extras import require

if TYPE_CHECKING:
    from ragsieve.jobs.cli import AppContext
    from ragsieve.jobs.settings import Settings
    from ragsieve.jobs.settings.workers import WorkerSettings


def _settings(obj: AppContext | None, **flags: Any) -> Settings:
    if obj is None:  # run as `python -m ragsieve.jobs.workers.cli` (before the root CLI has us)
        from ragsieve.jobs.cli import AppContext

        obj = AppContext()
    settings = obj.settings(**flags)
    if not settings.store.startswith(("postgresql://", "postgres://", "postgresql+")):
        raise ConfigError(
            f"store: queue workers need a postgresql:// store (got {masked_url(settings.store)!r})"
        )
    return settings


def _worker_settings(settings: Settings) -> WorkerSettings:
    """The ``[workers]`` section; flags were merged into it by ``_settings``."""
    return settings.workers


def _judge_options(settings: Settings) -> dict[str, Any]:
    """LLM endpoint and cache for LLM/cascade judges (same as ``ragsieve jobs run``)."""
    return {
        "llm": settings.llm.to_config(settings.golden.pii_patterns),
        "cache_path": settings.jobs.cache_path,
        "thresholds": dict(settings.jobs.thresholds),  # judges label with the job's thresholds
        "model": settings.model.to_config(),  # the local-model tier's folders ([model])
    }


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
def workers() -> None:
    """Queue workers (procrastinate on the Postgres store) and the scheduler feeding them."""


@workers.command("worker")
@store_option
@click.option("--queue", default=None, help="Queue to work on (default ragsieve-judge).")
@click.option("--concurrency", type=int, default=None, help="Batches run at once (default 1).")
@click.option("--name", default=None, help="Worker name in logs.")
@click.option("--heartbeat-s", type=float, default=None, help="Heartbeat interval (default 10).")
@click.option(
    "--stalled-after-s",
    type=float,
    default=None,
    help="Silent workers' batches are retried after this (default 30).",
)
@click.option(
    "--judge-latency-ms",
    type=float,
    default=0.0,
    show_default=True,
    help="Add this latency to every judge call (crash drills, benchmarks).",
)
@click.option("--burst", is_flag=True, help="Exit when the queue is empty instead of waiting.")
@click.option(
    "--outage-give-up-s",
    type=float,
    default=None,
    help="Ride out a database outage this long (reconnecting with backoff), then exit 1"
    " (default 300).",
)
@click.pass_obj
def worker_cmd(
    obj: AppContext | None,
    store: str | None,
    queue: str | None,
    concurrency: int | None,
    name: str | None,
    heartbeat_s: float | None,
    stalled_after_s: float | None,
    judge_latency_ms: float,
    burst: bool,
    outage_give_up_s: float | None,
) -> None:
    """Run judge batches from the queue until stopped (SIGINT/SIGTERM finish the current batch).

    A database outage stops procrastinate's worker; it is restarted once the server answers
    again, and the command exits 1 (never 0) when the outage outlasts ``--outage-give-up-s``.
    """
    require("postgres", "ragsieve workers worker")
    from ragsieve.jobs.workers.queue import create_app

    settings = _settings(
        obj,
        **{
            "store": store,
            "workers.queue": queue,
            "workers.concurrency": concurrency,
            "workers.heartbeat_s": heartbeat_s,
            "workers.stalled_after_s": stalled_after_s,
            "workers.outage_give_up_s": outage_give_up_s,
        },
    )
    cfg = _worker_settings(settings)
    st, runtime = _open_runtime(settings, cfg, judge_latency_ms)
    app = create_app(settings.store, cfg, runtime)
    click.echo(
        f"ragsieve worker {name or ''} on queue {cfg.queue} (store {masked_url(settings.store)})",
        err=True,
    )
    from ragsieve.collector.store.postgres import _conninfo
    from ragsieve.jobs.workers.supervise import pg_reachable, supervise

    probe = pg_reachable(_conninfo(settings.store))
    run = functools.partial(_run_worker, app, cfg, name, burst)
    try:
        asyncio.run(supervise(run, probe, give_up_s=cfg.outage_give_up_s, finishes=burst))
    finally:
        st.close()


def _open_runtime(settings: Settings, cfg: WorkerSettings, latency_ms: float) -> tuple[Any, Any]:
    """The worker's store (its queue schema in place) and the runtime that judges its batches."""
    from ragsieve.jobs.workers.judges import WorkerRuntime
    from ragsieve.jobs.workers.queue import ensure_queue_schema, open_worker_store

    st = open_worker_store(settings.store, cfg.concurrency)
    ensure_queue_schema(st)
    pii = tuple(settings.golden.pii_patterns) if settings.golden.scrub_pii else None
    options = _judge_options(settings)
    return st, WorkerRuntime(st, latency_ms=latency_ms, judge_options=options, pii_patterns=pii)


async def _run_worker(app: Any, cfg: WorkerSettings, name: str | None, burst: bool) -> None:
    """One run of procrastinate's worker until it stops (a signal, or a lost database)."""
    from procrastinate.worker import WORKER_NAME

    async with app.open_async():
        await app.run_worker_async(
            queues=[cfg.queue],
            concurrency=cfg.concurrency,
            name=name or WORKER_NAME,
            wait=not burst,
            update_heartbeat_interval=cfg.heartbeat_s,
            stalled_worker_timeout=cfg.stalled_after_s,
            fetch_job_polling_interval=1.0,
            install_signal_handlers=False,  # supervise's: a stop signal is told from a failure
        )


@workers.command("schedule")
@store_option
@click.option(
    "--judge", "judges", multiple=True, help="Judge to run (repeatable; default jobs.judges)."
)
@click.option("--backend", default=None, help="Judge backend (default jobs.backend).")
@click.option("--settle-s", type=float, default=None, help="Only traces settled this long ago.")
@click.option("--batch-size", type=int, default=None, help="Traces per batch (default 20).")
@click.option("--queue", default=None, help="Queue to fill (default ragsieve-judge).")
@click.option(
    "--budget-calls",
    type=int,
    default=None,
    help="Most judge calls per window, over all workers (default jobs.budget_calls).",
)
@click.option(
    "--budget-usd",
    type=float,
    default=None,
    help="Most judge USD per window, over all workers (default jobs.budget_usd).",
)
@click.option(
    "--usd-per-call-estimate",
    type=float,
    default=None,
    help="USD reserved per judge call: the most one call can cost (needed with --budget-usd).",
)
@click.option("--budget-window-s", type=float, default=None, help="Budget window (default 3600).")
@click.option(
    "--stalled-after-s",
    type=float,
    default=None,
    help="Retry batches of workers silent this long (default 30).",
)
@click.option("--every-s", type=float, default=None, help="Pause between passes (default 30).")
@click.option("--once", is_flag=True, help="One pass, then exit.")
@click.option("--dry-run", is_flag=True, help="Count what would be enqueued; enqueue nothing.")
@click.option("--json", "as_json", is_flag=True, help="One JSON line per pass on stdout.")
@click.pass_obj
def schedule_cmd(
    obj: AppContext | None,
    store: str | None,
    once: bool,
    dry_run: bool,
    as_json: bool,
    **options: Any,
) -> None:
    """Enqueue settled, unjudged traces in batches; retry batches of crashed workers."""
    require("postgres", "ragsieve workers schedule")
    flags: dict[str, Any] = {SCHEDULE_FLAGS[k]: v for k, v in options.items()}
    flags["jobs.judges"] = list(flags["jobs.judges"]) or None
    settings = _settings(obj, store=store, **flags)
    try:
        asyncio.run(_schedule_loop(settings, once=once, dry_run=dry_run, as_json=as_json))
    except KeyboardInterrupt:  # pragma: no cover - interactive stop
        pass


# `workers schedule` option -> the setting it overrides
SCHEDULE_FLAGS = {
    "judges": "jobs.judges",
    "backend": "jobs.backend",
    "settle_s": "jobs.settle_s",
    "budget_calls": "jobs.budget_calls",
    "budget_usd": "jobs.budget_usd",
    "queue": "workers.queue",
    "batch_size": "workers.batch_size",
    "budget_window_s": "workers.budget_window_s",
    "usd_per_call_estimate": "workers.usd_per_call_estimate",
    "stalled_after_s": "workers.stalled_after_s",
    "every_s": "workers.schedule_every_s",
}


async def _schedule_loop(settings: Settings, *, once: bool, dry_run: bool, as_json: bool) -> None:
    """Schedule passes every ``workers.schedule_every_s`` (one pass with ``once``/``dry_run``)."""
    from ragsieve.collector.store import open_store
    from ragsieve.jobs.workers.budget import BudgetLimits
    from ragsieve.jobs.workers.judges import build_judge_set
    from ragsieve.jobs.workers.queue import create_app, ensure_queue_schema
    from ragsieve.jobs.workers.schedule import schedule_once

    cfg = _worker_settings(settings)
    jobs = settings.jobs
    limits = BudgetLimits(
        calls=jobs.budget_calls,
        usd=jobs.budget_usd,
        window_s=cfg.budget_window_s,
        usd_per_call_estimate=cfg.usd_per_call_estimate,
    )
    st = open_store(settings.store)
    log = logging.getLogger("ragsieve.jobs.workers")
    try:
        ensure_queue_schema(st)
        # with the store, so the scheduler's judge versions carry the active calibration
        judge_objs = build_judge_set(
            jobs.judges, jobs.backend, store=st, model=settings.model.to_config(),
            thresholds=dict(jobs.thresholds),
        )  # fmt: skip
        app = create_app(settings.store, cfg)
        async with app.open_async():
            while True:
                report = await schedule_once(
                    app, st, judge_objs, backend=jobs.backend, batch_size=cfg.batch_size,
                    settle_s=jobs.settle_s, budget=limits, thresholds=dict(jobs.thresholds),
                    stalled_after_s=cfg.stalled_after_s, dry_run=dry_run,
                )  # fmt: skip
                if as_json:
                    click.echo(json.dumps({"at": time.time(), **report}))
                    sys.stdout.flush()
                else:
                    log.info("schedule pass: %s", report)
                if once or dry_run:
                    return
                await asyncio.sleep(cfg.schedule_every_s)
    finally:
        st.close()


def main(argv: list[str] | None = None) -> None:
    """Standalone entry (``python -m ragsieve.jobs.workers.cli``); same exit codes as the root."""
    logging.basicConfig(
        level=logging.WARNING,
        stream=sys.stderr,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    run_cli(workers, "ragsieve workers", argv)


if __name__ == "__main__":  # pragma: no cover
    main()
