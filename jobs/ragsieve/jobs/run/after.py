"""What follows a stored run: alert rules evaluated and sent, the HTML report rewritten; and
what the run's windows cannot see (:func:`misdated`).

``ragsieve jobs run`` and ``ragsieve up`` call :func:`after_run` with the pass's report once it is
committed (``run.run`` stays about the pass itself). Neither step can fail the run: alerting
catches its own errors (``alerts.service.evaluate_after_run``) and a report that cannot be
written is logged and reported here.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from ragsieve.collector.store import Store
from ragsieve.jobs.alerts.service import evaluate_after_run

if TYPE_CHECKING:
    from ragsieve.jobs.settings import Settings

log = logging.getLogger(__name__)


def after_run(store: Store, settings: Settings, report: Mapping[str, Any]) -> dict[str, Any]:
    """Evaluate alerts, then rewrite ``report.html_path`` when set; returns what each did."""
    out: dict[str, Any] = {"alerts": evaluate_after_run(store, settings, report)}
    path = settings.report.html_path
    if path and not report.get("dry_run"):
        from ragsieve.jobs.report.cli import write_report

        try:
            out["html"] = write_report(store, settings, path)
        # the run is committed: an unwritable path, or any failure drawing the page, is
        # reported (``html.error``, and on stderr by ``jobs run``) but must not fail it
        except Exception as exc:
            log.warning("report %s not written: %s", path, exc)
            out["html"] = {"path": path, "error": f"{type(exc).__name__}: {exc}"}
    return out


EARLIEST = datetime(2000, 1, 1, tzinfo=UTC).timestamp()
FUTURE_S = 86400.0  # clocks drift; a day ahead is a wrong clock, not drift


def misdated(store: Store, now: float) -> dict[str, Any]:
    """How many stored interactions started before 2000 or after ``now`` plus a day.

    A span's time is nanoseconds since 1970; an exporter that sends microseconds as nanoseconds
    stamps its traces in January 1970, one that multiplies twice lands past 2100. Such traces
    are stored, but every ``--since`` window misses them, so the job would never judge them and
    never say so: each run report counts them (``misdated``) and the table warns while there
    are any (``jobs run --all --window 1970-01-01..2000-01-01`` judges the early ones).
    """
    rows = store.query(
        "SELECT SUM(CASE WHEN started_at < ? THEN 1 ELSE 0 END),"
        " SUM(CASE WHEN started_at > ? THEN 1 ELSE 0 END) FROM interactions"
        " WHERE started_at < ? OR started_at > ?",
        (EARLIEST, now + FUTURE_S, EARLIEST, now + FUTURE_S),
    )
    early, late = (int(v or 0) for v in rows[0]) if rows else (0, 0)
    out: dict[str, Any] = {"interactions": early + late, "before_2000": early, "future": late}
    if early + late:
        out["note"] = (
            f"{early + late} stored interactions start before 2000 ({early}) or after tomorrow"
            f" ({late}): no window holds them, so they are never judged (an exporter sending"
            " microseconds as nanoseconds stamps 1970)"
        )
    return out


__all__ = ["after_run", "misdated"]
