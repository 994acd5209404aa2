"""``ragsieve golden promote``: accepted candidates → the next golden version (or the first)."""

from __future__ import annotations

import getpass
import json
from pathlib import Path
from typing import TYPE_CHECKING

import click

from ragsieve.collector.cliopts import json_option, store_option

if TYPE_CHECKING:
    from ragsieve.jobs.cli import AppContext


@click.command("promote")
@click.option(
    "--golden",
    "golden_file",
    default=None,
    type=click.Path(path_type=Path),
    help="Current golden file, e.g. golden_v3.jsonl; writes golden_v4.jsonl"
    " (default: golden.path).",
)
@click.option(
    "--start",
    "start_file",
    default=None,
    type=click.Path(path_type=Path),
    help="Start a golden set from nothing: write its first version, e.g. golden/golden_v1.jsonl.",
)
@click.option("--by", default=None, help="Who promotes (default: login name).")
@click.option("--dry-run", is_flag=True, help="Show what would be added; write nothing.")
@json_option
@store_option
@click.pass_obj
def promote_cmd(
    obj: AppContext,
    golden_file: Path | None,
    start_file: Path | None,
    by: str | None,
    dry_run: bool,
    as_json: bool,
    store: str | None,
) -> None:
    """Write the next golden version with the accepted candidates, plus a changelog entry.

    A version that would skip or shadow another is refused: promote from the newest version.
    """
    from ragsieve.jobs.golden.context import GoldenContext
    from ragsieve.jobs.golden.review.promote import promote

    if golden_file is not None and start_file is not None:
        raise click.UsageError("give --golden (the current version) or --start (a new set)")
    with GoldenContext(obj, store) as ctx:
        path = start_file or golden_file or ctx.settings.golden.path
        if path is None:
            raise click.UsageError(
                "give --golden FILE (the current version; or set golden.path), or --start FILE"
                " to start a golden set from nothing"
            )
        res = promote(
            ctx.repo,
            path,
            ctx.summaries(),
            by=by or getpass.getuser(),
            dry_run=dry_run,
            start=start_file is not None,
        )
        if as_json:
            click.echo(json.dumps(res.to_json(), ensure_ascii=False))
        elif not res.added and not res.variants_added:
            click.echo(f"nothing to promote: no accepted candidates beyond {Path(path).name}")
        else:
            verb = "would write" if dry_run else "wrote"
            added, grown = len(res.added), len(res.variants_added)
            more = f", new variants of {grown} promoted case(s)" if grown else ""
            click.echo(f"{verb} {res.path} (+{added} case{'' if added == 1 else 's'}{more})")
            for name, n in res.by_category.items():
                click.echo(f"  {n:>3}  {name}")
            if res.negatives_path:
                click.echo(f"{verb} {res.negatives_path} ({res.negatives} negative labels)")
            if res.start and not dry_run:
                click.echo(f'set golden.path = "{res.path}" (or RAGSIEVE_GOLDEN__PATH)')
