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


# The collector's rooms, lower first: each imports only from rooms before it. The data flows
# receive → store → derive and store → forward, so receive, derive and forward are peers: none
# imports another, they meet in the store. serve is the one place that wires them together.
# Beside the rooms, the top-level modules may import only the rooms listed here (cli is the edge).
COLLECTOR_LAYERS = ("wire", "store", "receive", "derive", "forward", "serve")
COLLECTOR_PEERS = ("receive", "derive", "forward")
COLLECTOR_TOP = {
    "settings": (),
    "timeutil": (),
    "instrument": (),
    "cliopts": ("store",),
    "cli": COLLECTOR_LAYERS,
}
COLLECTOR = Path(__file__).resolve().parents[1] / "collector"
COLLECTOR_PKG = COLLECTOR / "ragsieve" / "collector"


def _collector_room(name: str) -> str | None:
    parts = name.split(".")
    if parts[:2] != ["ragsieve", "collector"] or len(parts) < 3:
        return None
    return parts[2] if parts[2] in COLLECTOR_LAYERS else None


def _collector_rooms_allowed(layer: str) -> set[str]:
    lower = set(COLLECTOR_LAYERS[: COLLECTOR_LAYERS.index(layer) + 1])
    if layer in COLLECTOR_PEERS:
        lower -= set(COLLECTOR_PEERS) - {layer}
    return lower


def _collector_upward(files: list[Path], allowed: set[str]) -> list[tuple[str, str]]:
    bad = []
    for path in files:
        module = ".".join(path.relative_to(COLLECTOR).with_suffix("").parts)
        for name in sorted(_imported(path, module)):
            room = _collector_room(name)
            if room is not None and room not in allowed:
                bad.append((str(path.relative_to(COLLECTOR)), name))
    return bad


def test_collector_rooms_allowed_follow_the_data_flow() -> None:
    assert _collector_rooms_allowed("wire") == {"wire"}
    assert _collector_rooms_allowed("derive") == {"wire", "store", "derive"}
    assert _collector_rooms_allowed("forward") == {"wire", "store", "forward"}
    assert _collector_rooms_allowed("serve") == set(COLLECTOR_LAYERS)


@pytest.mark.parametrize("layer", COLLECTOR_LAYERS)
def test_collector_rooms_import_only_lower_ones(layer: str) -> None:
    files = sorted((COLLECTOR_PKG / layer).rglob("*.py"))
    assert len(files) >= 2, f"no sources found for {layer}"
    assert _collector_upward(files, _collector_rooms_allowed(layer)) == []


@pytest.mark.parametrize("module", sorted(COLLECTOR_TOP))
def test_collector_top_level_modules_import_only_their_rooms(module: str) -> None:
    path = COLLECTOR_PKG / f"{module}.py"
    assert _collector_upward([path], set(COLLECTOR_TOP[module])) == []


def test_every_collector_module_has_its_place() -> None:
    rooms = {p.parent.name for p in COLLECTOR_PKG.glob("*/__init__.py")}
    top = {p.stem for p in COLLECTOR_PKG.glob("*.py")} - {"__init__"}
    assert (rooms, top) == (set(COLLECTOR_LAYERS), set(COLLECTOR_TOP))


def test_collector_packages_are_small_rooms() -> None:
    """At most 10 modules per package (``__init__`` aside), none over 400 lines, each documented."""
    crowded, long, undocumented = [], [], []
    for init in sorted(COLLECTOR_PKG.rglob("__init__.py")):
        modules = [p for p in init.parent.glob("*.py") if p.name != "__init__.py"]
        if len(modules) > 10:
            crowded.append((str(init.parent.relative_to(COLLECTOR)), len(modules)))
        if ast.get_docstring(ast.parse(init.read_text(encoding="utf-8"))) is None:
            undocumented.append(str(init.relative_to(COLLECTOR)))
    for path in sorted(COLLECTOR_PKG.rglob("*.py")):
        lines = len(path.read_text(encoding="utf-8").splitlines())
        if lines > 400:
            long.append((str(path.relative_to(COLLECTOR)), lines))
    assert (crowded, long, undocumented) == ([], [], [])


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected groups of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for nxt in sorted(graph[node]):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            group = []
            while True:
                top = stack.pop()
                group.append(top)
                if top == node:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_the_cycle_finder_finds_a_cycle() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert _cycles(graph) == [["a", "b", "c"]]


def test_collector_has_no_import_circles() -> None:
    """No two collector modules import each other, directly or round a loop (lazy imports too)."""
    paths = {
        ".".join(p.relative_to(COLLECTOR).with_suffix("").parts).removesuffix(".__init__"): p
        for p in sorted(COLLECTOR_PKG.rglob("*.py"))
    }
    graph = {
        module: {name for name in _imported(path, module) if name in paths and name != module}
        for module, path in paths.items()
    }
    assert _cycles(graph) == []
