"""The store: spans, derived interactions, feedback, outbox, job results; chosen by URL scheme.

``open_store("sqlite:///ragsieve.db")`` is the embedded default. Other schemes come from the
built-in table below or the ``ragsieve.stores`` entry-point group (name = URL scheme).
"""

from __future__ import annotations

from importlib.metadata import entry_points
from typing import Any

from ragsieve.collector.store.base import OutboxItem, SpanWrite, SQLStore
from ragsieve.evaluators.errors import ConfigError

Store = SQLStore

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


def open_store(url: str) -> SQLStore:
    """Open (and migrate) the store named by ``url``.

    ``sqlite:///relative.db``, ``sqlite:////abs/path.db``, ``sqlite:///:memory:``, or
    ``postgresql://user@host:port/db``.
    """
    scheme, sep, rest = url.partition("://")
    if not sep:
        raise ConfigError(f"store URL {url!r}: expected scheme://..., e.g. sqlite:///ragsieve.db")
    scheme = scheme.split("+", 1)[0].lower()
    if scheme == "sqlite":
        from ragsieve.collector.store.sqlite import SQLiteStore

        path = rest[1:] if rest.startswith("/") else rest
        if not path:
            raise ConfigError(f"store URL {url!r}: missing file path")
        return SQLiteStore(path)
    if scheme in _BUILTIN:
        try:
            cls = _load(_BUILTIN[scheme])
        except ImportError as exc:
            raise ConfigError(
                f"store URL {url!r} needs: pip install 'ragsieve[postgres]' ({exc})"
            ) from exc
        store: SQLStore = cls(url)
        return store
    for ep in entry_points(group="ragsieve.stores"):
        if ep.name == scheme:
            store = ep.load()(url)
            return store
    known = sorted({*_BUILTIN, *(ep.name for ep in entry_points(group="ragsieve.stores"))})
    raise ConfigError(f"store URL {url!r}: unknown scheme {scheme!r}; known: {', '.join(known)}")


__all__ = ["OutboxItem", "SQLStore", "SpanWrite", "Store", "known_schemes", "open_store"]
