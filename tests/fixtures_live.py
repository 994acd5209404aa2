"""Live fixtures: a SQLite store in tmp_path and a real uvicorn collector on 127.0.0.1."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from ragsieve.collector.serve.app import create_app
from ragsieve.collector.serve.server import ServerThread
from ragsieve.collector.settings import CollectorSettings
from ragsieve.collector.store import Store, open_store


@pytest.fixture
def make_store(tmp_path: Path) -> Iterator[Callable[..., Store]]:
    """Open SQLite stores in tmp_path; all closed at teardown."""
    opened: list[Store] = []

    def _make(name: str = "ragsieve.db") -> Store:
        store = open_store(f"sqlite:///{tmp_path / name}")
        opened.append(store)
        return store

    yield _make
    for store in opened:
        store.close()


@pytest.fixture
def store(make_store: Callable[..., Store]) -> Store:
    """A fresh SQLite store."""
    return make_store()


class LiveCollector:
    """A running collector: its URL, store, the server thread and the app (for its counters)."""

    def __init__(self, server: ServerThread, store: Store, app: Any) -> None:
        self.server = server
        self.store = store
        self.app = app

    @property
    def url(self) -> str:
        return self.server.url

    @property
    def traces_url(self) -> str:
        return f"{self.server.url}/v1/traces"


@pytest.fixture
def start_collector(
    store: Store,
) -> Iterator[Callable[..., LiveCollector]]:
    """Start a collector on a free loopback port: ``start_collector(quiet_period_s=0.2, ...)``."""
    running: list[ServerThread] = []

    def _start(token: str | None = None, run_settler: bool = True, **cfg: Any) -> LiveCollector:
        settings = CollectorSettings(port=0, **cfg)
        app = create_app(store, settings, token=token, run_settler=run_settler)
        server = ServerThread(app, port=0).start()
        running.append(server)
        return LiveCollector(server, store, app)

    yield _start
    for server in running:
        server.stop()


@pytest.fixture
def collector(start_collector: Callable[..., LiveCollector]) -> LiveCollector:
    """A collector with quick settling (0.3 s quiet period)."""
    return start_collector(quiet_period_s=0.3, settle_interval_s=0.1)
