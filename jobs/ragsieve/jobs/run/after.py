"""What follows a stored run: alert rules evaluated and sent, the HTML report rewritten.

``ragsieve jobs run`` and ``ragsieve up`` call :func:`after_run` with the pass's report once it is
committed (``run.run`` stays about the pass itself). Neither step can fail the run: alerting
catches its own errors (``alerts.service.evaluate_after_run``) and a report that cannot be
written is logged and reported here.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
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


__all__ = ["after_run"]
