"""A new temporary file that gets the permissions of a plain ``open()``, for atomic writes.

``tempfile.mkstemp`` creates its file ``0600`` whatever the umask, so a file written to a
temporary name and renamed into place (a golden version, the HTML report) ends up readable by
its owner only: a report served as a static file, or a golden set a team shares, becomes
unreadable to everyone else. Here the kernel applies the umask (``0666`` less it), as it does
for any file a program creates.
"""

from __future__ import annotations

import os
import secrets
from pathlib import Path

_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0)


def new_temp_file(folder: str | Path, prefix: str, suffix: str = "") -> tuple[int, str]:
    """``(fd, path)`` of a new, empty file in ``folder`` (mode ``0666`` less the umask)."""
    for _ in range(100):
        path = os.path.join(folder, f"{prefix}{secrets.token_hex(6)}{suffix}")
        try:
            return os.open(path, _FLAGS, 0o666), path
        except FileExistsError:
            continue
    raise FileExistsError(f"{folder}: no free temporary name for {prefix}*{suffix}")


__all__ = ["new_temp_file"]
