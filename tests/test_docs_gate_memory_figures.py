"""The gate-memory page shows the table of the committed results, as the bench renders it.

After rerunning ``bench/gate_memory.py``, paste ``python bench/gate_memory.py --table`` into
``docs/benchmarks/gate-memory.md``; this test names the page when they drift apart.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "benchmarks" / "gate-memory.md"
RESULTS = ROOT / "bench" / "results" / "gate_memory.json"


def _tables(results: dict) -> str:  # type: ignore[type-arg]
    spec = importlib.util.spec_from_file_location("gate_memory", ROOT / "bench" / "gate_memory.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return str(module.tables(results))


def test_the_gate_memory_page_shows_the_committed_results() -> None:
    results = json.loads(RESULTS.read_text(encoding="utf-8"))
    assert _tables(results) in PAGE.read_text(encoding="utf-8"), (
        "run `python bench/gate_memory.py --table` and paste it in docs/benchmarks/gate-memory.md"
    )


def test_every_size_ran_on_both_sides_with_the_same_verdict() -> None:
    results = json.loads(RESULTS.read_text(encoding="utf-8"))
    assert results["baseline"] and [r["cases"] for r in results["rows"]][-1] == 200_000
    for row in results["rows"]:
        for side in ("now", "baseline"):
            runs = [row[side][k] for k in ("eval_base", "eval_cand", "gate")]
            assert all(r["exit"] in (0, 1) for r in runs), (row["cases"], side)
        assert row["same_verdict"] is True, row["cases"]
