"""The golden-cache page shows the table of the committed results, as the bench renders it.

After rerunning ``bench/golden_cache.py``, paste ``python bench/golden_cache.py --table`` into
``docs/benchmarks/golden-cache.md``; this test names the page when they drift apart.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "benchmarks" / "golden-cache.md"
RESULTS = ROOT / "bench" / "results" / "golden_cache.json"
RESULTS_200K = ROOT / "bench" / "results" / "golden_cache_200k.json"


def _tables(results: dict) -> str:  # type: ignore[type-arg]
    spec = importlib.util.spec_from_file_location(
        "golden_cache", ROOT / "bench" / "golden_cache.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return str(module.tables(results))


def test_the_golden_cache_page_shows_the_committed_results() -> None:
    for path in (RESULTS, RESULTS_200K):
        results = json.loads(path.read_text(encoding="utf-8"))
        assert _tables(results) in PAGE.read_text(encoding="utf-8"), (
            f"run `python bench/golden_cache.py --table --out {path.relative_to(ROOT)}` and"
            " paste it in docs/benchmarks/golden-cache.md"
        )


def test_every_run_succeeded_and_the_cache_was_written_once() -> None:
    full = json.loads(RESULTS.read_text(encoding="utf-8"))
    big = json.loads(RESULTS_200K.read_text(encoding="utf-8"))
    assert all(r["exit"] == 0 for r in (*full["runs"].values(), *big["runs"].values()))
    assert full["cache_files"] == big["cache_files"] == 1
    assert full["cases"] == 20_000 and big["cases"] == 200_000
    assert "cpu_s" in full["runs"]["cold"] and big["runs"]["cold"]["skipped"] == "prefilled"
