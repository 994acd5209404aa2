"""``ragsieve demo --store`` on a store that already holds traces judges this run's traces."""

from __future__ import annotations

import json

from click.testing import CliRunner

from ragsieve.jobs.cli import cli


def test_second_demo_on_the_same_store_waits_for_its_own_traces(tmp_path):
    url = f"sqlite:///{tmp_path / 'demo.db'}"
    # 60 queries: the second half of a first run already finds the chunks a retriever missed
    args = ["demo", "--queries", "60", "--json", "--no-wait", "--store", url]
    first = CliRunner().invoke(cli, [*args, "--seed", "1"], catch_exceptions=False)
    second = CliRunner().invoke(cli, [*args, "--seed", "2"], catch_exceptions=False)
    assert first.exit_code == 0, first.stderr[-1500:]
    card = json.loads(second.stdout)
    assert "settled 60/60 traces" in second.stderr
    assert card["n_planted"] == 18 and card["n_detected"] >= 15 and card["passed"] is True
    assert second.exit_code == 0
