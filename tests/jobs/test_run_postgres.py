"""A job run's verdicts read reviewers' root causes on every store, PostgreSQL included (the
query once used SQLite's json_extract: every ``jobs run`` on PostgreSQL crashed)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from test_run_partial import plant
from test_run_support import settings

from ragsieve.collector.store import Store, open_store
from ragsieve.jobs.fitting.labels import Label, add_label
from ragsieve.jobs.run.run import run_once
from ragsieve.jobs.verdicts.gather import question_key, reviewed_causes


@pytest.fixture(params=["sqlite", "postgres"])
def any_store(request: pytest.FixtureRequest, tmp_path) -> Iterator[Store]:  # type: ignore[no-untyped-def]
    url = (
        f"sqlite:///{tmp_path / 'ragsieve.db'}"
        if request.param == "sqlite"
        else request.getfixturevalue("pg_database")
    )
    store = open_store(url)
    yield store
    store.close()


def test_a_reviewed_root_cause_is_read_and_a_run_completes(any_store: Store) -> None:
    (tid,) = plant(any_store, 1, bad=True)
    add_label(any_store, Label(tid, "fail", "review", root_cause="retrieval"), by="ana")
    (asked,) = [r[0] for r in any_store.query("SELECT trace_id FROM interactions")]
    assert asked == tid
    got = reviewed_causes(any_store)
    assert list(got.values()) == [("retrieval", tid)] and len(got) == 1
    assert all(key == question_key(key) for key in got)
    report = run_once(any_store, settings(store=any_store.url), take_all=True, deliver=False).report
    assert report["judged"] >= 1, report
