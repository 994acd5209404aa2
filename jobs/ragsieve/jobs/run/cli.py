"""``ragsieve jobs run``: one pass of the online evaluator, with a table or JSON report."""

from __future__ import annotations

import json
from typing import Any

import click

from ragsieve.collector.cliopts import DURATION, json_option, opened_store, store_option


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
def jobs() -> None:
    """The scheduled online evaluator."""


@jobs.command("run")
@store_option
@click.option(
    "--since",
    type=DURATION,
    default=None,
    help="Window looking back from now, e.g. 2h (jobs.since).",
)
@click.option("--window", default=None, help="Explicit window START..END (ISO 8601, UTC).")
@click.option("--judge", "judge_names", multiple=True, help="Metric to judge (repeatable).")
@click.option("--budget-calls", type=click.IntRange(min=1), default=None, help="Most judge calls.")
@click.option(
    "--budget-usd",
    type=click.FloatRange(min=0, min_open=True),
    default=None,
    help="Most judge spend in USD.",
)
@click.option("--all", "take_all", is_flag=True, help="Judge every settled trace (no sampling).")
@click.option(
    "--settle",
    "settle_s",
    type=click.FloatRange(min=0),
    default=None,
    help="Seconds a trace must be quiet to count as finished.",
)
@click.option("--dry-run", is_flag=True, help="Select and report; judge and write nothing.")
@json_option
@click.pass_context
def run_command(
    ctx: click.Context,
    store: str | None,
    since: str | None,
    window: str | None,
    judge_names: tuple[str, ...],
    budget_calls: int | None,
    budget_usd: float | None,
    take_all: bool,
    settle_s: float | None,
    dry_run: bool,
    as_json: bool,
) -> None:
    """Settle traces, sample the window, judge, flag with a root cause and report.

    Exit 1 when the judge error rate exceeds jobs.max_judge_error_rate.
    """
    from ragsieve.collector.store import masked_url
    from ragsieve.collector.timeutil import parse_window
    from ragsieve.jobs.run.after import after_run
    from ragsieve.jobs.run.report import render_table
    from ragsieve.jobs.run.run import run_once

    if since and window:
        raise click.UsageError("--since and --window are mutually exclusive")
    settings = ctx.obj.settings(
        **{
            "store": store,
            "jobs.since": since,
            "jobs.judges": list(judge_names) or None,
            "jobs.budget_calls": budget_calls,
            "jobs.budget_usd": budget_usd,
            "jobs.settle_s": settle_s,
        }
    )
    bounds = parse_window(window) if window else None  # jobs.since was checked with the settings
    with opened_store(ctx.obj, store) as (_, st):
        outcome = run_once(st, settings, window=bounds, take_all=take_all, dry_run=dry_run)
        report: dict[str, Any] = outcome.report
        if outcome.skipped:  # another run held the store's run lease
            click.echo(json.dumps(report) if as_json else f"skipped: {outcome.skipped}")
            return
        report.update(after_run(st, settings, report))  # alerts, report.html_path
    if as_json:
        click.echo(json.dumps(report, ensure_ascii=False, default=str))
    else:
        click.echo(render_table(report))
        shown = masked_url(st.url)  # a password is never printed, nor pasted masked
        if flagged := _flagged_text(report, "" if shown != st.url else f" --store {st.url}"):
            click.echo(flagged)
    html = report.get("html") or {}
    if html.get("error"):  # the run is stored; the page is not, and that is said
        click.echo(f"report {html['path']} not written: {html['error']}", err=True)
    if outcome.exit_code:
        click.echo(
            f"judge error rate {report['judge_error_rate']:.1%} exceeds"
            f" jobs.max_judge_error_rate {report['max_judge_error_rate']:.1%}",
            err=True,
        )
        ctx.exit(outcome.exit_code)


def _flagged_text(report: dict[str, Any], store: str) -> str:
    """The run's flagged cases (the report keeps the first ``report.max_flagged_cases``), one
    line each, and the commands that show one and review them, ready to paste (``store``: the
    ``--store`` option to add, empty where the store's URL holds a password: the same
    RAGSIEVE_STORE or config then finds it)."""
    cases = report.get("flagged_cases") or []
    if not cases:
        return ""
    shown = f"; first {len(cases)}" if len(cases) < report["flagged"] else ""
    lines = [f"\n== flagged cases ({report['flagged']}{shown})"]
    for c in cases:
        query = " ".join(str(c.get("query") or "").split())
        lines.append(f"{c['trace_id'][:12]}  {c.get('root_cause') or '-':<19} {query[:70]}")
    tid = cases[0]["trace_id"][:12]
    lines += [
        "\nnext:",
        f"  ragsieve results show {tid}{store}",
        f"  ragsieve golden review{store}",
    ]
    return "\n".join(lines)


__all__ = ["jobs", "run_command"]
