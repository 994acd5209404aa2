"""Interactions no time window can hold: started before 2000 or more than a day from now.

A span's time is nanoseconds since 1970; an exporter that sends microseconds (or milliseconds)
as nanoseconds stamps its traces in January 1970, one that multiplies twice lands past 2100.
Such traces are stored, but every ``--since`` window misses them, so the job would never judge
them and never say so. Each run counts them (``report["misdated"]``) and the table prints a
warning while there are any; ``ragsieve jobs run --all --window 1970-01-01..2000-01-01`` judges
the early ones once the exporter is fixed.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from ragsieve.collector.store import Store

EARLIEST = datetime(2000, 1, 1, tzinfo=UTC).timestamp()
FUTURE_S = 86400.0  # clocks drift; a day ahead is a wrong clock, not drift


def misdated(store: Store, now: float) -> dict[str, Any]:
    """How many stored interactions started before 2000 or after ``now`` plus a day."""
    rows = store.query(
        "SELECT SUM(CASE WHEN started_at < ? THEN 1 ELSE 0 END),"
        " SUM(CASE WHEN started_at > ? THEN 1 ELSE 0 END) FROM interactions"
        " WHERE started_at < ? OR started_at > ?",
        (EARLIEST, now + FUTURE_S, EARLIEST, now + FUTURE_S),
    )
    early, late = (int(v or 0) for v in rows[0]) if rows else (0, 0)
    out: dict[str, Any] = {"interactions": early + late, "before_2000": early, "future": late}
    if early + late:
        out["note"] = (
            f"{early + late} stored interactions start before 2000 ({early}) or after tomorrow"
            f" ({late}): no window holds them, so they are never judged (an exporter sending"
            " microseconds as nanoseconds stamps 1970)"
        )
    return out


__all__ = ["EARLIEST", "FUTURE_S", "misdated"]
