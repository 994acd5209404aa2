"""docs/benchmarks/frameworks.md's table is what bench/frameworks.py makes of its results."""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_frameworks_page_table_matches_the_results() -> None:
    sys.path.insert(0, str(ROOT / "bench"))
    try:
        from frameworks import BEGIN, END, PAGE, table
    finally:
        sys.path.remove(str(ROOT / "bench"))
    data = json.loads((ROOT / "bench" / "results" / "frameworks.json").read_text("utf-8"))
    page = PAGE.read_text("utf-8")
    block = page.split(BEGIN, 1)[1].split(END, 1)[0]
    assert block.strip() == table(data["pipelines"]).strip()
    assert data["traces"] == 7 * 8 * 3  # seven pipelines, eight three-turn conversations
    for name, row in data["pipelines"].items():
        assert row["exact"]["of"] == 24, name
