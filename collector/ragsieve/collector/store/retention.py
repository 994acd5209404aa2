"""Retention: traces, their spans and interactions, and outbox rows older than N days, deleted.

``purge_expired(store, retention_days=30)`` deletes in small transactions (``batch_traces``
traces, or ``batch_rows`` outbox rows, each) and sleeps ``pause_s`` between them, so the writer
of a running collector waits at most one small batch for the store's write lock: ingest is never
blocked for the length of a purge.

What goes: a trace whose last span arrived before the cutoff, with its spans, GenAI log events,
derived interaction and bookkeeping row (whole traces, never part of one); outbox rows created
before the cutoff, delivered or not. What stays: job results, samples and checkpoints, golden
candidates, feedback (people's labels), the observed corpus. A span arriving later for a purged
trace starts it afresh.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from ragsieve.collector.store import Store

DAY_S = 86_400.0
_TRACE_TABLES = ("spans", "log_events", "interactions", "traces")  # traces last: it drives the scan


@dataclass
class PurgeReport:
    """What one purge deleted, and the cutoff it used (epoch seconds)."""

    cutoff: float
    traces: int = 0
    spans: int = 0
    interactions: int = 0
    outbox: int = 0
    batches: int = 0


def purge_expired(
    store: Store,
    *,
    retention_days: float,
    now: float | None = None,
    batch_traces: int = 500,
    batch_rows: int = 5_000,
    pause_s: float = 0.05,
    sleep: Callable[[float], None] = time.sleep,
) -> PurgeReport:
    """Delete what is older than ``retention_days`` (see the module docstring), batch by batch.

    Returns counts. Safe to run beside a collector and to run again: each batch is its own
    transaction, so an interrupted purge leaves whole traces and carries on next time.
    """
    if retention_days <= 0:
        raise ValueError(f"retention_days must be > 0, got {retention_days}")
    cutoff = (time.time() if now is None else now) - retention_days * DAY_S
    report = PurgeReport(cutoff=cutoff)
    while ids := _expired_traces(store, cutoff, batch_traces):
        _delete_traces(store, ids, report)
        sleep(pause_s)
    while n := _delete_outbox(store, cutoff, batch_rows):
        report.outbox += n
        report.batches += 1
        sleep(pause_s)
    return report


def _expired_traces(store: Store, cutoff: float, limit: int) -> list[str]:
    """Up to ``limit`` traces last seen before ``cutoff`` (the ``(state, last_seen_at)`` index)."""
    ids: list[str] = []
    for state in ("finalized", "open"):
        rows = store.query(
            "SELECT trace_id FROM traces WHERE state = ? AND last_seen_at < ? LIMIT ?",
            (state, cutoff, limit - len(ids)),
        )
        ids.extend(r[0] for r in rows)
        if len(ids) >= limit:
            break
    return ids


def _delete_traces(store: Store, ids: list[str], report: PurgeReport) -> None:
    marks = ",".join("?" * len(ids))
    counts: dict[str, int] = {}
    with store.transaction() as cur:
        for table in _TRACE_TABLES:
            cur.execute(store.sql(f"DELETE FROM {table} WHERE trace_id IN ({marks})"), tuple(ids))
            counts[table] = int(getattr(cur, "rowcount", 0) or 0)
    report.traces += counts["traces"]
    report.spans += counts["spans"]
    report.interactions += counts["interactions"]
    report.batches += 1


def _delete_outbox(store: Store, cutoff: float, limit: int) -> int:
    """One batch of outbox rows created before ``cutoff``, oldest ids first."""
    with store.transaction() as cur:
        cur.execute(
            store.sql(
                "DELETE FROM outbox WHERE id IN (SELECT id FROM outbox WHERE created_at < ?"
                " ORDER BY id LIMIT ?)"
            ),
            (cutoff, limit),
        )
        return int(getattr(cur, "rowcount", 0) or 0)


__all__ = ["DAY_S", "PurgeReport", "purge_expired"]
