"""``ragsieve up``: the collector and the scheduled job in one process; SIGTERM drains cleanly."""

from __future__ import annotations

import json
import logging
import signal
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

if TYPE_CHECKING:
    from ragsieve.collector.serve.server import ServerThread
    from ragsieve.collector.store import Store
    from ragsieve.jobs.settings import Settings

log = logging.getLogger(__name__)


def serve_and_schedule(
    settings: Settings, stop: threading.Event, *, token: str | None = None
) -> None:
    """Run the collector and the job every ``jobs.every_minutes`` until ``stop`` is set.

    The job runs once at start, then on the schedule; after each pass the alert rules are
    evaluated and ``report.html_path`` is rewritten (``run.after``). On stop, a running job stops
    launching judge calls, commits what finished and returns; then the collector drains its
    write queue and the store closes.
    """
    from ragsieve.collector.store import open_store

    store = open_store(settings.store)
    server, app = _collector(settings, store, token)
    try:
        server.start()
        _announce(settings, server, app)
        _schedule(settings, stop, _job(store, settings, stop))
    finally:
        server.stop()
        store.close()
    click.echo("ragsieve up: stopped cleanly", err=True)


def _collector(settings: Settings, store: Store, token: str | None) -> tuple[ServerThread, Any]:
    """The collector app and its server thread (not started)."""
    from ragsieve.collector.serve.app import create_app
    from ragsieve.collector.serve.server import ServerThread

    cfg = settings.collector
    app = create_app(store, cfg, token=token, grpc_port=cfg.grpc_port or None)
    server = ServerThread(app, host=cfg.host, port=cfg.port, max_connections=cfg.max_connections)
    return server, app


def _announce(settings: Settings, server: ServerThread, app: Any) -> None:
    from ragsieve.collector.cli import forward_note
    from ragsieve.collector.store import masked_url

    cfg = settings.collector
    grpc = f" and grpc://{cfg.host}:{app.state.grpc_port}" if cfg.grpc_port else ""
    click.echo(
        f"ragsieve up: collector listening on {server.url}/v1/traces{grpc}; job every"
        f" {settings.jobs.every_minutes:g} min (store {masked_url(settings.store)})"
        + forward_note(settings),
        err=True,
    )


SUMMARY_KEYS = ("run_id", "discovered", "judged", "flagged", "judge_errors", "already_judged")


def _job(store: Store, settings: Settings, stop: threading.Event) -> Callable[[], None]:
    """One scheduled pass: run, then alerts and the HTML report; a failure waits for the next."""
    from ragsieve.jobs.run.after import after_run
    from ragsieve.jobs.run.run import run_once

    def job() -> None:
        if stop.is_set():
            return
        try:
            out = run_once(store, settings, should_stop=stop.is_set)
            if out.skipped:  # another run (a cron, a second `up`) held the store
                click.echo(f"ragsieve up: run skipped: {out.skipped}", err=True)
                return
            after = after_run(store, settings, out.report)
        except Exception:  # one failed pass must not end the service; the next one retries
            log.exception("job run failed")
            click.echo("ragsieve up: job run failed (see log); retrying on schedule", err=True)
            return
        summary = {k: out.report.get(k) for k in (*SUMMARY_KEYS, "deferred")}
        summary["alerts_firing"] = after["alerts"].get("firing")
        summary["misdated"] = (out.report.get("misdated") or {}).get("interactions", 0)
        if "html" in after:
            summary["report"] = after["html"].get("path")
        click.echo("ragsieve up: run " + json.dumps(summary), err=True)

    return job


def _schedule(settings: Settings, stop: threading.Event, job: Callable[[], None]) -> None:
    """Run ``job`` now and every ``jobs.every_minutes`` until ``stop`` is set."""
    import schedule

    scheduler = schedule.Scheduler()
    # schedule takes a float interval at run time (tests run sub-minute schedules)
    scheduler.every(settings.jobs.every_minutes * 60).seconds.do(job)  # type: ignore[arg-type]
    job()
    while not stop.is_set():
        scheduler.run_pending()
        idle = scheduler.idle_seconds
        stop.wait(max(0.05, min(1.0, idle if idle is not None else 1.0)))


@click.command("up", context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "--config",
    type=click.Path(path_type=Path, dir_okay=False),
    default=None,
    help="TOML config file (same as the root --config).",
)
@click.option("--store", default=None, help="Store URL (default sqlite:///ragsieve.db).")
@click.option("--host", default=None, help="Collector bind address (default 127.0.0.1).")
@click.option("--port", type=int, default=None, help="Collector port (default 4318; 0 = free).")
@click.option("--grpc-port", type=int, default=None, help="OTLP/gRPC port (default 4317; 0 = off).")
@click.option(
    "--every-minutes",
    type=click.FloatRange(min=0, min_open=True),
    default=None,
    help="How often the job runs (jobs.every_minutes).",
)
@click.pass_obj
def up(
    obj: Any,
    config: Path | None,
    store: str | None,
    host: str | None,
    port: int | None,
    grpc_port: int | None,
    every_minutes: float | None,
) -> None:
    """Run the collector and the online evaluator together on the embedded defaults."""
    from ragsieve.collector.cli import grpc_port_to_serve, open_warning, resolve_token

    if config is not None:
        obj.config = config
    settings = obj.settings(
        **{
            "store": store,
            "collector.host": host,
            "collector.port": port,
            "collector.grpc_port": grpc_port,
            "jobs.every_minutes": every_minutes,
        }
    )
    token = resolve_token(settings.collector.token_env)
    cfg = settings.collector
    if (warning := open_warning(cfg, token)) is not None:  # as `collector serve` warns
        click.echo(warning, err=True)
    if grpc_port_to_serve(cfg) != cfg.grpc_port:  # the default port was busy: HTTP only
        settings = settings.model_copy(
            update={"collector": cfg.model_copy(update={"grpc_port": 0})}
        )
    stop = threading.Event()

    def _on_signal(signum: int, _frame: Any) -> None:
        click.echo(f"ragsieve up: {signal.Signals(signum).name}: draining", err=True)
        stop.set()

    previous = {s: signal.signal(s, _on_signal) for s in (signal.SIGTERM, signal.SIGINT)}
    try:
        serve_and_schedule(settings, stop, token=token)
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)


__all__ = ["serve_and_schedule", "up"]
