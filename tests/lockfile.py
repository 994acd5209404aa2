"""Versions pinned in ``uv.lock``: what a test compares against, so no index release can move it.

``tests/run`` installs with the lock as pip constraints; a test that needs a dependency's version
reads it here rather than from whatever the index served on the day of the clone.
"""

from __future__ import annotations

import re
import tomllib
from functools import cache
from pathlib import Path

LOCK = Path(__file__).resolve().parents[1] / "uv.lock"


def canonical(name: str) -> str:
    """PEP 503 normalised distribution name."""
    return re.sub(r"[-_.]+", "-", name).lower()


@cache
def locked_versions() -> dict[str, frozenset[str]]:
    """Distribution name → the versions the lock pins (more than one where it forks by marker)."""
    packages = tomllib.loads(LOCK.read_text())["package"]
    out: dict[str, set[str]] = {}
    for pkg in packages:
        if "version" in pkg:
            out.setdefault(canonical(pkg["name"]), set()).add(pkg["version"])
    return {name: frozenset(v) for name, v in out.items()}


def locked_version(name: str) -> str:
    """The one version the lock pins for ``name``; a KeyError/ValueError says why not."""
    versions = locked_versions()[canonical(name)]
    if len(versions) != 1:
        raise ValueError(f"{name}: the lock pins several versions {sorted(versions)}")
    (only,) = versions
    return only
