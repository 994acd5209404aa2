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
# modules, ``cli``, ``config_cli`` and ``api``, are the edge and exempt). ``settings`` is the
# bottom: it imports no stage (each stage's own section lives in it). The stages come in pipeline
# order; golden/ (fed by verdicts, run by a pass) and demo/ (drives a pass) sit where they are used.
# So sampling and verdicts, in particular, import nothing from run, workers or sinks.
LAYERS = (
    "settings", "sampling", "results", "judging", "verdicts", "fitting", "sinks", "golden",
    "workers", "history", "alerts", "report", "run", "demo",
)  # fmt: skip
# Packages split into rooms, lower first: a room imports only rooms before it, and never the
# package's own top-level modules (its command group and what drives the rooms).
ROOMS = {"golden": ("growth", "review"), "demo": ("tallyfox",)}
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


def test_settings_load_no_stage() -> None:
    mods = _modules_after("import ragsieve.jobs.settings")
    stages = [m for m in mods if _layer_of(m) not in (None, "settings")]
    assert stages == []


@pytest.mark.parametrize(
    ("package", "room"), [(p, r) for p, rooms in sorted(ROOMS.items()) for r in rooms]
)
def test_rooms_import_only_lower_rooms(package: str, room: str) -> None:
    base = f"ragsieve.jobs.{package}"
    files = sorted((JOBS / "ragsieve" / "jobs" / package / room).rglob("*.py"))
    assert len(files) >= 2, f"no sources found for {package}/{room}"
    allowed = {f"{base}.{r}" for r in ROOMS[package][: ROOMS[package].index(room) + 1]}
    bad = []
    for path in files:
        module = ".".join(path.relative_to(JOBS).with_suffix("").parts)
        for name in sorted(_imported(path, module)):
            inside = name.startswith(base + ".")
            if inside and not any(name == a or name.startswith(a + ".") for a in allowed):
                bad.append((str(path.relative_to(JOBS)), name))
    assert bad == []


def test_every_room_is_listed() -> None:
    for package, rooms in ROOMS.items():
        found = {
            p.parent.name for p in (JOBS / "ragsieve" / "jobs" / package).glob("*/__init__.py")
        }
        assert found == set(rooms), package


# Size: no package anywhere holds more than 10 modules (``__init__`` not counted: it only says
# what the package takes and gives) and no module is over 400 lines, in all three portions.
MAX_MODULES, MAX_LINES = 10, 400
PORTIONS = ["jobs", "collector", "evaluators"]


def _sources(portion: str) -> list[Path]:
    root = Path(__file__).resolve().parents[1] / portion / "ragsieve" / portion
    files = sorted(root.rglob("*.py"))
    assert len(files) >= 10, f"no sources found under {root}"
    return files


@pytest.mark.parametrize("portion", PORTIONS)
def test_no_package_over_ten_modules(portion: str) -> None:
    per_package: dict[Path, int] = {}
    for path in _sources(portion):
        if path.name != "__init__.py":
            per_package[path.parent] = per_package.get(path.parent, 0) + 1
    crowded = {str(d): n for d, n in per_package.items() if n > MAX_MODULES}
    assert crowded == {}


@pytest.mark.parametrize("portion", PORTIONS)
def test_no_module_over_400_lines(portion: str) -> None:
    long = {}
    for path in _sources(portion):
        n = len(path.read_text(encoding="utf-8").splitlines())
        if n > MAX_LINES:
            long[str(path)] = n
    assert long == {}


# The evaluators' rooms, lower first, as paths under ragsieve/evaluators: each imports only from
# rooms before it. The top-level modules are exempt: records and errors sit below every room
# (errors imports nothing, records only tools/limits), while cli, dataframe, pytest_plugin and
# testing are the edges users call. Inside judges/ the kinds are ordered the same way: the one
# threshold per metric (a module all kinds read), the text helpers, the offline judges, the LLM
# judges (which reuse offline evidence), the combined ones, then the protocol and registry.
EVAL_LAYERS = (
    "tools", "judges/thresholds", "judges/offline/text", "judges/offline/binding",
    "judges/offline", "judges/llm", "judges/combined", "judges/model", "judges",
    "quality", "golden", "metrics", "gate",
)  # fmt: skip
EVALUATORS = Path(__file__).resolve().parents[1] / "evaluators"
EVAL_ROOT = EVALUATORS / "ragsieve" / "evaluators"


def _eval_layer_of(name: str) -> str | None:
    """The deepest room ``name`` (a dotted module) lies in, or None outside the rooms."""
    parts = name.split(".")
    if parts[:2] != ["ragsieve", "evaluators"]:
        return None
    path = "/".join(parts[2:])
    rooms = [r for r in EVAL_LAYERS if path == r or path.startswith(r + "/")]
    return max(rooms, key=len) if rooms else None


def _eval_module(path: Path) -> str:
    return ".".join(path.relative_to(EVALUATORS).with_suffix("").parts).removesuffix(".__init__")


def _eval_sources() -> list[Path]:
    return sorted(EVAL_ROOT.rglob("*.py"))


@pytest.mark.parametrize("layer", EVAL_LAYERS)
def test_evaluators_rooms_import_only_lower_ones(layer: str) -> None:
    files = [p for p in _eval_sources() if _eval_layer_of(_eval_module(p)) == layer]
    assert files, f"no sources found for {layer}"
    allowed = set(EVAL_LAYERS[: EVAL_LAYERS.index(layer) + 1])
    bad = []
    for path in files:
        for name in sorted(_imported(path, _eval_module(path))):
            target = _eval_layer_of(name)
            if target is not None and target not in allowed:
                bad.append((str(path.relative_to(EVALUATORS)), name))
    assert bad == []


def test_every_evaluators_package_has_its_place() -> None:
    packages = {str(p.parent.relative_to(EVAL_ROOT)) for p in EVAL_ROOT.glob("**/__init__.py")} - {
        "."
    }
    assert packages == {room for room in EVAL_LAYERS if (EVAL_ROOT / room).is_dir()}


def test_records_and_errors_sit_below_every_room_but_tools() -> None:
    for base in ("errors", "records"):
        path = EVAL_ROOT / f"{base}.py"
        rooms = {_eval_layer_of(n) for n in _imported(path, f"ragsieve.evaluators.{base}")}
        assert rooms <= {None, "tools"}, base
    for path in (EVAL_ROOT / "tools").glob("*.py"):
        ours = {n for n in _imported(path, _eval_module(path)) if n.startswith("ragsieve.")}
        assert ours <= {"ragsieve.evaluators.errors"} | {
            n for n in ours if n.startswith("ragsieve.evaluators.errors.")
        }, path.name


def _eval_import_graph() -> dict[str, set[str]]:
    """Module → the modules of the evaluators it names in an import (lazy and typing-only too)."""
    sources = {_eval_module(p): p for p in _eval_sources()}
    return {
        module: {n for n in _imported(path, module) if n in sources and n != module}
        for module, path in sources.items()
    }


def test_evaluators_have_no_import_circle() -> None:
    graph = _eval_import_graph()
    done: set[str] = set()
    circles: list[list[str]] = []

    def visit(module: str, trail: list[str]) -> None:
        if module in trail:
            circles.append([*trail[trail.index(module) :], module])
            return
        if module in done:
            return
        for target in sorted(graph[module]):
            visit(target, [*trail, module])
        done.add(module)

    for module in sorted(graph):
        visit(module, [])
    assert circles == []


def test_evaluators_packages_stay_small_and_say_what_they_do() -> None:
    for init in EVAL_ROOT.glob("**/__init__.py"):
        modules = [p for p in init.parent.glob("*.py") if p.name != "__init__.py"]
        assert len(modules) <= 10, (init.parent, len(modules))
        doc = ast.get_docstring(ast.parse(init.read_text(encoding="utf-8")))
        assert doc and len(doc.splitlines()) >= 3, f"{init}: say what the package takes and gives"
    for path in _eval_sources():
        lines = len(path.read_text(encoding="utf-8").splitlines())
        assert lines <= 400, (path, lines)


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


# No import circles, of any kind: an import inside a function or under TYPE_CHECKING still ties
# the two modules together (each needs the other to be read, moved or tested alone).
def _import_graph(roots: list[Path]) -> dict[str, set[str]]:
    """Module -> the package modules it imports, over every ``*.py`` under each root's portion."""
    files: dict[str, Path] = {}
    for root in roots:
        for path in sorted(root.rglob("*.py")):
            files[".".join(path.relative_to(root).with_suffix("").parts)] = path
    names = {m.removesuffix(".__init__"): m for m in files}
    return {
        module.removesuffix(".__init__"): {
            name for name in _imported(path, module) if name in names
        }
        - {module.removesuffix(".__init__")}
        for module, path in files.items()
    }


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected groups of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        while work:
            node, targets = work[-1]
            nxt = next(targets, None)
            if nxt is not None:
                if nxt not in index:
                    index[nxt] = low[nxt] = len(index)
                    stack.append(nxt)
                    work.append((nxt, iter(sorted(graph[nxt]))))
                elif nxt in stack:
                    low[node] = min(low[node], index[nxt])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                group = []
                while True:
                    member = stack.pop()
                    group.append(member)
                    if member == node:
                        break
                if len(group) > 1:
                    found.append(sorted(group))
    return found


def test_no_import_cycle_in_the_package() -> None:
    graph = _import_graph([Path(__file__).resolve().parents[1] / p for p in PORTIONS])
    assert len(graph) > 200 and "ragsieve.jobs.golden.cli" in graph
    assert _cycles(graph) == []


def test_the_cycle_check_sees_circles_through_functions_and_type_checking(tmp_path: Path) -> None:
    pkg = tmp_path / "ragsieve" / "demo"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("def f():\n    from ragsieve.demo.b import g\n")
    (pkg / "b.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from ragsieve.demo import a\n"
    )
    (pkg / "c.py").write_text("from . import d\n")
    (pkg / "d.py").write_text("import ragsieve.demo.a\n")
    graph = _import_graph([tmp_path])
    assert _cycles(graph) == [["ragsieve.demo.a", "ragsieve.demo.b"]]
    (pkg / "a.py").write_text("from .c import x\n")
    assert _cycles(_import_graph([tmp_path])) == [
        ["ragsieve.demo.a", "ragsieve.demo.c", "ragsieve.demo.d"]
    ]
