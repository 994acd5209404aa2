"""The ``ragsieve`` command: one click group that attaches each package's commands lazily.

Commands live next to the code they drive; this module only names where to find them, so that
``ragsieve --help`` stays fast and importing one command never imports every dependency.
"""

from __future__ import annotations

import importlib
import logging
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

if TYPE_CHECKING:
    from ragsieve.jobs.settings import Settings

COMMANDS: dict[str, str] = {
    "collector": "ragsieve.collector.cli:collector",
    "interactions": "ragsieve.collector.cli:interactions",
    "jobs": "ragsieve.jobs.run.cli:jobs",
    "up": "ragsieve.jobs.run.up:up",
    "results": "ragsieve.jobs.results.cli:results",
    "golden": "ragsieve.jobs.golden.cli:golden",
    "eval": "ragsieve.evaluators.cli:eval_command",
    "gate": "ragsieve.evaluators.cli:gate_command",
    "experiments": "ragsieve.evaluators.cli:experiments",
    "judges": "ragsieve.jobs.fitting.cli:judges",
    "demo": "ragsieve.jobs.demo.cli:demo",
    "config": "ragsieve.jobs.config_cli:config",
    "workers": "ragsieve.jobs.workers.cli:workers",
    "runs": "ragsieve.jobs.history.cli:runs",
    "report": "ragsieve.jobs.report.cli:report_command",
    "alerts": "ragsieve.jobs.alerts.cli:alerts",
}


@dataclass
class AppContext:
    """What the root group hands to every subcommand through ``ctx.obj``."""

    config: Path | None = None
    verbose: bool = False
    _cache: dict[str, Any] = field(default_factory=dict)

    def settings(self, **flags: Any) -> Settings:
        """Load settings with ``flags`` (dotted keys) taking precedence over env and TOML."""
        from ragsieve.jobs.settings import load_settings

        return load_settings(self.config, flags)


class LazyGroup(click.Group):
    """A group whose subcommands are imported on first use."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        target = COMMANDS.get(cmd_name)
        if target is None:
            return None
        module, _, attr = target.partition(":")
        try:
            mod = importlib.import_module(module)
        except ModuleNotFoundError as exc:
            if exc.name and exc.name.startswith("ragsieve"):
                return None
            raise
        command: click.Command = getattr(mod, attr)
        return command


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "--config",
    type=click.Path(path_type=Path),
    envvar="RAGSIEVE_CONFIG",
    help="TOML config file (flags and RAGSIEVE_* env vars take precedence).",
)
@click.option("-v", "--verbose", is_flag=True, help="Debug logs on stderr.")
@click.version_option(package_name="ragsieve")
@click.pass_context
def cli(ctx: click.Context, config: Path | None, verbose: bool) -> None:
    """ragsieve: sample production RAG traces, judge them, flag failures, grow the golden set."""
    logging.basicConfig(
        level=logging.DEBUG if verbose else logging.WARNING,
        stream=sys.stderr,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    ctx.obj = AppContext(config=config, verbose=verbose)


def main(argv: list[str] | None = None) -> None:
    """Console entry point: every error becomes one line on stderr and an exit code (0/1/2)."""
    from ragsieve.collector.cliopts import run_cli

    run_cli(cli, "ragsieve", argv)


if __name__ == "__main__":  # pragma: no cover
    main()
