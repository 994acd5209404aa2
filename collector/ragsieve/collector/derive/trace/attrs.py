"""Typed, forgiving reads of decoded span attributes: scalars, flattened lists and JSON strings."""

from __future__ import annotations

import ast
import json
import math
import re
import unicodedata
from collections.abc import Mapping
from typing import Any

REDACTED = "__REDACTED__"
#: Longest string we try to parse as JSON / Python literal (bigger ones stay raw).
MAX_PARSE_CHARS = 2_000_000
MAX_LITERAL_CHARS = 100_000
#: Cap for any text the record keeps (chunk content, prompt messages, question, answer).
MAX_TEXT_CHARS = 100_000
#: Attribute value length limits that commonly truncate content silently (SPAN_SPEC §3.6).
KNOWN_LENGTH_LIMITS = frozenset({1024, 2048, 4096, 8192, 16384, 32768, 65536})

_INDEXED = re.compile(r"(\d+)\.(.+)$", re.DOTALL)


def mapping(value: Any) -> Mapping[str, Any]:
    """Return ``value`` when it is a mapping, else an empty dict."""
    return value if isinstance(value, Mapping) else {}


def get_str(attrs: Mapping[str, Any], key: str) -> str | None:
    """A non-empty string (ints stringified), or None."""
    return as_str(attrs.get(key))


def as_str(value: Any) -> str | None:
    """Coerce a scalar to a non-empty string; bools, lists and blanks become None."""
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return str(value) if math.isfinite(value) else None
    if isinstance(value, str) and value.strip():
        return value
    return None


def as_int(value: Any) -> int | None:
    """An int from an int, an integral float or a decimal string; None otherwise."""
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        return int(value) if math.isfinite(value) and value.is_integer() else None
    if isinstance(value, str):
        try:
            return int(value.strip())
        except ValueError:
            return None
    return None


def as_float(value: Any) -> float | None:
    """A finite float from an int, float or numeric string; None otherwise."""
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int | float):
        out = float(value)
    elif isinstance(value, str) and len(value) < 64:
        try:
            out = float(value.strip())
        except ValueError:
            return None
    else:
        return None
    return out if math.isfinite(out) else None


def as_bool(value: Any) -> bool | None:
    """A bool from a bool or a 'true'/'false' string."""
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in {"true", "false"}:
        return value.strip().lower() == "true"
    return None


def is_redacted(value: Any) -> bool:
    """True when an instrumentor replaced the value with the redaction marker."""
    return isinstance(value, str) and value.strip() == REDACTED


def parse_json(value: Any) -> Any:
    """Parse a JSON string (structured values pass through); None when it is not JSON."""
    if not isinstance(value, str):
        return value
    text = value.strip()
    if not text or len(text) > MAX_PARSE_CHARS or text[0] not in '{["':
        return None
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        return None


def parse_lenient(value: Any) -> Any:
    """JSON first, then a size-capped Python literal (``{'a': 1}`` reprs); never ``eval``."""
    parsed = parse_json(value)
    if parsed is not None or not isinstance(value, str):
        return parsed
    text = value.strip()
    if not text or len(text) > MAX_LITERAL_CHARS or text[0] not in "{[(":
        return None
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return None


def parse_object(value: Any) -> dict[str, Any] | None:
    """A JSON/literal object as a dict with string keys, or None."""
    parsed = parse_lenient(value)
    if isinstance(parsed, Mapping):
        return {str(k): v for k, v in parsed.items()}
    return None


def unflatten(attrs: Mapping[str, Any], prefix: str) -> list[tuple[int, dict[str, Any]]]:
    """Rebuild ``<prefix>.<i>.<suffix>`` keys into ``[(i, {suffix: value})]`` sorted numerically.

    Original indices are kept: gaps (attribute eviction) are meaningful.
    """
    head = prefix + "."
    items: dict[int, dict[str, Any]] = {}
    for key, value in attrs.items():
        if not isinstance(key, str) or not key.startswith(head):
            continue
        m = _INDEXED.match(key, len(head))
        if m and len(m.group(1)) < 9:
            items.setdefault(int(m.group(1)), {})[m.group(2)] = value
    return sorted(items.items())


def has_prefix(attrs: Mapping[str, Any], prefix: str) -> bool:
    """True when any key starts with ``prefix``."""
    return any(isinstance(k, str) and k.startswith(prefix) for k in attrs)


def normalize_ws(text: str) -> str:
    """Unicode NFC with whitespace runs collapsed (the content-hash normal form)."""
    return " ".join(unicodedata.normalize("NFC", text).split())


def cap(text: str | None, limit: int = MAX_TEXT_CHARS) -> str | None:
    """Cut text at ``limit`` characters."""
    if text is None or len(text) <= limit:
        return text
    return text[:limit]


def text_of(value: Any) -> str | None:
    """Best-effort plain text of a message-ish value (string, parts list, {content|text})."""
    if isinstance(value, str):
        return value if value.strip() else None
    if isinstance(value, Mapping):
        for key in ("content", "text", "value"):
            if key in value:
                return text_of(value[key])
        return None
    if isinstance(value, list | tuple):
        texts = []
        for part in value:
            if isinstance(part, Mapping) and part.get("type") not in (None, "text", "input_text"):
                continue
            t = text_of(part)
            if t:
                texts.append(t)
        return "\n".join(texts) if texts else None
    return None
