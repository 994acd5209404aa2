"""The lock is what a fresh clone installs: it covers pyproject.toml, and tests/run installed it."""

from __future__ import annotations

import tomllib
from importlib.metadata import distributions
from pathlib import Path

from lockfile import LOCK, canonical, locked_versions
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet

REPO = Path(__file__).resolve().parents[1]


def _declared() -> set[tuple[str, str, str]]:
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    groups = {"": project["dependencies"], **project["optional-dependencies"]}
    out = set()
    for extra, specs in groups.items():
        for spec in specs:
            req = Requirement(spec)
            out.add((canonical(req.name), str(SpecifierSet(str(req.specifier))), extra))
    return out


def _locked_requirements() -> set[tuple[str, str, str]]:
    lock = tomllib.loads(LOCK.read_text())
    (project,) = [p for p in lock["package"] if p["name"] == "ragsieve"]
    out = set()
    for dep in project["metadata"]["requires-dist"]:
        marker = dep.get("marker", "")
        extra = marker.removeprefix("extra == '").removesuffix("'") if marker else ""
        out.add((canonical(dep["name"]), str(SpecifierSet(dep.get("specifier", ""))), extra))
    return out


def test_lock_was_refreshed_after_the_last_pyproject_change() -> None:
    declared, locked = _declared(), _locked_requirements()
    assert declared == locked, (
        "uv.lock does not match pyproject.toml; run `bash .ci/lock`: "
        f"only in pyproject {sorted(declared - locked)}, "
        f"only in the lock {sorted(locked - declared)}"
    )


def test_every_installed_package_the_lock_knows_is_at_its_locked_version() -> None:
    locked = locked_versions()
    wrong = {
        d.metadata["Name"]: (d.version, sorted(locked[name]))
        for d in distributions()
        if (name := canonical(d.metadata["Name"])) in locked and d.version not in locked[name]
    }
    assert not wrong, f"installed outside the lock (tests/run installs with it): {wrong}"
