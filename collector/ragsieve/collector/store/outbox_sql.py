"""The durable outbox: payloads queued in the same transaction as their data, delivered later."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ragsieve.collector.store.sql import SQLBase, _now


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


class OutboxMixin(SQLBase):
    """Enqueue, claim, mark and prune outbox rows."""

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
