"""SQLiteStore: the embedded default store (stdlib sqlite3, WAL mode, durable commits)."""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from ragsieve.collector.store.base import Cursor, SQLStore
from ragsieve.evaluators.errors import StoreError


class SQLiteStore(SQLStore):
    """A store in one SQLite file.

    Writes in this process are serialised by a lock and open with ``BEGIN IMMEDIATE`` so that
    other processes wait on the busy timeout instead of failing. ``synchronous=FULL`` makes a
    commit durable against power loss, not only against a crashed process.
    """

    dialect = "sqlite"
    placeholder = "?"

    def __init__(self, path: str, *, busy_timeout_s: float = 30.0) -> None:
        self.path = path
        self.url = f"sqlite:///{path}"
        self.busy_timeout_s = busy_timeout_s
        self._local = threading.local()
        self._write_lock = threading.Lock()
        self._all: list[tuple[threading.Thread, sqlite3.Connection]] = []
        self._all_lock = threading.Lock()
        if path != ":memory:":
            parent = Path(path).expanduser().resolve().parent
            if not parent.is_dir():
                raise StoreError(f"{self.url}: folder {parent} does not exist")
        self.migrate()

    def _conn(self) -> sqlite3.Connection:
        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
        if conn is None:
            try:
                conn = sqlite3.connect(
                    self.path,
                    timeout=self.busy_timeout_s,
                    isolation_level=None,
                    check_same_thread=False,
                )
                conn.execute("PRAGMA journal_mode=WAL")
                conn.execute("PRAGMA synchronous=FULL")
                conn.execute(f"PRAGMA busy_timeout={int(self.busy_timeout_s * 1000)}")
            except sqlite3.Error as exc:
                raise StoreError(f"{self.url}: cannot open: {exc}") from exc
            self._local.conn = conn
            with self._all_lock:
                self._all.append((threading.current_thread(), conn))
        return conn

    @contextmanager
    def transaction(self, write: bool = True) -> Iterator[Cursor]:
        """One transaction on this thread's connection."""
        conn = self._conn()
        lock = self._write_lock if write else None
        if lock is not None:
            lock.acquire()
        try:
            cur = conn.cursor()
            try:
                cur.execute("BEGIN IMMEDIATE" if write else "BEGIN")
                yield cur
                cur.execute("COMMIT")
            except BaseException:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                raise
            finally:
                cur.close()
        except sqlite3.OperationalError as exc:
            raise StoreError(f"{self.url}: {exc}") from exc
        finally:
            if lock is not None:
                lock.release()

    def close(self) -> None:
        """Close the connections no other live thread is using.

        Closing a connection while another thread runs a query on it crashes the interpreter,
        so a connection owned by a thread that is still alive is only released: it closes when
        that thread's last reference to it goes (after its current transaction at the latest).
        """
        me = threading.current_thread()
        with self._all_lock:
            for owner, conn in self._all:
                if owner is me or not owner.is_alive():
                    try:
                        conn.close()
                    except sqlite3.Error:
                        pass
            self._all.clear()
        self._local = threading.local()
