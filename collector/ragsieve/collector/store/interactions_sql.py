"""Feedback, settling bookkeeping and the derived interaction records of the store."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime
from typing import Any

from ragsieve.collector.store.sql import SQLBase, _now
from ragsieve.collector.wire.feedback import load_stored
from ragsieve.evaluators.records import Feedback, RagInteraction

# When a trace started waiting: its first span, or its last derivation when it kept growing.
_WAITED = "COALESCE(finalized_at, first_seen_at)"


class InteractionsMixin(SQLBase):
    """Feedback joins, traces due to settle, and one derived record per trace."""

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
            "SELECT id, body FROM feedback WHERE trace_id = ? OR (trace_id IS NULL AND span_id IN"
            " (SELECT span_id FROM spans WHERE trace_id = ?)) ORDER BY id",
            (trace_id, trace_id),
        )
        loaded = (load_stored(r[1], r[0]) for r in rows)
        return [fb for fb in loaded if fb is not None]

    # -- settling and interactions -------------------------------------------------------------
    def due_traces(
        self,
        *,
        now: float,
        quiet_s: float,
        max_wait_s: float,
        limit: int = 500,
        min_spans: int = 0,
        max_spans: int | None = None,
    ) -> list[tuple[str, float]]:
        """Open traces ready to derive: ``(trace_id, last_seen_at)`` pairs.

        Ready means: has a local root and was quiet for ``quiet_s``, or waited ``max_wait_s``
        since its first span (or since it was last derived, for a trace that kept growing).
        ``min_spans`` / ``max_spans`` (exclusive) pick traces by size, so settlers in separate
        lanes keep small traces from waiting behind a large one.
        """
        size = " AND span_count >= ?" + ("" if max_spans is None else " AND span_count < ?")
        bounds = (min_spans,) if max_spans is None else (min_spans, max_spans)
        return [
            (r[0], r[1])
            for r in self.query(
                "SELECT trace_id, last_seen_at FROM traces WHERE state = 'open' AND"
                f" ((has_root = 1 AND last_seen_at <= ?) OR {_WAITED} <= ?){size}"
                " ORDER BY last_seen_at LIMIT ?",
                (now - quiet_s, now - max_wait_s, *bounds, limit),
            )
        ]

    def settling(self, *, quiet_s: float, max_wait_s: float) -> tuple[int, float | None]:
        """Open traces not yet derived and when the last of them is due (epoch seconds).

        A trace is due ``quiet_s`` after its last span once it has a root, and ``max_wait_s``
        after its first span (or last derivation) regardless (the rule of :meth:`due_traces`).
        """
        rows = self.query(
            f"SELECT COUNT(*), MAX(CASE WHEN has_root = 1 AND last_seen_at + ? < {_WAITED} + ?"
            f" THEN last_seen_at + ? ELSE {_WAITED} + ? END) FROM traces WHERE state = 'open'",
            (quiet_s, max_wait_s, quiet_s, max_wait_s),
        )
        count, last_due = rows[0]
        return int(count or 0), None if last_due is None else float(last_due)

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
        self,
        interaction: RagInteraction,
        *,
        seen_at: float,
        now: float | None = None,
        overdue: bool = False,
    ) -> bool:
        """Store a derived record and mark its trace finalized.

        Skipped (returns False) when spans arrived after ``seen_at``: the trace settles again.
        With ``overdue`` (the trace waited ``max_wait_s``) the record is stored all the same, so
        a trace that keeps receiving spans still settles; when spans did arrive meanwhile the
        trace stays open, and its ``max_wait_s`` clock restarts from now.
        """
        now = _now() if now is None else now
        with self.transaction() as cur:
            cur.execute(
                self.sql(
                    "UPDATE traces SET state = CASE WHEN last_seen_at <= ? THEN 'finalized'"
                    " ELSE 'open' END, finalized_at = ?, revision = revision + 1"
                    " WHERE trace_id = ? AND (last_seen_at <= ? OR ? = 1) AND state = 'open'"
                ),
                (seen_at, now, interaction.trace_id, seen_at, int(overdue)),
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
                    " status, body, session_id) VALUES (?,?,?,?,?,?,?,?) ON CONFLICT (trace_id)"
                    " DO UPDATE SET revision = excluded.revision, seq = excluded.seq,"
                    " started_at = excluded.started_at, settled_at = excluded.settled_at,"
                    " status = excluded.status, body = excluded.body,"
                    " session_id = excluded.session_id"
                ),
                (
                    record.trace_id,
                    revision,
                    seq,
                    record.started_at.timestamp(),
                    now,
                    record.status,
                    record.model_dump_json(),
                    record.session_id,
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
