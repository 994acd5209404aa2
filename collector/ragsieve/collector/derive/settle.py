"""Settling: turn quiet traces into derived interaction records (re-run on late data)."""

from __future__ import annotations

import logging
import threading
import time
from typing import Any

from ragsieve.collector.store import Store
from ragsieve.evaluators.records import RagInteraction

log = logging.getLogger(__name__)


MAX_TRACE_SPANS = 20_000  # collector.max_trace_spans: past it a trace settles truncated
MAX_TRACE_SETTLE_S = 30.0  # collector.max_trace_settle_s: a trace's settling is sized to this
LARGE_TRACE_SPANS = 1_000  # traces this size and up settle in their own lane (see serve.app)
TRUNCATED = "ragsieve.settle_truncated"  # attribute saying a record saw only part of its trace


class SettleBudget:
    """Seconds one trace's settling may take, held by spans measured: the bound in seconds.

    Derivation is linear in a trace's spans, but the cost of a span varies (attribute sizes,
    the machine's load), so a span count alone does not bound time. A settler keeps one budget:
    each trace of ``min_measured`` spans or more it settles updates the measured seconds per
    span (load and derive, wall clock; the mean of the last and the new figure), and the next
    trace is derived from at most ``seconds / per span`` spans (never fewer than
    ``min_spans``), its record saying which bound cut it. A trace that still overruns (the
    first one, before anything was measured, or a sudden stall) is logged with its figures.
    """

    def __init__(
        self, seconds: float = MAX_TRACE_SETTLE_S, *, min_spans: int = LARGE_TRACE_SPANS
    ) -> None:
        if seconds <= 0:
            raise ValueError(f"seconds must be > 0, got {seconds}")
        self.seconds, self.min_spans, self.min_measured = seconds, min_spans, 200
        self.per_span_s: float | None = None
        self._lock = threading.Lock()  # two lanes may share one budget

    def span_cap(self, max_spans: int) -> int:
        """Spans the next trace may be derived from (``max_spans`` until one was measured)."""
        per = self.per_span_s
        if per is None or per <= 0:
            return max_spans
        return min(max_spans, max(self.min_spans, int(self.seconds / per)))

    def observe(self, spans: int, elapsed_s: float, trace_id: str) -> None:
        """Record one settled trace: ``spans`` derived in ``elapsed_s`` seconds."""
        if elapsed_s > self.seconds:
            log.warning(
                "trace %s took %.1f s to settle from %d spans (collector.max_trace_settle_s"
                " %g): later large traces settle from fewer spans, and their records say so",
                trace_id,
                elapsed_s,
                spans,
                self.seconds,
            )
        if spans < self.min_measured:
            return
        rate = elapsed_s / spans
        with self._lock:
            self.per_span_s = rate if self.per_span_s is None else (self.per_span_s + rate) / 2


def settle(
    store: Store,
    *,
    quiet_s: float,
    max_wait_s: float,
    now: float | None = None,
    limit: int = 500,
    max_spans: int = MAX_TRACE_SPANS,
    lane: tuple[int, int | None] = (0, None),
    budget: SettleBudget | None = None,
) -> int:
    """Derive and store the record of every trace that is due; returns how many were stored.

    A trace is due when it has a local root and no span arrived for ``quiet_s`` seconds, or
    ``max_wait_s`` passed since its first span (or its last derivation). Spans arriving while a
    trace is derived make the save a no-op and the trace settles again later, unless it is
    overdue: then the record is stored anyway, so a trace that never stops growing still
    settles every ``max_wait_s``. A trace of more than ``max_spans`` spans is derived from its
    first ``max_spans`` (in start order), and its record says so in ``attributes``; with a
    ``budget`` (the collector's settler keeps one), also from no more spans than its seconds
    allow at the pace measured. ``lane`` (``min, max`` spans, max exclusive) settles only traces
    of that size.
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
            saved += _settle_one(store, trace_id, seen_at, now, max_wait_s, max_spans, budget)
        if len(batch) < limit:
            return saved


def _settle_one(
    store: Store,
    trace_id: str,
    seen_at: float,
    now: float,
    max_wait_s: float,
    max_spans: int,
    budget: SettleBudget | None,
) -> int:
    """Derive and save one trace; 1 when its record was stored."""
    from ragsieve.collector.derive.normalize import derive

    state = store.trace_state(trace_id) or {}
    waited_since = state.get("finalized_at") or state.get("first_seen_at") or now
    overdue = waited_since <= now - max_wait_s
    cap = budget.span_cap(max_spans) if budget is not None else max_spans
    t0 = time.perf_counter()
    try:
        spans = store.spans_for_trace(trace_id, limit=cap + 1)
        cut, used = len(spans) > cap, min(len(spans), cap)
        record = derive(
            spans[:cap],
            store.log_events_for_trace(trace_id),
            store.feedback_for_trace(trace_id),
            revision=int(state.get("revision", 0)) + 1,
            late_spans=int(state.get("late_spans", 0)),
        )
        del spans
        if cut and record is not None:
            record = _truncated(record, trace_id, cap, state, max_spans, budget)
    except Exception:  # a bug in derivation must not stall every other trace
        log.exception("cannot derive trace %s; marking it finalized", trace_id)
        record, used = None, 0
    if budget is not None:
        budget.observe(used, time.perf_counter() - t0, trace_id)
    if record is None:
        store.mark_finalized(trace_id, seen_at=seen_at, now=now)
        return 0
    return int(store.save_interaction(record, seen_at=seen_at, now=now, overdue=overdue))


def _truncated(
    record: RagInteraction,
    trace_id: str,
    cap: int,
    state: dict[str, Any],
    max_spans: int,
    budget: SettleBudget | None,
) -> RagInteraction:
    """``record`` saying it was derived from only the first ``cap`` spans, and by which bound."""
    why = "collector.max_trace_spans"
    if cap < max_spans and budget is not None and budget.per_span_s is not None:
        why = (
            f"collector.max_trace_settle_s {budget.seconds:g} s at"
            f" {budget.per_span_s * 1000:.3g} ms a span"
        )
    note = f"derived from the first {cap} of {state.get('span_count', '?')} spans ({why})"
    log.warning("trace %s: %s", trace_id, note)
    return record.model_copy(update={"attributes": {**record.attributes, TRUNCATED: note}})


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
