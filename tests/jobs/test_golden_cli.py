"""``ragsieve golden candidates|import|status`` through the root command group."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner
from console_script import ragsieve_script
from golden_plant import PORTS_EN, STREAM, stream, write_golden_v3

from ragsieve.collector.store import Store
from ragsieve.jobs.cli import cli
from ragsieve.jobs.golden import grow
from ragsieve.jobs.golden.growth.repo import Candidate, CandidateRepo
from ragsieve.jobs.settings import GoldenSettings, Settings


def _run(args: list[str], store: Store) -> list[str]:
    result = CliRunner().invoke(
        cli, ["golden", *args, "--store", store.url], catch_exceptions=False
    )
    assert result.exit_code == 0, result.output
    return result.stdout.splitlines()


def test_candidates_json_lines(
    store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    v3 = write_golden_v3(tmp_path)
    monkeypatch.setenv("RAGSIEVE_GOLDEN__PATH", str(v3))
    grow(store, stream(), Settings(golden=GoldenSettings(path=str(v3))))
    rows = [json.loads(x) for x in _run(["candidates", "--json"], store)]
    need = {
        "id",
        "query",
        "status",
        "root_cause",
        "category",
        "new_category",
        "source_trace_ids",
        "seen",
    }
    assert all(need <= set(r) for r in rows)
    assert sum(r["seen"] for r in rows) == len(STREAM)
    assert all(r["seen"] == len(r["source_trace_ids"]) for r in rows)
    top = rows[0]
    assert top["query"] == PORTS_EN and top["seen"] == 4 and top["new_category"] is True
    open_rows = [
        json.loads(x) for x in _run(["candidates", "--status", "candidate", "--json"], store)
    ]
    assert {r["status"] for r in open_rows} == {"candidate"} and len(open_rows) == len(rows) - 1
    same = [json.loads(x) for x in _run(["candidates", "--category", "ports", "--json"], store)]
    assert {r["category"] for r in same} == {top["category"]} and len(same) == 2

    status = _run(["status"], store)
    assert status[0].startswith("NEW FAILURE CATEGORIES (1)")
    assert "ports" in status[1]
    data = json.loads(_run(["status", "--json"], store)[0])
    assert [c["category"] for c in data["new_categories"]] == [top["category"]]
    billing = [c for c in data["categories"] if c["golden_category"] == "billing"]
    # g-refund is close to this category; g-card (a card update) is not
    assert billing and billing[0]["golden_cases"] == 1
    assert billing[0]["failures_seen"] == 3  # two open candidates and the covered one
    assert billing[0]["statuses"] == {"candidate": 2, "covered": 1}


def test_import_spanish_aliases_makes_novelty_work_from_day_one(
    store: Store, tmp_path: Path
) -> None:
    v3 = write_golden_v3(tmp_path, spanish=True)
    out = json.loads(_run(["import", str(v3), "--json"], store)[0])
    assert out["cases"] == 4 and out["new"] == 4
    again = json.loads(_run(["import", str(v3), "--json"], store)[0])
    assert again["new"] == 0 and again["updated"] == 4
    report = grow(store, stream(), Settings(golden=GoldenSettings(path=None)))  # no file configured
    assert report["covered_by_golden"] == 1
    assert [c["terms"] for c in report["new_categories"]] == [["on-prem", "agent", "ports"]]


def test_import_bad_file_exits_2_with_path_and_line(tmp_path: Path) -> None:
    bad = tmp_path / "golden.jsonl"
    bad.write_text('{"pregunta": "ok?"}\n{"pregunta": ""}\n', encoding="utf-8")
    exe = ragsieve_script()
    out = subprocess.run(
        [str(exe), "golden", "import", str(bad), "--store", f"sqlite:///{tmp_path / 'x.db'}"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert out.returncode == 2
    assert f"{bad}:2: query:" in out.stderr and "Traceback" not in out.stderr


def _review_ports(store: Store, answers: str) -> None:
    said = CliRunner().invoke(
        cli,
        ["golden", "review", "--category", "ports", "--reviewer", "ana", "--store", store.url],
        input=answers,
        catch_exceptions=False,
    )
    assert said.exit_code == 0, said.output


@pytest.mark.parametrize(
    ("answers", "left", "new_now", "new_next"),
    [
        # both candidates false alarms: no failure left, never new again
        ("w\nno failure\nw\nno failure\n", 0, False, False),
        # the English one (seen 4) a false alarm: 2 open failures, fewer than min_cases (3) but
        # still a category: announced already, it stays new (min_cases is what announcing takes)
        ("w\nno failure\nq\n", 2, True, True),
        # the Spanish one a false alarm: the open English one alone has 4, still new
        ("s\nw\nno failure\n", 4, True, True),
        # both rejected for other reasons: failures still, but nothing left to review or cover
        ("r\nnot ours\nr\no\n", 6, False, False),
        # the English one a duplicate of the Spanish one (the nearest), which then is out of
        # scope: its failures count in the one it was merged into, nothing is left to review
        ("d\n1\nr\no\n", 6, False, False),
    ],
)
def test_a_failure_the_reviewer_says_is_none_does_not_make_its_category_new(
    store: Store,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    answers: str,
    left: int,
    new_now: bool,
    new_next: bool,
) -> None:
    v3 = write_golden_v3(tmp_path)
    monkeypatch.setenv("RAGSIEVE_GOLDEN__PATH", str(v3))
    settings = Settings(golden=GoldenSettings(path=str(v3)))
    first = grow(store, stream(), settings)
    (ports,) = [c["category"] for c in first["new_categories"] if "ports" in c["name"]]
    _review_ports(store, answers)

    data = json.loads(_run(["status", "--json"], store)[0])
    assert [c["category"] for c in data["new_categories"]] == [ports] * new_now
    # the false alarms count toward no category's failures
    seen = [c["failures_seen"] for c in data["categories"] if c["category"] == ports]
    assert sum(seen) == left
    again = grow(store, stream(start=100), settings)  # the same failures flagged again
    assert [c["category"] for c in again["new_categories"]] == [ports] * new_next


def test_open_candidates_in_no_category_are_said_in_status_and_review(store: Store) -> None:
    """No category yet (each failure alone on its topic): status says where the open ones are,
    and the review header says uncategorised, not a Python None."""
    rows = [
        Candidate(
            f"q_{i}", "candidate", q.lower(), body={"query": q, "source_trace_ids": [f"t{i}"]}
        )
        for i, q in enumerate(("How many backup codes?", "What is the capital of Australia?"))
    ]
    CandidateRepo(store).save(rows)
    text = _run(["status"], store)
    assert text[0].startswith("COVERAGE per failure category")
    assert "  + 2 open candidate(s) in no category" in "\n".join(text)
    assert text[-1] == "candidates by status: open 2"
    said = CliRunner().invoke(
        cli, ["golden", "review", "--store", store.url], input="s\ns\n", catch_exceptions=False
    )
    assert said.exit_code == 0, said.output
    heads = [line for line in said.output.splitlines() if line.startswith("category: ")]
    assert heads == ["category: none: uncategorised (no other failure shares its topic)"] * 2
