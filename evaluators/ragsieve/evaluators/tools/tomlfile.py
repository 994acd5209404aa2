"""Read a TOML file a user wrote, with errors that name the file and the line."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path
from typing import Any

from ragsieve.evaluators.errors import ConfigError
from ragsieve.evaluators.tools.userfile import read_capped


def read_toml(path: str | Path) -> tuple[str, dict[str, Any]]:
    """The file's text (for finding a key's line later) and its parsed document.

    An unreadable file is ``path: cannot read: ...``; bad TOML is ``path:line: toml: ...``.
    """
    p = Path(path)
    try:
        text = read_capped(p).decode("utf-8")  # a regular file of a sane size, or refused
    except UnicodeDecodeError as exc:
        at = exc.object[: exc.start].count(b"\n") + 1
        raise ConfigError(f"{p}:{at}: not UTF-8; save the file as UTF-8") from None
    try:
        return text, tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        m = re.search(r"\(at line (\d+)", str(exc))
        raise ConfigError(f"{p}:{m.group(1) if m else 1}: toml: {exc}") from None
