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

from ragsieve.collector.spans import LogEvent, SpanRecord
from ragsieve.collector.store.interactions_sql import InteractionsMixin
from ragsieve.collector.store.outbox_sql import OutboxItem, OutboxMixin
from ragsieve.collector.store.sql import Cursor, SQLBase, _digest, _now


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


def span_body(span: SpanRecord) -> str:
    """The JSON kept in the ``spans.body`` column (computed off the writer thread when possible)."""
    return json.dumps(span.to_json(), ensure_ascii=False)


class SQLStore(InteractionsMixin, OutboxMixin):
    """Every store operation; subclasses provide ``transaction()``, ``close()`` and the dialect."""

    # -- spans ---------------------------------------------------------------------------------
    def write_spans(
        self,
        spans: Sequence[SpanRecord],
        *,
        bodies: Sequence[str] | None = None,
        forward: Sequence[tuple[str, bytes, str, int]] = (),
        log_events: Sequence[LogEvent] = (),
        now: float | None = None,
    ) -> SpanWrite:
        """Upsert spans and queue forwards in one transaction: durable when this returns.

        A duplicate keeps the copy with the later end time, then the one with more attributes.
        ``forward`` holds ``(topic, payload, content_type, n_items)`` outbox rows; ``bodies``
        the pre-encoded JSON of each span (same order), to keep encoding off the writer.
        """
        now = _now() if now is None else now
        if bodies is None:
            bodies = [span_body(s) for s in spans]
        by_trace: dict[str, list[tuple[SpanRecord, str]]] = {}
        for span, body in zip(spans, bodies, strict=True):
            by_trace.setdefault(span.trace_id, []).append((span, body))
        written = duplicates = 0
        changed: list[str] = []
        with self.transaction() as cur:
            known: dict[str, dict[str, tuple[int, int]]] = {t: {} for t in by_trace}
            trace_ids = list(by_trace)
            for i in range(0, len(trace_ids), 500):
                chunk = trace_ids[i : i + 500]
                cur.execute(
                    self.sql(
                        "SELECT trace_id, span_id, end_ns, n_attributes FROM spans WHERE trace_id"
                        f" IN ({','.join('?' * len(chunk))})"
                    ),
                    tuple(chunk),
                )
                for t, sid, end_ns, n_attr in cur.fetchall():
                    known[t][sid] = (end_ns, n_attr)
            rows: list[tuple[Any, ...]] = []
            touched: dict[str, tuple[int, bool]] = {}
            for trace_id, group in by_trace.items():
                existing = known[trace_id]
                n_new = 0
                has_root = False
                for span, body in group:
                    n_attr = len(span.attributes)
                    old = existing.get(span.span_id)
                    if old is not None and (span.end_ns, n_attr) <= (old[0], old[1]):
                        duplicates += 1
                        continue
                    existing[span.span_id] = (span.end_ns, n_attr)
                    has_root = has_root or not span.parent_span_id or span.parent_is_remote
                    n_new += 1
                    rows.append(
                        (
                            span.trace_id,
                            span.span_id,
                            span.parent_span_id,
                            span.name,
                            span.start_ns,
                            span.end_ns,
                            n_attr,
                            body,
                            now,
                        )
                    )
                if n_new:
                    touched[trace_id] = (n_new, has_root)
            if rows:
                cur.executemany(
                    self.sql(
                        "INSERT INTO spans (trace_id, span_id, parent_span_id, name, start_ns,"
                        " end_ns, n_attributes, body, received_at) VALUES (?,?,?,?,?,?,?,?,?)"
                        " ON CONFLICT (trace_id, span_id) DO UPDATE SET"
                        " parent_span_id = excluded.parent_span_id, name = excluded.name,"
                        " start_ns = excluded.start_ns, end_ns = excluded.end_ns,"
                        " n_attributes = excluded.n_attributes, body = excluded.body,"
                        " received_at = excluded.received_at"
                    ),
                    rows,
                )
                written = len(rows)
                changed.extend(touched)
                self._touch_traces(cur, touched, now)
            for topic, payload, content_type, n_items in forward:
                # A client retry re-sends the same payload: queue it for forwarding only once.
                cur.execute(
                    self.sql(
                        "INSERT INTO outbox (topic, dedup_key, payload, content_type, items,"
                        " created_at, next_attempt_at) VALUES (?,?,?,?,?,?,?)"
                        " ON CONFLICT (topic, dedup_key) DO NOTHING"
                    ),
                    (topic, _digest(payload), payload, content_type, n_items, now, now),
                )
            for ev in log_events:
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
                cur.execute(
                    self.sql(
                        "INSERT INTO log_events (trace_id, span_id, body, received_at, dedup)"
                        " VALUES (?,?,?,?,?) ON CONFLICT (trace_id, dedup) DO NOTHING"
                    ),
                    (ev.trace_id, ev.span_id, body, now, _digest(f"{ev.span_id}|{body}".encode())),
                )
                if getattr(cur, "rowcount", 1):  # a re-sent event changes nothing
                    self._touch_traces(cur, {ev.trace_id: (0, False)}, now)
                    changed.append(ev.trace_id)
        return SpanWrite(written, duplicates, tuple(dict.fromkeys(changed)))

    def _touch_traces(self, cur: Cursor, touched: dict[str, tuple[int, bool]], now: float) -> None:
        """Trace bookkeeping for a whole batch: one read per 500 traces, then bulk writes."""
        ids = list(touched)
        states: dict[str, tuple[str, float | None]] = {}
        for i in range(0, len(ids), 500):
            chunk = ids[i : i + 500]
            cur.execute(
                self.sql(
                    "SELECT trace_id, state, finalized_at FROM traces WHERE trace_id IN"
                    f" ({','.join('?' * len(chunk))})"
                ),
                tuple(chunk),
            )
            states.update({r[0]: (r[1], r[2]) for r in cur.fetchall()})
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

    def spans_for_trace(self, trace_id: str) -> list[SpanRecord]:
        """Every stored span of one trace, in start order."""
        rows = self.query(
            "SELECT body FROM spans WHERE trace_id = ? ORDER BY start_ns, span_id", (trace_id,)
        )
        return [SpanRecord.from_json(json.loads(r[0])) for r in rows]

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


__all__ = [
    "Cursor",
    "OutboxItem",
    "SQLBase",
    "SQLStore",
    "SpanWrite",
    "_now",
    "span_body",
]
