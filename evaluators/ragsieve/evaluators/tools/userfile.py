"""Files a user names (``--config``, ``--golden``, ``--policy``, ``--baseline``...): regular
files only, read within a bound.

``/dev/zero`` reads for ever (until ``MemoryError``), a FIFO blocks ``open()`` until a writer
comes (a hang), a directory or a socket cannot be read at all. Each is refused here with one line
naming the path, before anything is opened. A file read whole is also refused past a size (a
config file past :data:`MAX_CONFIG_BYTES`, an eval input past :data:`MAX_DATA_BYTES`) from its
``stat`` size, before a byte is read; a line of a JSONL file is read at most
``jsonlines.MAX_LINE_BYTES``.
"""

from __future__ import annotations

import os
import re
import stat
import tomllib
from pathlib import Path
from typing import Any

from ragsieve.evaluators.errors import ConfigError

MAX_CONFIG_BYTES = 4 * 1024 * 1024  # a ragsieve.toml or a gate policy is a few kB
MAX_DATA_BYTES = 1024 * 1024 * 1024  # an eval results or qrels file: 200,000 queries are ~100 MB

_KINDS = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


def _stat(p: Path) -> os.stat_result:
    try:
        return os.stat(p)
    except FileNotFoundError:
        raise ConfigError(f"{p}: cannot read: no such file") from None
    except OSError as exc:  # a symlink loop, a name too long, no permission on a folder
        raise ConfigError(f"{p}: cannot read: {exc.strerror or exc}") from None


def regular_file(path: str | Path) -> Path:
    """``path`` when it is (or links to) a regular file; else a one-line ``ConfigError``."""
    p = Path(path)
    mode = _stat(p).st_mode
    if not stat.S_ISREG(mode):
        kind = next((name for test, name in _KINDS if test(mode)), "not a regular file")
        raise ConfigError(f"{p}: cannot read: is {kind}, not a regular file; give a file")
    return p


def _size_text(n: int) -> str:
    return f"{n >> 30} GiB" if n >= 1 << 30 else f"{n >> 20} MiB"


def read_capped(path: str | Path, limit: int = MAX_CONFIG_BYTES, *, what: str = "") -> bytes:
    """The bytes of a regular file of at most ``limit`` bytes (``what`` names what the file
    should be, for the refusal: "a config file" by default)."""
    p = regular_file(path)
    too_big = f"{p}: larger than {_size_text(limit)}; not {what or 'a config file'}"
    if _stat(p).st_size > limit:  # refused before reading: a sparse 64 GiB file costs nothing
        raise ConfigError(too_big)
    try:
        with p.open("rb") as handle:
            data = handle.read(limit + 1)
    except OSError as exc:
        raise ConfigError(f"{p}: cannot read: {exc.strerror or exc}") from None
    if len(data) > limit:  # it grew since the stat
        raise ConfigError(too_big)
    return data


def read_text_capped(path: str | Path, limit: int = MAX_CONFIG_BYTES, *, what: str = "") -> str:
    """:func:`read_capped` decoded as UTF-8 (a leading BOM dropped); a bad byte names its line."""
    data = read_capped(path, limit, what=what).removeprefix(b"\xef\xbb\xbf")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise ConfigError(
            f"{path}:{line}: not UTF-8 (byte 0x{data[exc.start]:02x}); re-save the file as UTF-8"
        ) from None


def read_toml(path: str | Path) -> tuple[str, dict[str, Any]]:
    """A TOML file a user wrote: its text (for finding a key's line later) and its document.

    Read through :func:`read_text_capped`: a FIFO, ``/dev/zero``, a folder or a file past
    4 MiB is one line (``path: cannot read: ...``, ``path: larger than 4 MiB``), never a hang;
    bad TOML is ``path:line: toml: ...``.
    """
    p = Path(path)
    text = read_text_capped(p, what="a TOML settings file")
    try:
        return text, tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        m = re.search(r"\(at line (\d+)", str(exc))
        raise ConfigError(f"{p}:{m.group(1) if m else 1}: toml: {exc}") from None


__all__ = [
    "MAX_CONFIG_BYTES",
    "MAX_DATA_BYTES",
    "read_capped",
    "read_text_capped",
    "read_toml",
    "regular_file",
]
