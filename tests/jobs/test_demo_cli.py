"""``ragsieve demo`` CLI: help, JSON scorecard, exit 1 below floors, --phoenix without Phoenix."""

from __future__ import annotations

import json
import re

from click.testing import CliRunner

from ragsieve.jobs.cli import cli


def _run(args: list[str], env: dict[str, str] | None = None):
    return CliRunner().invoke(cli, args, env=env, catch_exceptions=False)


def test_help_names_every_option():
    res = _run(["demo", "-h"])
    assert res.exit_code == 0
    for opt in ("--queries", "--phoenix", "--llm-base-url", "--json", "--store", "--seed"):
        assert opt in res.output


def test_json_scorecard_is_one_object_and_store_keeps_the_run(tmp_path):
    db = tmp_path / "demo.db"
    res = _run(["demo", "--queries", "40", "--seed", "3", "--json", "--store", f"sqlite:///{db}"])
    card = json.loads(res.stdout)
    for key in (
        "planted_recall",
        "root_cause_accuracy",
        "false_positive_rate",
        "n_queries",
        "n_flagged",
        "per_kind_recall",
    ):
        assert key in card
    assert card["n_queries"] == 40 and card["n_planted"] == 12
    assert card["passed"] is (res.exit_code == 0)
    # 10 of 12 planted caught: below the 0.85 floor as counted, within noise of it on 12
    assert card["planted_recall"] < card["floors"]["planted_recall"]
    lo, hi = card["intervals"]["planted_recall"]
    assert lo < card["planted_recall"] < card["floors"]["planted_recall"] < hi
    assert card["passed"] and res.exit_code == 0, res.stderr
    assert "traffic 40/40" in res.stderr
    from ragsieve.collector.store import open_store

    store = open_store(f"sqlite:///{db}")
    try:
        assert len(store.list_interactions()) == 40
        runs = store.query("SELECT COUNT(*) FROM runs")[0][0]
        assert runs == 1
    finally:
        store.close()


def test_exit_1_below_floors_and_phoenix_missing_is_reported(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # the demo keeps its store in the current folder
    env = {
        "RAGSIEVE_DEMO__MAX_FALSE_POSITIVE_RATE": "0",
        "RAGSIEVE_DEMO__MIN_PLANTED_RECALL": "1",
        "RAGSIEVE_PHOENIX__EXECUTABLE": str(tmp_path / "no-such-phoenix"),
    }
    res = _run(["demo", "--queries", "60", "--seed", "1", "--phoenix"], env=env)
    assert "no Phoenix found" in res.stderr
    assert "== planted-failure scorecard" in res.stdout
    assert "== flagged cases" in res.stdout
    # the headline's new categories and the golden line's count the same thing, and say so
    head = re.search(r"(\d+) new failure categor", res.stdout)
    line = re.search(r"failure categories (\d+) in all, (\d+) of them new", res.stdout)
    assert head and line and head.group(1) == line.group(2)
    assert int(line.group(1)) >= int(line.group(2))
    assert (tmp_path / "ragsieve-demo.db").is_file()
    card_line = [ln for ln in res.stdout.splitlines() if ln.startswith("false_positive_rate")]
    assert card_line
    fpr = float(card_line[0].split()[1])
    recall = float(
        [ln for ln in res.stdout.splitlines() if ln.startswith("planted_recall")][0].split()[1]
    )
    below = fpr > 0 or recall < 1
    assert res.exit_code == (1 if below else 0)
    if below:
        assert "scorecard below floors" in res.stderr


def test_bad_queries_is_a_usage_error():  # refused before any store is made
    res = _run(["demo", "--queries", "0"])
    assert res.exit_code == 2
