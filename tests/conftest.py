"""Shared fixtures: a clean environment, stores, a live collector on loopback.

Fixtures owned by one area live in ``tests/fixtures_*.py`` and are imported here so every test
directory can use them.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from fixtures_live import *  # noqa: F403  (collector_server, make_store)

try:  # optional areas; each file is owned by the helper that builds the area
    from fixtures_postgres import *  # noqa: F403
except ImportError:  # pragma: no cover
    pass
try:
    from fixtures_phoenix import *  # noqa: F403
except ImportError:  # pragma: no cover
    pass

SHARED_DATA = Path(__file__).resolve().parents[2] / "shared" / "data"


@pytest.fixture(autouse=True)
def clean_environ(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """No RAGSIEVE_* or OTEL_* variable leaks into a test (test-infrastructure ones excepted)."""
    for key in list(os.environ):
        if (key.startswith("RAGSIEVE_") and not key.startswith("RAGSIEVE_TEST_")) or (
            key.startswith("OTEL_")
        ):
            monkeypatch.delenv(key, raising=False)
    yield


@pytest.fixture
def shared_data() -> Path:
    """The labelled dev data beside the checkout (skips where it is not present)."""
    if not SHARED_DATA.is_dir():
        pytest.skip(f"shared data not found at {SHARED_DATA}")
    return SHARED_DATA
