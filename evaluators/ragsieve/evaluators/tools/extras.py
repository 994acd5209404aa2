"""How to install an optional extra, in words that work where ragsieve was installed from.

``pip install 'ragsieve[parquet]'`` works for an install from a package index, not for one
from a checkout (the Quickstart's ``pip install -e .``): there the index has no ragsieve, or a
different one. The hint names the checkout and this environment's interpreter instead.

One contract for every extra: what needs a missing one raises :class:`MissingExtra` (an
``ImportError``) built by :func:`missing`, whose message is one line, ``<what> needs: <install>
(no module '<name>')``; the CLI prints it and exits 2. :func:`require` checks an extra up front;
the CLI's entry point turns any other import of an extra's module that fails into the same line.
"""

from __future__ import annotations

import importlib
import json
import sys
from importlib import metadata
from pathlib import Path
from urllib.parse import unquote, urlparse

from ragsieve.evaluators.errors import MissingExtra

# extra -> distribution (as pyproject.toml names it) -> the module ragsieve or a user imports
EXTRAS: dict[str, dict[str, str]] = {
    "postgres": {"psycopg": "psycopg", "procrastinate": "procrastinate"},
    "phoenix": {"arize-phoenix-client": "phoenix.client", "arize-phoenix-otel": "phoenix.otel"},
    "parquet": {"pyarrow": "pyarrow"},
    "pandas": {"pandas": "pandas", "tqdm": "tqdm"},
    "model": {"onnxruntime": "onnxruntime", "tokenizers": "tokenizers"},
}


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


def extra_of(module: str | None) -> str | None:
    """The extra that provides ``module`` (``procrastinate.worker`` -> ``postgres``), if any."""
    if not module:
        return None
    top = module.partition(".")[0]
    for extra, modules in EXTRAS.items():
        if any(m.partition(".")[0] == top for m in modules.values()):
            return extra
    return None


def missing(extra: str, what: str, module: str | None = None) -> MissingExtra:
    """The error saying that ``what`` needs ``extra`` (``module`` being the one not found)."""
    if extra not in EXTRAS:
        raise ValueError(f"unknown extra {extra!r}; known: {', '.join(sorted(EXTRAS))}")
    absent = f" (no module {module!r})" if module else ""
    return MissingExtra(f"{what} needs: {install_hint(extra)}{absent}", extra=extra, name=module)


def require(extra: str, what: str, *modules: str) -> None:
    """Import ``modules`` (default: every module of ``extra``) or raise :func:`missing`."""
    for name in modules or EXTRAS[extra].values():
        try:
            importlib.import_module(name)
        except ImportError as exc:
            raise missing(extra, what, exc.name or name) from exc


__all__ = ["EXTRAS", "checkout", "extra_of", "install_hint", "missing", "require"]
