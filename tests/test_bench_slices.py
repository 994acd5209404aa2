"""A CI-sized rerun of each quality benchmark reproduces its committed figures (issue 29).

The README's judge and verdict tables are checked against ``bench/results`` (test_readme_figures),
but the results could drift from what the code does now. Each quality benchmark stores, beside
its full results, a small deterministic slice computed by the same code (``ci_slice`` in
``bench/judges.py`` and ``bench/e2e.py``); this test reruns the slice and requires the same
figures, so a change to the judges, the rule or the thresholds without rerunning the benchmarks
(and refreshing the README with ``bench/readme_tables.py``) fails here.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from ragsieve.evaluators.judges.thresholds import DEFAULT_THRESHOLDS

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "bench" / "results"


def _committed(name: str, bench: str) -> dict[str, Any]:
    data = json.loads((RESULTS / name).read_text(encoding="utf-8"))
    assert "ci_slice" in data, f"{name} has no ci_slice: rerun bench/{bench} (the full run)"
    return data


def _rerun(bench: str, data: Path) -> dict[str, Any]:
    out = subprocess.run(
        [sys.executable, str(ROOT / "bench" / bench), "--ci-slice", "--data", str(data)],
        capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr[-3000:]
    result: dict[str, Any] = json.loads(out.stdout)
    return result


def _rerun_hint(bench: str) -> str:
    return f"rerun bench/{bench}, then bench/readme_tables.py, and commit bench/results"


def test_judges_slice_reproduces_the_committed_figures(shared_data: Path) -> None:
    committed = _committed("judges.json", "judges.py")
    sliced = committed["ci_slice"]
    assert sliced["thresholds"] == committed["thresholds"] == dict(DEFAULT_THRESHOLDS), _rerun_hint(
        "judges.py"
    )
    # WikiEval is in the slice whole: its rows are the full run's rows, timings aside
    full = {(r["set"], r["task"]): r for r in committed["quality"]}
    whole = [r for r in sliced["quality"] if r["set"] == "wikieval"]
    assert whole, "the slice should hold WikiEval"
    for row in whole:
        ours = {k: v for k, v in row.items() if k != "decisions"}
        theirs = {k: v for k, v in full[row["set"], row["task"]].items() if k != "ms_per_row"}
        assert ours == theirs, (
            f"judges.json: slice and full run disagree; {_rerun_hint('judges.py')}"
        )
    fresh = _rerun("judges.py", shared_data)
    assert fresh == sliced, f"the judges changed since judges.json; {_rerun_hint('judges.py')}"


def test_e2e_slice_reproduces_the_committed_verdicts(shared_data: Path) -> None:
    committed = _committed("e2e.json", "e2e.py")
    sliced = committed["ci_slice"]
    assert sliced["results"]["traces"] == len(sliced["verdicts"]) > 50
    fresh = _rerun("e2e.py", shared_data)
    changed = sorted(k for k, v in fresh["verdicts"].items() if sliced["verdicts"].get(k) != v)
    assert not changed, (
        f"{len(changed)} verdicts changed since e2e.json (e.g. {changed[:3]});"
        f" {_rerun_hint('e2e.py')}"
    )
    assert fresh == sliced, _rerun_hint("e2e.py")
