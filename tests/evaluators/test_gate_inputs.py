"""The gate says what changed and refuses runs it cannot compare in full (issue 29).

Before: a baseline from one retriever and a candidate from another printed "changed: no setting
changed", and runs with different ``-k`` sets passed on the metrics they shared, silently.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_eval_cli import _invoke, files  # noqa: F401  (the fixture)

from ragsieve.evaluators.cli import eval_command, gate_command


def _eval(out: Path, *args: object) -> None:
    ran = _invoke(eval_command, [*args, "--out", out])
    assert ran.exit_code == 0, ran.output


def test_a_different_retriever_is_the_change_reported(
    files: dict[str, Path],  # noqa: F811
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    (tmp_path / "mysearch.py").write_text(
        "def search(query, k):\n    return ['c1', 'c2', 'c4'][:k]\n", encoding="utf-8"
    )
    monkeypatch.chdir(tmp_path)  # eval imports module:function from the working folder
    base, cand = tmp_path / "base.json", tmp_path / "cand.json"
    _eval(base, "--golden", files["golden"], "--baseline", "bm25", "--corpus", files["corpus"])
    _eval(cand, "--golden", files["golden"], "--retriever", "mysearch:search")
    for fmt in ("table", "markdown"):
        res = _invoke(gate_command, ["--baseline", base, "--candidate", cand, "--format", fmt])
        assert res.exit_code in (0, 1), res.output
        assert "no setting changed" not in res.stdout
        assert "changed: retriever baseline bm25 → mysearch:search" in res.stdout
    js = _invoke(gate_command, ["--baseline", base, "--candidate", cand, "--format", "json"])
    assert "retriever" in json.dumps(json.loads(js.stdout)["changes"])
    same = _invoke(gate_command, ["--baseline", base, "--candidate", base])
    assert "changed: no setting changed" in same.stdout  # nothing differed: still said so


def test_runs_with_different_k_sets_do_not_pass_silently(
    files: dict[str, Path],  # noqa: F811
    tmp_path: Path,
) -> None:
    base, cand = tmp_path / "base.json", tmp_path / "cand.json"
    _eval(base, "--golden", files["golden"], "--run", files["run"], "-k", "5", "-k", "10")
    _eval(cand, "--golden", files["golden"], "--run", files["run"], "-k", "5", "-k", "20")
    res = _invoke(gate_command, ["--baseline", base, "--candidate", cand])
    assert res.exit_code == 2, res.output
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and "k differs (baseline k 5, 10; candidate k 5, 20)" in lines[0]
    assert "the metrics at k 10, 20 would go ungated" in lines[0]
    policy = tmp_path / "gate.toml"  # naming the metrics to gate is a deliberate choice
    policy.write_text('[gate]\nmetrics = ["mrr", "recall@5"]\n', encoding="utf-8")
    ok = _invoke(gate_command, ["--baseline", base, "--candidate", cand, "--policy", policy])
    assert ok.exit_code == 0, ok.output
