"""The CI snippet and gate.toml of docs/golden-set.md, run as written on a split golden set: the
gate passes on an unchanged pipeline, fails on a worse one, and both look only at the regression
part."""

from __future__ import annotations

import json
import re
import shlex
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from ragsieve.evaluators.golden.roles import split_golden
from ragsieve.evaluators.golden.sets import write_golden
from ragsieve.evaluators.records import GoldenCase
from ragsieve.jobs.cli import main

PAGE = (Path(__file__).resolve().parents[2] / "docs" / "golden-set.md").read_text(encoding="utf-8")
SECTION = PAGE[PAGE.index("## The CI gate") : PAGE.index("## One variable at a time")]
SEARCH = """
def search(query, k, config=None):
    size = (config or {}).get("chunk_size", 512)
    topic, n = query.split()[0], query.split()[-1]
    right = f"{topic}-{n}"
    # the 800-word chunks lose the right chunk for every other billing question
    if size == 800 and topic == "billing" and int(n) % 2:
        return ["noise"] * k
    return [right, "noise"][:k]
"""


def ci_commands() -> list[list[str]]:
    """The ``ragsieve`` steps of the docs' workflow, split as a shell would."""
    block = re.search(r"```yaml\n(.*?)```", SECTION, re.S)
    assert block, "the CI snippet is gone from docs/golden-set.md"
    runs = [m.group(1) for m in re.finditer(r"^- run: (ragsieve .*)$", block.group(1), re.M)]
    assert len(runs) == 2, runs
    return [shlex.split(r.split(" #")[0]) for r in runs]


def _gate_toml() -> str:
    block = re.search(r"```toml\n# gate.toml\n(.*?)```", SECTION, re.S)
    assert block, "gate.toml is gone from docs/golden-set.md"
    return block.group(1)


def _step(argv: list[str]) -> int:
    """One workflow step: ``ragsieve ...`` with an optional ``> file`` redirect."""
    target = None
    if ">" in argv:
        argv, target = argv[: argv.index(">")], argv[argv.index(">") + 1]
    with CliRunner().isolation() as (out, err, _):
        try:
            main(argv[1:])
        except SystemExit as exc:
            code = int(exc.code or 0)
    if target:
        Path(target).write_bytes(out.getvalue())
    assert code in (0, 1), err.getvalue().decode()
    return code


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    (tmp_path / "golden").mkdir()
    cases = [
        GoldenCase(
            id=f"{topic}-{i}",
            query=f"{topic} question {i}",
            relevant_chunks={f"{topic}-{i}": 1},
            category=topic,
        )
        for topic in ("billing", "shipping", "sso")
        for i in range(20)
    ]
    write_golden(tmp_path / "golden" / "golden_v4.jsonl", cases)
    split_golden(tmp_path / "golden" / "golden_v4.jsonl", by="ci", salt="0ddba11")
    (tmp_path / "myapp").mkdir()
    (tmp_path / "myapp" / "__init__.py").write_text("")
    (tmp_path / "myapp" / "search.py").write_text(SEARCH)
    (tmp_path / "rag.toml").write_text("chunk_size = 512\n")
    (tmp_path / "gate.toml").write_text(_gate_toml())
    monkeypatch.chdir(tmp_path)
    yield tmp_path
    for name in ("myapp", "myapp.search"):
        sys.modules.pop(name, None)


def test_the_readme_ci_snippet_gates_the_regression_part(repo: Path) -> None:
    evaluate, gate = ci_commands()
    assert _step(evaluate) == 0
    (repo / "cand.json").rename(repo / "base.json")  # the base branch's run
    assert _step(evaluate) == 0 and _step(gate) == 0
    cand = json.loads((repo / "cand.json").read_text())
    assert cand["roles"] == ["regression"] and set(cand["query_role"].values()) == {"regression"}
    assert cand["config"] == {"chunk_size": 512}
    md = (repo / "gate.md").read_text()
    assert md.startswith("### ✅ ragsieve gate passed")
    assert f"over {len(cand['per_query'])} queries of the regression part" in md

    (repo / "rag.toml").write_text("chunk_size = 800\n")
    assert _step(evaluate) == 0 and _step(gate) == 1
    md = (repo / "gate.md").read_text()
    assert md.startswith("### ❌ ragsieve gate failed")
    assert "billing" in md and "drop" in md  # the protected category of the docs' gate.toml
    assert "> changed: chunk_size 512 → 800" in md
    assert "> log: chunk_size 512 → 800: recall@5 −" in md
