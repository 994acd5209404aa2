"""SQLStore: the store's behaviour written once in portable SQL; dialects supply connections.

Every method is synchronous; the receiver calls them from worker threads. Placeholders are written
as ``?`` and rewritten for drivers that use ``%s``. The span side lives here; feedback, settling
and interactions in :mod:`interactions_sql`, the outbox in :mod:`outbox_sql`, dialect plumbing
and migrations in :mod:`sql`.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ragsieve.collector.store.interactions_sql import InteractionsMixin
from ragsieve.collector.store.outbox_sql import OutboxItem, OutboxMixin
from ragsieve.collector.store.sql import Cursor, SQLBase, _digest, _now
from ragsieve.collector.wire.spans import (
    LogEvent,
    SpanRecord,
    SpanRow,
    body_json,
    nonfinite,
    span_row,
)
from ragsieve.collector.wire.traces import span_from_bytes


@dataclass(frozen=True, slots=True)
class SpanWrite:
    """Result of one write: spans new or changed, duplicates ignored."""

    written: int
    duplicates: int
    traces: tuple[str, ...]


_TRACE_UPDATE = (
    "UPDATE traces SET last_seen_at = ?, span_count = span_count + ?,"
    " has_root = CASE WHEN has_root = 1 OR ? = 1 THEN 1 ELSE 0 END,"
    " late_spans = late_spans + ?, state = ? WHERE trace_id = ?"
)


_SPAN_UPSERT = (
    "INSERT INTO spans (trace_id, span_id, parent_span_id, name, start_ns,"
    " end_ns, n_attributes, body, pb, received_at) VALUES (?,?,?,?,?,?,?,?,?,?)"
    " ON CONFLICT (trace_id, span_id) DO UPDATE SET"
    " parent_span_id = excluded.parent_span_id, name = excluded.name,"
    " start_ns = excluded.start_ns, end_ns = excluded.end_ns,"
    " n_attributes = excluded.n_attributes, body = excluded.body, pb = excluded.pb,"
    " received_at = excluded.received_at"
)
_OUTBOX_INSERT = (
    "INSERT INTO outbox (topic, dedup_key, payload, content_type, items,"
    " created_at, next_attempt_at) VALUES (?,?,?,?,?,?,?)"
    " ON CONFLICT (topic, dedup_key) DO NOTHING"
)
_LOG_EVENT_INSERT = (
    "INSERT INTO log_events (trace_id, span_id, body, received_at, dedup)"
    " VALUES (?,?,?,?,?) ON CONFLICT (trace_id, dedup) DO NOTHING"
)
Forward = tuple[str, bytes, str, int]  # (topic, payload, content_type, n_items)
_Known = dict[str, dict[str, tuple[int, int]]]  # trace -> span -> (end_ns, n_attributes)


def span_body(span: SpanRecord) -> str:
    """The JSON kept in the ``spans.body`` column (computed off the writer thread when possible)."""
    data = span.to_json()
    return body_json(data, exact=not nonfinite(data))


@dataclass
class _SpanPlan:
    """What one batch changes: rows to upsert and, per touched trace, (new spans, has a root)."""

    rows: list[tuple[Any, ...]]
    touched: dict[str, tuple[int, bool]]
    duplicates: int


def _plan_spans(by_trace: dict[str, list[SpanRow]], known: _Known, now: float) -> _SpanPlan:
    """Keep each span unless a stored (or earlier) copy ends later or has as many attributes."""
    plan = _SpanPlan([], {}, 0)
    for trace_id, group in by_trace.items():
        existing = known.get(trace_id, {})
        n_new, has_root = 0, False
        for row in group:
            old = existing.get(row.span_id)
            if old is not None and (row.end_ns, row.n_attributes) <= old:
                plan.duplicates += 1
                continue
            existing[row.span_id] = (row.end_ns, row.n_attributes)
            has_root = has_root or row.is_root
            n_new += 1
            body = row.body
            if body.__class__ is str:  # a record's JSON, kept in ``body``
                plan.rows.append((*row[:7], body, None, now))
            else:  # protobuf bytes as received, kept in ``pb`` (``body`` holds no copy)
                plan.rows.append((*row[:7], "", body, now))
        if n_new:
            plan.touched[trace_id] = (n_new, has_root)
    return plan


def _log_event_row(ev: LogEvent, now: float) -> tuple[Any, ...]:
    body = json.dumps(
        {
            "event_name": ev.event_name,
            "time_ns": ev.time_ns,
            "attributes": dict(ev.attributes),
            "body": ev.body,
        },
        ensure_ascii=False,
        sort_keys=True,
    )
    return (ev.trace_id, ev.span_id, body, now, _digest(f"{ev.span_id}|{body}".encode()))


class SQLStore(InteractionsMixin, OutboxMixin):
    """Every store operation; subclasses provide ``transaction()``, ``close()`` and the dialect."""

    # -- spans ---------------------------------------------------------------------------------
    def write_spans(
        self,
        spans: Sequence[SpanRecord | SpanRow],
        *,
        bodies: Sequence[str] | None = None,
        forward: Sequence[Forward] = (),
        log_events: Sequence[LogEvent] = (),
        now: float | None = None,
    ) -> SpanWrite:
        """Upsert spans and queue forwards in one transaction: durable when this returns.

        A duplicate keeps the copy with the later end time, then the one with more attributes.
        ``spans`` are records or ready rows (the receiver's, see ``wire.traces.decode_span_rows``);
        ``bodies`` the pre-encoded JSON of each record (same order). ``forward`` holds
        ``(topic, payload, content_type, n_items)`` outbox rows.
        """
        now = _now() if now is None else now
        by_trace: dict[str, list[SpanRow]] = {}
        for row in _rows(spans, bodies):
            by_trace.setdefault(row.trace_id, []).append(row)
        with self.transaction() as cur:
            plan = _plan_spans(by_trace, self._known_spans(cur, list(by_trace)), now)
            if plan.rows:
                cur.executemany(self.sql(_SPAN_UPSERT), plan.rows)
                self._touch_traces(cur, plan.touched, now)
            for topic, payload, content_type, n_items in forward:
                # A client retry re-sends the same payload: queue it for forwarding only once.
                cur.execute(
                    self.sql(_OUTBOX_INSERT),
                    (topic, _digest(payload), payload, content_type, n_items, now, now),
                )
            logged = self._write_log_events(cur, log_events, now)
        changed = [*plan.touched, *logged]
        return SpanWrite(len(plan.rows), plan.duplicates, tuple(dict.fromkeys(changed)))

    def _known_spans(self, cur: Cursor, trace_ids: list[str]) -> _Known:
        """``{trace: {span: (end_ns, n_attributes)}}`` of what is stored for these traces."""
        known: _Known = {}
        sql = "SELECT trace_id, span_id, end_ns, n_attributes FROM spans WHERE trace_id IN ({ids})"
        for t, sid, end_ns, n_attr in self.select_in(cur, sql, trace_ids):
            known.setdefault(t, {})[sid] = (end_ns, n_attr)
        return known

    def _write_log_events(self, cur: Cursor, events: Sequence[LogEvent], now: float) -> list[str]:
        """Insert GenAI content events; the traces they changed (a re-sent event changes none)."""
        changed: list[str] = []
        for ev in events:
            cur.execute(self.sql(_LOG_EVENT_INSERT), _log_event_row(ev, now))
            if getattr(cur, "rowcount", 1):
                self._touch_traces(cur, {ev.trace_id: (0, False)}, now)
                changed.append(ev.trace_id)
        return changed

    def _touch_traces(self, cur: Cursor, touched: dict[str, tuple[int, bool]], now: float) -> None:
        """Trace bookkeeping for a whole batch: one read per 500 traces, then bulk writes."""
        sql = "SELECT trace_id, state, finalized_at FROM traces WHERE trace_id IN ({ids})"
        states = {r[0]: (r[1], r[2]) for r in self.select_in(cur, sql, list(touched))}
        inserts, updates = [], []
        for trace_id, (n_new, root) in touched.items():
            if trace_id not in states:
                inserts.append((trace_id, now, now, n_new, int(root)))
                continue
            state, finalized_at = states[trace_id]
            late = state == "finalized"
            reopen = not late or (
                finalized_at is not None and now - finalized_at <= self.late_window_s
            )
            updates.append(
                (now, n_new, int(root), n_new if late else 0, "open" if reopen else state, trace_id)
            )
        if inserts:
            cur.executemany(
                self.sql(
                    "INSERT INTO traces (trace_id, first_seen_at, last_seen_at, span_count,"
                    " has_root, state) VALUES (?,?,?,?,?, 'open')"
                ),
                inserts,
            )
        if updates:
            cur.executemany(self.sql(_TRACE_UPDATE), updates)

    def spans_for_trace(self, trace_id: str, *, limit: int | None = None) -> list[SpanRecord]:
        """Every stored span of one trace (the first ``limit`` of them), in start order."""
        sql = "SELECT body, pb FROM spans WHERE trace_id = ? ORDER BY start_ns, span_id"
        params: tuple[Any, ...] = (trace_id,)
        if limit is not None:
            sql, params = sql + " LIMIT ?", (trace_id, int(limit))
        out: list[SpanRecord] = []
        with self.transaction(write=False) as cur:  # 500 rows at a time: never all rows at once
            cur.execute(self.sql(sql), params)
            while rows := cur.fetchmany(500):
                out.extend(
                    span_from_bytes(bytes(pb))
                    if pb is not None
                    else SpanRecord.from_json(json.loads(body))
                    for body, pb in rows
                )
        return out

    def log_events_for_trace(self, trace_id: str) -> list[LogEvent]:
        """GenAI content events joined to one trace."""
        rows = self.query(
            "SELECT span_id, body FROM log_events WHERE trace_id = ? ORDER BY id", (trace_id,)
        )
        out = []
        for span_id, body in rows:
            data = json.loads(body)
            out.append(
                LogEvent(
                    trace_id=trace_id,
                    span_id=span_id,
                    event_name=data.get("event_name", ""),
                    time_ns=int(data.get("time_ns", 0)),
                    attributes=data.get("attributes", {}),
                    body=data.get("body"),
                )
            )
        return out

    def count_spans(self) -> int:
        """Number of stored spans."""
        return int(self.query("SELECT COUNT(*) FROM spans")[0][0])


def _rows(spans: Sequence[SpanRecord | SpanRow], bodies: Sequence[str] | None) -> list[SpanRow]:
    if bodies is None:
        return [s if isinstance(s, SpanRow) else span_row(s) for s in spans]
    return [
        s if isinstance(s, SpanRow) else span_row(s, body)
        for s, body in zip(spans, bodies, strict=True)
    ]


__all__ = [
    "Cursor",
    "OutboxItem",
    "SQLBase",
    "SQLStore",
    "SpanRow",
    "SpanWrite",
    "_now",
    "span_body",
]
