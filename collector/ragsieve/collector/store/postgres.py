"""PostgresStore: the shared store for many collector and worker processes (psycopg 3, pooled)."""

from __future__ import annotations

import hashlib
import logging
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import psycopg
from psycopg_pool import ConnectionPool, PoolTimeout

from ragsieve.collector.store.base import (
    Cursor,
    Forward,
    OutboxItem,
    SpanWrite,
    SQLStore,
    _now,
)
from ragsieve.collector.store.migrations import MIGRATIONS
from ragsieve.collector.store.sql import masked_url, refuse_newer_schema
from ragsieve.collector.wire.spans import LogEvent, SpanRecord, SpanRow
from ragsieve.evaluators.errors import ConfigError, StoreError
from ragsieve.evaluators.records import RagInteraction

log = logging.getLogger(__name__)

# Fixed advisory-lock keys (any int64 not produced by ``lock_key`` for a real name is fine).
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


@dataclass(frozen=True, slots=True)
class LeasedOutboxItem(OutboxItem):
    """An outbox row claimed by this process until ``lease_until`` (the claim's fencing token)."""

    lease_until: float = 0.0


@dataclass(frozen=True, slots=True)
class _LockPlan:
    """Locks the next ``transaction()`` on this thread takes before running anything else."""

    traces: tuple[str, ...] = ()  # ``traces`` rows locked FOR UPDATE, in key order
    create_at: float | None = None  # first create missing ``traces`` rows with this time
    advisory: tuple[int, ...] = ()  # then these transaction-level advisory locks, in key order


class SessionLock:
    """A session-level advisory lock held on one pooled connection, idle between transactions.

    The lock lives as long as the connection's session: ``release()`` unlocks and returns the
    connection; a process that dies loses its connection, and the server drops the lock with it.
    ``transaction()`` runs short transactions on the same connection, so a caller holding the
    lock never waits for a second pooled connection.
    """

    def __init__(self, store: PostgresStore, conn: Any, key: int) -> None:
        self.store, self.key, self._conn = store, key, conn

    @contextmanager
    def transaction(self, write: bool = True) -> Iterator[Cursor]:
        """A cursor in one transaction on the lock's connection: committed on exit."""
        if self._conn is None:
            raise StoreError(f"advisory lock {self.key} was released")
        try:
            with self._conn.transaction(), self._conn.cursor() as cur:
                yield cur
        except psycopg.OperationalError as exc:
            raise StoreError(f"{masked_url(self.store.url)}: {exc}") from exc

    def release(self) -> None:
        """Unlock and give the connection back (a broken connection is simply discarded)."""
        conn, self._conn = self._conn, None
        if conn is None:
            return
        try:
            conn.execute("SELECT pg_advisory_unlock(%s)", (self.key,))
            conn.commit()
        except psycopg.Error as exc:  # the session is gone, and the lock with it
            log.warning("advisory unlock %d failed (%s); dropping the connection", self.key, exc)
            conn.close()
        self.store._pool.putconn(conn)


class PostgresStore(SQLStore):
    """A store in one PostgreSQL database, safe to share between processes.

    Cross-process rules that SQLite gets from its single writer lock are made explicit here:
    writes to a trace hold its ``traces`` row lock (created when missing, taken in key order, so
    duplicate spans' read-then-upsert and the settle bookkeeping stay atomic; row locks live in
    the rows, not the server's fixed-size lock table, so a request may touch any number of
    traces), derived records take a global lock so ``seq`` follows commit order, migrations run
    under one advisory lock, and outbox rows are claimed ``FOR UPDATE SKIP LOCKED`` with a lease.

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
        _probe(url, connect_timeout_s)
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
            raise StoreError(f"{masked_url(url)}: cannot connect: {exc}") from exc
        if migrate:
            try:
                self.migrate()
            except BaseException:
                self._pool.close()
                raise

    # -- dialect hooks -------------------------------------------------------------------------
    @contextmanager
    def transaction(self, write: bool = True) -> Iterator[Cursor]:
        """A cursor in one transaction on a pooled connection: committed on exit.

        Locks requested by the calling method (see ``_locking``) are taken first, each kind in
        key order and row locks before advisory ones, so concurrent writers never deadlock.
        """
        plan: _LockPlan | None = getattr(self._local, "plan", None)
        self._local.plan = None
        try:
            with self._pool.connection() as conn, self._cursor(conn, plan) as cur:
                yield cur
        except (psycopg.OperationalError, PoolTimeout) as exc:
            raise StoreError(f"{masked_url(self.url)}: {exc}") from exc

    @contextmanager
    def _cursor(self, conn: Any, plan: _LockPlan | None) -> Iterator[Cursor]:
        """A session opened while the server was read-only stays so: it is closed, and the pool
        opens a fresh one for the next attempt; a store error (503), never a data error (400)."""
        try:
            with conn.transaction(), conn.cursor() as cur:
                if plan is not None:
                    _take_locks(cur, plan)
                yield cur
        except psycopg.errors.ReadOnlySqlTransaction as exc:
            conn.close()
            raise StoreError(f"{masked_url(self.url)}: {exc}") from exc

    def write_problem(self) -> str | None:
        """Why a write cannot succeed now (server unreachable, read-only), or None."""
        try:
            with self.transaction(write=False) as cur:
                cur.execute("SHOW transaction_read_only")
                row = cur.fetchone()
        except StoreError as exc:
            return str(exc)
        if row and str(row[0]).lower() == "on":
            return f"{masked_url(self.url)}: the server accepts only reads (standby or read-only)"
        return None

    def close(self) -> None:
        """Close the pool and every connection in it."""
        self._pool.close()

    @contextmanager
    def _locking(self, plan: _LockPlan) -> Iterator[None]:
        """Ask the next ``transaction()`` on this thread to take these locks first."""
        self._local.plan = plan
        try:
            yield
        finally:
            self._local.plan = None

    def try_session_lock(self, key: int) -> SessionLock | None:
        """Take a session-level advisory lock without waiting; None when another session has it.

        The lock holds one pooled connection (outside any transaction) until ``release()``.
        """
        try:
            conn = self._pool.getconn()
        except PoolTimeout as exc:
            raise StoreError(f"{masked_url(self.url)}: {exc}") from exc
        try:
            row = conn.execute("SELECT pg_try_advisory_lock(%s)", (key,)).fetchone()
            conn.commit()
            got = bool(row and row[0])
        except psycopg.Error as exc:
            self._pool.putconn(conn)
            raise StoreError(f"{masked_url(self.url)}: {exc}") from exc
        if not got:
            self._pool.putconn(conn)
            return None
        return SessionLock(self, conn, key)

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
            refuse_newer_schema(masked_url(self.url), done)
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
            log.info("applied migrations %s to %s", ", ".join(applied), masked_url(self.url))
        return applied

    # -- writes that must be atomic per trace --------------------------------------------------
    def write_spans(
        self,
        spans: Sequence[SpanRecord | SpanRow],
        *,
        bodies: Sequence[str] | None = None,
        forward: Sequence[Forward] = (),
        log_events: Sequence[LogEvent] = (),
        now: float | None = None,
    ) -> SpanWrite:
        """Upsert spans like every store, holding each touched trace's row lock for the transaction.

        Missing ``traces`` rows are created first (as an open trace without spans yet), so every
        touched trace has a row to lock; the shared write then counts the spans into it.
        """
        now = _now() if now is None else now
        traces = {s.trace_id for s in spans} | {e.trace_id for e in log_events}
        with self._locking(_LockPlan(traces=tuple(sorted(traces)), create_at=now)):
            return super().write_spans(
                spans, bodies=bodies, forward=forward, log_events=log_events, now=now
            )

    def save_interaction(
        self,
        interaction: RagInteraction,
        *,
        seen_at: float,
        now: float | None = None,
        overdue: bool = False,
    ) -> bool:
        """Store a derived record; ``seq`` is assigned under a global lock, so in commit order.

        The trace row is locked before the global lock, so a settler waiting for a large span write
        does not hold up every other settler.
        """
        plan = _LockPlan(traces=(interaction.trace_id,), advisory=(SEQ_LOCK,))
        with self._locking(plan):
            return super().save_interaction(interaction, seen_at=seen_at, now=now, overdue=overdue)

    # -- outbox --------------------------------------------------------------------------------
    def due_outbox(
        self, topic: str, *, now: float | None = None, limit: int = 50
    ) -> list[OutboxItem]:
        """Claim due items for ``outbox_lease_s`` seconds; other processes skip claimed rows.

        A claimed item that is neither delivered nor retried (its process died) is due again when
        the lease runs out. Each item carries its lease end, the token ``renew_outbox_lease``
        checks before a slow sender starts on it.
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
        until = now + self.outbox_lease_s
        return [
            LeasedOutboxItem(r[0], r[1], r[2], bytes(r[3]), r[4], r[5], r[6], until) for r in rows
        ]

    def renew_outbox_lease(
        self, item: OutboxItem, *, now: float | None = None
    ) -> LeasedOutboxItem | None:
        """Extend this process's claim on ``item`` to ``now + outbox_lease_s`` before sending it.

        Returns the item with its new lease, or None when the claim was lost: the lease ran out
        and another process claimed the row, or the row was delivered or retried meanwhile.
        Call it right before each send, so a long paced batch never sends a row it no longer owns.
        """
        token = getattr(item, "lease_until", None)
        if token is None:
            raise StoreError(f"outbox item {item.id} was not claimed by due_outbox on this store")
        now = _now() if now is None else now
        until = now + self.outbox_lease_s
        with self.transaction() as cur:
            cur.execute(
                "UPDATE outbox SET next_attempt_at = %s WHERE id = %s AND next_attempt_at = %s"
                " AND delivered_at IS NULL RETURNING id",
                (until, item.id, token),
            )
            kept = cur.fetchone() is not None
        if not kept:
            return None
        i = item
        return LeasedOutboxItem(
            i.id, i.topic, i.dedup_key, i.payload, i.content_type, i.items, i.attempts, until
        )


def _take_locks(cur: Cursor, plan: _LockPlan) -> None:
    """Row locks on ``traces`` (created when asked), then advisory locks; each in key order."""
    traces = sorted(set(plan.traces))
    if traces and plan.create_at is not None:
        cur.execute(
            "INSERT INTO traces (trace_id, first_seen_at, last_seen_at) SELECT t, %s, %s"
            " FROM unnest(%s::text[]) AS t ORDER BY t ON CONFLICT (trace_id) DO NOTHING",
            (plan.create_at, plan.create_at, traces),
        )
    if traces:
        cur.execute(
            "SELECT count(*) FROM (SELECT 1 FROM traces WHERE trace_id = ANY(%s)"
            " ORDER BY trace_id FOR UPDATE) AS locked",
            (traces,),
        )
    if plan.advisory:
        cur.execute(
            "SELECT count(pg_advisory_xact_lock(k)) FROM"
            " (SELECT DISTINCT k FROM unnest(%s::bigint[]) AS k ORDER BY k) AS s",
            (sorted(set(plan.advisory)),),
        )


class StoreUnreachable(ConfigError, StoreError):
    """The store URL names a server that cannot be connected to when the store opens: bad
    configuration (the CLI exits 2), and a store error for code that catches those."""


def _probe(url: str, timeout_s: float) -> None:
    """Connect once before the pool opens, so an unreachable or refusing server is one line and
    exit 2 (a store URL that does not work is bad configuration) at once, not the pool's retry
    warnings for ``timeout_s`` seconds and a timeout."""
    try:
        psycopg.connect(_conninfo(url), connect_timeout=max(1, int(timeout_s))).close()
    except psycopg.OperationalError as exc:
        reason = " ".join(str(exc).split("\n")[0].split())
        raise StoreUnreachable(
            f"store {masked_url(url)}: cannot connect: {reason} (check --store / RAGSIEVE_STORE)"
        ) from None


__all__ = ["LeasedOutboxItem", "PostgresStore", "SessionLock", "StoreUnreachable", "lock_key"]
