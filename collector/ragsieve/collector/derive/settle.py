"""Settling: turn quiet traces into derived interaction records (re-run on late data)."""

from __future__ import annotations

import logging
import time

from ragsieve.collector.store import Store

log = logging.getLogger(__name__)


MAX_TRACE_SPANS = 20_000  # collector.max_trace_spans: past it a trace settles truncated
LARGE_TRACE_SPANS = 1_000  # traces this size and up settle in their own lane (see serve.app)
TRUNCATED = "ragsieve.settle_truncated"  # attribute saying a record saw only part of its trace


def settle(
    store: Store,
    *,
    quiet_s: float,
    max_wait_s: float,
    now: float | None = None,
    limit: int = 500,
    max_spans: int = MAX_TRACE_SPANS,
    lane: tuple[int, int | None] = (0, None),
) -> int:
    """Derive and store the record of every trace that is due; returns how many were stored.

    A trace is due when it has a local root and no span arrived for ``quiet_s`` seconds, or
    ``max_wait_s`` passed since its first span (or its last derivation). Spans arriving while a
    trace is derived make the save a no-op and the trace settles again later, unless it is
    overdue: then the record is stored anyway, so a trace that never stops growing still
    settles every ``max_wait_s``. A trace of more than ``max_spans`` spans is derived from its
    first ``max_spans`` (in start order), and its record says so in ``attributes``. ``lane``
    (``min, max`` spans, max exclusive) settles only traces of that size.
    """
    now = time.time() if now is None else now
    saved = 0
    tried: set[str] = set()
    while True:
        batch = store.due_traces(
            now=now,
            quiet_s=quiet_s,
            max_wait_s=max_wait_s,
            limit=limit,
            min_spans=lane[0],
            max_spans=lane[1],
        )
        due = [(t, s) for t, s in batch if t not in tried]
        if not due:
            return saved
        for trace_id, seen_at in due:
            tried.add(trace_id)
            saved += _settle_one(store, trace_id, seen_at, now, max_wait_s, max_spans)
        if len(batch) < limit:
            return saved


def _settle_one(
    store: Store, trace_id: str, seen_at: float, now: float, max_wait_s: float, max_spans: int
) -> int:
    """Derive and save one trace; 1 when its record was stored."""
    from ragsieve.collector.derive.normalize import derive

    state = store.trace_state(trace_id) or {}
    waited_since = state.get("finalized_at") or state.get("first_seen_at") or now
    overdue = waited_since <= now - max_wait_s
    try:
        spans = store.spans_for_trace(trace_id, limit=max_spans + 1)
        cut = len(spans) > max_spans
        record = derive(
            spans[:max_spans],
            store.log_events_for_trace(trace_id),
            store.feedback_for_trace(trace_id),
            revision=int(state.get("revision", 0)) + 1,
            late_spans=int(state.get("late_spans", 0)),
        )
        del spans
        if cut and record is not None:
            note = (
                f"derived from the first {max_spans} of {state.get('span_count', '?')} spans"
                " (collector.max_trace_spans)"
            )
            log.warning("trace %s: %s", trace_id, note)
            record = record.model_copy(
                update={"attributes": {**record.attributes, TRUNCATED: note}}
            )
    except Exception:  # a bug in derivation must not stall every other trace
        log.exception("cannot derive trace %s; marking it finalized", trace_id)
        record = None
    if record is None:
        store.mark_finalized(trace_id, seen_at=seen_at, now=now)
        return 0
    return int(store.save_interaction(record, seen_at=seen_at, now=now, overdue=overdue))


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
