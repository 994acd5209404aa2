"""How to install an optional extra, in words that work where ragsieve was installed from.

``pip install 'ragsieve[parquet]'`` works for an install from a package index, not for one
from a checkout (the Quickstart's ``pip install -e .``): there the index has no ragsieve, or a
different one. The hint names the checkout and this environment's interpreter instead.
"""

from __future__ import annotations

import json
import sys
from importlib import metadata
from pathlib import Path
from urllib.parse import unquote, urlparse


def _shown(path: Path) -> str:
    """``path`` relative to the working folder when inside it (``.``, ``.venv/bin/python``)."""
    try:
        rel = path.absolute().relative_to(Path.cwd().absolute())
    except ValueError:
        return str(path)
    return str(rel) if str(rel) != "." else "."


def checkout() -> Path | None:
    """The local folder ragsieve was installed from (``pip install -e .``), if it was."""
    try:
        raw = metadata.distribution("ragsieve").read_text("direct_url.json")
    except metadata.PackageNotFoundError:
        return None
    url = urlparse(json.loads(raw).get("url", "")) if raw else None
    if url is None or url.scheme != "file":
        return None
    return Path(unquote(url.path))


def install_hint(extra: str) -> str:
    """The command that installs ``extra`` into this environment."""
    src = checkout()
    if src is None or not src.is_dir():
        return f"pip install 'ragsieve[{extra}]'"
    python = _shown(Path(sys.executable))
    return f"{python} -m pip install -e '{_shown(src)}[{extra}]'"


__all__ = ["checkout", "install_hint"]
