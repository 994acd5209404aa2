"""SQLStore: the store's behaviour written once in portable SQL; dialects supply connections.

Every method is synchronous; the receiver calls them from worker threads. Placeholders are written
as ``?`` and rewritten for drivers that use ``%s``.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Iterable, Iterator, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Protocol

from ragsieve.collector.spans import LogEvent, SpanRecord
from ragsieve.collector.store.migrations import MIGRATIONS
from ragsieve.evaluators.records import Feedback, RagInteraction


class Cursor(Protocol):
    """The part of a DB-API cursor the store uses."""

    def execute(self, sql: str, params: Sequence[Any] = ...) -> Any: ...  # noqa: D102
    def executemany(self, sql: str, params: Iterable[Sequence[Any]]) -> Any: ...  # noqa: D102
    def fetchall(self) -> list[Any]: ...  # noqa: D102
    def fetchone(self) -> Any: ...  # noqa: D102


@dataclass(frozen=True, slots=True)
class OutboxItem:
    """A payload waiting for delivery to an external endpoint."""

    id: int
    topic: str
    dedup_key: str | None
    payload: bytes
    content_type: str
    items: int
    attempts: int


@dataclass(frozen=True, slots=True)
class SpanWrite:
    """Result of one write: spans new or changed, duplicates ignored."""

    written: int
    duplicates: int
    traces: tuple[str, ...]


def _now() -> float:
    return time.time()


_TRACE_UPDATE = (
    "UPDATE traces SET last_seen_at = ?, span_count = span_count + ?,"
    " has_root = CASE WHEN has_root = 1 OR ? = 1 THEN 1 ELSE 0 END,"
    " late_spans = late_spans + ?, state = ? WHERE trace_id = ?"
)


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def span_body(span: SpanRecord) -> str:
    """The JSON kept in the ``spans.body`` column (computed off the writer thread when possible)."""
    return json.dumps(span.to_json(), ensure_ascii=False)


def _ts(value: float | None) -> datetime | None:
    return None if value is None else datetime.fromtimestamp(value, UTC)


class SQLStore:
    """Shared implementation; subclasses provide ``transaction()`` and the dialect."""

    url: str = ""
    placeholder = "?"
    dialect = "sqlite"
    late_window_s: float = 24 * 3600.0

    # -- dialect hooks -------------------------------------------------------------------------
    def transaction(self, write: bool = True) -> AbstractContextManager[Cursor]:  # pragma: no cover
        """A cursor inside one transaction: committed on exit, rolled back on error."""
        raise NotImplementedError

    def close(self) -> None:  # pragma: no cover - abstract
        """Release connections."""
        raise NotImplementedError

    def sql(self, text: str) -> str:
        """Rewrite ``?`` placeholders for this driver (literal ``%`` escaped for ``%s`` drivers)."""
        if self.placeholder == "?":
            return text
        return text.replace("%", "%%").replace("?", self.placeholder)

    def _ddl(self, text: str) -> str:
        subs = {
            "sqlite": {"id": "INTEGER PRIMARY KEY AUTOINCREMENT", "blob": "BLOB", "real": "REAL"},
            "postgres": {
                "id": "BIGSERIAL PRIMARY KEY",
                "blob": "BYTEA",
                "real": "DOUBLE PRECISION",
            },
        }[self.dialect]
        return text.format(**subs)

    # -- generic access for repositories in other layers ------------------------------------------
    def execute(self, sql: str, params: Sequence[Any] = ()) -> int:
        """Run one statement in its own transaction; returns the affected row count."""
        with self.transaction() as cur:
            cur.execute(self.sql(sql), tuple(params))
            return int(getattr(cur, "rowcount", 0) or 0)

    def query(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        """Run one query and return all rows as tuples."""
        with self.transaction(write=False) as cur:
            cur.execute(self.sql(sql), tuple(params))
            return [tuple(r) for r in cur.fetchall()]

    # -- migrations ----------------------------------------------------------------------------
    def migrate(self) -> list[str]:
        """Apply pending migrations in order; returns the names applied."""
        applied: list[str] = []
        with self.transaction() as cur:
            cur.execute(
                "CREATE TABLE IF NOT EXISTS _migrations (name TEXT PRIMARY KEY, applied_at "
                + self._ddl("{real}")
                + " NOT NULL)"
            )
            cur.execute("SELECT name FROM _migrations")
            done = {r[0] for r in cur.fetchall()}
        for name, ddl in MIGRATIONS:
            if name in done:
                continue
            with self.transaction() as cur:
                for statement in self._ddl(ddl).split(";"):
                    if statement.strip():
                        cur.execute(statement)
                cur.execute(
                    self.sql("INSERT INTO _migrations (name, applied_at) VALUES (?, ?)"),
                    (name, _now()),
                )
            applied.append(name)
        return applied

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

    # -- feedback ------------------------------------------------------------------------------
    def write_feedback(self, feedback: Feedback) -> str | None:
        """Store feedback; returns the trace id it joined (None until its span arrives)."""
        with self.transaction() as cur:
            trace_id = feedback.trace_id
            if trace_id is None and feedback.span_id:
                cur.execute(
                    self.sql("SELECT trace_id FROM spans WHERE span_id = ? LIMIT 1"),
                    (feedback.span_id,),
                )
                row = cur.fetchone()
                trace_id = row[0] if row else None
            cur.execute(
                self.sql(
                    "INSERT INTO feedback (trace_id, span_id, body, created_at) VALUES (?,?,?,?)"
                ),
                (trace_id, feedback.span_id, feedback.model_dump_json(), _now()),
            )
            if trace_id is not None:
                # Feedback re-derives the record at any time, without counting as a late span.
                cur.execute(
                    self.sql("UPDATE traces SET state = 'open' WHERE trace_id = ?"), (trace_id,)
                )
        return trace_id

    def feedback_for_trace(self, trace_id: str) -> list[Feedback]:
        """Feedback given by trace id, or by the id of any span of the trace."""
        rows = self.query(
            "SELECT body FROM feedback WHERE trace_id = ? OR (trace_id IS NULL AND span_id IN"
            " (SELECT span_id FROM spans WHERE trace_id = ?)) ORDER BY id",
            (trace_id, trace_id),
        )
        return [Feedback.model_validate_json(r[0]) for r in rows]

    # -- settling and interactions -------------------------------------------------------------
    def due_traces(
        self, *, now: float, quiet_s: float, max_wait_s: float, limit: int = 500
    ) -> list[tuple[str, float]]:
        """Open traces ready to derive: ``(trace_id, last_seen_at)`` pairs.

        Ready means: has a local root and was quiet for ``quiet_s``, or waited ``max_wait_s``.
        """
        return [
            (r[0], r[1])
            for r in self.query(
                "SELECT trace_id, last_seen_at FROM traces WHERE state = 'open' AND"
                " ((has_root = 1 AND last_seen_at <= ?) OR first_seen_at <= ?)"
                " ORDER BY last_seen_at LIMIT ?",
                (now - quiet_s, now - max_wait_s, limit),
            )
        ]

    def trace_state(self, trace_id: str) -> dict[str, Any] | None:
        """The settle bookkeeping of one trace."""
        rows = self.query(
            "SELECT first_seen_at, last_seen_at, span_count, has_root, state, finalized_at,"
            " revision, late_spans FROM traces WHERE trace_id = ?",
            (trace_id,),
        )
        if not rows:
            return None
        keys = (
            "first_seen_at last_seen_at span_count has_root state finalized_at revision late_spans"
        ).split()
        return dict(zip(keys, rows[0], strict=True))

    def save_interaction(
        self, interaction: RagInteraction, *, seen_at: float, now: float | None = None
    ) -> bool:
        """Store a derived record and mark its trace finalized.

        Skipped (returns False) when spans arrived after ``seen_at``: the trace settles again.
        """
        now = _now() if now is None else now
        with self.transaction() as cur:
            cur.execute(
                self.sql(
                    "UPDATE traces SET state = 'finalized', finalized_at = ?,"
                    " revision = revision + 1 WHERE trace_id = ? AND last_seen_at <= ?"
                    " AND state = 'open'"
                ),
                (now, interaction.trace_id, seen_at),
            )
            if not getattr(cur, "rowcount", 1):
                return False
            cur.execute(
                self.sql("SELECT revision FROM traces WHERE trace_id = ?"), (interaction.trace_id,)
            )
            revision = int(cur.fetchone()[0])
            record = interaction.model_copy(update={"revision": revision})
            cur.execute(self.sql("SELECT COALESCE(MAX(seq), 0) + 1 FROM interactions"))
            seq = int(cur.fetchone()[0])
            cur.execute(
                self.sql(
                    "INSERT INTO interactions (trace_id, revision, seq, started_at, settled_at,"
                    " status, body) VALUES (?,?,?,?,?,?,?) ON CONFLICT (trace_id) DO UPDATE SET"
                    " revision = excluded.revision, seq = excluded.seq,"
                    " started_at = excluded.started_at, settled_at = excluded.settled_at,"
                    " status = excluded.status, body = excluded.body"
                ),
                (
                    record.trace_id,
                    revision,
                    seq,
                    record.started_at.timestamp(),
                    now,
                    record.status,
                    record.model_dump_json(),
                ),
            )
        return True

    def mark_finalized(self, trace_id: str, *, seen_at: float, now: float | None = None) -> None:
        """Finalize a trace that yields no record (only log events, or underivable spans)."""
        now = _now() if now is None else now
        self.execute(
            "UPDATE traces SET state = 'finalized', finalized_at = ? WHERE trace_id = ?"
            " AND last_seen_at <= ?",
            (now, trace_id, seen_at),
        )

    def get_interaction(self, trace_id: str) -> RagInteraction | None:
        """One derived record by trace id."""
        rows = self.query("SELECT body FROM interactions WHERE trace_id = ?", (trace_id,))
        return RagInteraction.model_validate_json(rows[0][0]) if rows else None

    def list_interactions(
        self,
        *,
        since: datetime | None = None,
        until: datetime | None = None,
        limit: int | None = None,
        newest_first: bool = True,
    ) -> list[RagInteraction]:
        """Derived records whose trace started in ``[since, until)``."""
        return list(
            self.iter_interactions(since=since, until=until, limit=limit, newest_first=newest_first)
        )

    def iter_interactions(
        self,
        *,
        since: datetime | None = None,
        until: datetime | None = None,
        limit: int | None = None,
        newest_first: bool = False,
    ) -> Iterator[RagInteraction]:
        """Stream derived records in start order (or newest first)."""
        lo = since.timestamp() if since else float("-inf")
        hi = until.timestamp() if until else float("inf")
        order = "DESC" if newest_first else "ASC"
        sql = (
            "SELECT body FROM interactions WHERE started_at >= ? AND started_at < ?"
            f" ORDER BY started_at {order}, trace_id"
        )
        params: list[Any] = [max(lo, -1e18), min(hi, 1e18)]
        if limit is not None:
            sql += " LIMIT ?"
            params.append(int(limit))
        for (body,) in self.query(sql, params):
            yield RagInteraction.model_validate_json(body)

    # -- outbox --------------------------------------------------------------------------------
    def enqueue(
        self,
        topic: str,
        payload: bytes,
        content_type: str,
        *,
        dedup_key: str | None = None,
        items: int = 1,
        now: float | None = None,
    ) -> None:
        """Queue a payload; the same ``(topic, dedup_key)`` replaces the pending payload."""
        now = _now() if now is None else now
        self.execute(
            "INSERT INTO outbox (topic, dedup_key, payload, content_type, items, created_at,"
            " next_attempt_at) VALUES (?,?,?,?,?,?,?) ON CONFLICT (topic, dedup_key) DO UPDATE"
            " SET payload = excluded.payload, content_type = excluded.content_type,"
            " items = excluded.items, attempts = 0, next_attempt_at = excluded.next_attempt_at,"
            " delivered_at = NULL, last_error = NULL",
            (topic, dedup_key, payload, content_type, items, now, now),
        )

    def due_outbox(
        self, topic: str, *, now: float | None = None, limit: int = 50
    ) -> list[OutboxItem]:
        """Undelivered items whose next attempt is due, oldest first."""
        now = _now() if now is None else now
        rows = self.query(
            "SELECT id, topic, dedup_key, payload, content_type, items, attempts FROM outbox"
            " WHERE topic = ? AND delivered_at IS NULL AND next_attempt_at <= ?"
            " ORDER BY id LIMIT ?",
            (topic, now, limit),
        )
        return [OutboxItem(r[0], r[1], r[2], bytes(r[3]), r[4], r[5], r[6]) for r in rows]

    def mark_delivered(self, ids: Sequence[int], *, now: float | None = None) -> None:
        """Record successful delivery."""
        now = _now() if now is None else now
        with self.transaction() as cur:
            cur.executemany(
                self.sql("UPDATE outbox SET delivered_at = ?, last_error = NULL WHERE id = ?"),
                [(now, i) for i in ids],
            )

    def mark_retry(self, item_id: int, error: str, next_attempt_at: float) -> None:
        """Record a failed attempt and when to try again."""
        self.execute(
            "UPDATE outbox SET attempts = attempts + 1, last_error = ?, next_attempt_at = ?"
            " WHERE id = ?",
            (error[:500], next_attempt_at, item_id),
        )

    def outbox_stats(self) -> dict[str, dict[str, int]]:
        """Pending, dead-lettered and delivered counts per topic."""
        rows = self.query(
            "SELECT topic,"
            " SUM(CASE WHEN delivered_at IS NULL AND (last_error IS NULL OR last_error NOT LIKE"
            " 'dead letter:%') THEN 1 ELSE 0 END),"
            " SUM(CASE WHEN delivered_at IS NULL AND last_error LIKE 'dead letter:%' THEN 1"
            " ELSE 0 END),"
            " SUM(CASE WHEN delivered_at IS NULL THEN 0 ELSE 1 END) FROM outbox GROUP BY topic"
        )
        return {
            r[0]: {"pending": int(r[1] or 0), "dead": int(r[2] or 0), "delivered": int(r[3] or 0)}
            for r in rows
        }

    def prune_outbox(self, older_than_s: float, *, now: float | None = None) -> int:
        """Delete rows delivered more than ``older_than_s`` ago; returns how many."""
        now = _now() if now is None else now
        return self.execute(
            "DELETE FROM outbox WHERE delivered_at IS NOT NULL AND delivered_at < ?",
            (now - older_than_s,),
        )


__all__ = ["OutboxItem", "SQLStore", "SpanWrite", "_ts"]
