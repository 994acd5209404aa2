"""Imports run one way: evaluators ← collector ← jobs, and the pure layer stays light."""

from __future__ import annotations

import subprocess
import sys

import pytest


def _modules_after(statement: str) -> set[str]:
    code = f"import sys; {statement}; print('\\n'.join(sorted(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True)
    return set(out.stdout.split())


def test_evaluators_import_nothing_above_or_heavy() -> None:
    mods = _modules_after("import ragsieve.evaluators, ragsieve.evaluators.records")
    for forbidden in ("ragsieve.collector", "ragsieve.jobs", "openai", "starlette", "uvicorn"):
        assert forbidden not in mods, forbidden


def test_collector_does_not_import_jobs() -> None:
    mods = _modules_after(
        "import ragsieve.collector, ragsieve.collector.app, ragsieve.collector.store"
    )
    assert not any(m.startswith("ragsieve.jobs") for m in mods)


@pytest.mark.parametrize("package", ["evaluators", "collector"])
def test_source_never_imports_upward(package: str) -> None:
    from pathlib import Path

    root = Path(__file__).resolve().parents[1] / package / "ragsieve" / package
    upward = {
        "evaluators": ("ragsieve.collector", "ragsieve.jobs"),
        "collector": ("ragsieve.jobs",),
    }
    for path in root.rglob("*.py"):
        text = path.read_text(encoding="utf-8")
        for name in upward[package]:
            assert f"from {name}" not in text and f"import {name}" not in text, (path, name)
