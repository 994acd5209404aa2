"""``ragsieve report --html report.html``: write the run history page (``write_report``)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from ragsieve.collector.cliopts import DURATION, SettingsSource, opened_store, store_option
from ragsieve.collector.store import Store
from ragsieve.evaluators.tools.files import new_temp_file

if TYPE_CHECKING:
    from ragsieve.jobs.settings import Settings


def write_report(
    store: Store,
    settings: Settings,
    path: str | Path,
    *,
    since: str | None = None,
    now: float | None = None,
) -> dict[str, Any]:
    """Render the report over ``since`` (default ``report.since``) to ``path``, atomically.

    The page is written to a temporary file beside ``path`` and renamed over it, so a browser
    reloading while ``ragsieve up`` rewrites it never sees half a page.
    """
    import time
    from datetime import UTC, datetime

    from ragsieve.collector.timeutil import parse_duration
    from ragsieve.jobs.alerts.service import describe
    from ragsieve.jobs.alerts.state import load_states
    from ragsieve.jobs.history.runs import load_runs
    from ragsieve.jobs.report.data import category_first_seen, category_names, collect, reviews
    from ragsieve.jobs.report.html import render

    now = time.time() if now is None else now
    start = now - parse_duration(since or settings.report.since).total_seconds()
    runs = load_runs(store, since=start)
    alerts = describe(settings.alerts.rules, load_states(store))
    data = collect(runs, category_first_seen(store), category_names(store))
    data.reviewed = reviews(store, [str(c["trace_id"]) for c in data.flagged])
    page = render(
        data,
        title="ragsieve: quality over time",
        generated=datetime.fromtimestamp(now, UTC),
        phoenix=settings.phoenix.base_url,
        alerts=alerts,
    )
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = new_temp_file(target.parent, ".report-", ".html")  # the umask applies, not 0600
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write(page)
    os.replace(tmp, target)
    return {"path": str(target), "runs": len(runs), "bytes": len(page.encode())}


@click.command("report", context_settings={"help_option_names": ["-h", "--help"]})
@store_option
@click.option(
    "--since", type=DURATION, default=None, help="Run history covered, e.g. 14d (report.since)."
)
@click.option(
    "--html",
    "html_path",
    type=click.Path(dir_okay=False, path_type=Path),
    required=True,
    help="Where to write the self-contained HTML file.",
)
@click.pass_obj
def report_command(
    obj: SettingsSource, store: str | None, since: str | None, html_path: Path
) -> None:
    """Write the run history as one HTML file: failure rate with its interval per run, root
    causes, strata and attribute cells, new categories, judge agreement, cost, alerts."""
    with opened_store(obj, store) as (settings, st):  # --since was checked when parsed
        out = write_report(st, settings, html_path, since=since)
    click.echo(f"wrote {out['path']}: {out['runs']} runs, {out['bytes'] / 1e6:.2f} MB")


__all__ = ["report_command", "write_report"]
