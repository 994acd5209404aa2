"""``ragsieve runs list``: the run history, one run a line (or JSON)."""

from __future__ import annotations

import json

import click

from ragsieve.collector.cliopts import (
    DURATION,
    SettingsSource,
    json_option,
    opened_store,
    store_option,
)


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
def runs() -> None:
    """The job's run history (each run's stored report)."""


@runs.command("list")
@store_option
@click.option(
    "--since", type=DURATION, default="7d", show_default=True, help="How far back, e.g. 24h, 7d."
)
@json_option
@click.pass_obj
def list_command(obj: SettingsSource, store: str | None, since: str, as_json: bool) -> None:
    """Runs that started within --since: sample, flags, failure rate with its interval, cost."""
    from ragsieve.collector.timeutil import parse_duration
    from ragsieve.evaluators.records import utcnow
    from ragsieve.jobs.history.runs import load_runs, render, summary

    start = (utcnow() - parse_duration(since)).timestamp()
    with opened_store(obj, store) as (_, st):
        rows = [summary(r) for r in load_runs(st, since=start)]
    if as_json:
        click.echo(json.dumps(rows, ensure_ascii=False))
    elif not rows:
        click.echo(f"no finished runs in the last {since}")
    else:
        click.echo(render(rows))


__all__ = ["runs"]
