"""Imports run one way: evaluators ← collector ← jobs, the job's stages in order, and the pure layer
stays light."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

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
        "import ragsieve.collector, ragsieve.collector.serve.app, ragsieve.collector.store"
    )
    assert not any(m.startswith("ragsieve.jobs") for m in mods)


def _imported(path: Path, module: str) -> set[str]:
    """Every module ``path`` (named ``module``) imports; ``from a import b`` adds a and a.b."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                base = ".".join([*parent, *([base] if base else [])])
            names.add(base)
            names |= {f"{base}.{alias.name}" for alias in node.names}
        elif (
            isinstance(node, ast.Call)
            and getattr(node.func, "attr", getattr(node.func, "id", None)) == "import_module"
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
        ):
            names.add(node.args[0].value)
    return names


UPWARD = {"evaluators": ("ragsieve.collector", "ragsieve.jobs"), "collector": ("ragsieve.jobs",)}


@pytest.mark.parametrize("package", sorted(UPWARD))
def test_source_never_imports_upward(package: str) -> None:
    portion = Path(__file__).resolve().parents[1] / package
    files = sorted((portion / "ragsieve" / package).rglob("*.py"))
    assert len(files) >= 10, f"no sources found under {portion}"
    bad = []
    for path in files:
        module = ".".join(path.relative_to(portion).with_suffix("").parts)
        for name in sorted(_imported(path, module)):
            if any(name == up or name.startswith(up + ".") for up in UPWARD[package]):
                bad.append((str(path.relative_to(portion)), name))
    assert bad == []


def test_the_import_scan_sees_every_spelling(tmp_path: Path) -> None:
    src = tmp_path / "mod.py"
    src.write_text(
        "from ragsieve import jobs\nimport ragsieve.collector.serve.app as a\n"
        "from ..jobs.cli import x\nimportlib.import_module('ragsieve.jobs.demo')\n"
        "def f():\n    from ragsieve.evaluators import records\n"
    )
    names = _imported(src, "ragsieve.collector.mod")
    assert {
        "ragsieve.jobs",
        "ragsieve.collector.serve.app",
        "ragsieve.jobs.cli",
        "ragsieve.jobs.demo",
        "ragsieve.evaluators.records",
    } <= names


# The job's packages, lower first: each imports only from packages before it (the top-level
# modules, ``cli`` and ``settings``, are the edge and exempt). The stages come in pipeline order;
# golden/ (fed by verdicts, run by a pass) and demo/ (drives a pass) sit where they are used.
# So sampling and verdicts, in particular, import nothing from run, workers or sinks.
LAYERS = (
    "sampling", "results", "judging", "verdicts", "fitting", "sinks", "golden", "workers",
    "history", "alerts", "report", "run", "demo",
)  # fmt: skip
JOBS = Path(__file__).resolve().parents[1] / "jobs"


def _layer_of(name: str) -> str | None:
    parts = name.split(".")
    if parts[:2] != ["ragsieve", "jobs"] or len(parts) < 3 or parts[2] not in LAYERS:
        return None
    return parts[2]


@pytest.mark.parametrize("layer", LAYERS)
def test_jobs_packages_import_only_lower_ones(layer: str) -> None:
    files = sorted((JOBS / "ragsieve" / "jobs" / layer).rglob("*.py"))
    assert len(files) >= 2, f"no sources found for {layer}"
    allowed = set(LAYERS[: LAYERS.index(layer) + 1])
    bad = []
    for path in files:
        module = ".".join(path.relative_to(JOBS).with_suffix("").parts)
        for name in sorted(_imported(path, module)):
            target = _layer_of(name)
            if target is not None and target not in allowed:
                bad.append((str(path.relative_to(JOBS)), name))
    assert bad == []


def test_every_jobs_package_has_its_place() -> None:
    packages = {p.parent.name for p in (JOBS / "ragsieve" / "jobs").glob("*/__init__.py")}
    assert packages == set(LAYERS)


def test_sampling_and_verdicts_load_nothing_from_run_workers_or_sinks() -> None:
    modules = [
        ".".join(p.relative_to(JOBS).with_suffix("").parts).removesuffix(".__init__")
        for stage in ("sampling", "verdicts")
        for p in sorted((JOBS / "ragsieve" / "jobs" / stage).rglob("*.py"))
    ]
    mods = _modules_after("import " + ", ".join(modules))
    for higher in ("run", "workers", "sinks"):
        assert not any(m.startswith(f"ragsieve.jobs.{higher}") for m in mods), higher
