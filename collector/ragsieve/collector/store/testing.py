"""A ready store for tests: a real SQLite store in a temporary folder, gone on exit.

Use it wherever a test (yours or ours) needs a store without caring where it lives::

    from ragsieve.collector.store.testing import temporary_store

    with temporary_store() as store:
        store.write_feedback(...)

It is the real ``SQLiteStore`` (WAL, durable commits, every migration applied), not a fake, so a
test passing against it passes against the embedded default. A file rather than ``:memory:``
because every thread gets its own connection and an in-memory database is per connection.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from ragsieve.collector.store.sqlite import SQLiteStore


@contextmanager
def temporary_store(name: str = "ragsieve-test.db") -> Iterator[SQLiteStore]:
    """A fresh, migrated SQLite store in a temporary folder; closed and deleted on exit."""
    with tempfile.TemporaryDirectory(prefix="ragsieve-store-") as folder:
        store = SQLiteStore(str(Path(folder) / name))
        try:
            yield store
        finally:
            store.close()


__all__ = ["temporary_store"]
