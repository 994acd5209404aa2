"""``ragsieve jobs run --dry-run`` says the run was not stored, not ``run None`` (issue 29)."""

from __future__ import annotations

from click.testing import CliRunner

from ragsieve.collector.store import Store
from ragsieve.jobs.cli import cli


def test_dry_run_table_never_prints_none(store: Store) -> None:
    res = CliRunner().invoke(
        cli,
        ["jobs", "run", "--store", store.url, "--since", "1h", "--dry-run"],
        catch_exceptions=False,
    )
    assert res.exit_code == 0, res.output
    run_line = next(line for line in res.stdout.splitlines() if line.startswith("run "))
    assert "None" not in run_line and "dry run: not stored" in run_line
    assert "None" not in res.stdout
    assert store.query("SELECT COUNT(*) FROM runs")[0][0] == 0
