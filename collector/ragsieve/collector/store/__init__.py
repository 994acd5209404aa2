"""The store: spans, derived interactions, feedback, outbox, job results; chosen by URL scheme.

``open_store("sqlite:///ragsieve.db")`` is the embedded default. Other schemes come from the
built-in table below or the ``ragsieve.stores`` entry-point group (name = URL scheme).
"""

from __future__ import annotations

from importlib.metadata import entry_points
from pathlib import Path
from typing import Any

from ragsieve.collector.store.base import OutboxItem, SpanWrite, SQLStore
from ragsieve.collector.store.protocol import Store
from ragsieve.collector.store.sql import masked_url, refuse_unencoded_password
from ragsieve.evaluators.errors import ConfigError

_MEETS_CONTRACT: type[Store] = SQLStore  # mypy checks SQLStore against the protocol here

_BUILTIN = {
    "sqlite": "ragsieve.collector.store.sqlite:SQLiteStore",
    "postgresql": "ragsieve.collector.store.postgres:PostgresStore",
    "postgres": "ragsieve.collector.store.postgres:PostgresStore",
}


def _load(target: str) -> Any:
    module, _, attr = target.partition(":")
    mod = __import__(module, fromlist=[attr])
    return getattr(mod, attr)


def known_schemes() -> set[str]:
    """URL schemes a store exists for (built-ins plus the ``ragsieve.stores`` group)."""
    return {*_BUILTIN, *(ep.name for ep in entry_points(group="ragsieve.stores"))}


def open_store(url: str, *, create: bool = True) -> SQLStore:
    """Open (and migrate) the store named by ``url``.

    ``sqlite:///relative.db``, ``sqlite:////abs/path.db``, ``sqlite:///:memory:``, or
    ``postgresql://user@host:port/db``. With ``create=False`` (commands that only read) a
    missing SQLite file is a ConfigError instead of a new empty database: a typo in a path must
    not look like a store with nothing in it.
    """
    shown = masked_url(url)
    scheme, sep, rest = url.partition("://")
    if not sep:
        raise ConfigError(f"store URL {shown!r}: expected scheme://..., e.g. sqlite:///ragsieve.db")
    scheme = scheme.split("+", 1)[0].lower()
    if scheme == "sqlite":
        from ragsieve.collector.store.sqlite import SQLiteStore

        path = rest[1:] if rest.startswith("/") else rest
        if not path:
            raise ConfigError(f"store URL {url!r}: missing file path")
        if not create and path != ":memory:" and not Path(path).expanduser().exists():
            raise ConfigError(
                f"store {url}: no such SQLite file (only `ragsieve collector serve` and"
                " `ragsieve up` create one; check --store / RAGSIEVE_STORE)"
            )
        return SQLiteStore(path)
    if scheme in _BUILTIN:
        refuse_unencoded_password(url)
        try:
            cls = _load(_BUILTIN[scheme])
        except ImportError as exc:
            from ragsieve.evaluators.tools.extras import missing

            raise missing("postgres", f"store URL {shown!r}", exc.name) from exc
        store: SQLStore = cls(url)
        return store
    for ep in entry_points(group="ragsieve.stores"):
        if ep.name == scheme:
            store = ep.load()(url)
            return store
    known = sorted({*_BUILTIN, *(ep.name for ep in entry_points(group="ragsieve.stores"))})
    raise ConfigError(f"store URL {shown!r}: unknown scheme {scheme!r}; known: {', '.join(known)}")


__all__ = [
    "OutboxItem",
    "SQLStore",
    "SpanWrite",
    "Store",
    "known_schemes",
    "masked_url",
    "open_store",
]
