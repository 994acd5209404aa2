"""Durations and windows as people type them: ``90s``, ``15m``, ``2h``, ``7d``, ISO timestamps."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

from ragsieve.evaluators.errors import ConfigError

_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}
MAX_DURATION_S = 36500 * 86400.0


def parse_duration(text: str) -> timedelta:
    """``"90s"`` → 90 seconds; a bare number means seconds."""
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([smhdw]?)\s*", text or "")
    if not m:
        raise ConfigError(f"duration {text!r}: expected e.g. 90s, 15m, 2h, 7d")
    seconds = float(m.group(1)) * _UNITS[m.group(2) or "s"]
    if seconds > MAX_DURATION_S:  # past this, `now - duration` leaves the calendar
        raise ConfigError(f"duration {text!r}: at most 36500d (100 years)")
    return timedelta(seconds=seconds)


def parse_time(text: str) -> datetime:
    """An ISO 8601 timestamp (naive means UTC)."""
    try:
        value = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError:
        raise ConfigError(f"time {text!r}: expected ISO 8601, e.g. 2026-11-29T10:00:00Z") from None
    return value if value.tzinfo else value.replace(tzinfo=UTC)


def parse_window(text: str) -> tuple[datetime, datetime]:
    """``START..END`` (ISO timestamps) → a half-open UTC window."""
    start, sep, end = text.partition("..")
    if not sep:
        raise ConfigError(f"window {text!r}: expected START..END")
    lo, hi = parse_time(start), parse_time(end)
    if hi <= lo:
        raise ConfigError(f"window {text!r}: END must be after START")
    return lo, hi
