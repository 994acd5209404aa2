"""PostgresStore: the shared store for many collector and worker processes (psycopg 3, pooled)."""

from __future__ import annotations

import hashlib
import logging
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

import psycopg
from psycopg_pool import ConnectionPool, PoolTimeout

from ragsieve.collector.spans import LogEvent, SpanRecord
from ragsieve.collector.store.base import Cursor, OutboxItem, SpanWrite, SQLStore, _now
from ragsieve.collector.store.migrations import MIGRATIONS
from ragsieve.evaluators.errors import StoreError
from ragsieve.evaluators.records import RagInteraction

log = logging.getLogger(__name__)

# Fixed advisory-lock keys (any int64 not produced by ``lock_key`` for a real trace is fine).
MIGRATION_LOCK = 0x72616773_6D696772  # "ragsmigr"
SEQ_LOCK = 0x72616773_73657120  # "ragsseq "


def lock_key(namespace: str, name: str) -> int:
    """A stable signed 64-bit advisory-lock key for ``name`` within ``namespace``."""
    digest = hashlib.blake2b(f"{namespace}\0{name}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big", signed=True)


def _conninfo(url: str) -> str:
    """Accept ``postgresql://``, ``postgres://`` and SQLAlchemy-style ``postgresql+psycopg://``."""
    scheme, sep, rest = url.partition("://")
    if not sep:
        raise StoreError(f"store URL {url!r}: expected postgresql://user@host:port/db")
    if scheme.split("+", 1)[0].lower() in {"postgresql", "postgres"}:
        return f"postgresql://{rest}"
    return url


class PostgresStore(SQLStore):
    """A store in one PostgreSQL database, safe to share between processes.

    Cross-process rules that SQLite gets from its single writer lock are made explicit here:
    writes to a trace hold a per-trace advisory lock (so the read-then-upsert of duplicate spans
    and the settle bookkeeping stay atomic), derived records take a global lock so ``seq`` follows
    commit order, migrations run under one advisory lock, and outbox rows are claimed with
    ``FOR UPDATE SKIP LOCKED`` plus a lease so several forwarders never send the same row at once.

    Example:
        >>> store = PostgresStore("postgresql://ragsieve@127.0.0.1:5432/ragsieve")  # doctest: +SKIP
    """

    dialect = "postgres"
    placeholder = "%s"

    def __init__(
        self,
        url: str,
        *,
        min_connections: int = 1,
        max_connections: int = 8,
        connect_timeout_s: float = 10.0,
        outbox_lease_s: float = 60.0,
        migrate: bool = True,
    ) -> None:
        if min_connections < 1 or max_connections < min_connections:
            raise StoreError(
                f"pool size: need 1 <= min_connections <= max_connections,"
                f" got {min_connections}..{max_connections}"
            )
        self.url = url
        self.outbox_lease_s = outbox_lease_s
        self.connect_timeout_s = connect_timeout_s
        self._local = threading.local()
        try:
            self._pool = ConnectionPool(
                _conninfo(url),
                min_size=min_connections,
                max_size=max_connections,
                timeout=connect_timeout_s,
                kwargs={"connect_timeout": max(1, int(connect_timeout_s))},
                check=ConnectionPool.check_connection,
                open=False,
                name="ragsieve-store",
            )
            self._pool.open(wait=True, timeout=connect_timeout_s)
        except (psycopg.Error, PoolTimeout) as exc:
            raise StoreError(f"{_safe(url)}: cannot connect: {exc}") from exc
        if migrate:
            self.migrate()

    # -- dialect hooks -------------------------------------------------------------------------
    @contextmanager
    def transaction(self, write: bool = True) -> Iterator[Cursor]:
        """A cursor in one transaction on a pooled connection: committed on exit.

        Advisory locks requested by the calling method (see ``_locking``) are taken first, in key
        order, so concurrent writers never deadlock on them.
        """
        locks: list[int] = getattr(self._local, "locks", None) or []
        self._local.locks = None
        try:
            with self._pool.connection() as conn, conn.transaction(), conn.cursor() as cur:
                if locks:
                    cur.execute(
                        "SELECT count(pg_advisory_xact_lock(k)) FROM"
                        " (SELECT DISTINCT k FROM unnest(%s::bigint[]) AS k ORDER BY k) AS s",
                        (sorted(set(locks)),),
                    )
                yield cur
        except (psycopg.OperationalError, PoolTimeout) as exc:
            raise StoreError(f"{_safe(self.url)}: {exc}") from exc

    def close(self) -> None:
        """Close the pool and every connection in it."""
        self._pool.close()

    @contextmanager
    def _locking(self, keys: Sequence[int]) -> Iterator[None]:
        """Ask the next ``transaction()`` on this thread to take these advisory locks first."""
        self._local.locks = list(keys)
        try:
            yield
        finally:
            self._local.locks = None

    # -- migrations ----------------------------------------------------------------------------
    def migrate(self) -> list[str]:
        """Apply pending migrations in one transaction, serialized across processes."""
        applied: list[str] = []
        with self.transaction() as cur:
            cur.execute("SELECT pg_advisory_xact_lock(%s)", (MIGRATION_LOCK,))
            cur.execute(
                "CREATE TABLE IF NOT EXISTS _migrations (name TEXT PRIMARY KEY,"
                " applied_at DOUBLE PRECISION NOT NULL)"
            )
            cur.execute("SELECT name FROM _migrations")
            done = {r[0] for r in cur.fetchall()}
            for name, ddl in MIGRATIONS:
                if name in done:
                    continue
                for statement in self._ddl(ddl).split(";"):
                    if statement.strip():
                        cur.execute(statement)
                cur.execute(
                    "INSERT INTO _migrations (name, applied_at) VALUES (%s, %s)", (name, _now())
                )
                applied.append(name)
        if applied:
            log.info("applied migrations %s to %s", ", ".join(applied), _safe(self.url))
        return applied

    # -- writes that must be atomic per trace --------------------------------------------------
    def write_spans(
        self,
        spans: Sequence[SpanRecord],
        *,
        bodies: Sequence[str] | None = None,
        forward: Sequence[tuple[str, bytes, str, int]] = (),
        log_events: Sequence[LogEvent] = (),
        now: float | None = None,
    ) -> SpanWrite:
        """Upsert spans like every store, holding each touched trace's lock for the transaction."""
        traces = {s.trace_id for s in spans} | {e.trace_id for e in log_events}
        with self._locking([lock_key("trace", t) for t in traces]):
            return super().write_spans(
                spans, bodies=bodies, forward=forward, log_events=log_events, now=now
            )

    def save_interaction(
        self, interaction: RagInteraction, *, seen_at: float, now: float | None = None
    ) -> bool:
        """Store a derived record; ``seq`` is assigned under a global lock, so in commit order."""
        with self._locking([lock_key("trace", interaction.trace_id), SEQ_LOCK]):
            return super().save_interaction(interaction, seen_at=seen_at, now=now)

    def mark_finalized(self, trace_id: str, *, seen_at: float, now: float | None = None) -> None:
        """Finalize a record-less trace under its trace lock."""
        with self._locking([lock_key("trace", trace_id)]):
            super().mark_finalized(trace_id, seen_at=seen_at, now=now)

    # -- outbox --------------------------------------------------------------------------------
    def due_outbox(
        self, topic: str, *, now: float | None = None, limit: int = 50
    ) -> list[OutboxItem]:
        """Claim due items for ``outbox_lease_s`` seconds; other processes skip claimed rows.

        A claimed item that is neither delivered nor retried (its process died) is due again when
        the lease runs out.
        """
        now = _now() if now is None else now
        with self.transaction() as cur:
            cur.execute(
                "UPDATE outbox SET next_attempt_at = %s WHERE id IN (SELECT id FROM outbox"
                " WHERE topic = %s AND delivered_at IS NULL AND next_attempt_at <= %s"
                " ORDER BY id LIMIT %s FOR UPDATE SKIP LOCKED)"
                " RETURNING id, topic, dedup_key, payload, content_type, items, attempts",
                (now + self.outbox_lease_s, topic, now, limit),
            )
            rows = sorted(cur.fetchall(), key=lambda r: r[0])
        return [OutboxItem(r[0], r[1], r[2], bytes(r[3]), r[4], r[5], r[6]) for r in rows]


def _safe(url: str) -> str:
    """The URL without its password, for messages and logs."""
    scheme, sep, rest = url.partition("://")
    creds, at, host = rest.rpartition("@")
    if not at or ":" not in creds:
        return url
    return f"{scheme}{sep}{creds.split(':', 1)[0]}:***@{host}"


__all__ = ["PostgresStore", "lock_key"]
