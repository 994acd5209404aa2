"""Alerts after a run: evaluate the rules on the history, record state changes, deliver them.

``evaluate_after_run`` is what ``ragsieve jobs run`` and ``ragsieve up`` call once a pass has
stored its report. State rows and outbox rows commit together; delivery then gets at most
``alerts.deliver_s`` and whatever it does not deliver waits in the outbox for the next run.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ragsieve.collector.store import Store
from ragsieve.collector.timeutil import parse_duration
from ragsieve.jobs.alerts import sinks
from ragsieve.jobs.alerts.evaluate import Finding, evaluate_each
from ragsieve.jobs.alerts.state import AlertState, Event, load_states, save_states, transition
from ragsieve.jobs.history.runs import RunRecord, load_runs
from ragsieve.jobs.settings.alerts import AlertRule, AlertSettings

if TYPE_CHECKING:
    from ragsieve.jobs.settings import Settings

log = logging.getLogger(__name__)
MAX_TRACE_LINKS = 5


def history_for(store: Store, cfg: AlertSettings, latest: float) -> list[RunRecord]:
    """The runs the rules need: the longest baseline window, and at least the longest streak."""
    span = max((parse_duration(r.baseline).total_seconds() for r in cfg.rules), default=0.0)
    runs = load_runs(store, since=latest - span, until=latest + 1)
    streak = max((r.runs for r in cfg.rules), default=1)
    if len(runs) < streak:
        older = load_runs(store, until=latest + 1, last=streak)
        runs = sorted({r.run_id: r for r in [*older, *runs]}.values(), key=lambda r: r.started_at)
    return runs


def links(settings: Settings, report: Mapping[str, Any]) -> dict[str, Any]:
    """Where a person goes next: the HTML report, Phoenix and the run's first flagged traces."""
    out: dict[str, Any] = {"report": settings.report.url, "phoenix": None, "traces": []}
    if out["report"] is None and settings.report.html_path:
        out["report"] = Path(settings.report.html_path).resolve().as_uri()
    base = (settings.phoenix.base_url or "").rstrip("/")
    if base:
        out["phoenix"] = base
        out["traces"] = [
            f"{base}/redirects/traces/{c['trace_id']}"
            for c in (report.get("flagged_cases") or [])[:MAX_TRACE_LINKS]
        ]
    return out


def record(
    store: Store,
    settings: Settings,
    findings: Sequence[Finding],
    report: Mapping[str, Any],
    *,
    now: float,
    failed: Sequence[str] = (),
) -> list[Event]:
    """Turn findings into state changes; queue their payloads in the same transaction.

    The rules in ``failed`` (labels) could not be evaluated: their alerts keep their state."""
    cfg = settings.alerts
    labels = [r.label for r in cfg.rules if r.label not in failed]
    events, rows = transition(
        load_states(store), findings, labels, run_id=report.get("run_id"), now=now
    )
    bodies = [
        sinks.webhook_payload(e, report.get("window"), links(settings, report)) for e in events
    ]
    with store.transaction() as cur:
        save_states(cur, store, rows)
        out = sinks.outbox_rows(cfg, bodies, now)
        if out:
            cur.executemany(
                store.sql(
                    "INSERT INTO outbox (topic, dedup_key, payload, content_type, items,"
                    " created_at, next_attempt_at) VALUES (?,?,?,?,?,?,?)"
                    " ON CONFLICT (topic, dedup_key) DO NOTHING"
                ),
                out,
            )
    return events


def evaluate_after_run(
    store: Store, settings: Settings, report: Mapping[str, Any], *, now: float | None = None
) -> dict[str, Any]:
    """Evaluate the alert rules after a stored run; returns what fired, resolved and was sent.

    Never raises: alerting is a side effect of a run that has already been committed.
    """
    cfg = settings.alerts
    if report.get("dry_run") or not report.get("run_id"):
        return {"evaluated": False, "reason": "dry run"}
    if not cfg.rules and not sinks.topics(cfg):
        return {"evaluated": False, "reason": "no alert rules or sinks configured"}
    now = time.time() if now is None else now
    try:
        runs = history_for(store, cfg, now)
        findings, failed = evaluate_each(cfg.rules, runs)
        events = record(store, settings, findings, report, now=now, failed=list(failed))
        delivery = asyncio.run(sinks.deliver(store, cfg)) if sinks.topics(cfg) else {}
    except Exception as exc:  # the run is committed; an alerting bug must not fail it
        log.exception("alert evaluation failed")
        return {"evaluated": False, "reason": f"{type(exc).__name__}: {exc}"}
    return {
        "evaluated": True,
        "rules": len(cfg.rules),
        "firing": sorted(f.key for f in findings if f.firing),
        "failed": failed,
        "events": [{"status": e.status, "alert": e.key} for e in events],
        "delivery": delivery,
    }


def describe(rules: Sequence[AlertRule], states: Mapping[str, AlertState]) -> list[dict[str, Any]]:
    """Each rule's subjects with their state (firing first), or ``ok`` when it never fired."""
    out: list[dict[str, Any]] = []
    for rule in rules:
        mine = [s for s in states.values() if s.rule == rule.label]
        if not mine:
            out.append({"alert": rule.label, "status": "ok", "since": None, "why": "never fired"})
        for s in sorted(mine, key=lambda s: (s.status != "firing", s.key)):
            since = datetime.fromtimestamp(s.since, UTC).isoformat(timespec="seconds")
            why = s.body.get("message", "")
            out.append({"alert": s.key, "status": s.status, "since": since, "why": why})
    return out


__all__ = ["describe", "evaluate_after_run", "history_for", "links", "record"]
