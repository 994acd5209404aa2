"""``ragsieve golden split``: give every golden case a role (dev, regression, holdout)."""

from __future__ import annotations

import getpass
import json
from pathlib import Path

import click

from ragsieve.collector.cliopts import json_option
from ragsieve.evaluators.golden.roles import ROLES, SplitResult, parse_fractions, split_golden


@click.command("split")
@click.option(
    "--golden",
    "golden_file",
    required=True,
    type=click.Path(dir_okay=False, exists=True, path_type=Path),
    help="Current golden file; the next version gets the roles.",
)
@click.option(
    "--fractions",
    default=None,
    metavar="DEV,REGRESSION,HOLDOUT",
    help="Target shares per category (default 0.3,0.5,0.2, or the changelog's).",
)
@click.option("--salt", default=None, help="Salt of the first split (default: random).")
@click.option(
    "--holdout-looks",
    type=click.IntRange(min=1),
    default=None,
    help="Warn after this many holdout evaluations of one version (default 5).",
)
@click.option("--by", default=None, help="Who splits (default: login name).")
@click.option("--dry-run", is_flag=True, help="Show the roles; write nothing.")
@json_option
def split_cmd(
    golden_file: Path,
    fractions: str | None,
    salt: str | None,
    holdout_looks: int | None,
    by: str | None,
    dry_run: bool,
    as_json: bool,
) -> None:
    """Write the next golden version with a role on every case; existing roles never change.

    Cases without a role are spread over dev / regression / holdout within their category, in the
    order of a hash of their id and the salt kept in the set's changelog.
    """
    result = split_golden(
        golden_file,
        by=by or getpass.getuser(),
        fractions=parse_fractions(fractions) if fractions else None,
        salt=salt,
        holdout_looks=holdout_looks,
        dry_run=dry_run,
    )
    if as_json:
        click.echo(json.dumps({**result.to_json(), "dry_run": dry_run}))
        return
    click.echo(_text(result, dry_run))


def _text(result: SplitResult, dry_run: bool) -> str:
    if result.path is None:
        return f"{result.source}: every case has a role already; nothing written"
    verb = "would write" if dry_run else "wrote"
    lines = [
        f"{verb} {result.path}: roles for {len(result.assigned)} cases ({result.rule.line()})",
        f"  {'category':<30} " + " ".join(f"{r:>10}" for r in ROLES),
    ]
    for cat, row in result.counts.items():
        lines.append(f"  {cat[:30]:<30} " + " ".join(f"{row.get(r, 0):>10}" for r in ROLES))
    return "\n".join(lines)
