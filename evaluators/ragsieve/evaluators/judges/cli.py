"""``ragsieve judges list|calibrate``: registered judges and their agreement with human labels."""

from __future__ import annotations

import json
import os

import click

from ragsieve.evaluators.calibration import calibrate, read_rows
from ragsieve.evaluators.judges.llm import LLMConfig
from ragsieve.evaluators.judges.registry import available_judges, get_judge

_CTX = {"help_option_names": ["-h", "--help"]}


@click.group("judges", context_settings=_CTX)
def judges() -> None:
    """List judges and calibrate them against human labels."""


@judges.command("list", context_settings=_CTX)
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
def list_cmd(as_json: bool) -> None:
    """Show every registered judge (built-ins and plugins)."""
    names = available_judges()
    if as_json:
        click.echo(json.dumps(names, indent=2))
        return
    width = max(map(len, names))
    for name, desc in names.items():
        click.echo(f"{name:<{width}}  {desc}")


@judges.command("calibrate", context_settings=_CTX)
@click.option(
    "--data",
    "data",
    required=True,
    type=click.Path(dir_okay=False),
    help="Labelled JSONL (id, question, contexts, answer, label_*, task, pair_id).",
)
@click.option("--judge", "judge_name", required=True, help="Registry name, e.g. faithfulness.")
@click.option("--task", default=None, help="Only rows of this task.")
@click.option("--json", "as_json", is_flag=True, help="One JSON object with a key per task.")
@click.option("--llm-base-url", default=None, help="OpenAI-compatible endpoint (llm_/cascade_).")
@click.option("--llm-model", default=None, help="Judge model (llm_/cascade_).")
@click.option("--cache", "cache_path", default=None, help="SQLite file for cached LLM verdicts.")
def calibrate_cmd(
    data: str,
    judge_name: str,
    task: str | None,
    as_json: bool,
    llm_base_url: str | None,
    llm_model: str | None,
    cache_path: str | None,
) -> None:
    """Agreement of a judge with human labels, per task, plus a threshold sweep."""
    options = {}
    if judge_name.startswith(("llm_", "cascade_")):
        if not llm_base_url or not llm_model:
            raise click.UsageError(f"--judge {judge_name} needs --llm-base-url and --llm-model")
        key = os.environ.get("RAGSIEVE_LLM_API_KEY")
        options = {
            "llm": LLMConfig(base_url=llm_base_url, model=llm_model, api_key=key),
            "cache_path": cache_path,
        }
    judge = get_judge(judge_name, **options)
    report = calibrate(judge, read_rows(data), task=task)
    if as_json:
        click.echo(json.dumps(report, indent=2))
        return
    cols = (
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
    click.echo(f"judge {judge_name} ({judge.version}); failure class = positive")
    click.echo("task".ljust(28) + "".join(c[:9].rjust(10) for c in cols))
    for t, stats in report.items():
        cells = [stats.get(c) for c in cols]
        click.echo(
            t[:27].ljust(28)
            + "".join(
                ("-" if v is None else f"{v:.3f}" if isinstance(v, float) else str(v)).rjust(10)
                for v in cells
            )
        )
    for t, stats in report.items():
        click.echo(f"\nthreshold sweep for {t} (failure if score < t):")
        for row in stats["threshold_sweep"][::2]:
            click.echo(
                f"  t={row['threshold']:.2f}  f1={row['f1']:.3f}  "
                f"balanced_acc={row['balanced_accuracy']:.3f}  kappa={row['kappa']:.3f}"
            )
