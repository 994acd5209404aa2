"""Files a user names (``--config``, ``--golden``): regular files only, read within a bound.

``/dev/zero`` reads for ever (until ``MemoryError``), a FIFO blocks ``open()`` until a writer
comes (a hang), a directory or a socket cannot be read at all. Each is refused here with one line
naming the path, before anything is opened; a config file is also read at most
:data:`MAX_CONFIG_BYTES` (a line of a JSONL file at most ``jsonlines.MAX_LINE_BYTES``).
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from ragsieve.evaluators.errors import ConfigError

MAX_CONFIG_BYTES = 4 * 1024 * 1024  # a ragsieve.toml is a few kB

_KINDS = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


def regular_file(path: str | Path) -> Path:
    """``path`` when it is (or links to) a regular file; else a one-line ``ConfigError``."""
    p = Path(path)
    try:
        mode = os.stat(p).st_mode
    except FileNotFoundError:
        raise ConfigError(f"{p}: cannot read: no such file") from None
    except OSError as exc:  # a symlink loop, a name too long, no permission on a folder
        raise ConfigError(f"{p}: cannot read: {exc.strerror or exc}") from None
    if not stat.S_ISREG(mode):
        kind = next((name for test, name in _KINDS if test(mode)), "not a regular file")
        raise ConfigError(f"{p}: cannot read: is {kind}, not a regular file; give a file")
    return p


def read_capped(path: str | Path, limit: int = MAX_CONFIG_BYTES) -> bytes:
    """The bytes of a regular file of at most ``limit`` bytes."""
    p = regular_file(path)
    try:
        with p.open("rb") as handle:
            data = handle.read(limit + 1)
    except OSError as exc:
        raise ConfigError(f"{p}: cannot read: {exc.strerror or exc}") from None
    if len(data) > limit:
        raise ConfigError(f"{p}: larger than {limit // (1024 * 1024)} MiB; not a config file")
    return data


__all__ = ["MAX_CONFIG_BYTES", "read_capped", "regular_file"]
