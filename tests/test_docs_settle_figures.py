"""The settling-scale page shows the tables of the committed results, as the bench renders them.

After rerunning ``bench/settle_scale.py``, paste ``python bench/settle_scale.py --table`` into
``docs/benchmarks/settle.md``; this test names the page when they drift apart.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "benchmarks" / "settle.md"
RESULTS = ROOT / "bench" / "results" / "settle_scale.json"


def _bench() -> object:
    spec = importlib.util.spec_from_file_location(
        "settle_scale", ROOT / "bench" / "settle_scale.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_settle_page_shows_the_committed_results() -> None:
    results = json.loads(RESULTS.read_text(encoding="utf-8"))
    rendered = _bench().tables(results)  # type: ignore[attr-defined]
    assert rendered in PAGE.read_text(encoding="utf-8"), (
        "run `python bench/settle_scale.py --table` and paste it in docs/benchmarks/settle.md"
    )


def test_the_results_cover_every_size_and_a_baseline_in_the_same_run() -> None:
    results = json.loads(RESULTS.read_text(encoding="utf-8"))
    sizes = [row["size"] for row in results["rows"]]
    assert sizes == [1000, 4000, 16000, 50000]
    assert results["baseline"] and all("error" not in row["now"] for row in results["rows"])
    assert any("speedup" in row for row in results["rows"])
    assert {"now", "baseline"} <= set(results["fairness"])
