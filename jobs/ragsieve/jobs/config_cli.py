"""``ragsieve config show|reference``: inspect the effective settings."""

from __future__ import annotations

import json

import click


@click.group()
def config() -> None:
    """Inspect configuration."""


@config.command("show")
@click.pass_obj
def show(obj: object) -> None:
    """Print the effective settings as JSON (secrets masked)."""
    settings = obj.settings()  # type: ignore[attr-defined]
    click.echo(json.dumps(settings.model_dump(mode="json"), indent=2))


@config.command("reference")
def reference() -> None:
    """Print the settings reference table (markdown), as in the README."""
    from ragsieve.jobs.settings import reference_table

    click.echo(reference_table())
