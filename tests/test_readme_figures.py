"""The README's judge and verdict figures are the benchmarks' committed results, nothing else."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

from ragsieve.jobs.settings import load_settings

ROOT = Path(__file__).resolve().parents[1]


def _tables():
    spec = importlib.util.spec_from_file_location("readme_tables", ROOT / "bench/readme_tables.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_readme_judge_table_is_the_benchmark_at_the_jobs_thresholds() -> None:
    tables = _tables()
    data = tables.load("judges.json")
    # measured with the thresholds the job decides with, not the judges' own
    assert data["thresholds"] == dict(load_settings().jobs.thresholds)
    assert all(r["threshold"] == data["thresholds"][r["judge"]] for r in data["quality"])
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert tables.judges_table(data) in readme, "run bench/judges.py then bench/readme_tables.py"


def test_readme_verdict_table_is_the_end_to_end_benchmark() -> None:
    tables = _tables()
    data = tables.load("e2e.json")
    assert set(data["results"]) == {"heldout", "tune"}
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert tables.e2e_table(data) in readme, "run bench/e2e.py then bench/readme_tables.py"


def test_a_changed_figure_is_caught(tmp_path: Path) -> None:
    tables = _tables()
    data = tables.load("e2e.json")
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    bumped = json.loads(json.dumps(data))
    bumped["results"]["heldout"]["fpr"] = round(data["results"]["heldout"]["fpr"] + 0.05, 3)
    assert tables.e2e_table(bumped) not in readme
