"""The ``Store`` contract: what the collector, the job and the CLI call on a store.

``SQLStore`` (SQLite and PostgreSQL) meets it; a third backend, registered under the
``ragsieve.stores`` entry-point group, has this to meet. Repositories in other layers (results,
golden candidates, the observed corpus) speak portable SQL through ``transaction``, ``query``,
``query_in`` and ``execute`` and branch on ``dialect`` only where the two SQL dialects differ, so
the contract includes that generic access. For tests, ``ragsieve.collector.store.testing`` ships a
ready store in a temporary file, as the OTel SDK ships its in-memory exporter.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from contextlib import AbstractContextManager
from datetime import datetime
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

if TYPE_CHECKING:
    from ragsieve.collector.store.base import SpanWrite
    from ragsieve.collector.store.outbox_sql import OutboxItem
    from ragsieve.collector.store.sql import Cursor
    from ragsieve.collector.wire.spans import LogEvent, SpanRecord, SpanRow
    from ragsieve.evaluators.records import Feedback, RagInteraction


@runtime_checkable
class Store(Protocol):
    """A ragsieve store (see the module docstring)."""

    url: str
    dialect: str  # "sqlite" | "postgres": which SQL the generic access below speaks
    late_window_s: float  # how long after assembly a late span still revises its trace

    # -- lifecycle and generic SQL access ------------------------------------------------------
    def close(self) -> None:
        """Release connections."""

    def migrate(self) -> list[str]:
        """Apply pending schema migrations; returns their names."""

    def transaction(self, write: bool = True) -> AbstractContextManager[Cursor]:
        """A cursor inside one transaction: committed on exit, rolled back on error."""

    def write_problem(self) -> str | None:
        """Why a write cannot succeed now (read-only, deleted, disk full...), or None: readiness."""

    def sql(self, text: str) -> str:
        """``text`` with ``?`` placeholders rewritten for this driver."""

    def execute(self, sql: str, params: Sequence[Any] = ()) -> int:
        """Run one statement in its own transaction; the affected row count."""

    def query(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        """Run one query; every row as a tuple."""

    def query_in(
        self, sql: str, ids: Iterable[str], params: Sequence[Any] = (), *, chunk: int = 500
    ) -> list[tuple[Any, ...]]:
        """Run ``sql`` once per slice of ``ids`` (``{ids}`` stands for the ``IN`` list)."""

    # -- spans, traces, interactions, feedback -------------------------------------------------
    def write_spans(
        self,
        spans: Sequence[SpanRecord | SpanRow],
        *,
        bodies: Sequence[str] | None = None,
        forward: Sequence[tuple[str, bytes, str, int]] = (),
        log_events: Sequence[LogEvent] = (),
        now: float | None = None,
    ) -> SpanWrite:
        """Store spans (upsert), their log events and forward payloads in one transaction."""

    def spans_for_trace(self, trace_id: str, *, limit: int | None = None) -> list[SpanRecord]:
        """Every stored span of one trace (the first ``limit`` in start order)."""

    def log_events_for_trace(self, trace_id: str) -> list[LogEvent]:
        """GenAI log events of one trace."""

    def count_spans(self) -> int:
        """How many spans are stored."""

    def write_feedback(self, feedback: Feedback) -> str | None:
        """Store one feedback row; the trace id it touched when that trace exists."""

    def feedback_for_trace(self, trace_id: str) -> list[Feedback]:
        """Feedback on one trace, oldest first."""

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
        """Traces quiet long enough (or waiting too long) to assemble: ``(trace_id, seen_at)``;
        ``min_spans``/``max_spans`` (exclusive) select them by size."""

    def settling(self, *, quiet_s: float, max_wait_s: float) -> tuple[int, float | None]:
        """Traces still settling, and when the last of them is due."""

    def trace_state(self, trace_id: str) -> dict[str, Any] | None:
        """One trace's bookkeeping row (state, revision, counts), or None."""

    def save_interaction(
        self,
        interaction: RagInteraction,
        *,
        seen_at: float,
        now: float | None = None,
        overdue: bool = False,
    ) -> bool:
        """Store an assembled interaction; False when spans arrived after ``seen_at`` (unless
        ``overdue``: the trace waited ``max_wait_s`` and is stored regardless)."""

    def mark_finalized(self, trace_id: str, *, seen_at: float, now: float | None = None) -> None:
        """Mark a trace assembled as of ``seen_at``."""

    def get_interaction(self, trace_id: str) -> RagInteraction | None:
        """One assembled interaction, or None."""

    def list_interactions(
        self,
        *,
        since: datetime | None = None,
        until: datetime | None = None,
        limit: int | None = None,
        newest_first: bool = True,
    ) -> list[RagInteraction]:
        """Assembled interactions started in the window."""

    def iter_interactions(
        self,
        *,
        since: datetime | None = None,
        until: datetime | None = None,
        limit: int | None = None,
        newest_first: bool = False,
    ) -> Iterator[RagInteraction]:
        """Like :meth:`list_interactions`, streamed."""

    # -- the outbox (Phoenix forwarding, annotations) ------------------------------------------
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
        """Queue one payload for delivery on ``topic``."""

    def due_outbox(
        self, topic: str, *, now: float | None = None, limit: int = 50
    ) -> list[OutboxItem]:
        """Payloads of ``topic`` due for a delivery attempt."""

    def mark_delivered(self, ids: Sequence[int], *, now: float | None = None) -> None:
        """Record the given outbox rows as delivered."""

    def mark_retry(self, item_id: int, error: str, next_attempt_at: float) -> None:
        """Record a failed attempt and when to try again."""

    def outbox_stats(self) -> dict[str, dict[str, int]]:
        """Rows per topic and state."""

    def prune_outbox(self, older_than_s: float, *, now: float | None = None) -> int:
        """Delete delivered rows older than ``older_than_s``; how many went."""


__all__ = ["Store"]
