"""The judge and verdict figures of the docs and README are the committed results, nothing else."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

from ragsieve.evaluators.judges.offline.base import OFFLINE_MODEL
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
    readme = (ROOT / "docs/benchmarks/judges.md").read_text(encoding="utf-8")
    assert tables.judges_table(data) in readme, "run bench/judges.py then bench/readme_tables.py"


def test_readme_verdict_table_is_the_end_to_end_benchmark() -> None:
    tables = _tables()
    data = tables.load("e2e.json")
    assert set(data["results"]) == {"heldout", "tune"}
    readme = (ROOT / "docs/benchmarks/e2e.md").read_text(encoding="utf-8")
    assert tables.e2e_table(data) in readme, "run bench/e2e.py then bench/readme_tables.py"


def test_a_changed_figure_is_caught(tmp_path: Path) -> None:
    tables = _tables()
    data = tables.load("e2e.json")
    readme = (ROOT / "docs/benchmarks/e2e.md").read_text(encoding="utf-8")
    bumped = json.loads(json.dumps(data))
    bumped["results"]["heldout"]["fpr"] = round(data["results"]["heldout"]["fpr"] + 0.05, 3)
    assert tables.e2e_table(bumped) not in readme


def test_the_front_page_figures_are_the_benchmarks() -> None:
    """The README's statement of what the offline judge measured is the committed results."""
    tables = _tables()
    e2e, judges, realrag = (tables.load(n) for n in ("e2e.json", "judges.json", "realrag.json"))
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    figures = tables.front_page_figures(e2e, judges, realrag)
    assert f"<!-- front-page-figures -->\n{figures}\n<!-- /front-page-figures -->" in readme, (
        "run bench/readme_tables.py"
    )
    assert f"`{OFFLINE_MODEL}`" in readme  # the judge_model every offline result carries
    bumped = json.loads(json.dumps(e2e))
    bumped["results"]["heldout"]["recall"] = round(e2e["results"]["heldout"]["recall"] - 0.05, 3)
    assert tables.front_page_figures(bumped, judges, realrag) not in readme
