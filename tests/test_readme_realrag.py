"""docs/benchmarks/realrag.md's real-LLM-answers table is what bench/realrag.py measured."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "bench" / "results" / "realrag.json"


def _bench():
    sys.path.insert(0, str(ROOT / "bench"))
    spec = importlib.util.spec_from_file_location("realrag", ROOT / "bench" / "realrag.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_readme_realrag_table_is_the_benchmark() -> None:
    data = json.loads(RESULTS.read_text(encoding="utf-8"))
    readme = (ROOT / "docs/benchmarks/realrag.md").read_text(encoding="utf-8")
    assert _bench().realrag_table(data) in readme, "run bench/realrag.py (or --readme)"


def test_a_changed_figure_is_caught() -> None:
    data = json.loads(RESULTS.read_text(encoding="utf-8"))
    data["judge"]["all"]["false_alarms"] = 0.987654
    readme = (ROOT / "docs/benchmarks/realrag.md").read_text(encoding="utf-8")
    assert _bench().realrag_table(data) not in readme


def test_the_worst_generator_is_counted_as_the_fit_counts_one() -> None:
    """A generator counts for the worst line only from the fit's minimum of faithful answers in
    a set; smaller ones are listed apart with their size."""
    data = json.loads(RESULTS.read_text(encoding="utf-8"))
    judge = {k: v for k, v in data["judge"].items() if not k.startswith("source:")}
    for key, faithful, flagged in [
        ("source:a:Big-A", 40, 0.10),
        ("source:b:Big-B", 31, 0.12),
        ("source:b:Tiny-C", 4, 0.75),
    ]:
        judge[key] = {**data["judge"]["all"], "faithful": faithful, "false_alarms": flagged}
    table = _bench().realrag_table({**data, "judge": judge})
    [line] = [x for x in table.splitlines() if x.startswith("Worst generating model")]
    head, _, rest = line.partition("Fewer faithful answers, not counted:")
    assert "Big-B (0.12)" in head and "Tiny-C" not in head
    assert "Tiny-C 0.75 of 4" in rest


def test_the_shipped_faithfulness_model_is_what_the_fit_gives(shared_data: Path) -> None:
    """bench/fit_faithfulness.py --check: the shipped numbers come from the licensed data."""
    import subprocess

    out = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "fit_faithfulness.py"), "--check"]
        + ["--data", str(shared_data)],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert out.returncode == 0, out.stdout + out.stderr
