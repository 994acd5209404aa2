"""The console-script lookup: found beside the interpreter, skipped locally, a failure under CI."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from console_script import ragsieve_script


@pytest.fixture
def no_script(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setattr(sys, "executable", str(tmp_path / "python"))
    monkeypatch.setenv("PATH", str(tmp_path))
    return tmp_path


def test_missing_script_fails_under_ci(no_script: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CI", "true")
    with pytest.raises(BaseException) as outcome:  # a skip must not pass for a failure
        ragsieve_script()
    assert outcome.type is pytest.fail.Exception
    assert "console script is not installed" in str(outcome.value)


def test_missing_script_skips_outside_ci(no_script: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CI", raising=False)
    with pytest.raises(BaseException) as outcome:
        ragsieve_script()
    assert outcome.type is pytest.skip.Exception
    assert "pip install -e" in str(outcome.value)


def test_script_beside_the_interpreter_wins(
    no_script: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CI", "true")
    (no_script / "ragsieve").write_text("#!/bin/sh\n")
    assert ragsieve_script() == no_script / "ragsieve"
