"""Shapes that read at a glance: no function over 60 lines, no block nested deeper than 4.

A long function hides its steps; a deep one hides its cases. Both limits are measured on the
source of the three packages with the ``ast`` module, so a new function that breaks them fails
here with its place and size.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("collector/ragsieve", "evaluators/ragsieve", "jobs/ragsieve")
MAX_LINES = 60
MAX_DEPTH = 4
BLOCKS = (
    ast.If,
    ast.For,
    ast.AsyncFor,
    ast.While,
    ast.With,
    ast.AsyncWith,
    ast.Try,
    ast.TryStar,
    ast.Match,
)
Function = ast.FunctionDef | ast.AsyncFunctionDef


def _functions() -> Iterator[tuple[str, Function]]:
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
            where = path.relative_to(ROOT)
            for node in ast.walk(tree):
                if isinstance(node, Function):
                    yield f"{where}:{node.lineno} {node.name}", node


def depth(node: ast.AST, level: int = 0) -> int:
    """The deepest nesting of blocks under ``node``, not counting nested functions' own."""
    deepest = level
    for child in ast.iter_child_nodes(node):
        if isinstance(child, Function | ast.ClassDef | ast.Lambda):
            continue  # measured on its own
        inner = level + 1 if isinstance(child, BLOCKS) else level
        if isinstance(child, ast.If) and _is_elif(node, child):
            inner = level  # `elif` continues its `if`, it does not nest
        deepest = max(deepest, depth(child, inner))
    return deepest


def _is_elif(parent: ast.AST, child: ast.If) -> bool:
    return isinstance(parent, ast.If) and parent.orelse == [child]


def test_the_checker_measures_what_it_claims() -> None:
    src = (
        "def f(x):\n"
        "    if x:\n"
        "        for y in x:\n"
        "            with y:\n"
        "                pass\n"
        "    elif x is None:\n"
        "        pass\n"
        "    def g():\n"
        "        if 1:\n"
        "            pass\n"
    )
    fn = ast.parse(src).body[0]
    assert depth(fn) == 3
    assert fn.end_lineno - fn.lineno + 1 == 10  # type: ignore[attr-defined,operator]


def test_no_function_is_longer_than_60_lines() -> None:
    long = [
        f"{where} ({fn.end_lineno - fn.lineno + 1} lines)"  # type: ignore[operator]
        for where, fn in _functions()
        if fn.end_lineno - fn.lineno + 1 > MAX_LINES  # type: ignore[operator]
    ]
    assert long == [], "split these into named steps:\n" + "\n".join(long)


def test_no_block_is_nested_deeper_than_4() -> None:
    deep = [f"{where} (depth {d})" for where, fn in _functions() if (d := depth(fn)) > MAX_DEPTH]
    assert deep == [], "flatten these (early returns, helpers):\n" + "\n".join(deep)


@pytest.mark.parametrize("package", PACKAGES)
def test_every_package_is_measured(package: str) -> None:
    assert any((ROOT / package).rglob("*.py"))
