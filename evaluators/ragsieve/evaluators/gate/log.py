"""``ragsieve experiments list``: a folder of eval outputs read as an experiment log.

Runs are ordered by when they ran. Each is compared with the previous run on the same golden file,
version and roles (never across them: those numbers do not compare), through the gate's own
comparison, so the intervals are the gate's.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgspec
from pydantic import ValidationError

from ragsieve.evaluators.errors import ConfigError, GateError
from ragsieve.evaluators.gate.compare import compare
from ragsieve.evaluators.gate.experiments import ConfigValue, describe_changes
from ragsieve.evaluators.gate.policy import EvalResults, GatePolicy
from ragsieve.evaluators.golden.sets import parse_version
from ragsieve.evaluators.records import GoldenRole
from ragsieve.evaluators.tools.userfile import MAX_DATA_BYTES, read_capped


@dataclass
class ExperimentRow:
    """One eval output and how it compares with the run before it in its series."""

    file: str
    created_at: str | None
    golden: str
    golden_version: int | None
    roles: list[str] | None
    config: dict[str, ConfigValue]
    metrics: dict[str, float]
    compared_with: str | None = None
    changed: str | None = None
    log_line: str | None = None
    warnings: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        """One ``experiments list --json`` line."""
        return {
            "file": self.file,
            "created_at": self.created_at,
            "golden": self.golden,
            "golden_version": self.golden_version,
            "roles": self.roles,
            "config": self.config,
            "metrics": self.metrics,
            "compared_with": self.compared_with,
            "changed": self.changed,
            "log_line": self.log_line,
            "warnings": self.warnings,
        }


def _read(path: Path) -> EvalResults | None:
    try:  # a FIFO named *.json would block open(): only regular files, and of a sane size
        data = json.loads(read_capped(path, MAX_DATA_BYTES, what="an eval results file"))
        return EvalResults.model_validate(data) if isinstance(data, dict) else None
    except (ConfigError, json.JSONDecodeError, UnicodeDecodeError, ValidationError):
        return None  # not an eval output (a gate report, a policy...): not part of the log


def _series(r: EvalResults) -> tuple[str, int | None, tuple[str, ...], bool]:
    golden = str(getattr(r, "golden", "") or "")
    stem = Path(golden).stem.rsplit("_v", 1)[0] if parse_version(golden) else Path(golden).stem
    return stem, r.golden_version, tuple(r.roles or ()), r.aggregate_only


def _gate_role(r: EvalResults) -> GoldenRole:
    if r.aggregate_only:
        return "holdout"
    if r.roles and "regression" not in r.roles:
        return r.roles[0]
    return "regression"


def _row(path: Path, r: EvalResults) -> ExperimentRow:
    return ExperimentRow(
        file=path.name,
        created_at=getattr(r, "created_at", None),
        golden=str(getattr(r, "golden", "") or ""),
        golden_version=r.golden_version,
        roles=list(r.roles) if r.roles else None,
        config=dict(r.config),
        metrics=dict(r.metrics),
    )


class _Stamp(msgspec.Struct):
    """What ordering the log needs of a file: that it looks like an eval output, and when."""

    metrics: dict[str, float]
    created_at: Any = None


_STAMP = msgspec.json.Decoder(_Stamp)


def _stamp(path: Path) -> str | None:
    """The sort key of an eval output (``created_at``, "" when unknown); None for any other file."""
    try:
        stamp = _STAMP.decode(read_capped(path, MAX_DATA_BYTES, what="an eval results file"))
    except (ConfigError, msgspec.DecodeError):
        return None
    return str(stamp.created_at or "")


def list_experiments(folder: str | Path, policy: GatePolicy) -> list[ExperimentRow]:
    """Every eval output in ``folder``, oldest first, each compared with its series' last run.

    Files are ordered from their ``created_at`` alone, then read whole one at a time, keeping
    only each series' last run: a folder of months of 200,000-query outputs is not all held
    in memory at once.
    """
    stamped = [(s, p.name, p) for p in Path(folder).glob("*.json") if (s := _stamp(p)) is not None]
    last: dict[tuple[str, int | None, tuple[str, ...], bool], tuple[Path, EvalResults]] = {}
    rows: list[ExperimentRow] = []
    for _, _, path in sorted(stamped):
        results = _read(path)
        if results is None:
            continue
        row = _row(path, results)
        key = _series(results)
        if key in last:
            _compare(row, last[key], results, policy)
        last[key] = (path, results)
        rows.append(row)
    return rows


def _compare(
    row: ExperimentRow, previous: tuple[Path, EvalResults], results: EvalResults, pol: GatePolicy
) -> None:
    prev_path, prev = previous
    row.compared_with = prev_path.name
    try:
        report = compare(prev, results, pol, role=_gate_role(results))
    except GateError as exc:
        row.warnings.append(f"not compared: {exc}")
        return
    row.changed = describe_changes(report.changes)
    row.log_line = report.log_line
    row.warnings += report.warnings


def render_experiments(rows: Sequence[ExperimentRow]) -> str:
    """The log for a terminal: one block per run."""
    if not rows:
        return "no eval outputs found\n"
    out: list[str] = []
    for row in rows:
        version = "" if row.golden_version is None else f" v{row.golden_version}"
        roles = "+".join(row.roles) if row.roles else "all"
        settings = ", ".join(f"{k}={v}" for k, v in row.config.items()) or "no settings recorded"
        out.append(
            f"{row.created_at or '-'}  {row.file}  {Path(row.golden).name}{version} [{roles}]"
        )
        out.append(f"  settings: {settings}")
        if row.compared_with is None:
            out.append("  first run of its golden version and roles")
        elif row.log_line is not None:
            out.append(f"  vs {row.compared_with}: {row.log_line}")
        out += [f"  warning: {w}" for w in row.warnings]
    return "\n".join(out) + "\n"
