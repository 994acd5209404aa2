"""Alert state: which alert subjects are firing, since when, so an alert is sent once per episode.

One ``alert_state`` row per subject (``alert_key``). :func:`transition` compares the latest
findings with the stored rows: a subject that starts firing gives a ``firing`` event, one that
keeps firing gives nothing (de-duplicated), one that stops gives a ``resolved`` event. A
``new_category`` subject that no longer appears among the findings (its category was covered
or promoted) counts as stopped. The rows and the events' outbox rows commit in one transaction
(``alerts.service``), so a crash cannot send an alert twice or lose its resolution.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ragsieve.collector.store import Store
from ragsieve.collector.store.sql import Cursor
from ragsieve.jobs.alerts.evaluate import Finding


@dataclass(frozen=True)
class AlertState:
    """One stored subject."""

    key: str
    rule: str
    status: str  # firing | resolved
    since: float
    updated_at: float
    run_id: str | None
    body: Mapping[str, Any]


@dataclass(frozen=True)
class Event:
    """A change of state worth telling people about."""

    status: str  # firing | resolved | test
    key: str
    rule: Mapping[str, Any]
    message: str
    values: Mapping[str, Any]
    interval: tuple[float, float] | None
    since: float
    at: float
    run_id: str | None


def load_states(store: Store) -> dict[str, AlertState]:
    """Every stored alert subject by key."""
    rows = store.query(
        "SELECT alert_key, rule, status, since, updated_at, run_id, body FROM alert_state"
    )
    return {
        r[0]: AlertState(r[0], r[1], r[2], float(r[3]), float(r[4]), r[5], json.loads(r[6]))
        for r in rows
    }


def _rule_dict(f: Finding) -> dict[str, Any]:
    return {"label": f.rule.label, **f.rule.model_dump(exclude_none=True)}


def transition(
    states: Mapping[str, AlertState],
    findings: Sequence[Finding],
    labels: Sequence[str],
    *,
    run_id: str | None,
    now: float,
) -> tuple[list[Event], list[AlertState]]:
    """Events for the subjects whose state changed, and every row to write back."""
    events: list[Event] = []
    rows: list[AlertState] = []
    seen = set()
    for f in findings:
        seen.add(f.key)
        old = states.get(f.key)
        was = old is not None and old.status == "firing"
        # an episode starts when firing begins and ends when it clears; otherwise it continues
        since = old.since if old is not None and f.firing == was else now
        status = "firing" if f.firing else "resolved"
        rule = _rule_dict(f)
        body = {"message": f.message, "values": dict(f.values), "interval": f.interval}
        body["rule"] = rule
        if f.firing != was:
            events.append(
                Event(status, f.key, rule, f.message, f.values, f.interval, since, now, run_id)
            )
        if old is not None or f.firing:
            rows.append(AlertState(f.key, f.rule.label, status, since, now, run_id, body))
    for key, old in states.items():
        gone = key not in seen and old.status == "firing" and old.rule in labels
        if gone:
            msg = f"{key}: condition no longer present"
            body = {**old.body, "message": msg}
            rule = dict(old.body.get("rule") or {"label": old.rule})
            events.append(Event("resolved", key, rule, msg, {}, None, now, now, run_id))
            rows.append(AlertState(key, old.rule, "resolved", now, now, run_id, body))
    return events, rows


def save_states(cur: Cursor, store: Store, rows: Sequence[AlertState]) -> None:
    """Upsert ``rows`` with the open transaction's cursor ``cur``."""
    sql = store.sql(
        "INSERT INTO alert_state (alert_key, rule, status, since, updated_at, run_id, body)"
        " VALUES (?,?,?,?,?,?,?) ON CONFLICT (alert_key) DO UPDATE SET rule = excluded.rule,"
        " status = excluded.status, since = excluded.since, updated_at = excluded.updated_at,"
        " run_id = excluded.run_id, body = excluded.body"
    )
    cur.executemany(
        sql,
        [
            (
                s.key,
                s.rule,
                s.status,
                s.since,
                s.updated_at,
                s.run_id,
                json.dumps(s.body, default=str),
            )
            for s in rows
        ],
    )


__all__ = ["AlertState", "Event", "load_states", "save_states", "transition"]
