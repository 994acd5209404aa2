"""Read a TOML file a user wrote, with errors that name the file and the line."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path
from typing import Any

from ragsieve.evaluators.errors import ConfigError


def read_toml(path: str | Path) -> tuple[str, dict[str, Any]]:
    """The file's text (for finding a key's line later) and its parsed document.

    An unreadable file is ``path: cannot read: ...``; bad TOML is ``path:line: toml: ...``.
    """
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"{p}: cannot read: {exc.strerror or exc}") from exc
    try:
        return text, tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        m = re.search(r"\(at line (\d+)", str(exc))
        raise ConfigError(f"{p}:{m.group(1) if m else 1}: toml: {exc}") from None
