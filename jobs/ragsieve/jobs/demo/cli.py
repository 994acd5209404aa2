"""``ragsieve demo``: the whole loop on a bundled app with planted failures, and its scorecard."""

from __future__ import annotations

import json
import os
import shutil
import sys
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from ragsieve.collector.cliopts import clip

if TYPE_CHECKING:
    from ragsieve.jobs.demo.phoenix import LocalPhoenix
    from ragsieve.jobs.demo.runner import DemoResult
    from ragsieve.jobs.settings import Settings


def _echo_err(msg: str) -> None:
    click.echo(f"[demo] {msg}", err=True)


def _traffic_bar(done: int, total: int) -> None:
    if done == total or done % max(1, total // 10) == 0:
        _echo_err(f"traffic {done}/{total} queries")


DEFAULT_STORE = "sqlite:///ragsieve-demo.db"
SHOWN_CASES = 10  # flagged cases listed without --verbose


def ragsieve_command(cwd: Path | None = None) -> str:
    """How to call this installation's ``ragsieve`` from a shell where its venv is not active.

    ``ragsieve`` itself when that name finds this same script without an activated venv (a
    global or pipx install); else the script's path, relative to ``cwd`` when it is inside it
    (``.venv/bin/ragsieve`` after the Quickstart).
    """
    script = Path(sys.executable).with_name("ragsieve")
    if not script.exists():
        return "ragsieve"
    found = shutil.which("ragsieve")
    if found and Path(found).resolve() == script.resolve() and not os.environ.get("VIRTUAL_ENV"):
        return "ragsieve"
    base = (cwd or Path.cwd()).resolve()
    try:
        return str(script.absolute().relative_to(base))
    except ValueError:
        return str(script.absolute())


def next_commands(store_url: str, exe: str = "ragsieve") -> list[str]:
    """The commands to run next on the demo's store, exactly as they can be pasted."""
    from ragsieve.collector.store import masked_url

    store = masked_url(store_url)
    return [
        f"{exe} interactions list --store {store}",
        f"{exe} results list --flagged --store {store}",
        f"{exe} golden status --store {store}",
        f"{exe} golden review --store {store}",
    ]


def headline(result: DemoResult) -> str:
    """One line: queries, flagged, the failure rate with its interval, new failure categories."""
    report = result.report
    fr = report.get("failure_rate") or {}
    rate = "-"
    if fr.get("estimate") is not None:
        rate = (
            f"{100 * fr['estimate']:.1f}% (95% CI {100 * fr['ci_low']:.1f}%"
            f" - {100 * fr['ci_high']:.1f}%)"
        )
    new = len((report.get("golden") or {}).get("new_categories") or [])
    return (
        f"{result.scorecard.n_queries} queries, {report.get('flagged', 0)} flagged, failure rate"
        f" {rate}, {new} new failure categor{'y' if new == 1 else 'ies'}"
    )


def _print_scorecard(result: DemoResult) -> None:
    card, floors = result.scorecard, result.floors
    ci = card.intervals()
    click.echo("== planted-failure scorecard (a target is missed when the 95% CI misses it)")
    rows = [
        ("planted_recall", card.planted_recall, f">= {floors.planted_recall}"),
        ("root_cause_accuracy", card.root_cause_accuracy, f">= {floors.root_cause_accuracy}"),
        ("false_positive_rate", card.false_positive_rate, f"<= {floors.false_positive_rate}"),
    ]
    for name, value, floor in rows:
        shown = "-" if value is None else f"{value:.3f}"
        interval = ci[name]
        band = f"95% CI {interval[0]:.3f}-{interval[1]:.3f}" if interval else ""
        click.echo(f"{name:<22}{shown:>8}   {band:<22}target {floor}")
    click.echo(f"{'n_queries':<22}{card.n_queries:>8}")
    click.echo(f"{'n_flagged':<22}{card.n_flagged:>8}")
    click.echo(f"{'n_planted':<22}{card.n_planted:>8}")
    click.echo(
        f"{'organic failures':<22}{card.n_organic_failures:>8}"
        f"   ({card.n_organic_flagged} flagged, not counted as false positives)"
    )
    for kind, recall in card.per_kind_recall.items():
        click.echo(f"  recall {kind:<20}{'-' if recall is None else f'{recall:.3f}':>8}")


def _print_human(result: DemoResult, *, verbose: bool = False, phoenix_kept: bool = True) -> None:
    """Headline and scorecard first, then categories, cases (shortened), report, next steps."""
    from ragsieve.jobs.run.report import render_table

    exe = ragsieve_command()
    click.echo(f"== ragsieve demo: {headline(result)}")
    _print_scorecard(result)
    golden = result.report.get("golden")
    click.echo("\n== new failure categories")
    if not golden:
        click.echo("(golden growth did not run)")
    else:
        for cat in golden.get("new_categories") or []:
            click.echo(
                f"{cat.get('category')}  {cat.get('name')}  root cause={cat.get('root_cause')}"
                f"  failures={cat.get('failures_seen')}"
            )
            for example in (cat.get("examples") or [])[:1]:
                click.echo(f"{'':4}e.g. {example}")
        if not golden.get("new_categories"):
            click.echo("(none)")
        new = len(golden.get("new_categories") or [])
        click.echo(
            f"golden candidates: new {golden.get('new_candidates', 0)}, merged duplicates"
            f" {golden.get('merged_duplicates', 0)}, covered by golden"
            f" {golden.get('covered_by_golden', 0)}; failure categories"
            f" {golden.get('categories', 0)} in all, {new} of them new"
        )
    cases = result.flagged if verbose else result.flagged[:SHOWN_CASES]
    more = len(result.flagged) - len(cases)
    suffix = f"; first {len(cases)}, --verbose for all" if more else ""
    click.echo(f"\n== flagged cases ({len(result.flagged)}{suffix})")
    for case in cases:
        it = case.interaction
        click.echo(f"{it.trace_id[:12]}  {case.root_cause:<19} {clip(it.query, 70)}")
        click.echo(f"{'':14}{clip(case.evidence, 110)}")
    if more:
        click.echo(f"... {more} more ({next_commands(result.store_url, exe)[1]})")
    click.echo("\n== run report")
    click.echo(render_table(result.report))
    click.echo(f"runtime {result.timings.get('total_s', 0):.1f} s  ({json.dumps(result.timings)})")
    click.echo(f"\n== next (the store {result.store_url} is kept)")
    for line in next_commands(result.store_url, exe):
        click.echo(f"  {line}")
    if result.phoenix_url and phoenix_kept:
        click.echo(
            f"  open {result.phoenix_url} and filter spans by the ragsieve_verdict annotation"
        )


def _wait_for_ctrl_c(url: str) -> None:
    _echo_err(f"Phoenix keeps running at {url}; press Ctrl-C to stop it and exit")
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        _echo_err("stopping Phoenix")


@click.command("demo", context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "--queries",
    type=click.IntRange(min=1),
    default=None,
    help="Queries the demo app sends (demo.queries, default 300).",
)
@click.option("--seed", type=int, default=None, help="Traffic seed (demo.seed).")
@click.option(
    "--store",
    default=None,
    help=f"Store URL, kept after the demo (default {DEFAULT_STORE}, in the current folder).",
)
@click.option("--phoenix", is_flag=True, help="Start a local Phoenix (if installed) and annotate.")
@click.option(
    "--phoenix-url",
    default=None,
    metavar="URL",
    help="Use the Phoenix already running at URL instead of starting one (implies --phoenix);"
    " it keeps the traces and annotations after the demo exits.",
)
@click.option(
    "--llm-base-url",
    default=None,
    help="OpenAI-compatible endpoint for the app's generator (judges stay as configured).",
)
@click.option(
    "--no-wait",
    is_flag=True,
    help="With --phoenix: stop the Phoenix the demo started and exit (default: wait for Ctrl-C).",
)
@click.option("--verbose", is_flag=True, help="List every flagged case, not the first 10.")
@click.option("--json", "as_json", is_flag=True, help="Print the scorecard as one JSON object.")
@click.pass_context
def demo(
    ctx: click.Context,
    queries: int | None,
    seed: int | None,
    store: str | None,
    phoenix: bool,
    phoenix_url: str | None,
    llm_base_url: str | None,
    no_wait: bool,
    verbose: bool,
    as_json: bool,
) -> None:
    """Run a bilingual RAG app with planted failures through collector and job; score detection.

    Exit 1 when the planted-failure scorecard is below the floors in the [demo] settings.
    """
    from ragsieve.jobs.demo.runner import run_demo, temp_workdir

    obj = ctx.obj
    store = store or DEFAULT_STORE
    flags: dict[str, Any] = {"store": store, "demo.queries": queries, "demo.seed": seed}
    settings = obj.settings(**flags) if obj is not None else _settings(flags)
    target, local = _phoenix_target(settings, phoenix, phoenix_url)
    if target is not None:
        settings = settings.model_copy(
            update={"phoenix": settings.phoenix.model_copy(update={"base_url": target})}
        )
    try:
        with temp_workdir() as tmp:
            result = run_demo(
                settings,
                workdir=Path(tmp),
                store_url=store,
                llm_base_url=llm_base_url,
                forward_otlp=f"{target}/v1/traces" if target else None,
                phoenix_url=target,
                progress=_echo_err,
                traffic_progress=_traffic_bar,
            )
        stopping = local is not None and no_wait  # the URL dies with the demo: never offer it
        if as_json:
            click.echo(json.dumps(_json_out(result, stopping=stopping), ensure_ascii=False))
        else:
            _print_human(result, verbose=verbose, phoenix_kept=not stopping)
        if stopping:
            _echo_err(
                f"stopping the Phoenix the demo started at {target} (--no-wait), and its traces"
                " with it; to look at them, run without --no-wait (Phoenix stays up until"
                " Ctrl-C) or give --phoenix-url of a Phoenix you started"
            )
        elif target is not None:
            _echo_err(f"Phoenix with the annotated traces: {target}")
        if local is not None and not no_wait:
            _wait_for_ctrl_c(local.url)
    finally:
        if local is not None:
            local.stop()
    if result.failures:
        _echo_err("scorecard below floors: " + "; ".join(result.failures))
        ctx.exit(1)


def _phoenix_target(
    settings: Settings, phoenix: bool, phoenix_url: str | None
) -> tuple[str | None, LocalPhoenix | None]:
    """The Phoenix base URL to forward to and annotate (or None), and the one we started."""
    from ragsieve.jobs.demo.phoenix import LocalPhoenix, check_running, find_executable

    if phoenix_url is not None:
        try:
            target = check_running(phoenix_url)
        except ValueError as exc:
            raise click.BadParameter(str(exc), param_hint="--phoenix-url") from exc
        _echo_err(f"using the Phoenix running at {target}")
        return target, None
    if not phoenix:
        return None, None
    exe = find_executable(settings.phoenix.executable)
    if exe is None:
        _echo_err(
            "no Phoenix found (set phoenix.executable or create .phoenix-venv);"
            " continuing without it"
        )
        return None, None
    _echo_err(f"starting Phoenix from {exe}")
    try:
        local = LocalPhoenix(exe).start()
    except RuntimeError as exc:
        _echo_err(f"Phoenix did not start ({exc}); continuing without it")
        return None, None
    return local.url, local


def _json_out(result: DemoResult, *, stopping: bool = False) -> dict[str, Any]:
    """The ``--json`` object: the scorecard, timings, floors and where to look next.

    ``phoenix_url`` is null when the Phoenix the demo started stops with it (``--no-wait``);
    ``phoenix_stopped_url`` then says where it was.
    """
    out: dict[str, Any] = result.scorecard.to_json()
    out.update(
        runtime_s=result.timings.get("total_s"),
        timings=result.timings,
        run_id=result.report.get("run_id"),
        floors=result.floors.model_dump(),
        intervals=result.scorecard.intervals(),  # 95% Wilson; a floor fails beyond noise only
        passed=not result.failures,
        phoenix_url=None if stopping else result.phoenix_url,
        phoenix_stopped_url=result.phoenix_url if stopping else None,
        store=result.store_url,
        next_commands=next_commands(result.store_url, ragsieve_command()),
    )
    return out


def _settings(flags: dict[str, Any]) -> Settings:
    from ragsieve.jobs.settings import load_settings

    return load_settings(None, flags)


__all__ = ["demo"]
