"""The Store protocol is the contract both backends meet, and the shipped test store is real."""

from __future__ import annotations

import inspect
from pathlib import Path

import pytest

from ragsieve.collector.store import SQLStore, Store
from ragsieve.collector.store.protocol import Store as ProtocolStore
from ragsieve.collector.store.testing import temporary_store
from ragsieve.evaluators.records import Feedback

TRACE = "ab" * 16


def _members() -> list[str]:
    return [n for n, v in vars(ProtocolStore).items() if inspect.isfunction(v) and n[0] != "_"]


@pytest.mark.parametrize(
    "backend",
    ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)],
)
def test_each_backend_meets_the_protocol(backend: str, request: pytest.FixtureRequest) -> None:
    store = request.getfixturevalue("store" if backend == "sqlite" else "pg_store")
    assert isinstance(store, Store)
    for name in _members():
        mine = inspect.signature(getattr(type(store), name))
        theirs = inspect.signature(getattr(ProtocolStore, name))
        assert list(mine.parameters) == list(theirs.parameters), name


def test_the_protocol_names_only_what_sqlstore_has() -> None:
    missing = [n for n in _members() if not hasattr(SQLStore, n)]
    assert missing == []
    assert {"write_spans", "query_in", "transaction", "due_outbox"} <= set(_members())


def test_a_class_missing_a_method_is_not_a_store() -> None:
    class HalfStore:
        url = "x://"
        dialect = "sqlite"
        late_window_s = 1.0

        def close(self) -> None: ...

    assert not isinstance(HalfStore(), Store)


def test_temporary_store_is_a_real_migrated_store_and_is_removed() -> None:
    with temporary_store() as store:
        path = Path(store.path)
        assert isinstance(store, Store)
        assert path.is_file()
        assert store.migrate() == []  # every migration already applied
        store.write_feedback(Feedback(trace_id=TRACE, score=1.0, label="good"))
        assert [f.label for f in store.feedback_for_trace(TRACE)] == ["good"]
        assert store.query("SELECT COUNT(*) FROM feedback") == [(1,)]
    assert not path.exists()
    assert not path.parent.exists()
