"""One line of a JSONL file a user wrote: decoded and parsed, every refusal naming ``path:line``.

Python's own reader lets three things through as tracebacks or as text that cannot be written
back: a byte that is not UTF-8 (``UnicodeDecodeError``), nesting deeper than the interpreter's
recursion limit (``[`` × 100,000 is a ``RecursionError``, not a ``JSONDecodeError``) and a lone
UTF-16 surrogate escape (``"\\ud800"`` parses, then fails wherever the text is encoded again).
Each is a :class:`ConfigError` here.
"""

from __future__ import annotations

import json
import os
import re
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ragsieve.evaluators.errors import ConfigError

MAX_LINE_BYTES = 16 * 1024 * 1024  # one golden case (its texts are capped far below this)
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")
_SURROGATE = re.compile("[\ud800-\udfff]")
_KINDS = {  # as userfile.regular_file names them (tools import nothing but errors)
    stat.S_IFDIR: "a directory",
    stat.S_IFIFO: "a FIFO (named pipe)",
    stat.S_IFCHR: "a character device",
    stat.S_IFBLK: "a block device",
    stat.S_IFSOCK: "a socket",
}


def decode_line(raw: bytes, where: str) -> str:
    """``raw`` as UTF-8 text; a bad byte names its column."""
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(
            f"{where}: not UTF-8 (byte 0x{raw[exc.start]:02x} at column {exc.start + 1});"
            " re-save the file as UTF-8"
        ) from None


def parse_line(text: str, where: str) -> Any:
    """The JSON value on one line (``where`` is ``path:line``)."""
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{where}: json: {exc.msg}") from None
    except RecursionError:
        raise ConfigError(f"{where}: json: nested too deeply") from None
    # a valid surrogate pair decodes to one character; only a lone half is left as a surrogate
    if _SURROGATE_ESCAPE.search(text) and _has_surrogate(value):
        raise ConfigError(f"{where}: json: a lone surrogate escape (\\ud800-\\udfff) is not text")
    return value


def _has_surrogate(value: Any) -> bool:
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            if _SURROGATE.search(item):
                return True
        elif isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return False


def json_lines(path: Path) -> Iterator[tuple[int, Any]]:
    """``(line number, value)`` for each non-blank line of ``path`` (a regular file; a line of
    at most ``MAX_LINE_BYTES``: ``/dev/zero`` or a FIFO is refused, not read for ever)."""
    try:
        mode = os.stat(path).st_mode  # stat first: opening a FIFO blocks
        if not stat.S_ISREG(mode):
            kind = _KINDS.get(stat.S_IFMT(mode), "not a regular file")
            raise ConfigError(f"{path}: cannot read: is {kind}, not a regular file; give a file")
        handle = path.open("rb")
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read: {exc.strerror or exc}") from exc
    with handle:
        for lineno, raw in enumerate(iter(lambda: handle.readline(MAX_LINE_BYTES + 1), b""), 1):
            where = f"{path}:{lineno}"
            if len(raw) > MAX_LINE_BYTES:
                raise ConfigError(f"{where}: line longer than {MAX_LINE_BYTES >> 20} MiB")
            text = decode_line(raw.removeprefix(b"\xef\xbb\xbf") if lineno == 1 else raw, where)
            if text.strip():
                yield lineno, parse_line(text, where)


__all__ = ["MAX_LINE_BYTES", "decode_line", "json_lines", "parse_line"]
