"""SQLiteStore: the embedded default store (stdlib sqlite3, WAL mode, durable commits).

The store is checked, not assumed: a write that fails on the driver's side closes that thread's
connection, so the next attempt opens a fresh one (a file that was read-only and is writable
again recovers without a restart); the file's identity (device, inode) is watched, so a store
deleted or replaced under the process refuses writes it would lose instead of acknowledging them;
and :meth:`SQLiteStore.write_problem` says whether a write can succeed now (for ``/readyz``).
"""

from __future__ import annotations

import logging
import os
import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from ragsieve.collector.store.base import Cursor, SQLStore
from ragsieve.evaluators.errors import StoreError

log = logging.getLogger(__name__)

MIN_FREE_BYTES = 1024 * 1024  # below this on the store's file system a write may fail: not ready
# Driver errors about the data or the statement, not the connection: keep the connection.
_DATA_ERRORS = (sqlite3.IntegrityError, sqlite3.DataError, sqlite3.ProgrammingError)


class SQLiteStore(SQLStore):
    """A store in one SQLite file.

    Writes in this process are serialised by a lock and open with ``BEGIN IMMEDIATE`` so that
    other processes wait on the busy timeout instead of failing. ``synchronous=FULL`` makes a
    commit durable against power loss, not only against a crashed process.
    """

    dialect = "sqlite"
    placeholder = "?"

    def __init__(
        self, path: str, *, busy_timeout_s: float = 30.0, min_free_bytes: int = MIN_FREE_BYTES
    ) -> None:
        self.path = path
        self.url = f"sqlite:///{path}"
        self.busy_timeout_s = busy_timeout_s
        self.min_free_bytes = min_free_bytes
        self._local = threading.local()
        self._write_lock = threading.Lock()
        self._all: list[tuple[threading.Thread, sqlite3.Connection]] = []
        self._all_lock = threading.Lock()
        self._file: Path | None = None  # None: an in-memory database, nothing to watch
        self._identity: tuple[int, int] | None = None
        self._lost: str | None = None  # why writes are refused for good (file deleted/replaced)
        if path != ":memory:":
            parent = Path(path).expanduser().resolve().parent
            if not parent.is_dir():
                raise StoreError(f"{self.url}: folder {parent} does not exist")
            self._file = Path(path).expanduser()
        self.migrate()
        if self._file is not None:
            st = os.stat(self._file)
            self._identity = (st.st_dev, st.st_ino)

    # -- the file under the store --------------------------------------------------------------
    def _check_file(self) -> None:
        """Raise when the file this store opened was deleted or replaced (sticky, said loudly).

        Open connections keep writing to the old inode, which nothing will read again: every
        span acknowledged after that is lost at the next restart. Refusing (the receiver answers
        503) keeps it in the exporter's retry queue instead.
        """
        if self._lost is None and self._file is not None and self._identity is not None:
            try:
                st = os.stat(self._file)
            except FileNotFoundError:
                self._lose("was deleted")
            except OSError as exc:
                raise StoreError(f"{self.url}: cannot check the store file: {exc}") from exc
            else:
                if (st.st_dev, st.st_ino) != self._identity:
                    self._lose("was replaced by another file")
        if self._lost is not None:
            raise StoreError(self._lost)

    def _lose(self, what: str) -> None:
        self._lost = (
            f"{self.url}: the store file {what} while this process had it open; refusing writes"
            " that would be lost (restart to open the store again)"
        )
        log.critical("%s", self._lost)

    def write_problem(self) -> str | None:
        """Why a write cannot succeed now (file gone or replaced, read-only, disk full), or None."""
        if self._file is None:
            return None
        try:
            self._check_file()
        except StoreError as exc:
            return str(exc)
        folder = self._file.resolve().parent
        if not os.access(self._file, os.W_OK):
            return f"{self.url}: the store file is read-only"
        if not os.access(folder, os.W_OK):  # the -wal and -shm files live next to it
            return f"{self.url}: its folder {folder} is read-only"
        try:
            fs = os.statvfs(folder)
        except OSError as exc:
            return f"{self.url}: cannot check free space: {exc}"
        free = fs.f_bavail * fs.f_frsize
        if free < self.min_free_bytes:
            return f"{self.url}: disk full ({free} bytes free on {folder})"
        return None

    # -- connections ---------------------------------------------------------------------------
    def _drop_conn(self, conn: sqlite3.Connection) -> None:
        """Forget and close this thread's connection: the next transaction opens a fresh one.

        A connection opened while the file was read-only stays read-only for ever; one that hit
        a full disk or an I/O error may hold a stale state. Reopening costs one open.
        """
        self._local.conn = None
        with self._all_lock:
            self._all = [(t, c) for t, c in self._all if c is not conn]
        try:
            conn.close()
        except sqlite3.Error:
            pass

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
        """One transaction on this thread's connection (a write first checks the file)."""
        if write:
            self._check_file()
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
        except sqlite3.DatabaseError as exc:
            if not isinstance(exc, _DATA_ERRORS):
                self._drop_conn(conn)
            if isinstance(exc, sqlite3.OperationalError):
                raise StoreError(f"{self.url}: {exc}") from exc
            raise
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
