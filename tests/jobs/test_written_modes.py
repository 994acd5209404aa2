"""The HTML report and promoted golden files get the umask's permissions, not 0600 (issue 29).

A report served as a static file, or a golden set a team shares, must be readable by whoever the
user's umask lets read it, as any file the user creates.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest
from golden_plant import PORTS_EN, stream, write_golden_v3

from ragsieve.collector.store import Store
from ragsieve.evaluators.records import normalize_text
from ragsieve.jobs.golden import grow
from ragsieve.jobs.golden.growth.candidates import candidate_id
from ragsieve.jobs.golden.growth.repo import CandidateRepo
from ragsieve.jobs.golden.review.promote import promote
from ragsieve.jobs.golden.review.review import decide
from ragsieve.jobs.report.cli import write_report
from ragsieve.jobs.settings import GoldenSettings, Settings


@pytest.fixture(params=[0o022, 0o027])
def umask(request: pytest.FixtureRequest) -> Iterator[int]:
    before = os.umask(request.param)
    try:
        yield request.param
    finally:
        os.umask(before)


def _mode(path: str | Path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


def test_html_report_follows_the_umask(store: Store, tmp_path: Path, umask: int) -> None:
    out = write_report(store, Settings(), tmp_path / "site" / "report.html")
    assert _mode(out["path"]) == 0o666 & ~umask


def test_promoted_golden_files_follow_the_umask(store: Store, tmp_path: Path, umask: int) -> None:
    v3 = write_golden_v3(tmp_path)
    grow(store, stream(), Settings(golden=GoldenSettings(path=str(v3))))
    repo = CandidateRepo(store)
    c = repo.get(candidate_id(normalize_text(PORTS_EN)))
    assert c is not None
    decide(repo, c, "accepted", "alice", None)
    res = promote(repo, v3, {}, by="bob")
    assert _mode(res.path) == 0o666 & ~umask
    assert res.changelog is not None and _mode(res.changelog) == 0o666 & ~umask
