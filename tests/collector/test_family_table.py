"""The instrumentation table of docs/instrumenting.md is the one the family tests prove, at the
locked versions.

``RAGSIEVE_TEST_WRITE_README=1`` rewrites the table in place after a deliberate change to
``families.ROWS`` or to a pin.
"""

from __future__ import annotations

import os
import re
import tomllib
from importlib.metadata import version
from pathlib import Path

import families
from lockfile import locked_version

REPO = Path(__file__).resolve().parents[2]


def test_every_family_package_is_installed_at_its_locked_version() -> None:
    extras = tomllib.loads((REPO / "pyproject.toml").read_text())["project"][
        "optional-dependencies"
    ]["test"]
    pins = dict(m.groups() for d in extras if (m := re.fullmatch(r"([\w.-]+)==([\w.]+)", d)))
    for row in families.ROWS.values():
        for package in row.packages:
            assert version(package) == locked_version(package), package
            if package != "openai":  # a runtime dependency of ragsieve, locked but not pinned
                assert pins.get(package) == locked_version(package), package


def test_readme_table_is_generated_from_the_family_tests() -> None:
    readme = REPO / "docs" / "instrumenting.md"
    text = readme.read_text()
    begin, end = text.index(families.README_BEGIN), text.index(families.README_END)
    current = text[begin : end + len(families.README_END)]
    table = families.render()
    if os.environ.get("RAGSIEVE_TEST_WRITE_README") == "1" and current != table:
        readme.write_text(text.replace(current, table))
        current = table
    assert current == table
    tests = {row.test for row in families.ROWS.values()}
    assert all((REPO / "tests" / "collector" / t).is_file() for t in tests)
