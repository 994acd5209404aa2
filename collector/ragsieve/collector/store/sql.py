"""SQLBase: dialect hooks, placeholders, generic queries and migrations of every SQL store."""

from __future__ import annotations

import hashlib
import re
import time
from collections.abc import Iterable, Sequence
from contextlib import AbstractContextManager
from typing import Any, Protocol

from ragsieve.collector.store.migrations import MIGRATIONS
from ragsieve.evaluators.errors import ConfigError, StoreError

IN_CHUNK = 500  # ids per IN (...) list: under every driver's parameter limit


class Cursor(Protocol):
    """The part of a DB-API cursor the store uses."""

    def execute(self, sql: str, params: Sequence[Any] = ...) -> Any: ...  # noqa: D102
    def executemany(self, sql: str, params: Iterable[Sequence[Any]]) -> Any: ...  # noqa: D102
    def fetchall(self) -> list[Any]: ...  # noqa: D102
    def fetchmany(self, size: int = ...) -> list[Any]: ...  # noqa: D102
    def fetchone(self) -> Any: ...  # noqa: D102


class SchemaTooNew(ConfigError, StoreError):
    """The store was migrated by a newer ragsieve: refused at start (the CLI exits 2)."""


def refuse_newer_schema(url: str, done: Iterable[str]) -> None:
    """Raise :class:`SchemaTooNew` when ``_migrations`` names a migration this version lacks.

    Writing to such a store broke every export with an IntegrityError while ``/readyz`` said
    ready; one line naming both versions at start is what an operator can act on.
    """
    known = {name for name, _ in MIGRATIONS}
    unknown = sorted(set(done) - known)
    if unknown:
        raise SchemaTooNew(
            f"store {url}: its schema was migrated by a newer ragsieve (has {', '.join(unknown)};"
            f" this version knows up to {MIGRATIONS[-1][0]}): upgrade ragsieve, or point"
            " --store / RAGSIEVE_STORE at another store"
        )


def _userinfo_end(rest: str) -> tuple[int, bool]:
    """Where the user info of ``rest`` (a URL after ``scheme://``) ends (its ``@``, or -1), and
    whether that ``@`` lies past the host as RFC 3986 reads it: a ``/``, ``?`` or ``#`` in an
    unencoded password ends the host early, so parsers disagree on what the password is."""
    cut = min((i for i in (rest.find(c) for c in "/?#") if i >= 0), default=len(rest))
    at = rest.rfind("@", 0, cut)
    if at >= 0:
        return at, False
    at = rest.rfind("@")
    return at, at >= 0


def masked_url(url: str) -> str:
    """``url`` with its password replaced by ``***`` (for every printed or dumped store URL).

    A password holding an unencoded ``/``, ``?`` or ``#`` (``postgresql://u:pa/ss@h/db``) is
    masked too, up to the last ``@``: more may be hidden than the password, never less.
    """
    scheme, sep, rest = url.partition("://")
    if not sep or rest.startswith("/"):  # sqlite:///path: no user info
        return url
    at, _ = _userinfo_end(rest)
    user, colon, password = rest[: max(at, 0)].partition(":")
    if at < 0 or not colon or not password:
        return url
    return f"{scheme}://{user}:***@{rest[at + 1 :]}"


def refuse_unencoded_password(url: str) -> None:
    """A ConfigError for a URL whose password holds an unencoded ``/``, ``?`` or ``#``.

    libpq reads ``postgresql://u:pa/ss@h/db`` as host ``u``, port ``pa``: the connection fails
    with part of the password in its message. A port (digits) before the ``/`` is a plain URL
    with an ``@`` later on (``?application_name=a@b``), not refused.
    """
    scheme, sep, rest = url.partition("://")
    if not sep or rest.startswith("/"):
        return
    at, past_host = _userinfo_end(rest)
    head = re.split(r"[/?#]", rest[: max(at, 0)], maxsplit=1)[0]
    user, colon, after = head.partition(":")
    if past_host and colon and not after.isdigit():
        raise ConfigError(
            f"store URL {masked_url(url)}: the password holds '/', '?' or '#'; write them"
            " percent-encoded (%2F, %3F, %23), or the driver reads part of it as a host or port"
        )


def _now() -> float:
    return time.time()


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


class SQLBase:
    """Connections and SQL dialect; subclasses provide ``transaction()`` and ``close()``."""

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

    def write_problem(self) -> str | None:
        """Why a write cannot succeed now, or None (``/readyz``); dialects check what they can."""
        return None

    def sql(self, text: str) -> str:
        """Rewrite ``?`` placeholders for this driver (literal ``%`` escaped for ``%s`` drivers)."""
        if self.placeholder == "?":
            return text
        return text.replace("%", "%%").replace("?", self.placeholder)

    def _ddl(self, text: str) -> str:
        subs = {
            "sqlite": {
                "id": "INTEGER PRIMARY KEY AUTOINCREMENT",
                "blob": "BLOB",
                "real": "REAL",
                "session_of_body": "json_extract(body, '$.session_id')",
            },
            "postgres": {
                "id": "BIGSERIAL PRIMARY KEY",
                "blob": "BYTEA",
                "real": "DOUBLE PRECISION",
                "session_of_body": "(body::json ->> 'session_id')",
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

    def query_in(
        self, sql: str, ids: Iterable[str], params: Sequence[Any] = (), *, chunk: int = IN_CHUNK
    ) -> list[tuple[Any, ...]]:
        """Run ``sql`` once per slice of ``ids``, ``{ids}`` standing for the ``IN (...)`` list.

        Example: ``store.query_in("SELECT * FROM spans WHERE trace_id IN ({ids})", trace_ids)``.
        ``params`` come after the ids. Slices keep each statement under driver limits.
        """
        with self.transaction(write=False) as cur:
            return self.select_in(cur, sql, list(ids), params, chunk=chunk)

    def select_in(
        self,
        cur: Cursor,
        sql: str,
        ids: Sequence[str],
        params: Sequence[Any] = (),
        *,
        chunk: int = IN_CHUNK,
    ) -> list[tuple[Any, ...]]:
        """:meth:`query_in` on an open cursor (inside a caller's transaction)."""
        rows: list[tuple[Any, ...]] = []
        for i in range(0, len(ids), chunk):
            part = ids[i : i + chunk]
            cur.execute(self.sql(sql.format(ids=",".join("?" * len(part)))), (*part, *params))
            rows.extend(tuple(r) for r in cur.fetchall())
        return rows

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
        refuse_newer_schema(self.url, done)
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
