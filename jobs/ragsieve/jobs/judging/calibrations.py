"""Fitted calibrations in the store: versioned, at most one active, exported and imported as JSON.

``ragsieve judges fit`` writes one row per fit (``series`` counts fits in this store) and makes
it the active one; the job's judges are built under the active calibration
(:func:`ragsieve.jobs.judging.judges.make_judges`), so their versions carry its id. ``--reset``
deactivates every calibration: the judges go back to their defaults (and to the checkpoints
they already had).
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ragsieve.collector.store import Store
from ragsieve.evaluators.errors import ConfigError
from ragsieve.evaluators.judges.combined.calibrated import Calibration


def active(store: Store) -> Calibration | None:
    """The active calibration, or None (defaults)."""
    rows = store.query("SELECT id, body FROM calibrations WHERE active = 1 ORDER BY series DESC")
    if not rows:
        return None
    return Calibration.from_json(json.loads(rows[0][1]), f"calibration {rows[0][0]}")


def next_series(store: Store) -> int:
    """The series number the next fit gets."""
    row = store.query("SELECT MAX(series) FROM calibrations")
    return int(row[0][0] or 0) + 1


def save(store: Store, cal: Calibration, *, activate: bool = True) -> str:
    """Store ``cal`` (replacing a row with the same id) and, by default, make it the active one."""
    body = json.dumps(cal.to_json(), sort_keys=True)
    with store.transaction() as cur:
        if activate:
            cur.execute(store.sql("UPDATE calibrations SET active = 0 WHERE active = 1"))
        cur.execute(store.sql("DELETE FROM calibrations WHERE id = ?"), (cal.id,))
        cur.execute(
            store.sql(
                "INSERT INTO calibrations (id, series, created_at, active, body)"
                " VALUES (?, ?, ?, ?, ?)"
            ),
            (cal.id, cal.series, cal.created_at or time.time(), int(activate), body),
        )
    return cal.id


def reset(store: Store) -> int:
    """Deactivate every calibration; returns how many were active."""
    return store.execute("UPDATE calibrations SET active = 0 WHERE active = 1")


def history(store: Store) -> list[dict[str, object]]:
    """Every stored calibration, newest first: id, series, created_at, active."""
    rows = store.query(
        "SELECT id, series, created_at, active FROM calibrations ORDER BY series DESC"
    )
    return [
        {"id": i, "series": int(s), "created_at": float(c), "active": bool(a)}
        for i, s, c, a in rows
    ]


def export(store: Store, path: str | Path) -> Calibration:
    """Write the active calibration to ``path`` as JSON."""
    cal = active(store)
    if cal is None:
        raise ConfigError("no active calibration to export (run `ragsieve judges fit` first)")
    Path(path).write_text(json.dumps(cal.to_json(), indent=2, sort_keys=True) + "\n")
    return cal


def check_finite(data: Mapping[str, Any], source: str) -> None:
    """Refuse a calibration whose thresholds or weights are not finite numbers.

    Python's JSON reader accepts ``NaN`` and ``Infinity``; a NaN weight makes every score NaN and
    so flags every trace, an infinite one decides by a single piece of evidence.
    """
    metrics = data.get("metrics")
    if not isinstance(metrics, Mapping):
        return  # from_json names the missing or malformed field
    for metric, c in metrics.items():
        if not isinstance(c, Mapping):
            continue
        values = {"threshold": c.get("threshold")}
        weights = c.get("weights")
        if isinstance(weights, Mapping):
            values.update({f"weights.{k}": v for k, v in weights.items()})
        for name, v in values.items():
            if isinstance(v, float) and not math.isfinite(v):
                raise ConfigError(f"{source}: metrics.{metric}.{name}: {v} is not a finite number")


def import_(store: Store, path: str | Path) -> Calibration:
    """Read a calibration exported from another store and make it the active one here (it gets
    this store's next series number, so its id is this store's own)."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:  # UnicodeDecodeError and JSONDecodeError too
        raise ConfigError(f"{path}: not a calibration file: {exc}") from None
    except RecursionError:
        raise ConfigError(f"{path}: not a calibration file: JSON nested too deeply") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: not a calibration file (expected a JSON object)")
    check_finite(data, str(path))
    cal = Calibration.from_json(data, str(path))
    report = {**cal.report, "imported_from": data.get("id")}
    cal = Calibration(cal.metrics, next_series(store), time.time(), report, cal.backend)
    save(store, cal)
    return cal


__all__ = ["active", "check_finite", "export", "history", "import_", "next_series", "reset", "save"]
