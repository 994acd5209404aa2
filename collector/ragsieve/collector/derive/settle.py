"""Settling: turn quiet traces into derived interaction records (re-run on late data)."""

from __future__ import annotations

import logging
import time

from ragsieve.collector.store import Store

log = logging.getLogger(__name__)


def settle(
    store: Store,
    *,
    quiet_s: float,
    max_wait_s: float,
    now: float | None = None,
    limit: int = 500,
) -> int:
    """Derive and store the record of every trace that is due; returns how many were stored.

    A trace is due when it has a local root and no span arrived for ``quiet_s`` seconds, or
    ``max_wait_s`` passed since its first span. Spans arriving while a trace is derived make the
    save a no-op, and the trace settles again later.
    """
    from ragsieve.collector.derive.normalize import derive

    now = time.time() if now is None else now
    saved = 0
    tried: set[str] = set()
    while True:
        batch = store.due_traces(now=now, quiet_s=quiet_s, max_wait_s=max_wait_s, limit=limit)
        due = [(t, s) for t, s in batch if t not in tried]
        if not due:
            return saved
        for trace_id, seen_at in due:
            tried.add(trace_id)
            state = store.trace_state(trace_id) or {}
            try:
                record = derive(
                    store.spans_for_trace(trace_id),
                    store.log_events_for_trace(trace_id),
                    store.feedback_for_trace(trace_id),
                    revision=int(state.get("revision", 0)) + 1,
                    late_spans=int(state.get("late_spans", 0)),
                )
            except Exception:  # a bug in derivation must not stall every other trace
                log.exception("cannot derive trace %s; marking it finalized", trace_id)
                record = None
            if record is None:
                store.mark_finalized(trace_id, seen_at=seen_at, now=now)
            elif store.save_interaction(record, seen_at=seen_at, now=now):
                saved += 1
        if len(batch) < limit:
            return saved


def settling_note(
    count: int, last_due: float | None, *, quiet_s: float, max_wait_s: float, now: float
) -> str | None:
    """One line on traces still waiting to settle (how many, when), or None when there are none.

    ``count`` and ``last_due`` come from ``store.settling``. Said by ``interactions list`` and
    ``jobs run``, so that an empty answer right after sending traffic reads as "not yet" rather
    than "nothing arrived".
    """
    if not count or last_due is None:
        return None
    noun = "trace" if count == 1 else "traces"
    rule = f"a trace settles {quiet_s:g} s after its last span (at most {max_wait_s:g} s)"
    if last_due <= now:
        return (
            f"{count} {noun} still settling, due now ({rule}); the collector or"
            " `ragsieve jobs run` derives them"
        )
    at = time.strftime("%H:%M:%S", time.gmtime(last_due))
    wait = last_due - now
    return f"{count} {noun} still settling ({rule}); all due within {wait:.0f} s, by {at} UTC"
