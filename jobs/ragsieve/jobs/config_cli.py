"""``ragsieve config show|reference``: inspect the effective settings."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import click

if TYPE_CHECKING:
    from ragsieve.jobs.settings import Settings

MASK = "***"


def masked_settings(settings: Settings) -> dict[str, Any]:
    """The settings as JSON-ready data with every secret shown as ``***``.

    Secrets: API keys, the password of the store URL and the values of
    ``collector.forward_headers`` (they carry Phoenix or proxy credentials).
    """
    from ragsieve.collector.store import masked_url

    data: dict[str, Any] = settings.model_dump(mode="json")
    data["store"] = masked_url(settings.store)
    headers = data["collector"]["forward_headers"]
    data["collector"]["forward_headers"] = {k: MASK for k in headers}
    for section in ("llm", "phoenix"):
        if data[section].get("api_key") is not None:
            data[section]["api_key"] = MASK
    return data


@click.group()
def config() -> None:
    """Inspect configuration."""


@config.command("show")
@click.pass_obj
def show(obj: object) -> None:
    """Print the effective settings as JSON (secrets masked as ***)."""
    settings = obj.settings()  # type: ignore[attr-defined]
    click.echo(json.dumps(masked_settings(settings), indent=2))


@config.command("reference")
def reference() -> None:
    """Print the settings reference table (markdown), as in the README."""
    from ragsieve.jobs.settings import reference_table

    click.echo(reference_table())
