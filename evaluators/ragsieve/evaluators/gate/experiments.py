"""One variable at a time: the pipeline settings an eval ran with, what changed between two runs,
and the one-line experiment log entry.

``ragsieve eval --config chunk_size=800 --config-file run.toml`` records the settings (dotted keys,
TOML values) in its JSON output; the gate and ``ragsieve experiments list`` read them back, say
what differs, warn when more than one setting changed, and print::

    chunk_size 512 → 800: recall@5 +0.040 [+0.010, +0.070], mrr −0.010 [−0.030, +0.010]
"""

from __future__ import annotations

import json
import math
import tomllib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from ragsieve.evaluators.errors import ConfigError
from ragsieve.evaluators.tools.userfile import read_toml

ConfigValue = str | int | float | bool | list[object] | None
_UNSET = "(unset)"


def parse_config_pairs(pairs: Iterable[str]) -> dict[str, ConfigValue]:
    """``["chunk_size=800", "model=bge-m3"]`` → ``{"chunk_size": 800, "model": "bge-m3"}``.

    A value is read as a TOML value when it is one (numbers, booleans, quoted strings, arrays),
    else kept as the text written.
    """
    out: dict[str, ConfigValue] = {}
    for pair in pairs:
        key, sep, raw = pair.partition("=")
        key = key.strip()
        if not sep or not key:
            raise ConfigError(f"--config {pair!r}: expected key=value, e.g. chunk_size=800")
        if not _is_text(pair):  # an undecodable argv byte arrives as a lone surrogate
            raise ConfigError(f"--config {pair!r}: not UTF-8 text")
        if key in out:
            raise ConfigError(f"--config {key}: given twice; give each setting once")
        out[key] = _value(raw.strip(), f"--config {key}")
    return out


def _is_text(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _value(raw: str, where: str) -> ConfigValue:
    try:
        value: ConfigValue = tomllib.loads(f"v = {raw}")["v"]
    except tomllib.TOMLDecodeError:
        return raw
    if isinstance(value, float) and not math.isfinite(value):
        # JSON has no inf/nan: it would be recorded as null and compare equal to "unset"
        raise ConfigError(f"{where}: {raw} is not a finite number; quote it to record the text")
    return value


def load_config_file(path: str | Path) -> dict[str, ConfigValue]:
    """A TOML file of pipeline settings, nested tables flattened to dotted keys."""
    _, doc = read_toml(path)
    out = _flatten(doc)
    for key, value in out.items():
        if isinstance(value, float) and not math.isfinite(value):
            raise ConfigError(f"{path}: {key}: {value} is not a finite number (JSON has none)")
    return out


def _flatten(doc: Mapping[str, object], prefix: str = "") -> dict[str, ConfigValue]:
    out: dict[str, ConfigValue] = {}
    for key, value in doc.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping):
            out.update(_flatten(value, f"{name}."))
        elif isinstance(value, str | int | float | bool | list):
            out[name] = value
        else:  # dates and times: recorded as written
            out[name] = str(value)
    return out


@dataclass(frozen=True)
class Change:
    """One setting that differs between baseline and candidate (``None``: not set)."""

    key: str
    before: ConfigValue
    after: ConfigValue

    def __str__(self) -> str:
        return f"{self.key} {_show(self.before)} → {_show(self.after)}"


def _show(value: ConfigValue) -> str:
    return _UNSET if value is None else json.dumps(value, ensure_ascii=False).strip('"')


def config_changes(
    baseline: Mapping[str, ConfigValue], candidate: Mapping[str, ConfigValue]
) -> list[Change]:
    """Settings whose value differs, in key order; a key set on one side only counts."""
    keys = sorted({*baseline, *candidate})
    return [
        Change(k, baseline.get(k), candidate.get(k))
        for k in keys
        if baseline.get(k) != candidate.get(k)
    ]


def describe_changes(changes: Sequence[Change]) -> str:
    """``chunk_size 512 → 800`` (several joined by commas), or ``no setting changed``."""
    return ", ".join(str(c) for c in changes) if changes else "no setting changed"


def changes_warning(changes: Sequence[Change]) -> str | None:
    """The warning for a comparison that changed more than one thing at a time."""
    if len(changes) <= 1:
        return None
    keys = ", ".join(c.key for c in changes)
    return (
        f"{len(changes)} settings changed ({keys}): the difference cannot be put on any one "
        "of them; change one at a time"
    )


class Interval(Protocol):
    """A metric's change with its interval (the gate's ``MetricCheck`` is one)."""

    metric: str
    delta: float
    ci_low: float
    ci_high: float


def _signed(x: float) -> str:
    return f"{x:+.3f}".replace("-", "−")


def headline(metrics: Sequence[str]) -> list[str]:
    """The metrics a log line names: recall at the smallest cutoff, MRR, nDCG at the largest
    (those present), so a line stays one line; all of them when none of those is there."""
    by_k = [(int(m.split("@")[1]), m) for m in metrics if "@" in m and m.split("@")[1].isdigit()]
    recall = min((km for km in by_k if km[1].startswith("recall@")), default=None)
    ndcg = max((km for km in by_k if km[1].startswith("ndcg@")), default=None)
    picked = [recall[1] if recall else None, "mrr" if "mrr" in metrics else None]
    picked.append(ndcg[1] if ndcg else None)
    return [m for m in picked if m] or list(metrics)


def log_line(
    changes: Sequence[Change], intervals: Iterable[Interval], metrics: Sequence[str] | None = None
) -> str:
    """The experiment log entry: what changed, then each metric's change and interval.

    ``metrics`` picks and orders the metrics named (default: :func:`headline` of those given).
    """
    rows = {i.metric: i for i in intervals if i.ci_low == i.ci_low}  # NaN: floor-only, no interval
    names = [m for m in (metrics or headline(list(rows))) if m in rows]
    parts = [
        f"{m} {_signed(rows[m].delta)} [{_signed(rows[m].ci_low)}, {_signed(rows[m].ci_high)}]"
        for m in names
    ]
    return f"{describe_changes(changes)}: {', '.join(parts) or 'no metric compared'}"
