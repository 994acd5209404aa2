"""docs/benchmarks/conversations.md's table is what bench/conversations.py makes of its results."""

from __future__ import annotations

import importlib.util
import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_readme_conversations_table_matches_the_results() -> None:
    # loaded by path under its own name: tests/jobs/conversations.py shares the module name
    sys.path.insert(0, str(ROOT / "bench"))
    try:
        spec = importlib.util.spec_from_file_location(
            "bench_conversations", ROOT / "bench" / "conversations.py"
        )
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module  # its dataclasses look their module up
        spec.loader.exec_module(module)
        readme_table = module.readme_table
    finally:
        sys.path.remove(str(ROOT / "bench"))
    data = json.loads((ROOT / "bench" / "results" / "conversations.json").read_text("utf-8"))
    readme = (ROOT / "docs/benchmarks/conversations.md").read_text("utf-8")
    block = re.search(r"<!-- conversations -->\n(.*?)\n<!-- /conversations -->", readme, re.S)
    assert block is not None, "docs/benchmarks/conversations.md: no <!-- conversations --> block"
    assert block.group(1) == readme_table(data)
    held = data["results"]["heldout"]["per_source"]
    assert set(held) == {"doc2dial", "inscit", "cast2020", "all"}
