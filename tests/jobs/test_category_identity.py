"""A category is one thing from run to run: one false alarm rejected in review neither renames it
nor takes back its NEW announcement, and the HTML report shows the name it has now.

A new user's report: after "the judge was wrong" on one failure, ``golden status`` showed the
category under another name and no longer new, while the report kept the old name.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from golden_plant import flagged, write_golden_v3

from ragsieve.collector.store import Store
from ragsieve.jobs.cli import cli
from ragsieve.jobs.golden import grow
from ragsieve.jobs.golden.growth.repo import CandidateRepo
from ragsieve.jobs.golden.review.review import decide
from ragsieve.jobs.history.runs import RunRecord
from ragsieve.jobs.report.data import category_names, collect
from ragsieve.jobs.settings import GoldenSettings, Settings

OFFLINE = [  # three different questions about one topic nobody put in the golden set
    ("Does the mobile app work offline?", "app#offline"),
    ("How do I sync offline notes in the mobile app?", "app#sync"),
    ("Why does the mobile app lose my offline notes?", "app#notes"),
]
CHUNKS = {
    "app#offline": "The mobile app keeps the last 30 days of notes on the device.",
    "app#sync": "Edits made without a connection are sent when the device is online again.",
    "app#notes": "Notes are stored in the account and shown on every device.",
}


def _status(store: Store) -> dict[str, dict[str, object]]:
    said = CliRunner().invoke(
        cli, ["golden", "status", "--json", "--store", store.url], catch_exceptions=False
    )
    assert said.exit_code == 0, said.output
    return {c["category"]: c for c in json.loads(said.stdout)["categories"]}


def test_one_false_alarm_keeps_the_categorys_name_and_its_new_tag(
    store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    v3 = write_golden_v3(tmp_path)
    monkeypatch.setenv("RAGSIEVE_GOLDEN__PATH", str(v3))
    settings = Settings(golden=GoldenSettings(path=str(v3)))
    cases = [
        flagged(q, "retrieval", n, chunks=[(chunk, CHUNKS[chunk])])
        for n, (q, chunk) in enumerate(OFFLINE, start=1)
    ]
    first = grow(store, cases, settings)
    [new] = first["new_categories"]
    assert new["announced_now"] and new["failures_seen"] == 3

    repo = CandidateRepo(store)
    alarm = next(c for c in repo.select(["candidate"]) if c.query == OFFLINE[0][0])
    decide(repo, alarm, "rejected", "ana", "false_alarm: the judge was wrong")

    now = _status(store)[new["category"]]
    assert now["name"] == new["name"]  # not renamed by one rejection
    assert now["new"] and now["failures_seen"] == 2  # still new: announced, still a category
    again = grow(store, [], settings)
    assert [c["category"] for c in again["new_categories"]] == [new["category"]]

    # the report names a category by what it is called now, whatever a run called it then
    renamed = ("offline / sync", new["category"])  # as a later run would rename it
    store.execute("UPDATE categories SET name = ? WHERE id = ?", renamed)
    run = RunRecord("r1", 1.0, 2.0, {"golden": {"new_categories": [new]}})
    [shown] = collect([run], {}, category_names(store)).categories
    assert shown["name"] == "offline / sync"
