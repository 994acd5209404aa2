"""``golden promote`` writes the next version, never one that skips or shadows another.

Issue 29: ``golden promote --golden golden/golden_v0.jsonl`` wrote ``golden_v2.jsonl`` next to
an existing v1 without a warning (version 0 was read as "no version"), and a set could not be
started from nothing without an empty file.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from golden_plant import PORTS_EN, stream

from ragsieve.collector.store import Store
from ragsieve.evaluators.golden.sets import changelog_path, load_golden, next_version_path
from ragsieve.evaluators.records import normalize_text
from ragsieve.jobs.cli import main
from ragsieve.jobs.golden import grow
from ragsieve.jobs.golden.growth.candidates import candidate_id
from ragsieve.jobs.golden.growth.reference import newest_version
from ragsieve.jobs.golden.growth.repo import CandidateRepo
from ragsieve.jobs.golden.review.review import decide
from ragsieve.jobs.settings import GoldenSettings, Settings


def _cli(args: list[str], store: Store, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    with pytest.raises(SystemExit) as exc:
        main(["golden", *args, "--store", store.url, "--by", "bob"])
    out = capsys.readouterr()
    return int(exc.value.code or 0), out.out + out.err


@pytest.fixture
def accepted(store: Store, monkeypatch: pytest.MonkeyPatch) -> str:
    for key in ("RAGSIEVE_GOLDEN__PATH", "RAGSIEVE_CONFIG"):
        monkeypatch.delenv(key, raising=False)
    grow(store, stream()[:1], Settings(golden=GoldenSettings()))
    repo = CandidateRepo(store)
    c = repo.get(candidate_id(normalize_text(PORTS_EN)))
    assert c is not None
    c.body["relevant_chunks"] = {"kb-ports": 1}
    decide(repo, c, "accepted", "alice", None)
    return c.id


def _case(path: Path, case_id: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    row = {"id": case_id, "query": f"question {case_id}?", "relevant_chunks": ["x"]}
    path.write_text(json.dumps(row) + "\n", encoding="utf-8")


def test_version_zero_is_a_version(
    store: Store, tmp_path: Path, accepted: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert next_version_path("golden/golden_v0.jsonl") == Path("golden/golden_v1.jsonl")
    v0 = tmp_path / "golden" / "golden_v0.jsonl"
    _case(v0, "g0")
    code, out = _cli(["promote", "--golden", str(v0)], store, capsys)
    assert code == 0, out
    v1 = v0.with_name("golden_v1.jsonl")
    assert f"wrote {v1}" in out and not v0.with_name("golden_v2.jsonl").exists()
    assert [c.id for c in load_golden(v1).cases] == ["g0", accepted]
    assert newest_version(v0) == v1


@pytest.mark.parametrize("source", ["golden_v0.jsonl", "golden.jsonl"])
def test_a_version_that_would_shadow_another_is_refused(
    store: Store,
    tmp_path: Path,
    accepted: str,
    capsys: pytest.CaptureFixture[str],
    source: str,
) -> None:
    old, v1 = tmp_path / source, tmp_path / "golden_v1.jsonl"
    _case(old, "g0")
    _case(v1, "g1")
    before = sorted(p.name for p in tmp_path.iterdir())
    code, out = _cli(["promote", "--golden", str(old)], store, capsys)
    assert code == 2
    lines = out.strip().splitlines()
    assert len(lines) == 1 and "golden_v1.jsonl exists" in lines[0], out
    assert "promote from the newest version, golden_v1.jsonl" in lines[0]
    assert sorted(p.name for p in tmp_path.iterdir()) == before  # nothing written
    code, out = _cli(["promote", "--golden", str(v1)], store, capsys)  # the newest: fine
    assert code == 0 and (tmp_path / "golden_v2.jsonl").exists(), out


def test_start_a_golden_set_from_nothing(
    store: Store, tmp_path: Path, accepted: str, capsys: pytest.CaptureFixture[str]
) -> None:
    first = tmp_path / "golden" / "golden_v1.jsonl"  # the folder does not exist yet
    code, out = _cli(["promote", "--golden", str(first)], store, capsys)
    assert code == 2 and f"ragsieve golden promote --start {first}" in out, out
    code, out = _cli(["promote", "--start", str(first)], store, capsys)
    assert code == 0, out
    assert f"wrote {first}" in out and "golden.path" in out
    assert [c.id for c in load_golden(first).cases] == [accepted]
    assert "Started the set with 1 production case." in changelog_path(first).read_text()
    code, out = _cli(["promote", "--start", str(first)], store, capsys)  # never twice
    assert code == 2 and "already has golden_v1.jsonl" in out, out
    code, out = _cli(["promote", "--start", str(first.with_name("golden_v3.jsonl"))], store, capsys)
    assert code == 2 and "starts at version 1" in out
    assert sorted(p.name for p in first.parent.iterdir()) == [
        "golden.CHANGELOG.md",
        "golden_v1.jsonl",
    ]
