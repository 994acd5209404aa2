"""What ``golden status`` says of a category agrees with the changelog that promoted into it, and
a category's name does not change under a reviewer's feet.

A new user promoted three cases from 'cost / seat / per' and two from another category; the
changelog said 3 and 2, ``golden status`` said 1 and 4: it looked a promoted case's category up
by name among categories keyed by id, found none, and placed the case by its relevant chunks,
which the reviewer had set to a page the other category's failures retrieved. And a rejected
false alarm took a word of a category's name with it: promote and status showed a new name that
no log held. Growth runs on a real SQLite store with the real encoder and context judge;
promote and status run through the real CLI.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

from console_script import ragsieve_script
from golden_plant import judged_failure as _failure

from ragsieve.collector.store import Store
from ragsieve.jobs.golden import grow
from ragsieve.jobs.golden.growth.repo import CandidateRepo
from ragsieve.jobs.golden.review.decisions import decide
from ragsieve.jobs.settings import GoldenSettings, Settings

SETTINGS = Settings(golden=GoldenSettings(path=None))
BILLING = (
    "plans#billing",
    "The Team plan costs $20 per seat per month, billed monthly by card; it includes 25 seats.",
)
OVERVIEW = ("plans#overview", "Quillstack has three plans: Free, Team and Enterprise.")
LIMITS = (
    "plans#limits",
    "Request logs are kept 7 days on Free, 30 days on Team and 365 days on Enterprise."
    " Enterprise allows 3,000 requests per minute.",
)
PAYMENT = "Which payment methods does the Team plan accept?"
PRICE = "How much does the Team plan cost per seat?"
LOGS = "How long are request logs retained on the Enterprise plan?"


def _two_categories(store: Store) -> dict[str, str]:
    """Team billing, Enterprise logs and limits: query -> category id."""
    grow(
        store,
        [
            _failure(1, PRICE, [BILLING, OVERVIEW], "It costs $49 per seat."),
            _failure(2, PAYMENT, [BILLING, OVERVIEW], "It accepts PayPal only."),
            _failure(3, LOGS, [LIMITS, OVERVIEW], "Logs are kept 90 days."),
            _failure(4, "What is the rate limit for the Enterprise plan?", [LIMITS, OVERVIEW],
                     "Enterprise allows 1,000 requests per minute."),
            _failure(5, "How many API keys can an Enterprise account create?", [LIMITS, OVERVIEW],
                     "Enterprise accounts can create 10 API keys."),
        ],
        SETTINGS,
    )  # fmt: skip
    rows = CandidateRepo(store).select(["candidate"])
    cats = {r.query: str(r.category) for r in rows}
    assert cats[PAYMENT] == cats[PRICE] != cats[LOGS]  # the premise: two categories
    return cats


def _cli(store: Store, cwd: Path, *args: str) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("RAGSIEVE_", "OTEL_"))}
    env.update(RAGSIEVE_STORE=store.url, COLUMNS="120")
    out = subprocess.run(
        [str(ragsieve_script()), *args], env=env, cwd=cwd, capture_output=True, text=True,
        timeout=120, check=False,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    return out.stdout


def _status(store: Store, cwd: Path) -> dict[str, Any]:
    return dict(json.loads(_cli(store, cwd, "golden", "status", "--json")))


def test_status_counts_a_promoted_case_where_the_changelog_does(
    store: Store, tmp_path: Path
) -> None:
    cats = _two_categories(store)
    repo = CandidateRepo(store)
    for c in repo.select(["candidate"]):
        if c.query in (PAYMENT, PRICE):  # the reviewer names the page that answers: the table
            c.body["relevant_chunks"] = {"plans#limits": 1}
            decide(repo, c, "accepted", "ana", None)
    _cli(store, tmp_path, "golden", "promote", "--start", "golden_v1.jsonl", "--by", "ana")
    by_id = {c["category"]: c for c in _status(store, tmp_path)["categories"]}
    team, enterprise = by_id[cats[PAYMENT]], by_id[cats[LOGS]]
    changelog = (tmp_path / "golden.CHANGELOG.md").read_text()
    assert f"- {team['name']} (" in changelog and "): 2 — " in changelog
    assert (team["golden_cases"], enterprise["golden_cases"]) == (2, 0)


def test_a_category_is_renamed_by_a_run_and_the_rename_is_logged(
    store: Store, tmp_path: Path
) -> None:
    cats = _two_categories(store)
    before = {c["category"]: c["name"] for c in _status(store, tmp_path)["categories"]}
    repo = CandidateRepo(store)
    [logs] = [c for c in repo.select(["candidate"]) if c.query == LOGS]
    decide(repo, logs, "rejected", "ana", "false_alarm: the judge was wrong: 365 days is right")
    # a reviewer's decision renames nothing: status (as review and promote) keeps the name
    after = _status(store, tmp_path)
    assert {c["category"]: c["name"] for c in after["categories"]} == before
    assert not [e for e in after["category_events"] if e["kind"] == "rename"]
    # the next run renames it (its failures no longer hold the name's words), and says so
    grow(store, [], SETTINGS)
    ran = _status(store, tmp_path)
    new = {c["category"]: c["name"] for c in ran["categories"]}[cats[LOGS]]
    assert new != before[cats[LOGS]]
    [rename] = [e for e in ran["category_events"] if e["kind"] == "rename"]
    assert (rename["category"], rename["other"], rename["to"]) == (
        cats[LOGS],
        before[cats[LOGS]],
        new,
    )
    text = " ".join(_cli(store, tmp_path, "golden", "status").split())
    assert f"{cats[LOGS]} renamed: {before[cats[LOGS]]} -> {new}" in text
