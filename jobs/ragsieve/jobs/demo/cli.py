"""``ragsieve demo``: the whole loop on a bundled app with planted failures, and its scorecard."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import click


def _echo_err(msg: str) -> None:
    click.echo(f"[demo] {msg}", err=True)


def _traffic_bar(done: int, total: int) -> None:
    if done == total or done % max(1, total // 10) == 0:
        _echo_err(f"traffic {done}/{total} queries")


def _print_human(result: Any) -> None:
    from ragsieve.jobs.run.report import render_table

    click.echo("== run report")
    click.echo(render_table(result.report))
    click.echo(f"\n== flagged cases ({len(result.flagged)})")
    for case in result.flagged:
        it = case.interaction
        click.echo(f"{it.trace_id[:12]}  {case.root_cause:<19} {(it.query or '')[:70]}")
        click.echo(f"{'':14}{case.evidence[:110]}")
    golden = result.report.get("golden")
    click.echo("\n== new failure categories")
    if not golden:
        click.echo("(golden growth did not run)")
    else:
        for cat in golden.get("new_categories") or []:
            click.echo(
                f"{cat.get('category')}  {cat.get('name')}  root cause={cat.get('root_cause')}"
            )
        if not golden.get("new_categories"):
            click.echo("(none)")
        click.echo("\n== golden candidates")
        click.echo(
            f"new {golden.get('new_candidates', 0)}, merged duplicates"
            f" {golden.get('merged_duplicates', 0)}, covered by golden"
            f" {golden.get('covered_by_golden', 0)} (review: ragsieve golden review)"
        )
    card = result.scorecard
    click.echo("\n== planted-failure scorecard")
    rows = [
        ("planted_recall", card.planted_recall, f">= {result.floors.planted_recall}"),
        (
            "root_cause_accuracy",
            card.root_cause_accuracy,
            f">= {result.floors.root_cause_accuracy}",
        ),
        (
            "false_positive_rate",
            card.false_positive_rate,
            f"<= {result.floors.false_positive_rate}",
        ),
    ]
    for name, value, floor in rows:
        click.echo(f"{name:<22}{'-' if value is None else f'{value:.3f}':>8}   target {floor}")
    click.echo(f"{'n_queries':<22}{card.n_queries:>8}")
    click.echo(f"{'n_flagged':<22}{card.n_flagged:>8}")
    click.echo(f"{'n_planted':<22}{card.n_planted:>8}")
    click.echo(
        f"{'organic failures':<22}{card.n_organic_failures:>8}"
        f"   ({card.n_organic_flagged} flagged, not counted as false positives)"
    )
    for kind, recall in card.per_kind_recall.items():
        click.echo(f"  recall {kind:<20}{'-' if recall is None else f'{recall:.3f}':>8}")
    click.echo(f"runtime {result.timings.get('total_s', 0):.1f} s  ({json.dumps(result.timings)})")


@click.command("demo", context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "--queries",
    type=click.IntRange(min=1),
    default=None,
    help="Queries the demo app sends (demo.queries, default 300).",
)
@click.option("--seed", type=int, default=None, help="Traffic seed (demo.seed).")
@click.option("--store", default=None, help="Store URL (default: a temporary SQLite file).")
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
    as_json: bool,
) -> None:
    """Run a bilingual RAG app with planted failures through collector and job; score detection.

    Exit 1 when the planted-failure scorecard is below the floors in the [demo] settings.
    """
    from ragsieve.jobs.demo.phoenix import LocalPhoenix, check_running, find_executable
    from ragsieve.jobs.demo.runner import run_demo, temp_workdir

    obj = ctx.obj
    flags: dict[str, Any] = {"store": store, "demo.queries": queries, "demo.seed": seed}
    settings = obj.settings(**flags) if obj is not None else _settings(flags)
    local: LocalPhoenix | None = None
    target: str | None = None  # Phoenix base URL the collector forwards to and annotations go to
    if phoenix_url is not None:
        try:
            target = check_running(phoenix_url)
        except ValueError as exc:
            raise click.BadParameter(str(exc), param_hint="--phoenix-url") from exc
        _echo_err(f"using the Phoenix running at {target}")
    elif phoenix:
        exe = find_executable(settings.phoenix.executable)
        if exe is None:
            _echo_err(
                "no Phoenix found (set phoenix.executable or create .phoenix-venv);"
                " continuing without it"
            )
        else:
            _echo_err(f"starting Phoenix from {exe}")
            try:
                local = LocalPhoenix(exe).start()
            except RuntimeError as exc:
                _echo_err(f"Phoenix did not start ({exc}); continuing without it")
                local = None
            else:
                target = local.url
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
        if as_json:
            out = result.scorecard.to_json()
            out.update(
                runtime_s=result.timings.get("total_s"),
                timings=result.timings,
                run_id=result.report.get("run_id"),
                floors=result.floors.model_dump(),
                passed=not result.failures,
                phoenix_url=result.phoenix_url,
            )
            click.echo(json.dumps(out, ensure_ascii=False))
        else:
            _print_human(result)
        if target is not None:
            _echo_err(f"Phoenix with the annotated traces: {target}")
        if local is not None and sys.stdin.isatty() and not as_json:
            _echo_err("press Enter to stop Phoenix and exit")
            sys.stdin.readline()
    finally:
        if local is not None:
            local.stop()
    if result.failures:
        _echo_err("scorecard below floors: " + "; ".join(result.failures))
        ctx.exit(1)


def _settings(flags: dict[str, Any]) -> Any:
    from ragsieve.jobs.settings import load_settings

    return load_settings(None, flags)


__all__ = ["demo"]
