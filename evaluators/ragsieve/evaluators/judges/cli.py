"""What ``ragsieve judges list|calibrate`` print: the registered judges, a calibration table.

The command group itself lives in ``ragsieve.jobs.judging.cli`` (``fit`` and ``labels`` need
the store, and the LLM key comes from the settings, read in one place); these helpers stay
pure.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import click

from ragsieve.evaluators.judges.registry import available_judges

COLUMNS = (
    "n",
    "accuracy",
    "balanced_accuracy",
    "precision",
    "recall",
    "f1",
    "kappa",
    "auc",
    "pairwise_accuracy",
)


def print_judges(as_json: bool) -> None:
    """Every registered judge (built-ins and plugins) with its description."""
    names = available_judges()
    if as_json:
        click.echo(json.dumps(names, indent=2))
        return
    width = max(map(len, names))
    for name, desc in names.items():
        click.echo(f"{name:<{width}}  {desc}")


def _cell(v: Any) -> str:
    return ("-" if v is None else f"{v:.3f}" if isinstance(v, float) else str(v)).rjust(10)


def print_calibration(judge_name: str, version: str, report: Mapping[str, Any]) -> None:
    """The per-task agreement table and each task's threshold sweep."""
    click.echo(f"judge {judge_name} ({version}); failure class = positive")
    click.echo("task".ljust(28) + "".join(c[:9].rjust(10) for c in COLUMNS))
    for t, stats in report.items():
        click.echo(t[:27].ljust(28) + "".join(_cell(stats.get(c)) for c in COLUMNS))
    for t, stats in report.items():
        click.echo(f"\nthreshold sweep for {t} (failure if score < t):")
        for row in stats["threshold_sweep"][::2]:
            click.echo(
                f"  t={row['threshold']:.2f}  f1={row['f1']:.3f}  "
                f"balanced_acc={row['balanced_accuracy']:.3f}  kappa={row['kappa']:.3f}"
            )


__all__ = ["print_calibration", "print_judges"]
