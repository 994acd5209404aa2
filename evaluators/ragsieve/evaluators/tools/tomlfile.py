"""Read a TOML file a user wrote, with errors that name the file and the line."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path
from typing import Any

from ragsieve.evaluators.errors import ConfigError
from ragsieve.evaluators.tools.userfile import read_text_capped


def read_toml(path: str | Path) -> tuple[str, dict[str, Any]]:
    """The file's text (for finding a key's line later) and its parsed document.

    The file is read through :func:`~ragsieve.evaluators.tools.userfile.read_text_capped`: a
    FIFO, ``/dev/zero``, a folder or a file past 4 MiB is ``path: cannot read: ...`` (or ``path:
    larger than 4 MiB``), never a hang; bad TOML is ``path:line: toml: ...``.
    """
    p = Path(path)
    text = read_text_capped(p, what="a TOML settings file")
    try:
        return text, tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        m = re.search(r"\(at line (\d+)", str(exc))
        raise ConfigError(f"{p}:{m.group(1) if m else 1}: toml: {exc}") from None
