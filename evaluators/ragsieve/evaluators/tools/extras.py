"""How to install an optional extra, in words that work where ragsieve was installed from.

``pip install 'ragsieve[parquet]'`` works for an install from a package index, not for one
from a checkout (the Quickstart's ``pip install -e .``): there the index has no ragsieve, or a
different one. The hint reads how ragsieve was installed (``direct_url.json``, PEP 610: a
folder, editable or not, an archive, a VCS URL, or else an index; ``INSTALLER``: pip or uv) and
names this environment's interpreter, so the command installs into the environment that runs.

One contract for every extra: what needs a missing one raises :class:`MissingExtra` (an
``ImportError``) built by :func:`missing`, whose message is one line, ``<what> needs: <install>
(no module '<name>')``; the CLI prints it and exits 2. :func:`require` checks an extra up front;
the CLI's entry point turns any other import of an extra's module that fails into the same line.
"""

from __future__ import annotations

import importlib
import json
import sys
from collections.abc import Mapping
from importlib import metadata
from pathlib import Path
from typing import Any
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


def _direct_url() -> dict[str, Any] | None:
    """ragsieve's ``direct_url.json`` (PEP 610): how it was installed when not from an index."""
    try:
        raw = metadata.distribution("ragsieve").read_text("direct_url.json")
    except metadata.PackageNotFoundError:
        return None
    try:
        data = json.loads(raw) if raw else None
    except ValueError:
        return None
    return data if isinstance(data, dict) else None


def _installer() -> str:
    """The tool that installed ragsieve (``pip``, ``uv``), from its ``INSTALLER`` file."""
    try:
        raw = metadata.distribution("ragsieve").read_text("INSTALLER")
    except metadata.PackageNotFoundError:
        return "pip"
    return (raw or "pip").strip() or "pip"


def checkout() -> Path | None:
    """The local folder ragsieve was installed from (``pip install -e .``), if it was."""
    data = _direct_url()
    url = urlparse(str(data.get("url", ""))) if data else None
    if url is None or url.scheme != "file":
        return None
    return Path(unquote(url.path))


def hint_for(
    extra: str, direct_url: Mapping[str, Any] | None, *, installer: str, python: str
) -> str:
    """The install command for ``extra`` given how ragsieve was installed (PEP 610's
    ``direct_url``: None from an index; a folder, editable or not; an archive; a VCS URL)."""
    spec = f"'ragsieve[{extra}]'"
    editable = ""
    if direct_url:
        url = str(direct_url.get("url", ""))
        parts = urlparse(url)
        vcs = direct_url.get("vcs_info")
        if isinstance(vcs, Mapping):
            rev = vcs.get("commit_id") or vcs.get("requested_revision")
            spec = f"'ragsieve[{extra}] @ {vcs.get('vcs', 'git')}+{url}{f'@{rev}' if rev else ''}'"
        elif parts.scheme == "file" and "dir_info" in direct_url:
            spec = f"'{_shown(Path(unquote(parts.path)))}[{extra}]'"
            dir_info = direct_url.get("dir_info")
            editable = "-e " if isinstance(dir_info, Mapping) and dir_info.get("editable") else ""
        elif url:
            spec = f"'ragsieve[{extra}] @ {url}'"
    if installer == "uv":
        return f"uv pip install --python {python} {editable}{spec}"
    return f"{python} -m pip install {editable}{spec}"


def install_hint(extra: str) -> str:
    """The command that installs ``extra`` into this environment, the way ragsieve came."""
    return hint_for(
        extra, _direct_url(), installer=_installer(), python=_shown(Path(sys.executable))
    )


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


__all__ = ["EXTRAS", "checkout", "extra_of", "hint_for", "install_hint", "missing", "require"]
