"""Fixtures shared by the evaluator tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from ragsieve.evaluators.testing import FakeOpenAIServer


@pytest.fixture
def server() -> Iterator[FakeOpenAIServer]:
    """A scripted OpenAI-compatible server on loopback."""
    with FakeOpenAIServer() as s:
        yield s
